#!/usr/bin/env python3
"""llmc/'s folders include only themselves and the folders below them.

The order (docs/layout.md): core < kernels < gpt2 | vision | text <
interop | fold < cuda, where "|" are siblings that do not include each other.
Reads every #include "..." of llmc/*/*, resolves it (a bare name: the same
folder; "F/name": folder F) and reports each include of a folder that is not
allowed, with the file and line; a bare name that is not in the file's own
folder is reported too (it would only resolve through -I).

One norm policy (llmc/core/norm_mode.h): no file of llmc/, tools/ or the
trainers but the policy's own compares a NormMode with one of its MODE_*
constants (==, !=, <, >, a case label) or switches on a mode; they ask the
policy instead. Exits 1 if any problem.
"""
import os
import re
import sys

RANK = {"core": 0, "kernels": 1, "gpt2": 2, "vision": 2, "text": 2, "interop": 3, "fold": 3,
        "cuda": 4}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
# generated headers the build puts on the include path (mk/onnx.mk)
GENERATED = {"onnx.pb-c.h"}


POLICY = ("llmc/core/norm_mode.h", "llmc/core/norm_mode.c")
CODE = re.compile(r"\.(c|h|cu|cuh)$")


def mode_constants(root):
    """The NormMode enum's constants, read from the policy's header."""
    try:
        text = open(os.path.join(root, POLICY[0]), errors="replace").read()
    except OSError:
        return ["MODE_LN", "MODE_RMS", "MODE_CBWC", "MODE_FOLDED"]
    m = re.search(r"typedef\s+enum\s*\{([^}]*)\}\s*NormMode\s*;", text)
    return re.findall(r"\b(MODE_[A-Z0-9_]+)\b", m.group(1)) if m else []


def norm_mode_problems(root):
    names = "|".join(mode_constants(root)) or "MODE_LN"
    compare = re.compile(rf"(==|!=|<=?|>=?)\s*\(?\s*(NormMode\)\s*)?({names})\b|\b({names})\s*(==|!=|<=?|>=?)"
                         rf"|\bcase\s+({names})\b|\bswitch\s*\([^)]*\bmode\b[^)]*\)")
    files = []
    for top in ("llmc", "tools"):
        for d, _, names_ in os.walk(os.path.join(root, top)):
            files += [os.path.join(d, n) for n in names_ if CODE.search(n)]
    files += [os.path.join(root, n) for n in os.listdir(root) if n.startswith("train_") and CODE.search(n)]
    problems = []
    for path in sorted(files):
        rel = os.path.relpath(path, root)
        if rel in POLICY:
            continue
        for i, line in enumerate(open(path, errors="replace"), 1):
            code = line.split("//")[0]
            if compare.search(code):
                problems.append(f"{rel}:{i}: compares or switches on a norm mode; ask the policy "
                                f"(llmc/core/norm_mode.h): {line.strip()}")
    return problems, len(files)


def allowed(src, dst):
    return src == dst or RANK[dst] < RANK[src]


def main(root):
    llmc = os.path.join(root, "llmc")
    problems, checked = [], 0
    for folder in sorted(os.listdir(llmc)):
        path = os.path.join(llmc, folder)
        if not os.path.isdir(path):
            problems.append(f"llmc/{folder}: a file outside the folders")
            continue
        if folder not in RANK:
            problems.append(f"llmc/{folder}/: a folder docs/layout.md and this check do not know")
            continue
        own = set(os.listdir(path))
        for name in sorted(own):
            for i, line in enumerate(open(os.path.join(path, name), errors="replace"), 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                inc = m.group(1)
                checked += 1
                where = f"llmc/{folder}/{name}:{i}"
                if "/" not in inc:
                    if inc not in own and inc not in GENERATED:
                        problems.append(f'{where}: "{inc}" is not in llmc/{folder}/ (name its folder)')
                    continue
                dst = inc.split("/")[0]
                if dst not in RANK or not os.path.exists(os.path.join(llmc, inc)):
                    problems.append(f'{where}: "{inc}" names no file under llmc/')
                elif not allowed(folder, dst):
                    problems.append(f'{where}: {folder}/ includes "{inc}", a folder above or beside it')
    mode_problems, scanned = norm_mode_problems(root)
    problems += mode_problems
    for p in problems:
        print(p)
    print(f"layout_rules: {checked} includes checked, {scanned} files checked for norm-mode "
          f"switches, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else
                  os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")))
