"""Checks the dropout of a binary built from Inputs/dropout.mlir against a
NumPy implementation of abi.h's counter-based stream.

  check_dropout.py --exe BIN --dir SCRATCH

`dropout`: the kept elements must be exactly those with
(attn_dropout_bits(seed, 3, i) >> 40) >= rate * 2^24 (bit-exact mask), and
kept values x / (1 - rate) to 1 ulp. `attention` (causal, key padding,
attention dropout 0.2, stream 5): the output and the three gradients
against float64 NumPy attention with the same mask over [B, H, T, S],
relative error <= 1e-4.
"""

import argparse
import os
import subprocess
import sys

import numpy as np

M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def splitmix64(x):
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def dropout_bits(seed, stream, index):
    with np.errstate(over="ignore"):
        base = np.uint64(seed) + np.uint64(0x9E3779B97F4A7C15) * np.uint64(stream + 1)
        return splitmix64(base + np.uint64(0xD1B54A32D192ED03) * index.astype(np.uint64))


def keep_mask(seed, stream, shape, rate):
    index = np.arange(int(np.prod(shape)), dtype=np.uint64).reshape(shape)
    threshold = np.uint64(int(rate * 16777216.0))
    return (dropout_bits(seed, stream, index) >> np.uint64(40)) >= threshold


def run(argv):
    p = subprocess.run(argv, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(argv)} exited with {p.returncode}\n"
                 f"{p.stdout}{p.stderr}")


def attention(q, k, v, pad, keep, rate, do):
    """Forward and backward of causal attention with key padding and
    dropout on the weights, in float64."""
    B, H, T, D = q.shape
    S = k.shape[2]
    scale = 1.0 / np.sqrt(D)
    s = np.einsum("bhtd,bhsd->bhts", q, k) * scale
    t_idx = np.arange(T)[:, None]
    s_idx = np.arange(S)[None, :]
    hidden = (s_idx > t_idx + (S - T))[None, None] | pad[:, None, None, :]
    s = np.where(hidden, -np.inf, s)
    m = s.max(-1, keepdims=True)
    m = np.where(np.isinf(m), 0.0, m)
    e = np.where(hidden, 0.0, np.exp(s - m))
    total = e.sum(-1, keepdims=True)
    p = np.where(total > 0, e / np.where(total > 0, total, 1), 0.0)
    dropped = p * keep / (1 - rate)
    o = np.einsum("bhts,bhsd->bhtd", dropped, v)
    dv = np.einsum("bhts,bhtd->bhsd", dropped, do)
    ddropped = np.einsum("bhtd,bhsd->bhts", do, v)
    dp = ddropped * keep / (1 - rate)
    ds = p * (dp - (p * dp).sum(-1, keepdims=True)) * scale
    dq = np.einsum("bhts,bhsd->bhtd", ds, k)
    dk = np.einsum("bhts,bhtd->bhsd", ds, q)
    return o, dq, dk, dv


def relative(got, ref):
    norm = np.linalg.norm(ref)
    return np.linalg.norm(got - ref) / norm if norm else np.linalg.norm(got)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exe", required=True)
    parser.add_argument("--dir", required=True)
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    rng = np.random.default_rng(1)
    failures = 0
    path = lambda name: os.path.join(args.dir, name)

    for n, seed in [(1, 0), (300, 12345), (1000, 2**63 + 977)]:
        x = (rng.standard_normal((n, 37)) + 3.0).astype(np.float32)  # no zeros
        np.save(path("x.npy"), x)
        np.save(path("seed.npy"), np.array(seed, dtype=np.uint64).astype(np.int64))
        run([args.exe, "forward", "--fn", "dropout", "--in", f"x={path('x.npy')}",
             "--in", f"seed={path('seed.npy')}", "-o", path("y.npy")])
        y = np.load(path("y.npy"))
        keep = keep_mask(seed, 3, x.shape, 0.25)
        got_keep = y != 0
        mismatches = int((got_keep != keep).sum())
        scaled = x * np.float32(1 / (1 - 0.25))
        value_error = float(np.max(np.abs(y[keep] - scaled[keep]) /
                                   np.abs(scaled[keep]))) if keep.any() else 0.0
        ok = mismatches == 0 and value_error <= 2.4e-7
        failures += not ok
        print(f"{'ok' if ok else 'FAIL'}: dropout N={n} seed={seed}: "
              f"{int(keep.sum())}/{keep.size} kept, {mismatches} mask "
              f"mismatches, value error {value_error:.3g}")

    for (B, T, S, seed) in [(1, 1, 1, 7), (4, 7, 7, 99), (3, 64, 64, 5),
                            (4, 100, 100, 2**40 + 3), (2, 7, 100, 11),
                            (2, 100, 7, 13)]:
        q = rng.standard_normal((B, 2, T, 16)).astype(np.float32)
        k = rng.standard_normal((B, 2, S, 16)).astype(np.float32)
        v = rng.standard_normal((B, 2, S, 16)).astype(np.float32)
        do = rng.standard_normal((B, 2, T, 16)).astype(np.float32)
        pad = np.zeros((B, S), dtype=bool)
        for row in range(B):
            cut = S if row % 4 == 2 else (row * S) // 3
            if cut:
                pad[row, S - cut:] = True
        for name, value in [("q", q), ("k", k), ("v", v), ("do", do), ("pad", pad)]:
            np.save(path(f"{name}.npy"), value)
        np.save(path("seed.npy"), np.array(seed, dtype=np.int64))
        run([args.exe, "forward", "--fn", "attention",
             *sum([["--in", f"{n}={path(n + '.npy')}"]
                   for n in ["q", "k", "v", "do", "pad", "seed"]], []),
             "-o", path("out.npy")])
        keep = keep_mask(seed, 5, (B, 2, T, S), 0.2)
        refs = attention(q.astype(np.float64), k.astype(np.float64),
                         v.astype(np.float64), pad, keep, 0.2,
                         do.astype(np.float64))
        errors = [relative(np.load(path(f"out.{i}.npy")).astype(np.float64), r)
                  for i, r in enumerate(refs)]
        ok = max(errors) <= 1e-4
        failures += not ok
        print(f"{'ok' if ok else 'FAIL'}: attention dropout B={B} T={T} S={S}: "
              f"relative errors o {errors[0]:.3g}, dq {errors[1]:.3g}, "
              f"dk {errors[2]:.3g}, dv {errors[3]:.3g} (tolerance 1e-4)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
