#!/usr/bin/env python3
"""Checks compiled models against the reference evaluator (attn-ref, double
precision) on many shapes: relative error ||a - b|| / ||b|| of `forward`.

Usage: numerics.py [--build DIR] [--attnc PATH] [--attn-ref PATH]
                   [--models char_gpt,tools/bench/models/gpt2_reduced]
                   [--batches 1,3,8] [--lengths 1,7,65,256] [--threads 1]
                   [--tol 1e-4]
Exits 1 when any error is above the tolerance.
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--attnc")
    p.add_argument("--attn-ref")
    p.add_argument("--models", default="models/char_gpt,tools/bench/models/gpt2_reduced")
    p.add_argument("--batches", default="1,3,8")
    p.add_argument("--lengths", default="1,7,65,256")
    p.add_argument("--threads", default="1")
    p.add_argument("--tol", type=float, default=1e-4)
    p.add_argument("--work")
    args = p.parse_args()
    attnc = args.attnc or os.path.join(args.build, "bin", "attnc")
    ref = args.attn_ref or os.path.join(args.build, "bin", "attn-ref")
    work = args.work or tempfile.mkdtemp(prefix="attn-numerics-")
    worst, failed = 0.0, False
    for model in args.models.split(","):
        src = os.path.join(ROOT, model + ".tfm") if not model.endswith(".tfm") else model
        name = os.path.basename(model).replace(".tfm", "")
        exe = os.path.join(work, name)
        weights = os.path.join(work, name + ".safetensors")
        ir = os.path.join(work, name + ".mlir")
        run([attnc, "build", src, "-o", exe])
        run([exe, "init", "--seed", "1", "-o", weights])
        run([attnc, "emit", src, "--stage", "attn", "-o", ir])
        rng = np.random.default_rng(0)
        for b in [int(x) for x in args.batches.split(",")]:
            for t in [int(x) for x in args.lengths.split(",")]:
                tok = os.path.join(work, f"tok_{b}_{t}.npy")
                np.save(tok, rng.integers(0, 256, size=(b, t)).astype(np.int32))
                r = os.path.join(work, f"{name}_ref_{b}_{t}.npy")
                run([ref, ir, "--fn", "forward", "-w", weights, "--in", f"tokens={tok}", "-o", r])
                expected = np.load(r).astype(np.float64)
                for nt in args.threads.split(","):
                    out = os.path.join(work, f"{name}_out_{b}_{t}_{nt}.npy")
                    run([exe, "forward", "-w", weights, "--in", f"tokens={tok}", "-o", out,
                         "--threads", nt])
                    got = np.load(out).astype(np.float64)
                    err = float(np.linalg.norm(got - expected) / np.linalg.norm(expected))
                    worst = max(worst, err)
                    bad = not (err <= args.tol) or got.shape != expected.shape
                    failed |= bad
                    print(f"{name:14s} B={b:<2d} T={t:<4d} threads={nt}: "
                          f"relative error {err:.2e}{'  FAIL' if bad else ''}", flush=True)
    print(f"worst relative error {worst:.2e} (tolerance {args.tol:g})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
