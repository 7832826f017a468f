"""Checks the gradients the autodiff pass builds against finite differences.

  gradcheck.py ATTN_REF MODULE.mlir [MODULE2.mlir ...] --work PREFIX
               [--autodiff ATTNC_OPT]
               [--fn NAME] [--sizes B=2,T=5] [--ids N] [--ids NAME=N ...]
               [--zero-tail NAME=K ...] [--seed S] [--sample K] [--tol T]
               [--fd-step H]

Each MODULE holds the output of `attn-autodiff` (a `<loss>_grad` function),
or is given to `ATTNC_OPT --attn-autodiff` first with --autodiff ATTNC_OPT.
The script gives every parameter random double-precision values, every
integer argument random ids in [0, N), every float argument random values,
runs `<loss>_grad` in attn-ref (the gradients its `attn.set_param grad`
writes, with dropout seeded by --seed) and attn-ref --fd-grad on the same
function (central finite differences of the loss it returns: the same
dropout masks, as the seed fixes them), on every element of small parameters
and on the K largest and K random elements of larger ones. It prints the
largest error relative to the largest finite-difference gradient of each
parameter (floored at 1e-3 of the largest overall), and fails above T, or
when every gradient is zero (a check that cannot fail).
"""

import argparse
import json
import os
import re
import struct
import subprocess
import sys

import numpy as np


def write_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name, value in tensors.items():
        data = np.ascontiguousarray(value, dtype="<f8").tobytes()
        header[name] = {"dtype": "F64", "shape": list(value.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_safetensors(path):
    data = open(path, "rb").read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    body = data[8 + length:]
    dtypes = {"F32": "<f4", "F64": "<f8"}
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        out[name] = np.frombuffer(body[begin:end], dtype=dtypes[entry["dtype"]]
                                  ).reshape(entry["shape"]).astype(np.float64)
    return out


PARAM = re.compile(r"attn\.param @(\S+) : tensor<([^>]*)> init (\w+)")
ARG = re.compile(r"%arg\d+: tensor<([^>]*)>(?: \{([^}]*)\})?")


def parse_shape(text):
    parts = text.split("x")
    return [None if p == "?" else int(p) for p in parts[:-1]], parts[-1]


def function_args(module, fn):
    match = re.search(r"func\.func @" + re.escape(fn) + r"\((.*?)\) ->", module)
    if not match:
        sys.exit(f"no function @{fn}")
    args = []
    for type_text, attrs in ARG.findall(match.group(1)):
        attrs = attrs or ""
        name = re.search(r'attn\.name = "([^"]*)"', attrs)
        dims = re.search(r"attn\.dims = \[([^\]]*)\]", attrs)
        args.append({
            "type": parse_shape(type_text),
            "name": name.group(1) if name else None,
            "dims": [d.strip().strip('"') for d in dims.group(1).split(",")]
                    if dims else None,
            "special": "attn.seed" in attrs or "attn.hyper" in attrs or
                       "attn.dropout_row" in attrs,
        })
    return args


def key_values(items, convert):
    out = {}
    for item in items:
        for pair in item.split(","):
            if pair:
                key, value = pair.split("=")
                out[key] = convert(value)
    return out


def check(module_path, args, rng):
    if args.autodiff:
        differentiated = args.work + "." + os.path.basename(module_path) + \
            ".grad.mlir"
        subprocess.run([args.autodiff, "--attn-autodiff", module_path, "-o",
                        differentiated], check=True)
        module_path = differentiated
    module = open(module_path).read()
    fn = args.fn
    if not fn:
        loss = re.search(r"attn\.train loss @(\S+)", module)
        fn = loss.group(1) + "_grad"
    work = args.work + "." + os.path.basename(module_path)
    sizes = key_values(args.sizes, int)
    ids = key_values([i for i in args.ids if "=" in i], int)
    default_ids = int(next((i for i in args.ids if "=" not in i), 8))
    tails = key_values(args.zero_tail, int)

    weights = {}
    for name, type_text, init in PARAM.findall(module):
        shape, _ = parse_shape(type_text)
        noise = rng.standard_normal(shape)
        weights[name] = 1.0 + 0.2 * noise if init == "ones" else 0.5 * noise
    write_safetensors(work + ".weights.safetensors", weights)

    command = [args.attn_ref, module_path, "--fn", fn, "-w",
               work + ".weights.safetensors", "--seed", str(args.seed)]
    for index, arg in enumerate(function_args(module, fn)):
        if arg["special"]:
            continue
        shape, element = arg["type"]
        shape = [s if s is not None else sizes[arg["dims"][d]]
                 for d, s in enumerate(shape)]
        name = arg["name"] or f"arg{index}"
        if element.startswith("i") and element != "i1":
            value = rng.integers(0, ids.get(name, default_ids), size=shape)
            if name in tails:
                value[0, shape[1] - tails[name]:] = 0
            value = value.astype(np.int32 if element == "i32" else np.int64)
        elif element == "i1":
            value = rng.random(shape) < 0.3
        else:
            value = rng.standard_normal(shape)
        path = f"{work}.{name}.npy"
        np.save(path, value)
        command += ["--in", f"arg{index}={path}"]

    subprocess.run(command + ["--grads-out", work + ".grads.safetensors",
                              "--f64", "-o", work + ".loss.npy"], check=True)
    grads = read_safetensors(work + ".grads.safetensors")
    masks = {}
    for name, grad in grads.items():
        mask = np.zeros(grad.size)
        if grad.size <= args.all_below:
            mask[:] = 1
        else:
            flat = np.abs(grad).ravel()
            mask[np.argsort(-flat, kind="stable")[:args.sample]] = 1
            mask[rng.choice(grad.size, args.sample, replace=False)] = 1
        masks[name] = mask.reshape(grad.shape)
    write_safetensors(work + ".mask.safetensors", masks)
    if args.fd_seed is not None:
        command[command.index("--seed") + 1] = str(args.fd_seed)
    subprocess.run(command + ["--fd-grad", "--fd-step", args.fd_step,
                              "--fd-mask",
                              work + ".mask.safetensors", "--f64", "-o",
                              work + ".fd.safetensors"], check=True)
    fd = read_safetensors(work + ".fd.safetensors")

    scale = max(float(np.nanmax(np.abs(fd[n]))) for n in fd)
    worst, worst_name, checked = 0.0, "", 0
    for name, expected in fd.items():
        chosen = ~np.isnan(expected)
        checked += int(chosen.sum())
        local = max(float(np.max(np.abs(expected[chosen]))), 1e-3 * scale)
        error = float(np.max(np.abs(grads[name][chosen] - expected[chosen])))
        if error / local > worst:
            worst, worst_name = error / local, name
    loss = float(np.load(work + ".loss.npy"))
    ok = scale > 0 and np.isfinite(loss) and worst <= args.tol
    print(f"{os.path.basename(module_path)}: {'ok' if ok else 'FAIL'}: "
          f"loss {loss:.6g}, {len(fd)} params, {checked} elements, "
          f"max rel err {worst:.2e}" +
          (f" ({worst_name})" if worst_name else "") +
          ("" if scale > 0 else ", every gradient is zero"))
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("attn_ref")
    parser.add_argument("modules", nargs="+")
    parser.add_argument("--work", required=True)
    parser.add_argument("--fn")
    parser.add_argument("--autodiff", metavar="ATTNC_OPT")
    parser.add_argument("--sizes", action="append", default=[])
    parser.add_argument("--ids", action="append", default=[])
    parser.add_argument("--zero-tail", action="append", default=[])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--sample", type=int, default=3)
    parser.add_argument("--all-below", type=int, default=64)
    parser.add_argument("--tol", type=float, default=1e-6)
    parser.add_argument("--fd-step", default="1e-5")
    # Only to show that the check fails: finite differences with a dropout
    # seed other than the gradients'.
    parser.add_argument("--fd-seed", type=int)
    args = parser.parse_args()
    rng = np.random.default_rng(1234)
    results = [check(m, args, rng) for m in args.modules]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
