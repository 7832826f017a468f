"""PyTorch twins of the models in this directory, for cross-checking attn-ref.

Each model here is the torch.nn module whose state_dict names and layouts are
those of the .tfm model of the same name (LANGUAGE.md section 4), built from
PyTorch's own layers (nn.MultiheadAttention, nn.TransformerEncoderLayer, ...)
so that the check is independent of the reference evaluator.

  torch_models.py setup MODEL PREFIX
      writes PREFIX.safetensors (random f32 weights, by hand: no safetensors
      package needed), the inputs PREFIX.<arg>.npy and PyTorch's results
      PREFIX.torch.<fn>.npy, computed in float64 from the same f32 weights
      (for the classifier also the loss's gradients by autograd,
      PREFIX.torch.grads.safetensors).

compare.py then compares attn-ref's results with PyTorch's.

Needs torch and numpy only; no network.
"""

import argparse
import json
import math
import struct
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def write_safetensors(path, tensors, dtype=torch.float32):
    """The safetensors layout: u64 LE header length, JSON header, raw data."""
    header, blobs, offset = {}, [], 0
    name_of = {torch.float32: "F32", torch.float64: "F64"}
    for name, tensor in tensors.items():
        data = tensor.detach().to(dtype).contiguous().numpy().tobytes()
        header[name] = {"dtype": name_of[dtype], "shape": list(tensor.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def randomize(module, generator):
    """Random values for every parameter, norms and biases included (their
    PyTorch defaults of ones and zeros would hide a swapped weight and bias);
    the parameters are f32, as the weight file holds them."""
    with torch.no_grad():
        for p in module.parameters():
            scale = 1.0 / math.sqrt(p.shape[-1]) if p.dim() > 1 else 0.3
            p.copy_(torch.randn(p.shape, generator=generator) * scale)
        for m in module.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight += 1.0


def sinusoidal(length, d):
    """LANGUAGE.md: PE[i, 2j] = sin(i / 10000^(2j/d)), PE[i, 2j+1] = cos(...)."""
    pe = np.zeros((length, d))
    for i in range(length):
        for c in range(d):
            angle = i / 10000 ** ((c - c % 2) / d)
            pe[i, c] = math.sin(angle) if c % 2 == 0 else math.cos(angle)
    return torch.tensor(pe, dtype=torch.float64)


def causal_mask(t):
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)


# ---------------------------------------------------------------------------
# char_gpt_small: pre-norm decoder-only GPT (torch-char-gpt.tfm)
# ---------------------------------------------------------------------------

class FeedForward(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.linear1 = nn.Linear(d, hidden)
        self.linear2 = nn.Linear(hidden, d)

    def forward(self, x):
        return self.linear2(F.gelu(self.linear1(x)))


class GptBlock(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = FeedForward(d, 4 * d)

    def forward(self, x):
        h = self.ln_1(x)
        a, _ = self.attn(h, h, h, attn_mask=causal_mask(x.shape[1]),
                         need_weights=False)
        x = x + a
        return x + self.mlp(self.ln_2(x))


class CharGpt(nn.Module):
    def __init__(self, vocab=256, ctx=16, d=32, heads=2, layers=2):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(ctx, d)
        self.h = nn.ModuleList(GptBlock(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)

    def forward(self, tokens):
        x = self.wte(tokens) + self.wpe(torch.arange(tokens.shape[1]))
        for block in self.h:
            x = block(x)
        return self.ln_f(x) @ self.wte.weight.T

    def loss(self, tokens, targets):
        logits = self.forward(tokens)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               targets.reshape(-1))


def setup_char_gpt(prefix, generator):
    model = CharGpt()
    randomize(model, generator)
    write_safetensors(prefix + ".safetensors", model.state_dict())
    tokens = torch.randint(0, 256, (2, 7), generator=generator)
    targets = torch.randint(0, 256, (2, 7), generator=generator)
    np.save(prefix + ".tokens.npy", tokens.numpy().astype(np.int32))
    np.save(prefix + ".targets.npy", targets.numpy().astype(np.int32))
    model = model.double().eval()
    return {"forward": model(tokens), "loss": model.loss(tokens, targets)}


# ---------------------------------------------------------------------------
# transformer_small: post-norm encoder-decoder (torch-transformer.tfm)
# ---------------------------------------------------------------------------

class Transformer(nn.Module):
    """Vaswani et al. with PyTorch's own encoder and decoder layers, whose
    member names the .tfm blocks copy."""

    def __init__(self, vocab=50, d=16, heads=4, ff=32, layers=2):
        super().__init__()
        self.d = d
        self.embed = nn.Embedding(vocab, d)
        self.encoder = nn.ModuleList(
            nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0,
                                       batch_first=True)
            for _ in range(layers))
        self.decoder = nn.ModuleList(
            nn.TransformerDecoderLayer(d, heads, ff, dropout=0.0,
                                       batch_first=True)
            for _ in range(layers))

    def encode(self, src):
        x = self.embed(src) * math.sqrt(self.d) + sinusoidal(src.shape[1],
                                                             self.d)
        for layer in self.encoder:
            x = layer(x, src_key_padding_mask=src == 0)
        return x

    def decode(self, tgt, memory, src):
        y = self.embed(tgt) * math.sqrt(self.d) + sinusoidal(tgt.shape[1],
                                                             self.d)
        for layer in self.decoder:
            y = layer(y, memory, tgt_mask=causal_mask(tgt.shape[1]),
                      memory_key_padding_mask=src == 0)
        return y @ self.embed.weight.T

    def loss(self, src, tgt_in, tgt_out):
        logits = self.decode(tgt_in, self.encode(src), src)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               tgt_out.reshape(-1), ignore_index=0,
                               label_smoothing=0.1)


def setup_transformer(prefix, generator):
    model = Transformer()
    randomize(model, generator)
    write_safetensors(prefix + ".safetensors", model.state_dict())
    # Padding (id 0) at the ends of source rows and among the targets.
    src = torch.tensor([[5, 17, 3, 9, 0, 0], [8, 1, 44, 2, 7, 31]])
    tgt_in = torch.tensor([[1, 12, 30, 4, 0], [1, 9, 9, 21, 3]])
    tgt_out = torch.tensor([[12, 30, 4, 2, 0], [9, 9, 21, 3, 2]])
    for name, value in [("src", src), ("tgt_in", tgt_in),
                        ("tgt_out", tgt_out)]:
        np.save(prefix + "." + name + ".npy", value.numpy().astype(np.int32))
    model = model.double().train(False)
    # Grad mode stays on: it keeps nn.TransformerEncoderLayer off its
    # inference fast path, which zeroes padded positions of its output.
    memory = model.encode(src)
    # decode's memory argument is f32: give both sides the same rounding.
    memory32 = memory.detach().to(torch.float32)
    np.save(prefix + ".memory.npy", memory32.numpy())
    return {"encode": memory,
            "decode": model.decode(tgt_in, memory32.double(), src),
            "loss": model.loss(src, tgt_in, tgt_out)}


# ---------------------------------------------------------------------------
# classifier_small: pre-norm encoder, masked mean pooling (torch-classifier.tfm)
# ---------------------------------------------------------------------------

class EncoderLayer(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(d)
        self.ffn = FeedForward(d, 4 * d)

    def forward(self, x, pad):
        h = self.norm1(x)
        a, _ = self.attn(h, h, h, key_padding_mask=pad, need_weights=False)
        x = x + a
        return x + self.ffn(self.norm2(x))


class Classifier(nn.Module):
    def __init__(self, vocab=256, d=16, heads=4, layers=2, classes=3):
        super().__init__()
        self.d = d
        self.embed = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(EncoderLayer(d, heads)
                                    for _ in range(layers))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, text):
        pad = text == 0
        x = self.embed(text) + sinusoidal(text.shape[1], self.d)
        for layer in self.layers:
            x = layer(x, pad)
        # The mean over the positions that are not padding.
        keep = (~pad).unsqueeze(-1).to(x.dtype)
        pooled = (self.norm(x) * keep).sum(1) / keep.sum(1)
        return self.head(pooled)

    def loss(self, text, label):
        return F.cross_entropy(self.forward(text), label)


def setup_classifier(prefix, generator):
    model = Classifier()
    randomize(model, generator)
    write_safetensors(prefix + ".safetensors", model.state_dict())
    text = torch.tensor([[5, 60, 7, 0, 0], [200, 3, 9, 14, 2],
                         [0, 81, 0, 19, 0]])
    label = torch.tensor([2, 0, 1])
    np.save(prefix + ".text.npy", text.numpy().astype(np.int32))
    np.save(prefix + ".label.npy", label.numpy().astype(np.int32))
    model = model.double().eval()
    loss = model.loss(text, label)
    # The gradients attn-ref --fd-grad approximates, by autograd.
    loss.backward()
    write_safetensors(prefix + ".torch.grads.safetensors",
                      {name: p.grad for name, p in model.named_parameters()},
                      torch.float64)
    return {"forward": model(text), "loss": loss}


MODELS = {"char_gpt": setup_char_gpt, "classifier": setup_classifier,
          "transformer": setup_transformer}


def setup(args):
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(1234)
    results = MODELS[args.model](args.prefix, generator)
    for fn, value in results.items():
        np.save(args.prefix + ".torch." + fn + ".npy",
                value.detach().numpy().astype(np.float64))
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("setup")
    p.add_argument("model", choices=sorted(MODELS))
    p.add_argument("prefix")
    args = parser.parse_args()
    return setup(args)


if __name__ == "__main__":
    sys.exit(main())
