#!/usr/bin/env python3
"""Converts a Hugging Face GPT-2 safetensors file to the names and layouts of
models/gpt2_small.tfm.

  convert-gpt2-weights.py IN.safetensors OUT.safetensors

Hugging Face's GPT-2 computes its projections with `Conv1D`, whose weight is
[in, out]; attnc's `linear`, `multi_head_attention` and `feed_forward` hold
PyTorch's [out, in]. So the four matrices of each layer are transposed and
renamed:

  h.N.attn.c_attn.weight [d, 3d]   -> h.N.attn.in_proj_weight [3d, d]
  h.N.attn.c_attn.bias             -> h.N.attn.in_proj_bias
  h.N.attn.c_proj.weight [d, d]    -> h.N.attn.out_proj.weight (transposed)
  h.N.attn.c_proj.bias             -> h.N.attn.out_proj.bias
  h.N.mlp.c_fc.weight [d, 4d]      -> h.N.mlp.linear1.weight [4d, d]
  h.N.mlp.c_fc.bias                -> h.N.mlp.linear1.bias
  h.N.mlp.c_proj.weight [4d, d]    -> h.N.mlp.linear2.weight [d, 4d]
  h.N.mlp.c_proj.bias              -> h.N.mlp.linear2.bias

c_attn's output is the query, key and value in that order, as
in_proj_weight's rows are. wte, wpe, ln_1, ln_2 and ln_f keep their names.
A `transformer.` prefix (GPT2LMHeadModel's state_dict) is dropped; the
attention masks (`attn.bias`, `attn.masked_bias`) and `lm_head.weight` (tied
to wte in GPT-2) are left out. F32, F16 and BF16 tensors keep their dtype
(attnc's `-w` reads all three). Any other tensor is an error.

Needs numpy only: the format is an 8-byte little-endian header length, a
JSON header, then the raw data.
"""

import argparse
import json
import re
import struct
import sys

import numpy as np

# Element types by safetensors dtype; BF16 has no numpy type, and is only
# moved, so its 16-bit patterns are moved as integers.
ELEMENTS = {"F32": "<f4", "F16": "<f2", "BF16": "<u2"}

RENAMES = [
    (r"attn\.c_attn\.weight", "attn.in_proj_weight", True),
    (r"attn\.c_attn\.bias", "attn.in_proj_bias", False),
    (r"attn\.c_proj\.weight", "attn.out_proj.weight", True),
    (r"attn\.c_proj\.bias", "attn.out_proj.bias", False),
    (r"mlp\.c_fc\.weight", "mlp.linear1.weight", True),
    (r"mlp\.c_fc\.bias", "mlp.linear1.bias", False),
    (r"mlp\.c_proj\.weight", "mlp.linear2.weight", True),
    (r"mlp\.c_proj\.bias", "mlp.linear2.bias", False),
    (r"ln_1\.(weight|bias)", None, False),
    (r"ln_2\.(weight|bias)", None, False),
]
KEPT = re.compile(r"(wte|wpe)\.weight|ln_f\.(weight|bias)")
DROPPED = re.compile(r"h\.\d+\.attn\.(bias|masked_bias)|lm_head\.weight")


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise SystemExit(f"error: {path}: not a safetensors file")
    (length,) = struct.unpack("<Q", data[:8])
    if 8 + length > len(data):
        raise SystemExit(f"error: {path}: the header runs past the file")
    header = json.loads(data[8:8 + length])
    body = data[8 + length:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = info["dtype"]
        if dtype not in ELEMENTS:
            raise SystemExit(f"error: {path}: tensor '{name}' is {dtype}; "
                             f"expected F32, F16 or BF16")
        begin, end = info["data_offsets"]
        array = np.frombuffer(body[begin:end], ELEMENTS[dtype])
        tensors[name] = (dtype, array.reshape(info["shape"]))
    return tensors


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, (dtype, array) in tensors.items():
        blob = np.ascontiguousarray(array).tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def convert_name(name):
    """The gpt2_small name of a Hugging Face tensor and whether it is a
    Conv1D weight to transpose; None for a tensor to leave out."""
    if name.startswith("transformer."):
        name = name[len("transformer."):]
    if DROPPED.fullmatch(name):
        return None, False
    if KEPT.fullmatch(name):
        return name, False
    layer = re.fullmatch(r"(h\.\d+)\.(.*)", name)
    if layer:
        for pattern, new, transpose in RENAMES:
            if re.fullmatch(pattern, layer.group(2)):
                return f"{layer.group(1)}.{new or layer.group(2)}", transpose
    raise SystemExit(f"error: tensor '{name}' is not one of GPT-2's")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input")
    parser.add_argument("output")
    args = parser.parse_args()
    converted = {}
    for name, (dtype, array) in read_safetensors(args.input).items():
        new, transpose = convert_name(name)
        if new is None:
            continue
        if transpose and array.ndim != 2:
            raise SystemExit(f"error: tensor '{name}' has shape "
                             f"{list(array.shape)}; expected a matrix")
        converted[new] = (dtype, array.T if transpose else array)
    write_safetensors(args.output, converted)
    print(f"wrote {len(converted)} tensors to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
