"""Runs the gradient entry point `<loss>_grad` of a model compiled by `attnc
build` (through the binary's `grad` command) and the reference evaluator
`attn-ref` on the differentiated attn IR (`attnc emit --stage attn-grad`) with
the same weights, inputs and dropout seed, and compares the loss and every
parameter's gradient.

  compare_grads.py --exe BIN --ref ATTN-REF --mlir MODEL.grad.mlir
                   -w W.safetensors --dir SCRATCH --arg NAME=SPEC ...
                   --sizes B=2,T=9 ... [--seed N] [--fn loss]

Inputs are generated as by compare_model.py (same SPEC syntax). The binary's
`grad --seed N` calls the entry with attn_dropout_seed(N, 0) (abi.h); attn-ref
gets that value with --seed, so both draw the same dropout masks.

The check: the loss agrees to 1e-4 (relative), and the gradients, taken
together as one vector, agree to --tol (1e-3 relative, the project's bound:
the binary's f32 backward is a few thousand roundings deep, the reference is
double); each tensor is reported, and a tensor whose own relative error
exceeds 100 x --tol fails too (a wrong gradient hidden by a large one).
"""

import argparse
import os
import subprocess
import sys

import numpy as np

import safetensors_io

from compare_model import make_input, parse_sizes, run

MASK = (1 << 64) - 1


def splitmix64(x):
    x &= MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def dropout_seed(seed, step):
    """abi.h's attn_dropout_seed."""
    return splitmix64(splitmix64(seed) ^ step)


load_safetensors = safetensors_io.read


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exe", required=True)
    parser.add_argument("--ref", required=True)
    parser.add_argument("--mlir", required=True)
    parser.add_argument("-w", dest="weights", required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--fn", default="loss")
    parser.add_argument("--arg", action="append", default=[])
    parser.add_argument("--sizes", action="append", default=[])
    parser.add_argument("--tol", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    os.makedirs(args.dir, exist_ok=True)
    rng = np.random.default_rng(1)
    failures = 0
    for sizes_text in args.sizes:
        sizes = parse_sizes(sizes_text)
        tag = "grad." + "_".join(f"{k}{v}" for k, v in sizes.items())
        label = f"{args.fn}_grad {sizes_text}"
        inputs = []
        for a in args.arg:
            name, _, spec = a.partition("=")
            path = os.path.join(args.dir, f"{tag}.{name}.npy")
            np.save(path, make_input(spec, sizes, rng))
            inputs += ["--in", f"{name}={path}"]
        got_path = os.path.join(args.dir, f"{tag}.binary.safetensors")
        ref_path = os.path.join(args.dir, f"{tag}.ref.safetensors")
        loss_path = os.path.join(args.dir, f"{tag}.ref-loss.npy")
        p = subprocess.run([args.exe, "grad", "-w", args.weights, "--fn",
                            args.fn, "--seed", str(args.seed), *inputs, "-o",
                            got_path], capture_output=True, text=True)
        if p.returncode != 0:
            print(f"FAIL: {label}: the binary exited with {p.returncode}\n"
                  f"{p.stdout}{p.stderr}")
            failures += 1
            continue
        got_loss = float(p.stdout.split("loss:")[1].split()[0])
        if not run([args.ref, args.mlir, "--fn", f"{args.fn}_grad", "-w",
                    args.weights, *inputs, "--seed",
                    str(dropout_seed(args.seed, 0)), "--grads-out", ref_path,
                    "--f64", "-o", loss_path], f"{label}: attn-ref"):
            failures += 1
            continue
        ref_loss = float(np.load(loss_path))
        loss_error = abs(got_loss - ref_loss) / max(abs(ref_loss), 1e-30)
        got = load_safetensors(got_path)
        ref = load_safetensors(ref_path)
        if sorted(got) != sorted(ref):
            print(f"FAIL: {label}: gradient names differ: "
                  f"{sorted(set(got) ^ set(ref))}")
            failures += 1
            continue
        total_diff = total_norm = 0.0
        worst_name, worst = "", 0.0
        for name in sorted(ref):
            g = got[name].astype(np.float64)
            r = ref[name].astype(np.float64)
            if g.shape != r.shape or not np.all(np.isfinite(g)):
                print(f"FAIL: {label}: {name}: shape {list(g.shape)} vs "
                      f"{list(r.shape)} or non-finite values")
                failures += 1
                break
            d = float(np.linalg.norm(g - r))
            n = float(np.linalg.norm(r))
            total_diff += d * d
            total_norm += n * n
            own = d / n if n > 0 else d
            if own > worst:
                worst_name, worst = name, own
        else:
            error = (total_diff ** 0.5) / max(total_norm ** 0.5, 1e-300)
            ok = (error <= args.tol and loss_error <= 1e-4 and
                  worst <= 100 * args.tol)
            print(f"{'ok' if ok else 'FAIL'}: {label}: loss {got_loss:.6g} "
                  f"(reference {ref_loss:.6g}, relative error "
                  f"{loss_error:.2g}); gradients of {len(ref)} tensors: "
                  f"relative error {error:.3g} (tolerance {args.tol:g}), "
                  f"worst tensor {worst_name} {worst:.3g}")
            if not ok:
                failures += 1
    if failures:
        print(f"{failures} run(s) failed; inputs and outputs kept in {args.dir}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
