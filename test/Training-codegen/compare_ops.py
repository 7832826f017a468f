"""Runs one function of a hand-written attn module compiled by `attnc build`
and the reference evaluator `attn-ref` on the same random inputs, and
compares every result.

  compare_ops.py --exe BIN --ref ATTN-REF --mlir M.mlir --dir SCRATCH
                 --fn NAME --arg NAME=SPEC ... --sizes T=7,S=5 ...

Input SPECs (DIMS is `x`-separated: symbolic names or integers):

  normal:DIMS          f32 from N(0, 1)
  ids:V:DIMS           int32 ids in [0, V) (a small V repeats ids)
  padding:DIMS         bool [B, S] key padding: row b pads its last b*S//3
                       keys; row 2 (mod 4) pads every key
  f32:VALUE            a rank-0 f32

The check, per result: same shape, f32, finite, and relative error
||binary - reference||_2 / ||reference||_2 at most --tol (1e-4); the binary
computes in f32, the reference in double. Prints one line per result.
"""

import argparse
import os
import subprocess
import sys

import numpy as np


def shape_of(dims, sizes):
    return tuple(int(d) if d.isdigit() else sizes[d] for d in dims.split("x"))


def make_input(spec, sizes, rng):
    parts = spec.split(":")
    kind = parts[0]
    if kind == "normal":
        return rng.standard_normal(shape_of(parts[1], sizes)).astype(np.float32)
    if kind == "ids":
        return rng.integers(0, int(parts[1]),
                            size=shape_of(parts[2], sizes)).astype(np.int32)
    if kind == "padding":
        b, s = shape_of(parts[1], sizes)
        mask = np.zeros((b, s), dtype=bool)
        for row in range(b):
            n = s if row % 4 == 2 else (row * s) // 3
            if n:
                mask[row, s - n:] = True
        return mask
    if kind == "f32":
        return np.array(float(parts[1]), dtype=np.float32)
    raise SystemExit(f"unknown input kind in {spec!r}")


def run(argv, what):
    p = subprocess.run(argv, capture_output=True, text=True)
    if p.returncode != 0:
        print(f"FAIL: {what} exited with {p.returncode}:\n  {' '.join(argv)}\n"
              f"{p.stdout}{p.stderr}")
        return False
    return True


def outputs(prefix):
    if os.path.exists(prefix + ".npy"):
        return [prefix + ".npy"]
    paths, i = [], 0
    while os.path.exists(f"{prefix}.{i}.npy"):
        paths.append(f"{prefix}.{i}.npy")
        i += 1
    return paths


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exe", required=True)
    parser.add_argument("--ref", required=True)
    parser.add_argument("--mlir", required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--fn", required=True)
    parser.add_argument("--arg", action="append", default=[])
    parser.add_argument("--sizes", action="append", default=[])
    parser.add_argument("--tol", type=float, default=1e-4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    failures, worst = 0, 0.0
    for sizes_text in args.sizes or [""]:
        sizes = {}
        for item in filter(None, sizes_text.split(",")):
            k, _, v = item.partition("=")
            sizes[k.strip()] = int(v)
        tag = args.fn + "." + "_".join(f"{k}{v}" for k, v in sizes.items())
        label = f"{args.fn} {sizes_text}".strip()
        inputs = []
        for a in args.arg:
            name, _, spec = a.partition("=")
            path = os.path.join(args.dir, f"{tag}.{name}.npy")
            np.save(path, make_input(spec, sizes, rng))
            inputs += ["--in", f"{name}={path}"]
        got_prefix = os.path.join(args.dir, f"{tag}.binary")
        ref_prefix = os.path.join(args.dir, f"{tag}.ref")
        for p in outputs(got_prefix) + outputs(ref_prefix):
            os.remove(p)
        if not run([args.exe, "forward", "--fn", args.fn, *inputs,
                    "-o", got_prefix + ".npy"], f"{label}: the binary"):
            failures += 1
            continue
        if not run([args.ref, args.mlir, "--fn", args.fn, *inputs, "--f64",
                    "-o", ref_prefix + ".npy"], f"{label}: attn-ref"):
            failures += 1
            continue
        got_paths, ref_paths = outputs(got_prefix), outputs(ref_prefix)
        if len(got_paths) != len(ref_paths) or not got_paths:
            print(f"FAIL: {label}: {len(got_paths)} results, the reference "
                  f"has {len(ref_paths)}")
            failures += 1
            continue
        for index, (gp, rp) in enumerate(zip(got_paths, ref_paths)):
            got, ref = np.load(gp), np.load(rp)
            what = f"{label} result {index}"
            if got.dtype != np.float32 or got.shape != ref.shape:
                print(f"FAIL: {what}: {got.dtype}{list(got.shape)}, the "
                      f"reference is {list(ref.shape)}")
                failures += 1
                continue
            if not np.all(np.isfinite(got)):
                print(f"FAIL: {what}: non-finite values")
                failures += 1
                continue
            g, r = got.astype(np.float64), ref.astype(np.float64)
            norm = float(np.linalg.norm(r))
            error = float(np.linalg.norm(g - r)) / norm if norm else \
                float(np.linalg.norm(g))
            worst = max(worst, error)
            ok = error <= args.tol
            print(f"{'ok' if ok else 'FAIL'}: {what}: shape {list(got.shape)} "
                  f"relative error {error:.3g} (tolerance {args.tol:g})")
            failures += not ok
    print(f"{args.fn}: worst relative error {worst:.3g}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
