#!/usr/bin/env python3
"""Assembles attnc's PTX with the CUDA toolkit's ptxas and reports each
kernel's registers and spills: what the driver's JIT compiler will make of
the device code, known without a GPU.

  ptx_registers.py [--ptxas PATH] FILE.ptx...

FILE is `attnc emit --stage ptx` output: one PTX module per kernel, each
after a `// kernel module @NAME` line, assembled one by one for the chip
its `.target` line names. Prints one markdown row per kernel
(file, module, kernel, registers, stack frame, spill stores and loads in
bytes), the most spilled first. Exits 1 when ptxas rejects a module (its
message is printed) and 2 when there is no ptxas (PATH, then
/usr/local/cuda/bin).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

MODULE_MARK = re.compile(r"^// kernel module @(\S+)", re.M)


def find_ptxas(path=None):
    for candidate in [path, shutil.which("ptxas"), "/usr/local/cuda/bin/ptxas"]:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def modules(text):
    """(name, PTX text) of each module of `text`."""
    marks = list(MODULE_MARK.finditer(text))
    if not marks:
        return [("-", text)]
    ends = [m.start() for m in marks[1:]] + [len(text)]
    return [(m.group(1), text[m.start():end]) for m, end in zip(marks, ends)]


def parse(report):
    """(kernel, registers, stack, spill stores, spill loads) from ptxas -v."""
    kernels, name, frame = [], None, [0, 0, 0]
    for line in report.splitlines():
        if "Function properties for" in line:
            name = line.split("Function properties for", 1)[1].strip()
        elif "bytes stack frame" in line:
            frame = [int(n) for n in re.findall(r"(\d+) bytes", line)][:3]
        elif (m := re.search(r"Used (\d+) registers", line)) and name:
            kernels.append((name, int(m.group(1)), *frame))
            name, frame = None, [0, 0, 0]
    return kernels


def assemble(ptxas, ptx):
    """ptxas -v on one module: (kernels, error message or None)."""
    target = re.search(r"^\.target\s+(sm_\w+)", ptx, re.M)
    arch = target.group(1) if target else "sm_90"
    with tempfile.NamedTemporaryFile("w", suffix=".ptx") as f:
        f.write(ptx)
        f.flush()
        done = subprocess.run([ptxas, f"-arch={arch}", "-v", "-o", os.devnull,
                               f.name], capture_output=True, text=True)
    if done.returncode != 0:
        return [], done.stderr.strip().replace(f.name, "<module>")
    return parse(done.stderr), None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ptxas")
    p.add_argument("files", nargs="+")
    args = p.parse_args()
    ptxas = find_ptxas(args.ptxas)
    if not ptxas:
        print("error: no ptxas (the CUDA toolkit's) on PATH or in /usr/local/cuda/bin")
        return 2
    rows, failed = [], False
    for path in args.files:
        with open(path) as f:
            text = f.read()
        for module, ptx in modules(text):
            kernels, error = assemble(ptxas, ptx)
            if error:
                print(f"error: {path}: module @{module}: ptxas rejects it:\n{error}")
                failed = True
            rows += [(os.path.basename(path), module) + k for k in kernels]
    rows.sort(key=lambda r: (-(r[5] + r[6]), -r[3]))
    print("| file | module | kernel | registers | stack bytes | spill stores | spill loads |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(str(x) for x in row) + " |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
