"""Runs one entry point of a model compiled by `attnc build` and the reference
evaluator `attn-ref` on the same random inputs, and compares the results.

  compare_model.py --exe BIN --ref ATTN-REF --mlir MODEL.mlir -w W.safetensors
                   --dir SCRATCH --fn NAME --arg NAME=SPEC ... --sizes B=1,T=7 ...

Each `--sizes` gives values of the symbolic dims (B, T, S, ...) for one run;
every `--arg` is generated for each of them:

  NAME=ids:V:DIMS        random token ids in [0, V) (int32)
  NAME=ids:V:pad:DIMS    ids in [1, V) with id 0 (padding) at the end of rows:
                         row 0 is never padded, row 1 ends in ceil(L/3) pads,
                         row 2 in floor(L/2) pads, and so on in turn
  NAME=ids:V:padfull:DIMS  as `pad`, but row 2 (mod 3) is padded entirely
  NAME=normal:DIMS       f32 values from N(0, 1)

DIMS is `x`-separated: symbolic names or integers (`BxSx32`).

The check: the compiled binary's result has the reference's shape, is f32,
is finite everywhere, and its relative error ||binary - reference||_2 /
||reference||_2 (the reference in double) is at most --tol, 1e-4 by default:
the binary computes in f32 (about 6e-8 per rounding, a few hundred
roundings deep), the reference in double, so a real bug (a wrong mask, index
or tile bound) shows as an error of 1e-2 or more.

On failure it says which entry point, sizes and element are off and keeps
the inputs and outputs in --dir. Prints one line per run otherwise.
"""

import argparse
import os
import subprocess
import sys

import numpy as np

TOLERANCE = 1e-4


def parse_sizes(text):
    sizes = {}
    for item in text.split(","):
        name, _, value = item.partition("=")
        sizes[name.strip()] = int(value)
    return sizes


def shape_of(dims, sizes):
    shape = []
    for d in dims.split("x"):
        shape.append(int(d) if d.isdigit() else sizes[d])
    return tuple(shape)


def pad_rows(ids, full):
    """Trailing id-0 padding by row, per the `pad`/`padfull` pattern."""
    if ids.ndim < 2:
        return ids
    length = ids.shape[-1]
    flat = ids.reshape(-1, length)
    for r in range(flat.shape[0]):
        kind = r % 3
        if kind == 1:
            n = -(-length // 3)
        elif kind == 2:
            n = length if full else length // 2
        else:
            n = 0
        if n:
            flat[r, length - n:] = 0
    return flat.reshape(ids.shape)


def make_input(spec, sizes, rng):
    parts = spec.split(":")
    kind = parts[0]
    if kind == "ids":
        vocab = int(parts[1])
        mode = parts[2] if len(parts) == 4 else ""
        shape = shape_of(parts[-1], sizes)
        if mode:
            ids = rng.integers(1, vocab, size=shape)
            ids = pad_rows(ids, full=(mode == "padfull"))
        else:
            ids = rng.integers(0, vocab, size=shape)
        return ids.astype(np.int32)
    if kind == "normal":
        return rng.standard_normal(shape_of(parts[1], sizes)).astype(np.float32)
    raise SystemExit(f"unknown input kind in {spec!r}")


def run(argv, what):
    p = subprocess.run(argv, capture_output=True, text=True)
    if p.returncode != 0:
        print(f"FAIL: {what} exited with {p.returncode}:\n  {' '.join(argv)}\n"
              f"{p.stdout}{p.stderr}")
        return False
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exe", required=True)
    parser.add_argument("--ref", required=True, help="the attn-ref tool")
    parser.add_argument("--mlir", required=True, help="the model's attn IR")
    parser.add_argument("-w", dest="weights", required=True)
    parser.add_argument("--dir", required=True, help="scratch directory")
    parser.add_argument("--fn", default="forward")
    parser.add_argument("--arg", action="append", default=[])
    parser.add_argument("--sizes", action="append", default=[])
    parser.add_argument("--tol", type=float, default=TOLERANCE)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    os.makedirs(args.dir, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    failures = 0
    worst = 0.0
    for sizes_text in args.sizes:
        sizes = parse_sizes(sizes_text)
        tag = args.fn + "." + "_".join(f"{k}{v}" for k, v in sizes.items())
        label = f"{args.fn} {sizes_text}"
        inputs = []
        for a in args.arg:
            name, _, spec = a.partition("=")
            path = os.path.join(args.dir, f"{tag}.{name}.npy")
            np.save(path, make_input(spec, sizes, rng))
            inputs += ["--in", f"{name}={path}"]
        got_path = os.path.join(args.dir, f"{tag}.binary.npy")
        ref_path = os.path.join(args.dir, f"{tag}.ref.npy")
        for p in (got_path, ref_path):
            if os.path.exists(p):
                os.remove(p)
        if not run([args.exe, "forward", "-w", args.weights, "--fn", args.fn,
                    *inputs, "-o", got_path], f"{label}: the binary"):
            failures += 1
            continue
        if not run([args.ref, args.mlir, "--fn", args.fn, "-w", args.weights,
                    *inputs, "--f64", "-o", ref_path], f"{label}: attn-ref"):
            failures += 1
            continue
        got = np.load(got_path)
        ref = np.load(ref_path)
        if got.dtype != np.float32:
            print(f"FAIL: {label}: the binary's result is {got.dtype}, not float32")
            failures += 1
            continue
        if got.shape != ref.shape:
            print(f"FAIL: {label}: shape {list(got.shape)}, "
                  f"the reference's is {list(ref.shape)}")
            failures += 1
            continue
        bad = ~np.isfinite(got)
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            print(f"FAIL: {label}: {int(bad.sum())} non-finite values, the "
                  f"first at {list(where)} ({got[where]}; reference "
                  f"{ref[where]})")
            failures += 1
            continue
        if not np.all(np.isfinite(ref)):
            print(f"FAIL: {label}: the reference has non-finite values "
                  f"(attn-ref bug, or inputs outside the model's domain)")
            failures += 1
            continue
        got64, ref64 = got.astype(np.float64), ref.astype(np.float64)
        diff = np.abs(got64 - ref64)
        norm = float(np.linalg.norm(ref64))
        error = float(np.linalg.norm(got64 - ref64)) / max(norm, 1e-300)
        if norm == 0.0:
            error = float(np.linalg.norm(got64))
        worst = max(worst, error)
        where = tuple(int(i) for i in np.unravel_index(np.argmax(diff), diff.shape)) \
            if diff.size else ()
        ok = error <= args.tol
        detail = ""
        if diff.size:
            detail = (f", max |diff| {diff[where]:.3g} at {list(where)} "
                      f"(binary {got64[where]:.7g}, reference {ref64[where]:.7g})")
        print(f"{'ok' if ok else 'FAIL'}: {label}: shape {list(got.shape)} "
              f"relative error {error:.3g} (tolerance {args.tol:g}){detail}")
        if not ok:
            failures += 1
    print(f"{args.fn}: worst relative error {worst:.3g} over "
          f"{len(args.sizes)} size(s)")
    if failures:
        print(f"{failures} run(s) failed; inputs and outputs kept in {args.dir}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
