#!/usr/bin/env python3
"""Counts the kernel launches of a GPU build's decoding step, from its IR.

    attnc emit MODEL.tfm --target cuda --entry decode_step --stage loops -o F
    decode_launches.py F

prints the `gpu.launch_func` ops of `decode_step` and how many of them a
step of one sequence runs: in a product's branch on its rows (`M >= 64` or
`M >= 128`, GpuBlockedProducts) it takes the way of fewer rows, in a
few-row branch (`M <= 16`, GpuFewRowProducts) the few-row way, and every
other branch's ways both (an upper bound). Kernels over whole tiles of 64
or 128 rows, which a step of one sequence launches with no blocks (the
runtime skips those), are not in the way it takes. A count read off the IR, for comparing builds; the
GPU's profile is the measurement.
"""
import re
import sys


def count(lines):
    start = next(i for i, l in enumerate(lines) if "func.func @decode_step(" in l)
    conditions = {}
    branches = []  # [kind, way, indent]
    total = run = 0
    for line in lines[start + 1:]:
        if line.startswith("  }"):
            break
        indent = len(line) - len(line.lstrip())
        m = re.search(r"(%\w+) = arith.cmpi (\w+), %[\w]+, (%c\w+)", line)
        if m:
            conditions[m.group(1)] = (m.group(2), m.group(3))
        m = re.search(r"scf.if (%\w+)", line)
        if m:
            predicate, bound = conditions.get(m.group(1), (None, ""))
            kind = "other"
            if predicate == "sge" and re.fullmatch(r"%c(64|128)(_\d+)?", bound):
                kind = "many"
            elif predicate in ("ule", "sle") and re.fullmatch(r"%c16(_\d+)?", bound):
                kind = "few"
            branches.append([kind, "then", indent])
        elif "} else {" in line and branches:
            branches[-1][1] = "else"
        elif line.strip() == "}" and branches and indent == branches[-1][2]:
            branches.pop()
        elif "gpu.launch_func" in line:
            total += 1
            skipped = any((kind, way) in (("many", "then"), ("few", "else"))
                          for kind, way, _ in branches)
            run += not skipped
    return total, run


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: decode_launches.py LOOPS.mlir")
    with open(sys.argv[1]) as f:
        total, run = count(f.read().split("\n"))
    print(f"{total} launches in the IR, {run} run by a step of one sequence")


if __name__ == "__main__":
    main()
