"""Checks the weights a compiled model's `init` draws against the initialisers
of its parameter table (`attnc emit --stage params`), and optionally that the
first training step's loss is near ln(vocab), the loss of a uniform guess.

  check_init.py --exe BIN --params PARAMS.txt --dir SCRATCH
                [--data TEXT --vocab N --tol 0.5]

Each tensor is checked against its initialiser: zeros and ones exactly;
normal(mean, std) by the sample mean and standard deviation; uniform(lo, hi)
and xavier_uniform(gain) (uniform(-b, b), b = gain * sqrt(6 / (fan_in +
fan_out)), as torch.nn.init computes it) by the range too. The tolerances are
5 standard errors of each statistic over the tensor's n elements (the mean's
sigma / sqrt(n); the standard deviation's sigma * sqrt(1 / (2 n)), a normal's
and above a uniform's): a wrong std, mean or kind fails, a correct draw passes
but once in millions.

With --data, `train --steps 1` on the file must start within --tol of
ln(--vocab): a model whose logits start near zero, as GPT-2's initialisation
gives, predicts every token with probability about 1 / vocab.
"""

import argparse
import math
import os
import re
import subprocess
import sys

import numpy as np

from compare_grads import load_safetensors

PARAM_LINE = re.compile(r"^(\S+) +f32\[([0-9, ]+)\] +(\w+)\(([^)]*)\)$")
# The arguments of each initialiser in the dialect's order (attn.param).
INIT_ARGS = {"normal": ["mean", "std"], "uniform": ["lo", "hi"],
             "xavier_uniform": ["gain"], "zeros": [], "ones": []}


def read_params(path):
    """The table's (name, shape, kind, args) rows; the initialisers are
    written with keyword arguments, normal(std: 0.02, mean: 0)."""
    rows = []
    with open(path) as f:
        for line in f:
            match = PARAM_LINE.match(line.rstrip("\n"))
            if not match:
                continue
            name, shape, kind, args = match.groups()
            shape = [int(d) for d in shape.split(",")]
            keywords = dict((k.strip(), float(v)) for k, v in
                            (a.split(":") for a in args.split(",") if a))
            rows.append((name, shape, kind,
                         [keywords[k] for k in INIT_ARGS[kind]]))
    return rows


def expected_moments(shape, kind, args):
    """(mean, std, lo, hi) of initialiser `kind`; lo and hi None if unbounded."""
    if kind == "normal":
        mean, std = args
        return mean, std, None, None
    if kind == "uniform":
        lo, hi = args
    elif kind == "xavier_uniform":
        receptive = math.prod(shape[2:])
        fan_in, fan_out = shape[1] * receptive, shape[0] * receptive
        b = args[0] * math.sqrt(6.0 / (fan_in + fan_out))
        lo, hi = -b, b
    else:
        raise ValueError("unknown initialiser " + kind)
    return (lo + hi) / 2, (hi - lo) / math.sqrt(12), lo, hi


def check_tensor(name, shape, kind, args, value):
    """A failure message, or None."""
    if list(value.shape) != shape:
        return "%s: shape %s, expected %s" % (name, list(value.shape), shape)
    x = value.astype(np.float64).ravel()
    if kind in ("zeros", "ones"):
        want = 0.0 if kind == "zeros" else 1.0
        return None if np.all(x == want) else "%s: not all %s" % (name, kind)
    mean, std, lo, hi = expected_moments(shape, kind, args)
    n = x.size
    mean_tol = 5 * std / math.sqrt(n)
    std_tol = 5 * std * math.sqrt(1.0 / (2 * n))
    if abs(x.mean() - mean) > mean_tol:
        return "%s: mean %.6g, expected %.6g +- %.2g" % (name, x.mean(), mean,
                                                        mean_tol)
    if abs(x.std() - std) > std_tol:
        return "%s: std %.6g, expected %.6g +- %.2g" % (name, x.std(), std,
                                                       std_tol)
    if lo is not None and (x.min() < lo or x.max() > hi):
        return "%s: values outside [%g, %g]" % (name, lo, hi)
    return None


def first_loss(exe, data, weights, out):
    result = subprocess.run(
        [exe, "train", "-w", weights, "--data", data, "--steps", "1",
         "--batch", "8", "--seq", "128", "--seed", "1", "-o", out],
        capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("FAIL: train: " + result.stderr.strip())
    match = re.search(r"step 1/1\s+loss\s+(\S+)", result.stdout + result.stderr)
    if not match:
        sys.exit("FAIL: no loss in train's output")
    return float(match.group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exe", required=True)
    parser.add_argument("--params", required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--data")
    parser.add_argument("--vocab", type=int)
    parser.add_argument("--tol", type=float, default=0.5)
    args = parser.parse_args()

    weights = os.path.join(args.dir, "init.safetensors")
    subprocess.run([args.exe, "init", "--seed", "1", "-o", weights],
                   check=True, capture_output=True)
    tensors = load_safetensors(weights)
    rows = read_params(args.params)
    if not rows or len(rows) != len(tensors):
        sys.exit("FAIL: %d parameters in the table, %d tensors" %
                 (len(rows), len(tensors)))
    failures = [m for m in (check_tensor(name, shape, kind, init_args,
                                         tensors[name])
                            for name, shape, kind, init_args in rows) if m]
    for message in failures:
        print("FAIL: " + message)
    if failures:
        sys.exit(1)
    print("ok: %d tensors drawn as their initialisers say" % len(rows))

    if args.data:
        loss = first_loss(args.exe, args.data, weights,
                          os.path.join(args.dir, "trained.safetensors"))
        uniform = math.log(args.vocab)
        verdict = "ok" if abs(loss - uniform) <= args.tol else "FAIL"
        print("%s: first loss %.4f, ln %d = %.4f" % (verdict, loss, args.vocab,
                                                    uniform))
        if verdict != "ok":
            sys.exit(1)


if __name__ == "__main__":
    main()
