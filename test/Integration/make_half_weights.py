"""Writes a model's f32 weights as a Hugging Face checkpoint would hold
them, to test `-w` with 16-bit tensors and tensors the model lacks.

  make_half_weights.py IN.safetensors --dtype BF16|F16 --out OUT.safetensors
                       --rounded ROUNDED.safetensors [--extra NAME ...]

OUT holds every tensor of IN in DTYPE (round to nearest even), in reverse
order, plus each --extra NAME (a small f32 tensor, as `attn.bias` masks or
`rotary_emb.inv_freq`); ROUNDED holds the same values widened back to f32,
in IN's names: loading OUT must give exactly what loading ROUNDED gives.
"""

import argparse

import numpy as np

import safetensors_io


def to_bf16(w):
    bits = w.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    widened = (bits.astype(np.uint32) << 16).view(np.float32)
    return bits.tobytes(), widened


def to_f16(w):
    half = w.astype(np.float16)
    return half.tobytes(), half.astype(np.float32)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input")
    parser.add_argument("--dtype", choices=["BF16", "F16"], required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--rounded", required=True)
    parser.add_argument("--extra", action="append", default=[])
    args = parser.parse_args()
    convert = to_bf16 if args.dtype == "BF16" else to_f16
    half, rounded = {}, {}
    for name, w in reversed(list(safetensors_io.read(args.input).items())):
        blob, widened = convert(w)
        half[name] = (args.dtype, w.shape, blob)
        rounded[name] = ("F32", w.shape, widened.astype(np.float32).tobytes())
    for name in args.extra:
        half[name] = ("F32", (4,), np.arange(4, dtype=np.float32).tobytes())
    safetensors_io.write(args.out, half)
    safetensors_io.write(args.rounded, rounded)


if __name__ == "__main__":
    main()
