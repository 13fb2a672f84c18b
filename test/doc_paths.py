#!/usr/bin/env python3
"""Every repository path named in the docs and scripts exists.

Scans README.md, docs/*.md, the Makefile and mk/*.mk, scripts/, test/ and
dev/ (text files git tracks) for words that name a file or folder of the
repository: they start with one of its top-level folders (llmc/, dev/, test/,
scripts/, tools/, docs/, mk/) or are a top-level file (train_gpt2.c, ...).
Each must exist, as a file, a folder, or a glob that matches something; a
name without its extension (a program: tools/fold, dev/cuda/norm; a module:
llmc/kernels/norm) counts when the file with .c, .cu, .h, .sh or .py does.
Placeholders (a part in capitals: test/suites/NAME.sh; a prefix ending in
_) and generated places (build/, bin/, data/, out/, dev/gpu/states/, all
git-ignored) are not checked. Prints each missing path with the file and
line that names it; exits 1 if any.
"""
import glob
import os
import re
import subprocess
import sys

TOP = ("llmc", "dev", "test", "scripts", "tools", "docs", "mk")
TOP_FILES = ("train_gpt2.c", "train_gpt2.cu", "train_vit.c", "train_vit.cu", "Makefile", "README.md")
PATH = re.compile(r"(?<![\w./$-])((?:%s)/[\w.*/{},-]*[\w*}])" % "|".join(TOP))
# make's own variables and functions, shell variables, brace lists,
# placeholders in capitals, prefixes: not paths to check
SKIP = re.compile(r"[$%]|\{|\}|[A-Z]{3,}|_$|^dev/gpu/states")
EXTENSIONS = ("", ".c", ".cu", ".h", ".sh", ".py")


def candidates(line):
    for m in PATH.finditer(line):
        p = m.group(1).rstrip(".,:;")
        if SKIP.search(p) or p.endswith("/"):
            continue
        yield p


def exists(p):
    if any(c in p for c in "*?["):
        return bool(glob.glob(p))
    return any(os.path.exists(p + ext) for ext in EXTENSIONS)


def main():
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    files = subprocess.run(["git", "ls-files", "README.md", "Makefile", "docs", "mk", "scripts",
                            "test", "dev", "llmc", "tools", "train_gpt2.c", "train_gpt2.cu",
                            "train_vit.c", "train_vit.cu"],
                           capture_output=True, text=True, check=True).stdout.split()
    # untracked, not ignored files count too (a change not committed yet)
    files += subprocess.run(["git", "ls-files", "--others", "--exclude-standard", "docs", "test",
                             "scripts", "dev", "mk", "llmc", "tools"],
                            capture_output=True, text=True, check=True).stdout.split()
    missing, named = [], 0
    for f in sorted(set(files)):
        if not os.path.exists(f):
            continue
        try:
            text = open(f, encoding="utf-8").read()
        except (UnicodeDecodeError, IsADirectoryError):
            continue
        for i, line in enumerate(text.splitlines(), 1):
            for p in candidates(line):
                named += 1
                if not exists(p):
                    missing.append(f"{f}:{i}: {p}")
    for m in missing:
        print("missing:", m)
    print(f"doc_paths: {named} paths named, {len(missing)} missing")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
