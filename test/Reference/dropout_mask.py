"""Checks attn-ref's seeded dropout against abi.h's stream, reimplemented.

  dropout_mask.py OUT.npy SEED STREAM RATE

OUT.npy is attn-ref's dropout of a tensor of ones: each element must be
1 / (1 - RATE) where (attn_dropout_bits(SEED, STREAM, i) >> 40) >=
floor(RATE * 2^24) for its row-major index i, and 0 elsewhere.
"""

import sys

import numpy as np

MASK = (1 << 64) - 1


def splitmix64(x):
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def bits(seed, stream, index):
    return splitmix64((seed + 0x9E3779B97F4A7C15 * (stream + 1) +
                       0xD1B54A32D192ED03 * index) & MASK)


def main():
    out = np.load(sys.argv[1]).ravel()
    seed, stream, rate = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    threshold = int(rate * 2 ** 24)
    expected = np.array([1 / (1 - rate) if bits(seed, stream, i) >> 40 >=
                         threshold else 0.0 for i in range(out.size)])
    kept = int(np.count_nonzero(expected))
    ok = np.array_equal(out, expected) and 0 < kept < out.size
    print(f"{'match' if ok else 'MISMATCH'}: {kept} of {out.size} kept")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
