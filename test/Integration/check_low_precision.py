"""Checks a model built with `attnc --weights bf16|int8` against an
independent reference: the f32 build of the same model run on weights that
numpy rounds to bf16 or quantises as llama.cpp's Q8_0 and widens back.

  check_low_precision.py --low BIN --f32 BIN --format int8 -w W.safetensors
                         --dir SCRATCH [--tied] --sizes B=1,T=1 ...

Without --tied, every weight the low build's `info` marks "(products read
FORMAT)" is read only by matrix products, so the low build on W computes
exactly what the f32 build computes on dequant(W), up to the order of f32
additions: relative L2 error at most 1e-5. A wrong scale, block, byte or
row shows as 1e-2 or more. An int8 build for a CPU with AVX512-VNNI (its
`info` says "single-row products: the row rounded to int16") also rounds
each row it multiplies alone to int16, one scale per row: up to
max |row| / 65534 per element, 3e-5 at the logits of a few layers (the
exact check at B=1); the limit is then 2e-4, still far below a wrong
scale's error (check_int8_rows.py checks those products exactly).

With --tied (a weight also read by a gather, which stays f32), the check is
the quantisation error itself against the f32 build on W: relative L2
error of the logits at most 3e-2 for int8 (a Q8_0 weight is within
max|w| / 254 of w, about 0.4 % of a typical weight, which a few layers grow
to about 1 %) and 1e-2 for bf16 (8 bits of mantissa, 0.2 %), and the same
greedy token at at least 95 % of the positions.
"""

import argparse
import os
import subprocess
import sys

import numpy as np

import safetensors_io


def bf16(w):
    """Rounded to the nearest bf16, ties to even, back in f32."""
    bits = w.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return (bits.astype(np.uint32) << 16).view(np.float32)


def q8_0(w, block=32):
    """Q8_0: per block of a row, scale = max|w| / 127, q = round half away
    from zero of w * (1 / scale); back as q * scale, in f32."""
    rows = w.reshape(-1, block).astype(np.float32)
    scale = (np.abs(rows).max(axis=1, keepdims=True) / np.float32(127)).astype(np.float32)
    inverse = np.where(scale > 0, np.float32(1) / np.where(scale > 0, scale, 1),
                       0).astype(np.float32)
    x = (rows * inverse).astype(np.float32)
    q = np.sign(x) * np.floor(np.abs(x) + np.float32(0.5))
    return (q.astype(np.float32) * scale).astype(np.float32).reshape(w.shape)


def model_info(exe):
    return subprocess.run([exe, "info"], check=True, capture_output=True,
                          text=True).stdout


def low_precision_params(info, fmt):
    return [line.split()[0] for line in info.splitlines()
            if line.endswith("(products read %s)" % fmt)]


def forward(exe, weights, tokens, out):
    subprocess.run([exe, "forward", "-w", weights, "--in",
                    "tokens=" + tokens, "-o", out], check=True)
    return np.load(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--low", required=True)
    parser.add_argument("--f32", required=True)
    parser.add_argument("--format", choices=["bf16", "int8"], required=True)
    parser.add_argument("-w", required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--tied", action="store_true")
    parser.add_argument("--sizes", action="append", required=True)
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)

    info = model_info(args.low)
    names = low_precision_params(info, args.format)
    exact_limit = 2e-4 if "the row rounded to int16" in info else 1e-5
    if not names:
        sys.exit("no parameter is read in %s" % args.format)
    weights = {k: v.copy() for k, v in safetensors_io.read(args.w).items()}
    reference_weights = args.w
    if not args.tied:
        convert = bf16 if args.format == "bf16" else q8_0
        for name in names:
            weights[name] = convert(weights[name])
        reference_weights = os.path.join(args.dir, "dequantised.safetensors")
        safetensors_io.write_f32(reference_weights, weights)

    rng = np.random.default_rng(7)
    for text in args.sizes:
        sizes = dict(item.split("=") for item in text.split(","))
        shape = (int(sizes["B"]), int(sizes["T"]))
        tokens = os.path.join(args.dir, "tokens.npy")
        np.save(tokens, rng.integers(0, 256, shape).astype(np.int32))
        low = forward(args.low, args.w, tokens,
                      os.path.join(args.dir, "low.npy"))
        ref = forward(args.f32, reference_weights, tokens,
                      os.path.join(args.dir, "ref.npy"))
        error = np.linalg.norm(low - ref) / np.linalg.norm(ref)
        agree = np.mean(low.argmax(-1) == ref.argmax(-1))
        limit = exact_limit if not args.tied else (
            3e-2 if args.format == "int8" else 1e-2)
        ok = np.isfinite(low).all() and error <= limit and (
            not args.tied or agree >= 0.95)
        print("%s %s %s: %d low-precision weights, relative error %.2e "
              "(limit %.0e), greedy agreement %.3f"
              % (args.format, "tied" if args.tied else "exact", text,
                 len(names), error, limit, agree))
        if not ok:
            sys.exit("FAILED")


if __name__ == "__main__":
    main()
