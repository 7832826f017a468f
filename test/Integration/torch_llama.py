"""Compares a Llama-shaped model compiled by `attnc build` with a PyTorch
module written here from Hugging Face's LlamaForCausalLM (rotate_half and
apply_rotary_pos_emb as transformers writes them, RMSNorm, SwiGLU MLP,
causal attention, untied lm_head), on the same weights and tokens.

  torch_llama.py --exe BIN --dir SCRATCH --vocab V --d D --layers L
                 --heads H --kv-heads K --hidden F --eps E --base R
                 --sizes B=2,T=9 ...

Writes random f32 weights under Hugging Face's names (norm weights near 1,
not exactly 1, so that a swapped or ignored weight shows), runs the
binary's `forward` and `grad` (the loss: mean cross-entropy of next
tokens), and computes both in float64 with PyTorch's autograd from the same
f32 weights. The checks (relative errors, ||binary - torch||_2 /
||torch||_2): the logits to 1e-5, the loss to 1e-5, and every parameter's
gradient to 1e-4, each tensor on its own. Prints one line per check; exits 1
on a failure. Needs torch and numpy only.
"""

import argparse
import math
import os
import subprocess
import sys

import numpy as np

import safetensors_io
import torch
import torch.nn as nn
import torch.nn.functional as F

FORWARD_TOL = 1e-5
GRAD_TOL = 1e-4


class RMSNorm(nn.Module):
    """LlamaRMSNorm: x / sqrt(mean(x^2) + eps) * weight."""

    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class RotaryEmbedding(nn.Module):
    """LlamaRotaryEmbedding: inv_freq in f32 as transformers computes it,
    the angles doubled over both halves."""

    def __init__(self, dim, base):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x, position_ids):
        freqs = position_ids[:, None].float() * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


class Attention(nn.Module):
    def __init__(self, d, heads, kv_heads):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, d // heads
        self.q_proj = nn.Linear(d, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(d, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(d, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, d, bias=False)

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        # repeat_kv: query head h reads key/value head h // (heads / kv_heads).
        groups = self.heads // self.kv_heads
        k = k.repeat_interleave(groups, dim=1)
        v = v.repeat_interleave(groups, dim=1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        causal = torch.ones(t, t, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(causal, float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v
        return self.o_proj(out.transpose(1, 2).reshape(b, t, -1))


class MLP(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(d, hidden, bias=False)
        self.up_proj = nn.Linear(d, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.self_attn = Attention(a.d, a.heads, a.kv_heads)
        self.mlp = MLP(a.d, a.hidden)
        self.input_layernorm = RMSNorm(a.d, a.eps)
        self.post_attention_layernorm = RMSNorm(a.d, a.eps)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.embed_tokens = nn.Embedding(a.vocab, a.d)
        self.layers = nn.ModuleList(DecoderLayer(a) for _ in range(a.layers))
        self.norm = RMSNorm(a.d, a.eps)
        self.rotary_emb = RotaryEmbedding(a.d // a.heads, a.base)

    def forward(self, tokens):
        x = self.embed_tokens(tokens)
        cos, sin = self.rotary_emb(x, torch.arange(tokens.shape[1]))
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.norm(x)


class LlamaForCausalLM(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.model = LlamaModel(a)
        self.lm_head = nn.Linear(a.d, a.vocab, bias=False)

    def forward(self, tokens):
        return self.lm_head(self.model(tokens))


def relative(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    norm = np.linalg.norm(want)
    return float(np.linalg.norm(got - want) / norm if norm else
                 np.linalg.norm(got))


def random_weights(module, generator):
    """f32 weights: N(0, 1/in) matrices, N(0, 1) embedding rows, norms
    1 + N(0, 0.1^2)."""
    weights = {}
    for name, p in module.state_dict().items():
        if name.endswith("norm.weight") or name.endswith("layernorm.weight"):
            value = 1 + 0.1 * torch.randn(p.shape, generator=generator)
        elif name.endswith("embed_tokens.weight"):
            value = torch.randn(p.shape, generator=generator)
        else:
            value = torch.randn(p.shape, generator=generator) / math.sqrt(
                p.shape[-1])
        weights[name] = value.float().numpy()
    return weights


def run(argv):
    p = subprocess.run(argv, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(argv)} exited with "
                         f"{p.returncode}:\n{p.stdout}{p.stderr}")
    return p.stdout


def check_sizes(args, model, weights_path, sizes, generator, tag):
    b, t = sizes["B"], sizes["T"]
    tokens = torch.randint(0, args.vocab, (b, t), generator=generator)
    targets = torch.randint(0, args.vocab, (b, t), generator=generator)
    paths = {n: os.path.join(args.dir, f"{tag}.{n}.npy")
             for n in ("tokens", "targets", "logits")}
    np.save(paths["tokens"], tokens.numpy().astype(np.int32))
    np.save(paths["targets"], targets.numpy().astype(np.int32))
    grads_path = os.path.join(args.dir, f"{tag}.grads.safetensors")
    run([args.exe, "forward", "-w", weights_path, "--in",
         f"tokens={paths['tokens']}", "-o", paths["logits"]])
    out = run([args.exe, "grad", "-w", weights_path, "--in",
               f"tokens={paths['tokens']}", "--in",
               f"targets={paths['targets']}", "-o", grads_path])
    got_loss = float(out.split("loss:")[1].split()[0])

    model.zero_grad()
    logits = model(tokens)
    loss = F.cross_entropy(logits.reshape(-1, args.vocab), targets.reshape(-1))
    loss.backward()

    label = f"B={b},T={t}"
    failures = 0
    errors = [("logits", relative(np.load(paths["logits"]),
                                  logits.detach().numpy()), FORWARD_TOL),
              ("loss", relative(got_loss, loss.item()), FORWARD_TOL)]
    got_grads = safetensors_io.read(grads_path)
    want_grads = {n: p.grad.numpy() for n, p in model.named_parameters()}
    if sorted(got_grads) != sorted(want_grads):
        print(f"FAIL: {label}: gradient names differ: "
              f"{sorted(set(got_grads) ^ set(want_grads))}")
        return 1
    worst_name, worst = "", 0.0
    for name, want in want_grads.items():
        e = relative(got_grads[name], want)
        if e > GRAD_TOL:
            print(f"FAIL: {label}: gradient of {name}: relative error {e:.3g}")
            failures += 1
        if e >= worst:
            worst_name, worst = name, e
    for what, e, tol in errors:
        ok = e <= tol
        failures += not ok
        print(f"{'ok' if ok else 'FAIL'}: {label}: {what}: relative error "
              f"{e:.3g} (tolerance {tol:g})")
    print(f"{'ok' if worst <= GRAD_TOL else 'FAIL'}: {label}: "
          f"{len(want_grads)} gradients: worst relative error {worst:.3g} "
          f"({worst_name}, tolerance {GRAD_TOL:g})")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exe", required=True)
    parser.add_argument("--dir", required=True)
    for flag in ("vocab", "d", "layers", "heads", "kv-heads", "hidden"):
        parser.add_argument(f"--{flag}", type=int, required=True)
    parser.add_argument("--eps", type=float, required=True)
    parser.add_argument("--base", type=float, required=True)
    parser.add_argument("--sizes", action="append", default=[])
    args = parser.parse_args()

    os.makedirs(args.dir, exist_ok=True)
    generator = torch.Generator().manual_seed(5)
    torch.set_default_dtype(torch.float64)
    model = LlamaForCausalLM(args)
    weights = random_weights(model, generator)
    weights_path = os.path.join(args.dir, "llama.safetensors")
    safetensors_io.write_f32(weights_path, weights)
    model.load_state_dict({n: torch.from_numpy(w.astype(np.float64))
                           for n, w in weights.items()})
    failures = 0
    for i, text in enumerate(args.sizes):
        sizes = {k: int(v) for k, v in
                 (item.split("=") for item in text.split(","))}
        failures += check_sizes(args, model, weights_path, sizes, generator,
                                f"run{i}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
