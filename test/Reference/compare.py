"""Compares attn-ref's results with PyTorch's, for the torch-*.tfm tests.

  compare.py ACTUAL EXPECTED [--tol T]

ACTUAL and EXPECTED are both .npy files, or both safetensors files (F32 or
F64), which must hold the same tensor names. Prints the shape (or the tensor
count) and the largest error relative to the largest expected magnitude, and
fails when it exceeds T (default 1e-9: both sides compute in double from the
same f32 weights, so anything larger is a real difference, not rounding).
Needs numpy only, so that it starts fast.
"""

import argparse
import json
import struct
import sys

import numpy as np


def load_safetensors(path):
    data = open(path, "rb").read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    body = data[8 + length:]
    dtypes = {"F32": "<f4", "F64": "<f8"}
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        tensors[name] = np.frombuffer(body[begin:end],
                                      dtype=dtypes[entry["dtype"]]).reshape(
                                          entry["shape"]).astype(np.float64)
    return tensors


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("actual")
    parser.add_argument("expected")
    parser.add_argument("--tol", type=float, default=1e-9)
    args = parser.parse_args()
    if args.expected.endswith(".safetensors"):
        actual = load_safetensors(args.actual)
        expected = load_safetensors(args.expected)
        if sorted(actual) != sorted(expected):
            print("tensor names differ:", sorted(set(actual) ^ set(expected)))
            return 1
        what = f"{len(expected)} tensors"
    else:
        actual = {"": np.load(args.actual).astype(np.float64)}
        expected = {"": np.load(args.expected).astype(np.float64)}
        what = f"shape {list(expected[''].shape)}"
    scale, error, finite = 1e-300, 0.0, True
    for name, value in expected.items():
        if actual[name].shape != value.shape:
            print(f"shape mismatch for '{name}': {list(actual[name].shape)} "
                  f"vs {list(value.shape)}")
            return 1
        scale = max(scale, float(np.max(np.abs(value), initial=0.0)))
        error = max(error, float(np.max(np.abs(actual[name] - value),
                                        initial=0.0)))
        finite = finite and bool(np.all(np.isfinite(actual[name])))
    error /= scale
    ok = finite and error <= args.tol
    print(f"{'match' if ok else 'MISMATCH'}: {what} relative error "
          f"{error:.3g} (tolerance {args.tol:g})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
