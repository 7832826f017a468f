"""Writes a synthetic Hugging Face GPT-2 checkpoint, or checks a file
converted from one by scripts/convert-gpt2-weights.py.

  make_hf_gpt2.py HF.safetensors --d D --layers L --vocab V --ctx C
                  [--bf16] [--extra NAME]
  make_hf_gpt2.py HF.safetensors --check CONVERTED.safetensors

The checkpoint has GPT2LMHeadModel's state_dict names (`transformer.`
prefix, Conv1D weights [in, out], the layers' `attn.bias` and
`attn.masked_bias` buffers, a tied `lm_head.weight`), random values, in F32
or BF16; --extra adds a tensor of that name. --check verifies that the
converted file holds exactly gpt2_small's tensors, each the checkpoint's
(transposed for a Conv1D weight) with its dtype, and prints a summary.
Needs numpy only.
"""

import argparse
import sys

import numpy as np

import safetensors_io

# Hugging Face's names within a layer -> gpt2_small's; the weights among
# them are Conv1D's [in, out], transposed.
RENAMES = {"attn.c_attn.weight": "attn.in_proj_weight",
           "attn.c_attn.bias": "attn.in_proj_bias",
           "attn.c_proj.weight": "attn.out_proj.weight",
           "attn.c_proj.bias": "attn.out_proj.bias",
           "mlp.c_fc.weight": "mlp.linear1.weight",
           "mlp.c_fc.bias": "mlp.linear1.bias",
           "mlp.c_proj.weight": "mlp.linear2.weight",
           "mlp.c_proj.bias": "mlp.linear2.bias"}
NUMPY = {"F32": "<f4", "BF16": "<u2"}


def write(path, tensors, dtype):
    """The f32 arrays as `dtype` (BF16: truncated)."""
    entries = {}
    for name, array in tensors.items():
        if dtype == "BF16":
            bits = array.astype("<f4").view("<u4") >> 16
            blob = bits.astype("<u2").tobytes()
        else:
            blob = array.astype("<f4").tobytes()
        entries[name] = (dtype, array.shape, blob)
    safetensors_io.write(path, entries)


def make(args):
    rng = np.random.default_rng(0)
    d = args.d
    shapes = {"wte.weight": [args.vocab, d], "wpe.weight": [args.ctx, d]}
    for i in range(args.layers):
        h = f"h.{i}."
        shapes.update({
            h + "ln_1.weight": [d], h + "ln_1.bias": [d],
            h + "attn.bias": [1, 1, 8, 8], h + "attn.masked_bias": [],
            h + "attn.c_attn.weight": [d, 3 * d], h + "attn.c_attn.bias": [3 * d],
            h + "attn.c_proj.weight": [d, d], h + "attn.c_proj.bias": [d],
            h + "ln_2.weight": [d], h + "ln_2.bias": [d],
            h + "mlp.c_fc.weight": [d, 4 * d], h + "mlp.c_fc.bias": [4 * d],
            h + "mlp.c_proj.weight": [4 * d, d], h + "mlp.c_proj.bias": [d]})
    shapes["ln_f.weight"] = [d]
    shapes["ln_f.bias"] = [d]
    if args.extra:
        shapes[args.extra] = [d]
    tensors = {"transformer." + n: (0.02 * rng.standard_normal(s)).astype(
        np.float32) for n, s in shapes.items()}
    tensors["lm_head.weight"] = tensors["transformer.wte.weight"]
    write(args.checkpoint, tensors, "BF16" if args.bf16 else "F32")


def check(args):
    original = safetensors_io.read_typed(args.checkpoint)
    converted = safetensors_io.read_typed(args.check)
    expected, transposed, dtypes = {}, 0, set()
    for name, (dtype, array) in original.items():
        short = name.removeprefix("transformer.")
        if short == "lm_head.weight" or short.split(".", 2)[-1] in (
                "attn.bias", "attn.masked_bias"):
            continue
        prefix, _, rest = short.partition(".") if short.startswith("h.") \
            else ("", "", short)
        if prefix:
            index, _, rest = rest.partition(".")
            prefix = f"h.{index}."
        if rest in RENAMES:
            rest = RENAMES[rest]
            if array.ndim == 2:
                array = array.T
                transposed += 1
        expected[prefix + rest] = (dtype, array)
        dtypes.add(dtype)
    if sorted(expected) != sorted(converted):
        print("FAIL: names differ:", sorted(set(expected) ^ set(converted)))
        return 1
    for name, (dtype, array) in expected.items():
        got_dtype, got = converted[name]
        if got_dtype != dtype or got.shape != array.shape or \
                not np.array_equal(got, array):
            print(f"FAIL: {name}: {got_dtype} {list(got.shape)}, expected "
                  f"{dtype} {list(array.shape)} with the same values")
            return 1
    print(f"ok: {len(expected)} tensors, {transposed} transposed "
          f"({'/'.join(sorted(dtypes))})")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--check")
    parser.add_argument("--d", type=int)
    parser.add_argument("--layers", type=int)
    parser.add_argument("--vocab", type=int)
    parser.add_argument("--ctx", type=int)
    parser.add_argument("--bf16", action="store_true")
    parser.add_argument("--extra")
    args = parser.parse_args()
    if args.check:
        return check(args)
    make(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
