"""Checks the matrix products of a model built with `attnc --precision bf16`
against numpy: the same products with both operands rounded to bf16 (to
nearest even) and summed in double precision.

  check_bf16_products.py --exe BIN --dir SCRATCH [--shape BxT]

The model is Inputs/bf16_products.tfm. Products of bf16 values are exact in f32,
so the compiled code differs from the reference only by the order and
precision of its f32 additions: relative L2 error at most 1e-5 for the
forward result, the loss and each gradient. The products in plain f32 (a
build that ignored --precision) differ from the reference by about 2^-9
per operand, 1e-3 in relative L2, which the check also requires, so that
it cannot pass on f32 products.
"""

import argparse
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import check_low_precision  # noqa: E402  (its bf16)
import safetensors_io  # noqa: E402

TOL = 1e-5
F32_GAP = 1e-4


def load_safetensors(path):
    """The tensors of a safetensors file, as float64."""
    return {name: array.astype(np.float64)
            for name, array in safetensors_io.read(path).items()}


def bf16(x):
    """Rounded to the nearest bf16, ties to even, as float64."""
    return check_low_precision.bf16(np.asarray(x, np.float32)).astype(np.float64)


def rel(got, want):
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exe", required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--shape", default="2x9",
                        help="batch x positions of the inputs (B*T rows)")
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    path = lambda name: os.path.join(args.dir, name)

    def run(*cmd):
        p = subprocess.run([args.exe, *cmd], capture_output=True, text=True)
        if p.returncode:
            sys.exit(f"FAIL: {' '.join(cmd[:1])}: {p.stderr.strip()}")
        return p.stdout

    run("init", "--seed", "5", "-o", path("w.safetensors"))
    weights = load_safetensors(path("w.safetensors"))
    rng = np.random.default_rng(3)
    B, T = (int(n) for n in args.shape.split("x"))
    x = rng.standard_normal((B, T, 601)).astype(np.float32)
    t = rng.standard_normal((B, T, 40)).astype(np.float32)
    u = rng.standard_normal((B, T, 24)).astype(np.float32)
    for name, value in (("x", x), ("t", t), ("u", u)):
        np.save(path(f"{name}.npy"), value)
    run("forward", "-w", path("w.safetensors"), "--in", f"x={path('x.npy')}",
        "-o", path("y.npy"))
    out = run("grad", "-w", path("w.safetensors"), "--in",
              f"x={path('x.npy')}", "--in", f"t={path('t.npy')}", "--in",
              f"u={path('u.npy')}", "-o", path("g.safetensors"))
    loss = float(out.split("loss:")[1].split()[0]) if "loss:" in out else None
    grads = load_safetensors(path("g.safetensors"))

    W, b, w = weights["fc.weight"], weights["fc.bias"], weights["w"]
    X = x.reshape(-1, 601)
    Tm, Um = t.reshape(-1, 40), u.reshape(-1, 24)

    def reference(round_):
        y = round_(X) @ round_(W).T + b
        loss = float((y * Tm).sum() + ((round_(X) @ round_(w)) * Um).sum())
        return y, loss, {"fc.weight": round_(Tm).T @ round_(X),
                         "fc.bias": Tm.sum(axis=0),
                         "w": round_(X).T @ round_(Um)}

    y_ref, loss_ref, grads_ref = reference(bf16)
    y_f32, _, grads_f32 = reference(lambda a: np.asarray(a, np.float64))
    y = np.load(path("y.npy")).reshape(-1, 40)
    checks = [("forward", y, y_ref, y_f32)]
    for name in grads_ref:
        checks.append((f"gradient {name}", grads[name], grads_ref[name],
                       grads_f32[name]))
    failed = False
    for what, got, want, plain in checks:
        error = rel(got, want)
        gap = rel(plain, want)
        ok = error <= TOL and (what.endswith("bias") or gap >= F32_GAP)
        failed |= not ok
        print(f"{'ok' if ok else 'FAIL'}: {what}: relative error {error:.2e} "
              f"(f32 products would be {gap:.2e} away)")
    if loss is None or abs(loss - loss_ref) > TOL * abs(loss_ref) * 10:
        print(f"FAIL: loss {loss} against {loss_ref}")
        failed = True
    else:
        print(f"ok: loss {loss:.6g} against {loss_ref:.6g}")
    if failed:
        sys.exit(1)
    print("ok: bf16 products equal numpy's on bf16 operands")


if __name__ == "__main__":
    main()
