"""A model with grouped-query attention (Inputs/gqa_gpt.tfm) compiled by
`attnc build` against its PyTorch twin written here: forward's logits, the
loss and every parameter's gradient, and the incremental entry points.

  check_gqa_torch.py --exe BIN --dir SCRATCH

The twin repeats each key/value head over its group of query heads with
`torch.repeat_interleave` (Hugging Face's `repeat_kv`) and computes
attention with F.softmax, in float64 from the same f32 weights, which it
draws itself (norm weights away from 1) and writes as BIN's weight file.
Checks, each printed on one line:
  - forward's logits for tokens [3, 70] (70 crosses the 64-wide attention
    tiles): max |error| <= 1e-4 * max |logit|;
  - the loss (1e-5 relative) and the gradients of `loss` (BIN's `grad`),
    taken together as one vector, 1e-4 relative, each tensor 1e-3;
  - prefill's logits are forward's at the last position and decode_step's
    on an empty cache forward's at the first (1e-4 * max |logit|).
"""

import argparse
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_grads import load_safetensors  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "Reference"))
from torch_models import write_safetensors  # noqa: E402

VOCAB, CTX, D, HEADS, KV_HEADS, LAYERS = 256, 128, 32, 4, 2, 2


class RmsNorm(torch.nn.Module):
    """nn.RMSNorm (PyTorch 2.4) with eps 1e-6, for older PyTorch."""

    def __init__(self, d):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * \
            self.weight


class FeedForward(torch.nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.linear1 = torch.nn.Linear(d, hidden)
        self.linear2 = torch.nn.Linear(hidden, d)

    def forward(self, x):
        return self.linear2(F.silu(self.linear1(x)))


class GqaLayer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        head = D // HEADS
        self.ln_1 = RmsNorm(D)
        self.q_proj = torch.nn.Linear(D, D, bias=False)
        self.k_proj = torch.nn.Linear(D, KV_HEADS * head, bias=False)
        self.v_proj = torch.nn.Linear(D, KV_HEADS * head, bias=False)
        self.o_proj = torch.nn.Linear(D, D, bias=False)
        self.ln_2 = RmsNorm(D)
        self.mlp = FeedForward(D, 4 * D)

    def attention(self, h):
        b, t, _ = h.shape
        head = D // HEADS

        def split(x, n):
            return x.view(b, t, n, head).transpose(1, 2)

        q = split(self.q_proj(h), HEADS)
        k = split(self.k_proj(h), KV_HEADS)
        v = split(self.v_proj(h), KV_HEADS)
        # repeat_kv: query head i reads key/value head i // (H / H_kv).
        k = torch.repeat_interleave(k, HEADS // KV_HEADS, dim=1)
        v = torch.repeat_interleave(v, HEADS // KV_HEADS, dim=1)
        scores = q @ k.transpose(-2, -1) / head ** 0.5
        future = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        weights = F.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
        return (weights @ v).transpose(1, 2).reshape(b, t, D)

    def forward(self, x):
        x = x + self.o_proj(self.attention(self.ln_1(x)))
        return x + self.mlp(self.ln_2(x))


class GqaGpt(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = torch.nn.Embedding(VOCAB, D)
        self.wpe = torch.nn.Embedding(CTX, D)
        self.h = torch.nn.ModuleList(GqaLayer() for _ in range(LAYERS))
        self.ln_f = RmsNorm(D)

    def forward(self, tokens):
        x = self.wte(tokens) + self.wpe(torch.arange(tokens.shape[1]))
        for layer in self.h:
            x = layer(x)
        return self.ln_f(x) @ self.wte.weight.T

    def loss(self, tokens, targets):
        logits = self.forward(tokens)
        return F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))


def run(argv):
    p = subprocess.run(argv, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(argv)} exited with {p.returncode}:\n"
                 f"{p.stdout}{p.stderr}")
    return p.stdout


def report(what, error, tolerance):
    ok = error <= tolerance
    print(f"{'ok' if ok else 'FAIL'}: {what}: error {error:.3g} "
          f"(tolerance {tolerance:g})")
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exe", required=True)
    parser.add_argument("--dir", required=True)
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    path = lambda name: os.path.join(args.dir, name)  # noqa: E731

    torch.manual_seed(0)
    model = GqaGpt()
    with torch.no_grad():
        for name, p in model.named_parameters():
            scale = 1.0 / p.shape[-1] ** 0.5 if p.dim() > 1 else 0.3
            p.copy_(torch.randn(p.shape) * scale + (1.0 if "ln" in name
                                                     else 0.0))
    write_safetensors(path("w.safetensors"), model.state_dict())
    model = model.double()
    ok = True
    for t in (3, 70):
        tokens = torch.randint(0, VOCAB, (2, t))
        targets = torch.randint(0, VOCAB, (2, t))
        np.save(path("tokens.npy"), tokens.numpy().astype(np.int32))
        np.save(path("targets.npy"), targets.numpy().astype(np.int32))
        inputs = ["-w", path("w.safetensors"), "--in",
                  "tokens=" + path("tokens.npy")]

        expected = model(tokens).detach().numpy()
        scale = np.abs(expected).max()
        run([args.exe, "forward", *inputs, "-o", path("logits.npy")])
        got = np.load(path("logits.npy")).astype(np.float64)
        ok &= report(f"forward T={t} logits {list(got.shape)}",
                     np.abs(got - expected).max() / scale, 1e-4)

        loss = model.loss(tokens, targets)
        model.zero_grad()
        loss.backward()
        out = run([args.exe, "grad", "--fn", "loss", *inputs, "--in",
                   "targets=" + path("targets.npy"), "-o",
                   path("grads.safetensors")])
        got_loss = float(out.split("loss:")[1].split()[0])
        ok &= report(f"loss T={t}", abs(got_loss - loss.item()) /
                     abs(loss.item()), 1e-5)
        grads = load_safetensors(path("grads.safetensors"))
        named = dict(model.named_parameters())
        if sorted(grads) != sorted(named):
            print(f"FAIL: gradient names differ: "
                  f"{sorted(set(grads) ^ set(named))}")
            return 1
        diff = norm = worst = 0.0
        for name, p in named.items():
            g, r = grads[name].astype(np.float64), p.grad.numpy()
            d, n = np.linalg.norm(g - r), np.linalg.norm(r)
            diff, norm, worst = diff + d * d, norm + n * n, max(worst, d / n)
        ok &= report(f"gradients of {len(named)} tensors T={t}",
                     (diff / norm) ** 0.5, 1e-4)
        ok &= report(f"worst tensor's gradient T={t}", worst, 1e-3)

        run([args.exe, "forward", *inputs, "--entry", "prefill", "-o",
             path("prefill.npy")])
        prefill = np.load(path("prefill.npy")).astype(np.float64)
        ok &= report(f"prefill T={t} vs forward's last position",
                     np.abs(prefill - expected[:, -1]).max() / scale, 1e-4)
    np.save(path("one.npy"), tokens[:, :1].numpy().astype(np.int32))
    run([args.exe, "forward", "-w", path("w.safetensors"), "--in",
         "tokens=" + path("one.npy"), "--entry", "decode_step", "-o",
         path("step.npy")])
    step = np.load(path("step.npy")).astype(np.float64)
    ok &= report("decode_step on an empty cache vs forward's first position",
                 np.abs(step - expected[:, 0]).max() / scale, 1e-4)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
