"""Checks train_step in attn-ref against Adam/AdamW written in numpy.

  trainstep.py ATTN_REF MODULE.mlir --work PREFIX --hyper K=V,... [--adamw]
               [--sizes B=2,T=4] [--ids N]

MODULE is the output of the attn-grad stage. With random weights, moments
and inputs, the script runs `<loss>_grad` (its gradients, from --grads-out)
and `train_step` (its loss, norm and the new weights and moments, from
--state-out) with the same seed, and recomputes the step from the
gradients: global norm, clipping as torch.nn.utils.clip_grad_norm_, then
torch.optim.Adam (weight decay added to the gradient) or AdamW (decoupled),
with the hyperparameters rounded to f32 as the hyper vector holds them.
Prints the largest relative difference and fails above 1e-9.
"""

import argparse
import os
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gradcheck import PARAM, parse_shape, read_safetensors, write_safetensors  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("attn_ref")
    parser.add_argument("module")
    parser.add_argument("--work", required=True)
    parser.add_argument("--hyper", required=True)
    parser.add_argument("--adamw", action="store_true")
    parser.add_argument("--sizes", default="B=2,T=4")
    parser.add_argument("--ids", type=int, default=8)
    args = parser.parse_args()
    rng = np.random.default_rng(99)
    text = open(args.module).read()
    loss_fn = re.search(r"attn\.train loss @(\S+)", text).group(1)
    sizes = dict((k, int(v)) for k, v in
                 (p.split("=") for p in args.sizes.split(",")))

    weights, moments = {}, {}
    for name, type_text, _ in PARAM.findall(text):
        shape, _ = parse_shape(type_text)
        weights[name] = 0.5 * rng.standard_normal(shape)
        moments["optim.m." + name] = 0.01 * rng.standard_normal(shape)
        moments["optim.v." + name] = 1e-4 * rng.random(shape)
    w = args.work
    write_safetensors(w + ".w.safetensors", weights)
    write_safetensors(w + ".m.safetensors", moments)
    b, t = sizes["B"], sizes["T"]
    for i in range(2):
        np.save(f"{w}.in{i}.npy",
                rng.integers(1, args.ids, size=(b, t)).astype(np.int32))
    common = [args.attn_ref, args.module, "-w", w + ".w.safetensors",
              "--in", f"{w}.in0.npy", "--in", f"{w}.in1.npy", "--seed", "5",
              "--f64"]
    subprocess.run(common + ["--fn", loss_fn + "_grad", "--grads-out",
                             w + ".g.safetensors", "-o", w + ".loss.npy"],
                   check=True)
    subprocess.run(common + ["--fn", "train_step", "--hyper", args.hyper,
                             "--moments", w + ".m.safetensors", "--state-out",
                             w + ".state.safetensors", "-o", w + ".out.npy"],
                   check=True)
    grads = read_safetensors(w + ".g.safetensors")
    state = read_safetensors(w + ".state.safetensors")

    hyper = dict(p.split("=") for p in args.hyper.split(","))
    f32 = lambda key: float(np.float32(float(hyper[key])))  # noqa: E731
    lr, beta1, beta2, eps = f32("lr"), f32("beta1"), f32("beta2"), f32("eps")
    wd, clip, step = f32("weight_decay"), f32("clip_norm"), f32("step")
    norm = np.sqrt(sum(float(np.sum(g * g)) for g in grads.values()))
    scale = min(1.0, clip / (norm + 1e-6)) if clip > 0 else 1.0
    worst = 0.0

    def compare(actual, expected):
        nonlocal worst
        worst = max(worst, float(np.max(np.abs(actual - expected))) /
                    max(float(np.max(np.abs(expected))), 1e-300))

    for name, p in weights.items():
        g = grads[name] * scale
        m, v = moments["optim.m." + name], moments["optim.v." + name]
        if args.adamw:
            p = p - lr * wd * p
        else:
            g = g + wd * p
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        p = p - lr * (m / (1 - beta1 ** step)) / (
            np.sqrt(v / (1 - beta2 ** step)) + eps)
        compare(state[name], p)
        compare(state["optim.m." + name], m)
        compare(state["optim.v." + name], v)
    compare(np.load(w + ".out.0.npy"), np.load(w + ".loss.npy"))
    compare(np.load(w + ".out.1.npy"), np.array(norm))
    ok = worst <= 1e-9 and norm > 0
    print(f"train_step: {'ok' if ok else 'FAIL'}: norm {norm:.6g}, "
          f"scale {scale:.6g}, {len(weights)} params, max rel err {worst:.2e}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
