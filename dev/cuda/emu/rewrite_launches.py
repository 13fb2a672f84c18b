#!/usr/bin/env python3
"""CUDA emulation (a logic check, not a device run): copies a .cu/.cuh
source, rewriting only what C++ cannot compile or what needs the emulator:
  kernel<<<grid, block[, smem[, stream]]>>>(args)
      -> emu::launch("kernel", emu::kernel_name<&kernel>(), (const void *)&kernel,
                     emu::config(grid, block, ...), emu::bind_kernel(&kernel)(args))
     (the arguments evaluated once, at the launch, and kept by value: emu_launch.h)
     (kernel_name: the instance with its template arguments, for race coverage)
  extern __shared__ T name[];   -> T *name = (T *)emu::dynamic_shared("name");
  __shared__ [__align__(n)] T name[dims]
      -> [__align__(n)] static thread_local T name[dims]; EMU_SHARED_POISON(name);
Line numbers are kept (#line), so messages point at the original file.
usage: rewrite_launches.py SRC DST"""
import re
import sys


def match_back(text, end):
    """start of the kernel expression ending at end: name or name<targs>"""
    i = end
    while i > 0 and text[i - 1].isspace():
        i -= 1
    if text[i - 1] == ">":
        depth = 0
        while i > 0:
            i -= 1
            depth += {">": 1, "<": -1}.get(text[i], 0)
            if depth == 0:
                break
    while i > 0 and (text[i - 1].isalnum() or text[i - 1] in "_:"):
        i -= 1
    return i


def match_parens(text, start):
    """index after the ')' closing the '(' at start"""
    depth = 0
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i + 1
    raise SystemExit("rewrite_launches: unbalanced parentheses in a launch")


def rewrite_launches(text):
    out, pos = [], 0
    while True:
        open_ = text.find("<<<", pos)
        if open_ < 0:
            return "".join(out) + text[pos:]
        name_start = match_back(text, open_)
        name = text[name_start:open_].strip()
        close = text.index(">>>", open_)
        config = text[open_ + 3:close]
        args_start = close + 3
        while text[args_start].isspace():
            args_start += 1
        if text[args_start] != "(" or not name:
            raise SystemExit(f"rewrite_launches: cannot parse the launch near: {text[open_ - 40:open_ + 40]!r}")
        args_end = match_parens(text, args_start)
        out.append(text[pos:name_start])
        out.append(f'emu::launch("{name}", emu::kernel_name<&{name}>(), (const void *)&{name}, '
                   f'emu::config({config}), emu::bind_kernel(&{name}){text[args_start:args_end]})')
        pos = args_end


DYNAMIC = re.compile(r"extern\s+__shared__\s+(?:__align__\(\s*\d+\s*\)\s+)?([\w:<>]+)\s+(\w+)\s*\[\s*\]\s*;")
STATIC = re.compile(r"(?<!extern )__shared__\s+(__align__\(\s*\d+\s*\)\s+)?([\w:<>]+)\s+(\w+)((?:\s*\[[^\]]*\])*)\s*;")


def main():
    src, dst = sys.argv[1], sys.argv[2]
    with open(src) as f:
        text = f.read()
    text = rewrite_launches(text)
    text = DYNAMIC.sub(lambda m: f"{m[1]} *{m[2]} = ({m[1]} *)emu::dynamic_shared(\"{m[2]}\");", text)
    text = STATIC.sub(lambda m: f"{m[1] or ''}static thread_local {m[2]} {m[3]}{m[4]}; EMU_SHARED_POISON({m[3]});", text)
    with open(dst, "w") as f:
        f.write(f'#line 1 "{src}"\n{text}')


if __name__ == "__main__":
    main()
