"""Checks `attention` of the reduced char_gpt (Inputs/char_gpt.tfm) against
PyTorch.

  check_attention_map.py WEIGHTS PROMPT LAYER HEAD TABLE SVG WEIGHTS_NPY

WEIGHTS is the model's safetensors file, TABLE what `attention --prompt
PROMPT --layer LAYER --head HEAD -o SVG` printed, and WEIGHTS_NPY what
`forward --entry attention_weights` gave on the prompt's bytes. The twin
below is built from PyTorch's own layers (nn.MultiheadAttention's per-head
weights, need_weights=True), independent of attnc and attn-ref, and runs in
float64 on the same f32 weights. Prints "ok" when:

- every weight of every layer and head of WEIGHTS_NPY is PyTorch's (1e-5);
- the table's header is the prompt's bytes, each row is labelled by its
  query's byte, and its numbers are PyTorch's to the three decimals printed,
  with rows summing to 1 and exact zeros above the diagonal (causal);
- the SVG parses as XML, has one cell per weight whose data-value is
  PyTorch's (1e-5), and labels the rows and columns with the tokens.
"""

import sys
import xml.etree.ElementTree as ET

import numpy as np

import safetensors_io
import torch
import torch.nn as nn
import torch.nn.functional as F

D, HEADS, LAYERS, CTX, VOCAB = 32, 2, 2, 256, 256


def read_safetensors(path):
    """The weights as float64 tensors."""
    return {name: torch.tensor(array, dtype=torch.float64)
            for name, array in safetensors_io.read(path).items()}


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(D)
        self.attn = nn.MultiheadAttention(D, HEADS, batch_first=True)
        self.ln_2 = nn.LayerNorm(D)
        self.mlp = nn.ModuleDict({"linear1": nn.Linear(D, 4 * D),
                                  "linear2": nn.Linear(4 * D, D)})

    def forward(self, x, weights):
        h = self.ln_1(x)
        t = x.shape[1]
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        a, w = self.attn(h, h, h, attn_mask=mask, need_weights=True,
                         average_attn_weights=False)
        weights.append(w)
        x = x + a
        m = self.mlp["linear2"](F.gelu(self.mlp["linear1"](self.ln_2(x))))
        return x + m


class CharGpt(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, D)
        self.wpe = nn.Embedding(CTX, D)
        self.h = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(D)

    def attention(self, tokens):
        """[L, B, H, T, T]: each layer's per-head attention weights."""
        x = self.wte(tokens) + self.wpe(torch.arange(tokens.shape[1]))
        weights = []
        for block in self.h:
            x = block(x, weights)
        return torch.stack(weights)


def torch_weights(path, prompt):
    model = CharGpt().double()
    model.load_state_dict(read_safetensors(path))
    model.eval()
    tokens = torch.tensor([list(prompt.encode())])
    with torch.no_grad():
        return model.attention(tokens).numpy()


def label(byte):
    """The table's label of a byte (attention's escapes, printable ASCII
    only here)."""
    return "\u2423" if byte == ord(" ") else chr(byte)


def check_table(text, prompt, expected, fail):
    lines = text.splitlines()
    if not lines[0].startswith("attention weights of model 'char_gpt'"):
        fail(f"table: unexpected first line {lines[0]!r}")
    labels = [label(b) for b in prompt.encode()]
    if lines[1].split() != labels:
        fail(f"table: header {lines[1].split()} is not {labels}")
    rows = lines[2:]
    if len(rows) != len(labels):
        fail(f"table: {len(rows)} rows for {len(labels)} tokens")
    for i, line in enumerate(rows):
        fields = line.split()
        if fields[0] != labels[i]:
            fail(f"table: row {i} is labelled {fields[0]!r}, not {labels[i]!r}")
        values = np.array([float(v) for v in fields[1:]])
        if np.abs(values - expected[i]).max() > 6e-4:
            fail(f"table: row {i} is {values}, PyTorch's {expected[i]}")
        if abs(values.sum() - 1) > 6e-4 * len(values):
            fail(f"table: row {i} sums to {values.sum()}")
        if any(v != "0.000" for v in fields[2 + i:]):
            fail(f"table: row {i} has weights after the diagonal: {fields}")


def check_svg(path, prompt, expected, fail):
    root = ET.parse(path).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    cells = [r for r in root.iter(ns + "rect") if r.get("class") == "cell"]
    n = len(prompt.encode())
    if len(cells) != n * n:
        fail(f"svg: {len(cells)} cells for {n} x {n} weights")
    for cell in cells:
        i, j = int(cell.get("data-row")), int(cell.get("data-col"))
        if abs(float(cell.get("data-value")) - expected[i, j]) > 1e-5:
            fail(f"svg: cell ({i}, {j}) is {cell.get('data-value')}, "
                 f"PyTorch's {expected[i, j]}")
    labels = [label(b) for b in prompt.encode()]
    for cls in ("row-label", "col-label"):
        got = [t.text for t in root.iter(ns + "text") if t.get("class") == cls]
        if got != labels:
            fail(f"svg: {cls}s {got} are not {labels}")


def main():
    weights, prompt, layer, head, table, svg, npy = sys.argv[1:]
    layer, head = int(layer), int(head)
    failures = []
    fail = failures.append
    expected = torch_weights(weights, prompt)
    got = np.load(npy)
    if got.shape != expected.shape:
        fail(f"attention_weights: shape {got.shape}, PyTorch's "
             f"{expected.shape}")
    elif np.abs(got - expected).max() > 1e-5:
        fail(f"attention_weights: off by {np.abs(got - expected).max()}")
    with open(table, encoding="utf-8") as f:
        check_table(f.read(), prompt, expected[layer, 0, head], fail)
    check_svg(svg, prompt, expected[layer, 0, head], fail)
    for message in failures:
        print("FAIL:", message)
    print("failed" if failures else "ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
