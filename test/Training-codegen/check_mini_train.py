"""Recomputes Inputs/mini_train.mlir's loss_grad and three train steps in
NumPy (float64) from the harness's dump and compares: every parameter,
moment and gradient element, the losses and the gradient norms, relative
error <= 1e-5 per buffer; the padding between parameters (and the gradient
buffer's) must be untouched, bit for bit.

  check_mini_train.py DUMP.bin NUM_PARAM_ELEMENTS
"""

import sys

import numpy as np

# Parameter slots: w 3x5 at 0, b 7 at 16, s (scalar) at 32.
SLOTS = {"w": (0, 15), "b": (16, 7), "s": (32, 1)}


def main():
    raw = np.fromfile(sys.argv[1], dtype=np.float32)
    n = int(sys.argv[2])
    pos = 0

    def take(count):
        nonlocal pos
        chunk = raw[pos:pos + count]
        pos += count
        return chunk.astype(np.float64)

    p0, m0, v0, x = take(n), take(n), take(n), take(15)
    failures = 0

    def check(what, got, want, tol=1e-5):
        nonlocal failures
        norm = np.linalg.norm(want)
        err = np.linalg.norm(got - want) / norm if norm else np.linalg.norm(got)
        ok = err <= tol
        failures += not ok
        print(f"{'ok' if ok else 'FAIL'}: {what}: relative error {err:.3g}")

    def grads_of(p):
        w, b, s = (p[o:o + c] for o, c in SLOTS.values())
        return {"w": 2 * w * x, "b": b + 1, "s": s * s}

    used = np.zeros(n, dtype=bool)
    for o, c in SLOTS.values():
        used[o:o + c] = True

    # loss_grad
    g_dump, loss = take(n), take(1)
    g = grads_of(p0)
    for name, (o, c) in SLOTS.items():
        check(f"loss_grad grad {name}", g_dump[o:o + c], g[name])
    pad_ok = np.all(g_dump[~used] == -7.0)
    failures += not pad_ok
    print(f"{'ok' if pad_ok else 'FAIL'}: loss_grad leaves the gradient "
          f"buffer's padding alone")
    check("loss_grad loss", loss, np.array([np.sqrt(np.sum(p0[0:15] ** 2) + np.sum(x ** 2))]))

    p, m, v = p0.copy(), m0.copy(), v0.copy()
    for t in (1, 2, 3):
        lr, b1, b2, eps, wd = 0.02, 0.9, 0.99, 1e-8, 0.01
        clip = 0.0 if t == 3 else 1.0
        g = grads_of(p)
        norm = np.sqrt(sum(np.sum(a ** 2) for a in g.values()))
        loss_want = np.sqrt(np.sum(p[0:15] ** 2) + np.sum(x ** 2))
        factor = min(1.0, clip / (norm + 1e-6)) if clip > 0 else 1.0
        for name, (o, c) in SLOTS.items():
            gg = g[name] * factor
            pp = p[o:o + c] * (1 - lr * wd)
            m[o:o + c] = b1 * m[o:o + c] + (1 - b1) * gg
            v[o:o + c] = b2 * v[o:o + c] + (1 - b2) * gg * gg
            denom = np.sqrt(v[o:o + c]) / np.sqrt(1 - b2 ** t) + eps
            p[o:o + c] = pp - lr / (1 - b1 ** t) * m[o:o + c] / denom
        gp, gm, gv, out = take(n), take(n), take(n), take(2)
        check(f"step {t} params", gp[used], p[used])
        check(f"step {t} first moment", gm[used], m[used])
        check(f"step {t} second moment", gv[used], v[used])
        check(f"step {t} loss", out[:1], np.array([loss_want]))
        check(f"step {t} gradient norm", out[1:], np.array([norm]))
        untouched = (np.all(gp[~used] == p0[~used]) and
                     np.all(gm[~used] == m0[~used]) and
                     np.all(gv[~used] == v0[~used]))
        failures += not untouched
        print(f"{'ok' if untouched else 'FAIL'}: step {t} leaves the padding "
              f"alone")
        # Carry on from the binary's state so that errors do not compound.
        p, m, v = gp.copy(), gm.copy(), gv.copy()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
