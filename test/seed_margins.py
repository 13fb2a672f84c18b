#!/usr/bin/env python3
"""The worst margin of every threshold in suite logs (test/seed_loop.sh).

A check prints its measured value beside its threshold in one of these forms
(test_helpers.h's report_within, and the suites' own lines):
    VALUE (tol T)   VALUE (<= T)   VALUE (< T)      an upper bound: use = |VALUE| / T
    VALUE (min T)   VALUE (>= T)   VALUE (> T)      a lower bound:  use = T / |VALUE|
"use" is the fraction of the threshold taken: a check passes at use <= 1,
and 1 / use is its margin. Lines that report a mutant (a deliberate fault a
check must catch: its error is meant to exceed the threshold) are skipped. For each log given, prints one line:
    LOG<TAB>CHECKS<TAB>WORST_USE<TAB>THE LINE WITH THE WORST USE
Usage: seed_margins.py LOG...
"""
import math
import re
import sys

NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
CHECK = re.compile(r"(?P<v>%s)\s*\((?P<op>tol|<=|<|min|>=|>)\s+(?P<t>%s)\)" % (NUM, NUM))


def uses(line):
    for m in CHECK.finditer(line):
        v, t = abs(float(m.group("v"))), float(m.group("t"))
        if m.group("op") in ("tol", "<=", "<"):
            yield v / t if t > 0 else (0.0 if v == 0 else math.inf)
        else:
            yield t / v if v > 0 else math.inf


def main(paths):
    for path in paths:
        checks, worst, worst_line = 0, -1.0, ""
        with open(path, errors="replace") as f:
            for line in f:
                if "mutant" in line:
                    continue
                for use in uses(line):
                    checks += 1
                    if use > worst:
                        worst, worst_line = use, line.strip()
        print(f"{path}\t{checks}\t{worst if checks else float('nan'):.4g}\t{worst_line[:160]}")


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) >= 2 else 2)
    main(sys.argv[1:])
