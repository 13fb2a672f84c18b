#!/usr/bin/env bash
# Installs what foldnorm's build, demo and tests need: the Debian packages
# listed one per line in scripts/deps/*.txt, then runs scripts/deps/*.sh
# (installs from other registries, e.g. npm; each must be a quick no-op when
# done). Fast when everything is present; uses sudo when not root.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t packages < <(cat scripts/deps/*.txt | sed 's/#.*//' | xargs -n1 | sort -u)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing Debian packages: ${missing[*]}"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
for script in scripts/deps/*.sh; do
    [ -e "$script" ] && bash "$script"
done
exit 0
