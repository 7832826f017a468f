"""The gradient of loss_without_train.tfm's second scalar fn, `smoothed`
(`attnc --entry smoothed_grad`, `./NAME grad --entry smoothed`), against
PyTorch autograd on a module written here in float64: loss and every
parameter's gradient to 1e-5 relative (the binary is f32 throughout, a
few hundred roundings deep).

  check_fn_grad_torch.py --exe BIN -w W.safetensors --dir SCRATCH
"""

import argparse
import math
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

from safetensors_io import read as load_safetensors

B, T, VOCAB = 2, 9, 64


def sinusoidal(n, d):
    """Vaswani et al.'s table (docs/Language.md, sinusoidal)."""
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    freq = torch.pow(10000.0, -torch.arange(0, d, 2, dtype=torch.float64) / d)
    pe = torch.zeros(n, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * freq)
    pe[:, 1::2] = torch.cos(pos * freq)
    return pe


def smoothed(E, W, tokens, targets):
    x = E[tokens] + sinusoidal(tokens.shape[1], E.shape[1])
    q = x @ W
    scores = q @ x.transpose(-1, -2) / math.sqrt(E.shape[1])
    hidden = torch.ones(T, T, dtype=torch.bool).triu(1)
    h = scores.masked_fill(hidden, float("-inf")).softmax(-1) @ x
    logits = h @ E.t()
    return F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1),
                           label_smoothing=0.1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--exe", required=True)
    p.add_argument("-w", required=True)
    p.add_argument("--dir", required=True)
    args = p.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    rng = np.random.default_rng(5)
    paths = {}
    for name in ("tokens", "targets"):
        paths[name] = os.path.join(args.dir, f"{name}.npy")
        np.save(paths[name], rng.integers(0, VOCAB, size=(B, T)).astype(np.int32))
    grads = os.path.join(args.dir, "grads.safetensors")
    out = subprocess.run([args.exe, "grad", "-w", args.w, "--entry", "smoothed",
                          "--in", f"tokens={paths['tokens']}",
                          "--in", f"targets={paths['targets']}", "-o", grads],
                         capture_output=True, text=True)
    if out.returncode != 0:
        print(f"FAIL: grad --entry smoothed: {out.stderr.strip()}")
        return 1
    loss = float(out.stdout.split()[-1])
    weights = load_safetensors(args.w)
    params = {k: torch.tensor(weights[k], dtype=torch.float64, requires_grad=True)
              for k in ("E", "W")}
    tokens = torch.from_numpy(np.load(paths["tokens"]).astype(np.int64))
    targets = torch.from_numpy(np.load(paths["targets"]).astype(np.int64))
    ref = smoothed(params["E"], params["W"], tokens, targets)
    ref.backward()
    failures = 0
    err = abs(loss - float(ref)) / abs(float(ref))
    print(f"loss {loss:.7f} (PyTorch {float(ref):.7f}): relative error {err:.1e}")
    failures += err > 1e-5
    got = load_safetensors(grads)
    for name, param in params.items():
        want = param.grad.numpy()
        err = np.linalg.norm(got[name] - want) / np.linalg.norm(want)
        print(f"{name}: relative error {err:.1e}")
        failures += not err <= 1e-5
    print("FAIL" if failures else "ok: smoothed_grad matches PyTorch")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
