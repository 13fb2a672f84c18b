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
policy instead.

No circles: no llmc/ header includes itself round a chain of headers, and no
two of llmc/'s .c files call each other's functions, directly or round a
longer chain (a circle, as matmul.c and matmul_engine.c once were: each
called the other's entry points, so neither could be read alone). Exits 1 if
any problem.
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


def strip_c(text):
    """C text without comments and string literals' contents."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return re.sub(r'"(\\.|[^"\\])*"', '""', text)


# a function definition at the start of a line: its return type, name, parameters and "{"
DEFINITION = re.compile(r"^([A-Za-z_][^;{}()#]*?)\b([A-Za-z_]\w*)\s*\([^;{}]*\)\s*\{", re.M)
CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")


def circles(edges):
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def circle_problems(root):
    """Calls between llmc/'s .c files, and includes between its headers, that go round."""
    sources, headers = {}, {}
    for d, _, names in os.walk(os.path.join(root, "llmc")):
        for n in names:
            rel = os.path.relpath(os.path.join(d, n), root)
            if n.endswith(".c"):
                sources[rel] = strip_c(open(os.path.join(d, n), errors="replace").read())
            elif n.endswith(".h"):
                headers[rel] = open(os.path.join(d, n), errors="replace").read()
    defined = {}
    for rel, text in sources.items():
        for m in DEFINITION.finditer(text):
            if "static" not in m.group(1).split() and m.group(2) not in ("if", "for", "while", "switch"):
                defined.setdefault(m.group(2), set()).add(rel)
    calls = {rel: set() for rel in sources}
    for rel, text in sources.items():
        for name in set(CALL.findall(text)):
            calls[rel] |= defined.get(name, set()) - {rel}
    includes = {rel: set() for rel in headers}
    for rel, text in headers.items():
        for line in text.splitlines():
            m = INCLUDE.match(line)
            if m:
                inc = m.group(1)
                target = os.path.join(os.path.dirname(rel), inc) if "/" not in inc else os.path.join("llmc", inc)
                if target in headers:
                    includes[rel].add(target)
    problems = [f"{' <-> '.join(c)}: these .c files call each other (a circle); one router, one "
                f"direction" for c in circles(calls)]
    problems += [f"{' <-> '.join(c)}: these headers include each other (a circle)" for c in circles(includes)]
    return problems, len(sources)


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
    circle_found, sources = circle_problems(root)
    problems += circle_found
    for p in problems:
        print(p)
    print(f"layout_rules: {checked} includes checked, {scanned} files checked for norm-mode "
          f"switches, {sources} .c files checked for call circles, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else
                  os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")))
