"""Checks the single-row products of a model built with `attnc --weights
int8` for a CPU with AVX512-VNNI against numpy: the weights quantised as
Q8_0 and the row rounded to int16 with one scale for the row (dx = max |x|
/ 32767, q = round-half-even(x * (32767 / max |x|)) in f32), their
integer products summed exactly and scaled in double precision.

  check_int8_rows.py --exe BIN --dir SCRATCH

The model is Inputs/int8_rows.tfm. The compiled code differs from the
reference only by the order of its f32 additions of block sums: relative
L2 error at most 1e-6. Each row has one element of 2000 (its weight column
is zero), so dx is 0.06 and rounding the row to int16 moves the result by
about 1e-2 from the product on the f32 row, which the check requires too,
so that it cannot pass on f32 rows. A batch of 5 rows runs its first four
as a group on f32 rows (the dot-product kernel's row groups, which read
the weights once for four rows) and its last alone on int16. A row with a
NaN gives NaN.

With --bf16-products (a build with `--precision bf16` too), a batch of 9
rows runs the packed kernel, which rounds the rows and the dequantised
weights (q * scale in f32) to bf16 and multiplies them with vdpbf16ps: it
must equal numpy's products of those bf16 values to 1e-5 and differ from
the f32 rows' product by at least 1e-4 (bf16 keeps 8 bits: about 2e-3).
"""

import argparse
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import check_low_precision  # noqa: E402  (its Q8_0)
import safetensors_io  # noqa: E402
from check_bf16_products import bf16, rel  # noqa: E402

TOL = 1e-6
F32_GAP = 1e-3
OUTLIER = 2000.0


def q8_0_parts(w, block=32):
    """Q8_0's integers and per-block scales of w [N, K] (check_low_precision's
    rounding, undone by its scale)."""
    rows = w.reshape(w.shape[0], -1, block).astype(np.float32)
    scale = (np.abs(rows).max(axis=2) / np.float32(127)).astype(np.float32)
    safe = np.where(scale > 0, scale, 1)[..., None]
    q = np.rint(check_low_precision.q8_0(w, block).reshape(rows.shape) / safe)
    return q.astype(np.float64), scale.astype(np.float64)


def int16_row(x):
    """x [K] rounded to int16 as the kernel does: (q, dx)."""
    amax = np.float32(np.abs(x).max())
    inverse = np.float32(32767) / amax if amax > 0 else np.float32(0)
    q = np.rint((x * inverse).astype(np.float32))
    return q.astype(np.float64), float(amax / np.float32(32767))


def int16_product(x, q, scale, bias):
    """One row: dx * sum_b scale[n, b] * (q[n, b, :] . qx[b, :]) + bias."""
    qx, dx = int16_row(x)
    blocks = qx.reshape(1, q.shape[1], q.shape[2])
    return dx * np.einsum("nb,nb->n", scale, (q * blocks).sum(axis=2)) + bias


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exe", required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--bf16-products", action="store_true")
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    path = lambda name: os.path.join(args.dir, name)
    rng = np.random.default_rng(11)

    def forward(entry, x):
        np.save(path("x.npy"), x.astype(np.float32))
        p = subprocess.run([args.exe, "forward", "--entry", entry, "-w",
                            path("w.safetensors"), "--in", "x=" + path("x.npy"),
                            "-o", path("y.npy")], capture_output=True, text=True)
        if p.returncode:
            sys.exit("FAIL: forward: " + p.stderr.strip())
        return np.load(path("y.npy")).astype(np.float64)

    layers = {"forward": ("proj", 288, 96), "streamed": ("wide", 640, 512)}
    weights = {}
    for name, k, n in layers.values():
        w = rng.normal(0, 0.05, (n, k)).astype(np.float32)
        w[:, 5] = 0
        weights[name + ".weight"] = w
        weights[name + ".bias"] = rng.normal(0, 0.1, n).astype(np.float32)
    safetensors_io.write_f32(path("w.safetensors"), weights)

    for entry, (name, k, n) in layers.items():
        w, bias = weights[name + ".weight"], weights[name + ".bias"].astype(np.float64)
        q, scale = q8_0_parts(w)
        f32_rows = lambda x: x.astype(np.float64) @ check_low_precision.q8_0(w).T.astype(np.float64) + bias
        for rows in (1, 5):
            x = rng.normal(0, 1, (rows, k)).astype(np.float32)
            x[:, 5] = OUTLIER
            got = forward(entry, x)
            single = rows - 1  # the row the kernel takes alone
            want = int16_product(x[single], q, scale, bias)
            error, gap = rel(got[single], want), rel(f32_rows(x[single:]), want[None])
            print(f"{entry} B={rows} row {single}: relative error {error:.2e} "
                  f"(limit {TOL:.0e}); the f32 row is {gap:.2e} away")
            if not (error <= TOL and gap >= F32_GAP):
                sys.exit("FAIL")
            if single:
                grouped = rel(got[:single], f32_rows(x[:single]))
                print(f"{entry} B={rows} rows 0-{single - 1} on f32 rows: "
                      f"relative error {grouped:.2e} (limit 1e-5)")
                if grouped > 1e-5:
                    sys.exit("FAIL")
        x = rng.normal(0, 1, (1, k)).astype(np.float32)
        x[0, 7] = np.nan
        if not np.isnan(forward(entry, x)).all():
            sys.exit(f"FAIL: {entry}: a row with a NaN gave a number")
        if args.bf16_products:
            x = rng.normal(0, 1, (9, k)).astype(np.float32)
            got = forward(entry, x)
            want = bf16(x) @ bf16(check_low_precision.q8_0(w)).T + bias
            error, gap = rel(got, want), rel(f32_rows(x), want)
            print(f"{entry} B=9 packed bf16 products: relative error {error:.2e} "
                  f"(limit 1e-05); the f32 rows are {gap:.2e} away")
            if not (error <= 1e-5 and gap >= 1e-4):
                sys.exit("FAIL")
    print("ok: int16 row products equal numpy's")


if __name__ == "__main__":
    main()
