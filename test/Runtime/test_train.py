#!/usr/bin/env python3
# ===- test_train.py - grad, train and eval end to end on the trainable fakes ===#
#
# Drives the executables of fake_trainer.c (a bigram language model that is
# also a tagger, and a bag-of-bytes classifier) as a user would. Gradients
# are checked against finite differences of the executable's own loss and
# against a numpy reimplementation; a few training steps are recomputed in
# numpy; resuming must reproduce an uninterrupted run byte for byte; every
# bad input must fail with one error line and leave outputs untouched.
#
# usage: test_train.py BIGRAM_EXE CLASSIFIER_EXE DATA_DIR
#
# ===-----------------------------------------------------------------------===#

import json
import math
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

BIGRAM, CLASSIFIER = (os.path.abspath(p) for p in sys.argv[1:3])
DATA = os.path.abspath(sys.argv[3])
TRAIN_TEXT = os.path.join(DATA, "kjv-train.txt")
VALID_TEXT = os.path.join(DATA, "kjv-valid.txt")
V = 256
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(exe, *args):
    p = subprocess.run([exe] + [str(a) for a in args], capture_output=True)
    return p.returncode, p.stdout.decode(), p.stderr.decode("utf-8", "replace")


def one_error_line(err, *needles, what):
    lines = err.splitlines()
    ok = len(lines) == 1 and lines[0].startswith("error: ") and all(n in lines[0] for n in needles)
    check(ok, f"{what}: stderr {err!r} should be one error line with {needles}")


def read(path):
    with open(path, "rb") as f:
        return f.read()


def write(path, data):
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def safetensors(path):
    """(metadata, {name: array}) parsed here, independently of the runtime."""
    data = read(path)
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    types = {"F32": np.float32, "I64": np.int64, "I32": np.int32}
    out = {}
    for name, t in header.items():
        b, e = t["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + b:8 + n + e], dtype=types[t["dtype"]]).reshape(t["shape"])
    return meta, out, list(header)


def save_weights(path, W, b):
    """A weights file for fake_bigram, made here."""
    tensors = [("head.weight", W.astype(np.float32)), ("head.bias", b.astype(np.float32))]
    header, off, blob = {}, 0, b""
    for name, a in tensors:
        raw = a.tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        blob += raw
    h = json.dumps(header).encode()
    write(path, struct.pack("<Q", len(h)) + h + blob)


def npy(path, a):
    np.save(path, a)


# --- numpy reference of fake_bigram --------------------------------------------

M64 = (1 << 64) - 1


def splitmix(x):
    x = np.uint64(x) if not isinstance(x, np.ndarray) else x
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def dropout_seed(seed, step):
    return int(splitmix(np.uint64(int(splitmix(np.uint64(seed))) ^ step)))


def keep_mask(seed):
    """abi.h's dropout stream, stream 0, rate 0.1, over head.weight."""
    e = np.arange(V * V, dtype=np.uint64)
    with np.errstate(over="ignore"):
        x = np.uint64(seed) + np.uint64(0x9E3779B97F4A7C15) + np.uint64(0xD1B54A32D192ED03) * e
    bits = splitmix(x)
    return ((bits >> np.uint64(40)) >= np.uint64(int(0.1 * 16777216.0))).reshape(V, V)


def bigram_loss_grad(W, b, tokens, targets, seed):
    """Mean cross-entropy over targets != 0 with dropout on W; in float64."""
    keep = keep_mask(seed)
    Wd = np.where(keep, W.astype(np.float64) / np.float64(np.float32(0.9)), 0.0)
    x, y = tokens.ravel(), targets.ravel()
    sel = y > 0
    x, y = x[sel], y[sel]
    logits = Wd[x] + b.astype(np.float64)
    mx = logits.max(axis=1, keepdims=True)
    z = np.exp(logits - mx).sum(axis=1, keepdims=True)
    loss = float(np.mean(np.log(z[:, 0]) + mx[:, 0] - logits[np.arange(len(y)), y]))
    d = np.exp(logits - mx) / z
    d[np.arange(len(y)), y] -= 1
    d /= len(y)
    gW = np.zeros((V, V))
    np.add.at(gW, x, d)
    gW = np.where(keep, gW / np.float64(np.float32(0.9)), 0.0)
    return loss, gW, d.sum(axis=0)


# --- The tests ------------------------------------------------------------------

def test_info():
    st, out, _ = run(BIGRAM, "info")
    for needle in ["loss_grad(tokens: i32[B, T], targets: i32[B, T]) -> f32[]",
                   "train_step(tokens: i32[B, T], targets: i32[B, T]) -> (f32[], f32[])",
                   "train:", "optimizer: adamw(lr: 0.05, beta1: 0.9, beta2: 0.99, eps: 1e-08, weight_decay: 0.01)",
                   "schedule: cosine(warmup: 5, steps: 200)", "clip_norm: 1"]:
        check(st == 0 and needle in out, f"info shows {needle!r}")
    for cmd in ["grad", "train", "eval"]:
        st, out, _ = run(BIGRAM, cmd, "--help")
        check(st == 0 and out.startswith(f"usage: attn-fake-bigram {cmd}"), f"{cmd} --help")


def test_grad(d):
    rng = np.random.default_rng(1)
    W = rng.normal(0, 0.3, (V, V)).astype(np.float32)
    b = rng.normal(0, 0.1, V).astype(np.float32)
    w = os.path.join(d, "g.safetensors")
    save_weights(w, W, b)
    tokens = np.array([[72, 101, 108, 108, 111], [32, 119, 111, 114, 108]], dtype=np.int64)
    targets = np.array([[101, 108, 108, 111, 32], [119, 111, 114, 108, 0]], dtype=np.int32)
    tp, yp = os.path.join(d, "tokens.npy"), os.path.join(d, "targets.npy")
    npy(tp, tokens)
    npy(yp, targets)
    out = os.path.join(d, "grads.safetensors")
    st, so, err = run(BIGRAM, "grad", "-w", w, "--in", f"targets={yp}", "--in", f"tokens={tp}",
                      "--seed", 7, "-o", out)
    check(st == 0 and so.startswith("loss: "), f"grad: exit 0 and prints the loss ({st}, {err!r})")
    if st != 0:
        return
    loss = float(so.split()[1])
    meta, g, names = safetensors(out)
    check(names == ["head.weight", "head.bias"], f"grad: every parameter by name, in order ({names})")
    check(g["head.weight"].shape == (V, V) and g["head.bias"].shape == (V,), "grad: parameter shapes")
    check(meta.get("model") == "fake_bigram", "grad: metadata names the model")
    seed = dropout_seed(7, 0)
    ref_loss, gW, gb = bigram_loss_grad(W, b, tokens, targets, seed)
    check(abs(loss - ref_loss) < 1e-5 * max(1, abs(ref_loss)), f"grad: loss {loss} vs numpy {ref_loss}")
    errW = np.abs(g["head.weight"] - gW).max()
    errb = np.abs(g["head.bias"] - gb).max()
    check(errW < 1e-6 and errb < 1e-6, f"grad: gradient vs numpy (max error {errW}, {errb})")
    check(np.count_nonzero(g["head.weight"]) > 0, "grad: a gradient that is not all zero")
    # Finite differences of the executable's own loss (same seed, dropout on).
    keep = keep_mask(seed)
    coords = [(72, 101), (108, 108), (32, 5)]
    dropped = [(i, j) for i in (108, 111) for j in range(V) if not keep[i, j]]
    coords += dropped[:1]
    h = 1e-2
    for i, j in coords:
        vals = []
        for sgn in (1, -1):
            Wp = W.copy()
            Wp[i, j] += sgn * h
            save_weights(w, Wp, b)
            _, so2, _ = run(BIGRAM, "grad", "-w", w, "--in", f"tokens={tp}", "--in", f"targets={yp}",
                            "--seed", 7, "-o", os.path.join(d, "fd.safetensors"))
            vals.append(float(so2.split()[1]))
        fd = (vals[0] - vals[1]) / (2 * h)
        check(abs(fd - g["head.weight"][i, j]) < 2e-3,
              f"grad: d loss / d head.weight[{i}, {j}] = {g['head.weight'][i, j]} vs finite difference {fd}")
    save_weights(w, W, b)
    # Another seed, another dropout mask.
    st, so3, _ = run(BIGRAM, "grad", "-w", w, "--in", f"tokens={tp}", "--in", f"targets={yp}",
                     "-o", os.path.join(d, "g0.safetensors"))
    l0 = bigram_loss_grad(W, b, tokens, targets, dropout_seed(0, 0))[0]
    check(st == 0 and abs(float(so3.split()[1]) - l0) < 1e-5 * max(1, l0), "grad: --seed defaults to 0")
    # The classifier's gradient entry takes no seed; its loss fn is (text, label).
    wc = os.path.join(d, "c.safetensors")
    run(CLASSIFIER, "init", "--seed", 3, "-o", wc)
    npy(os.path.join(d, "text.npy"), np.array([[104, 105, 0]], dtype=np.int32))
    npy(os.path.join(d, "label.npy"), np.array([2], dtype=np.int32))
    st, so4, err = run(CLASSIFIER, "grad", "-w", wc, "--in", f"text={d}/text.npy", "--in", f"label={d}/label.npy",
                       "-o", os.path.join(d, "cg.safetensors"))
    _, cg, names = safetensors(os.path.join(d, "cg.safetensors")) if st == 0 else ({}, {}, [])
    check(st == 0 and names == ["embed.weight", "head.bias"] and abs(cg["head.bias"].sum()) < 1e-6,
          f"classifier grad: names and softmax - onehot sums to 0 ({err!r})")

    # Errors.
    keep_out = os.path.join(d, "keep.safetensors")
    write(keep_out, b"precious")
    for args, needles, what in [
        (["--in", f"tokens={tp}"], ["loss_grad: missing --in targets=FILE.npy"], "grad: missing --in"),
        (["--in", f"tokens={tp}", "--in", f"targets={yp}", "--fn", "nope"],
         ["no entry point 'nope_grad'"], "grad: unknown --fn"),
        (["--in", f"tokens={tp}", "--in", f"labels={yp}"], ["loss_grad has no argument 'labels'"],
         "grad: unknown argument"),
    ]:
        st, _, err = run(BIGRAM, "grad", "-w", w, *args, "-o", keep_out)
        check(st == 1, f"{what}: exit 1")
        one_error_line(err, *needles, what=what)
        check(read(keep_out) == b"precious", f"{what}: -o untouched")
    npy(os.path.join(d, "short.npy"), np.array([[1, 2, 3]], dtype=np.int32))
    st, _, err = run(BIGRAM, "grad", "-w", w, "--in", f"tokens={tp}", "--in", f"targets={d}/short.npy", "-o", keep_out)
    check(st == 1 and read(keep_out) == b"precious", "grad: inconsistent shapes: exit 1, -o untouched")
    one_error_line(err, "short.npy", "argument 'targets'", what="grad: inconsistent shapes")


def csv_rows(path):
    lines = read(path).decode().splitlines()
    check(lines and lines[0] == "step,loss,lr,grad_norm,tokens_per_s", f"{path}: CSV header")
    return [[float(x) for x in l.split(",")] for l in lines[1:]]


def eval_loss(exe, w, data, *extra):
    st, out, err = run(exe, "eval", "-w", w, "--data", data, *extra)
    check(st == 0, f"eval {data}: exit 0 ({err!r})")
    vals = dict(l.split(": ") for l in out.splitlines() if ": " in l)
    return float(vals.get("loss", "nan")), vals


def test_train_text(d):
    w0 = os.path.join(d, "w0.safetensors")
    run(BIGRAM, "init", "--seed", 1, "-o", w0)
    before, vals = eval_loss(BIGRAM, w0, VALID_TEXT, "--seq", 64)
    check(abs(float(vals.get("perplexity", 0)) - math.exp(before)) < 1e-3 * math.exp(before),
          "eval: perplexity is exp(loss)")
    check(int(vals.get("positions", 0)) == os.path.getsize(VALID_TEXT) - 1,
          "eval: scores every position of the text (all but the first byte)")
    out = os.path.join(d, "trained.safetensors")
    st, _, err = run(BIGRAM, "train", "-w", w0, "--data", TRAIN_TEXT, "--steps", 60, "--batch", 8,
                     "--seq", 32, "--seed", 2, "-o", out)
    check(st == 0, f"train on the shipped text: exit 0 ({err[-300:]!r})")
    check("step 60/60" in err and "tok/s" in err and "left" in err, "train: progress lines on stderr")
    after, _ = eval_loss(BIGRAM, out, VALID_TEXT, "--seq", 64)
    check(after < before - 1.0, f"train: validation loss falls ({before:.3f} -> {after:.3f})")
    rows = csv_rows(os.path.join(d, "trained.csv"))
    check([int(r[0]) for r in rows] == list(range(1, 61)), "train: CSV has steps 1..60 beside -o")
    check(np.mean([r[1] for r in rows[-10:]]) < np.mean([r[1] for r in rows[:10]]) - 0.5,
          "train: the logged training loss falls")
    check(all(r[3] > 0 and r[4] > 0 for r in rows), "train: grad norms and tokens/s logged")
    # Checkpoint contents.
    meta, t, names = safetensors(os.path.join(d, "trained.ckpt.safetensors"))
    want = ["head.weight", "head.bias", "optim.m.head.weight", "optim.m.head.bias",
            "optim.v.head.weight", "optim.v.head.bias", "optim.step"]
    check(names == want, f"checkpoint tensors {names}")
    check(t["optim.step"].shape == () and int(t["optim.step"]) == 60, "checkpoint: optim.step = 60")
    check(np.all(t["optim.v.head.weight"] >= 0) and np.any(t["optim.m.head.weight"] != 0),
          "checkpoint: Adam's moments")
    info = json.loads(meta["attn.train"])
    check(info["step"] == 60 and info["batch"] == 8 and info["seq"] == 32 and info["seed"] == "2"
          and info["format"] == "text" and info["schedule"] == "cosine" and info["lr"] == 0.05,
          f"checkpoint: attn.train metadata {info}")
    check(len(meta.get("attn.checksum", "")) == 16, "checkpoint: checksum")
    wmeta, wt, wnames = safetensors(out)
    check(wnames == ["head.weight", "head.bias"], "-o holds the weights only")
    check(np.array_equal(wt["head.weight"], t["head.weight"]), "-o and the checkpoint hold the same weights")
    # The trained weights load everywhere weights do.
    st, gen, _ = run(BIGRAM, "generate", "-w", out, "--prompt", "And ", "--tokens", 20, "--seed", 1)
    check(st == 0 and len(gen) >= 24, "generate runs on trained weights")


def test_lm_accuracy(d):
    """eval's accuracy on text is the argmax of forward's logits against the next byte."""
    # Bigram counts of the training text, blurred, predict some bytes right.
    rng = np.random.default_rng(5)
    t = np.frombuffer(read(TRAIN_TEXT), dtype=np.uint8).astype(np.int64)
    counts = np.zeros((V, V))
    np.add.at(counts, (t[:-1], t[1:]), 1)
    W = (np.log1p(counts) + rng.normal(0, 1, (V, V))).astype(np.float32)
    b = rng.normal(0, 1, V).astype(np.float32)
    w = os.path.join(d, "acc.safetensors")
    save_weights(w, W, b)
    x = np.frombuffer(read(VALID_TEXT), dtype=np.uint8).astype(np.int64)
    want = float(np.mean(np.argmax(W[x[:-1]] + b, axis=1) == x[1:]))
    for seq in [64, 7]:
        _, vals = eval_loss(BIGRAM, w, VALID_TEXT, "--seq", seq)
        got = float(vals.get("accuracy", "nan"))
        check(abs(got - want) < 1e-6 and 0.05 < want < 0.95,
              f"eval --seq {seq}: per-byte accuracy {got}, numpy {want}")


def test_schedules(d):
    w0 = os.path.join(d, "w0.safetensors")
    cases = [
        ([], lambda t: 0.05 * t / 5 if t <= 5 else 0.05 * 0.5 * (1 + math.cos(math.pi * (t - 5) / 195))),
        (["--schedule-steps", 9, "--warmup", 2, "--lr", 0.1],
         lambda t: 0.1 * t / 2 if t <= 2 else (0.0 if t >= 9 else 0.1 * 0.5 * (1 + math.cos(math.pi * (t - 2) / 7)))),
        (["--schedule", "warmup_rsqrt", "--warmup", 4, "--d-model", 16, "--lr", 2],
         lambda t: 2 * 16 ** -0.5 * min(t ** -0.5, t * 4 ** -1.5)),
        (["--schedule", "constant", "--lr", 0.003], lambda t: 0.003),
    ]
    for i, (args, f) in enumerate(cases):
        log = os.path.join(d, f"sched{i}.csv")
        st, _, err = run(BIGRAM, "train", "-w", w0, "--data", TRAIN_TEXT, "--steps", 12, "--batch", 2,
                         "--seq", 8, *args, "--log", log, "-o", os.path.join(d, f"sched{i}.safetensors"))
        check(st == 0, f"schedule {args}: exit 0 ({err[-200:]!r})")
        rows = csv_rows(log) if st == 0 else []
        worst = max((abs(r[2] - f(int(r[0]))) / max(1e-12, abs(f(int(r[0])))) if f(int(r[0])) else abs(r[2])
                     for r in rows), default=1)
        check(len(rows) == 12 and worst < 1e-6, f"schedule {args}: lr column vs formula (worst {worst})")


def bigram_reference_steps(W, b, tokens, targets, seed, steps, hp):
    """train_step of fake_bigram in numpy float32 (adamw, clipping)."""
    p = np.concatenate([W.ravel(), b]).astype(np.float32)
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    for t in range(1, steps + 1):
        Wt, bt = p[:V * V].reshape(V, V), p[V * V:]
        _, gW, gb = bigram_loss_grad(Wt, bt, tokens, targets, dropout_seed(seed, t))
        g = np.concatenate([gW.ravel(), gb]).astype(np.float32)
        norm = np.float32(np.sqrt(np.sum(g.astype(np.float64) ** 2)))
        lr = np.float32(hp["lr"](t))
        b1, b2, eps, wd, clip = (np.float32(hp[k]) for k in ("beta1", "beta2", "eps", "wd", "clip"))
        scale = clip / (norm + np.float32(1e-6)) if norm > clip else np.float32(1)
        g = g * scale
        p = p - lr * wd * p
        m = b1 * m + (np.float32(1) - b1) * g
        v = b2 * v + (np.float32(1) - b2) * g * g
        c1 = np.float32(1) - b1 ** np.float32(t)
        c2 = np.float32(1) - b2 ** np.float32(t)
        p = p - lr * (m / c1) / (np.sqrt(v / c2) + eps)
    return p, m, v


def test_update_vs_numpy(d):
    """One batch holding all the data makes the batch order irrelevant, so
    numpy can replay the run: the schedule, the per-step dropout seed, the
    moments kept between steps and the gradient reset per step."""
    rng = np.random.default_rng(5)
    rows = rng.integers(32, 127, size=(4, 9)).astype(np.int32)
    data = os.path.join(d, "rows.npy")
    npy(data, rows)
    W = rng.normal(0, 0.1, (V, V)).astype(np.float32)
    b = np.zeros(V, np.float32)
    w = os.path.join(d, "u.safetensors")
    save_weights(w, W, b)
    out = os.path.join(d, "u2.safetensors")
    st, _, err = run(BIGRAM, "train", "-w", w, "--data", data, "--batch", 4, "--steps", 7, "--seed", 9,
                     "--clip-norm", 0.05, "--weight-decay", 0.1, "-o", out)
    check(st == 0, f"train on .npy rows: exit 0 ({err[-300:]!r})")
    if st != 0:
        return
    hp = {"lr": lambda t: 0.05 * t / 5 if t <= 5 else 0.05 * 0.5 * (1 + math.cos(math.pi * (t - 5) / 195)),
          "beta1": 0.9, "beta2": 0.99, "eps": 1e-8, "wd": 0.1, "clip": 0.05}
    p, m, v = bigram_reference_steps(W, b, rows[:, :-1], rows[:, 1:], 9, 7, hp)
    _, t, _ = safetensors(os.path.join(d, "u2.ckpt.safetensors"))
    got = np.concatenate([t["head.weight"].ravel(), t["head.bias"]])
    gm = np.concatenate([t["optim.m.head.weight"].ravel(), t["optim.m.head.bias"]])
    err_p = np.abs(got - p).max()
    err_m = np.abs(gm - m).max()
    check(err_p < 2e-5 and err_m < 1e-6, f"7 steps of adamw match numpy (weights {err_p}, m {err_m})")
    check(np.abs(got - np.concatenate([W.ravel(), b])).max() > 1e-3, "the weights moved")


def test_resume(d):
    w0 = os.path.join(d, "w0.safetensors")
    common = ["--data", TRAIN_TEXT, "--batch", 4, "--seq", 16, "--seed", 11, "--save-every", 10]
    a = os.path.join(d, "a.safetensors")
    st, _, err = run(BIGRAM, "train", "-w", w0, *common, "--steps", 30, "-o", a)
    check(st == 0, f"uninterrupted run ({err[-200:]!r})")
    bpath = os.path.join(d, "b.safetensors")
    st, _, _ = run(BIGRAM, "train", "-w", w0, *common, "--steps", 10, "-o", bpath)
    b2 = os.path.join(d, "b2.safetensors")
    st, _, err = run(BIGRAM, "train", "--resume", os.path.join(d, "b.ckpt.safetensors"), "--data", TRAIN_TEXT,
                     "--steps", 30, "--log", os.path.join(d, "b.csv"), "-o", b2)
    check(st == 0 and "steps 11 to 30" in err, f"resume: exit 0, continues at step 11 ({err[-300:]!r})")
    check(read(a) == read(b2), "stopped at 10 and resumed to 30: final weights byte-identical")
    check(read(os.path.join(d, "a.ckpt.safetensors")) == read(os.path.join(d, "b2.ckpt.safetensors")),
          "stopped and resumed: final checkpoint byte-identical")
    ra = [r[:4] for r in csv_rows(os.path.join(d, "a.csv"))]
    rb = [r[:4] for r in csv_rows(os.path.join(d, "b.csv"))]
    check(ra == rb and len(ra) == 30, "resume: the CSV continues the same curve")

    # A run killed at an arbitrary moment resumes from its last checkpoint.
    k = os.path.join(d, "k.safetensors")
    kc = os.path.join(d, "k.ckpt.safetensors")
    p = subprocess.Popen([BIGRAM, "train", "-w", w0] + [str(x) for x in common] +
                         ["--steps", "1000000", "-o", k], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 20
    while not os.path.exists(kc) and time.time() < deadline:
        time.sleep(0.005)
    time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    p.wait()
    check(os.path.exists(kc) and not os.path.exists(k), "killed run: a checkpoint, no output")
    if not os.path.exists(kc):
        return
    _, t, _ = safetensors(kc)
    at = int(t["optim.step"])
    target = at + 10
    k2 = os.path.join(d, "k2.safetensors")
    st, _, err = run(BIGRAM, "train", "--resume", kc, "--data", TRAIN_TEXT, "--steps", target, "-o", k2)
    ref = os.path.join(d, "ref.safetensors")
    run(BIGRAM, "train", "-w", w0, *common, "--steps", target, "-o", ref)
    check(st == 0 and read(k2) == read(ref),
          f"killed after step {at} and resumed to {target}: byte-identical to an uninterrupted run ({err[-200:]!r})")


def test_checkpoint_errors(d):
    ckpt = os.path.join(d, "a.ckpt.safetensors")
    raw = read(ckpt)
    out = os.path.join(d, "keep.safetensors")
    write(out, b"precious")
    (n,) = struct.unpack("<Q", raw[:8])
    flipped = bytearray(raw)
    flipped[8 + n + 1000] ^= 0x40
    cases = [
        ("flipped.ckpt", bytes(flipped), ["flipped.ckpt", "does not match its checksum"]),
        ("cut.ckpt", raw[:-100], ["cut.ckpt", "outside the data section"]),
        ("header.ckpt", raw[:20], ["header.ckpt", "header length"]),
        ("json.ckpt", raw[:8] + b"[" + raw[9:], ["json.ckpt", "bad JSON"]),
        ("weights.ckpt", read(os.path.join(d, "a.safetensors")),
         ["weights.ckpt", "'optim.m.head.weight' is missing", "checkpoint of model 'fake_bigram'"]),
    ]
    for name, data, needles in cases:
        path = os.path.join(d, name)
        write(path, data)
        st, _, err = run(BIGRAM, "train", "--resume", path, "--data", TRAIN_TEXT, "--steps", 40, "-o", out)
        check(st == 1, f"resume from {name}: exit 1")
        one_error_line(err, *needles, what=f"resume from {name}")
        check(read(out) == b"precious", f"resume from {name}: -o untouched")
    for args, needles, what in [
        (["--data", VALID_TEXT, "--steps", 40], ["kjv-valid.txt", "not the data checkpoint"], "resume on other data"),
        (["--data", TRAIN_TEXT, "--batch", 8], ["--batch 4", "resumed run keeps it"], "resume with another batch"),
        (["--data", TRAIN_TEXT, "--steps", 5], ["at step 30, past --steps 5"], "resume past --steps"),
    ]:
        st, _, err = run(BIGRAM, "train", "--resume", ckpt, *args, "-o", out)
        check(st == 1, f"{what}: exit 1")
        one_error_line(err, *needles, what=what)
        check(read(out) == b"precious", f"{what}: -o untouched")
    # Resuming a finished run trains nothing: an error, and no output, log or
    # checkpoint written over.
    log, again = os.path.join(d, "keep.csv"), os.path.join(d, "keep.ckpt.safetensors")
    write(log, b"precious log")
    write(again, b"precious checkpoint")
    for args, needles, what in [
        (["--steps", 30], ["a.ckpt.safetensors", "at step 30, and --steps is 30", "nothing to resume",
                           "raise --steps"], "resume a finished run to its own --steps"),
        ([], ["a.ckpt.safetensors", "at step 30, the last of its run", "nothing to resume", "larger --steps"],
         "resume a finished run without --steps"),
    ]:
        st, _, err = run(BIGRAM, "train", "--resume", ckpt, "--data", TRAIN_TEXT, *args, "-o", out)
        check(st == 1, f"{what}: exit 1")
        one_error_line(err, *needles, what=what)
        check(read(out) == b"precious" and read(log) == b"precious log" and read(again) == b"precious checkpoint",
              f"{what}: -o, log and checkpoint untouched")
    # (The run killed on purpose may leave its temporary file; none other may.)
    left = [f for f in os.listdir(d) if ".tmp." in f and not f.startswith("k.")]
    check(not left, f"no temporary files left behind ({left})")


def test_data_errors(d):
    w0 = os.path.join(d, "w0.safetensors")
    out = os.path.join(d, "keep.safetensors")
    write(out, b"precious")
    short = os.path.join(d, "short.txt")
    write(short, "tiny")
    notab = os.path.join(d, "notab.tagged")
    write(notab, "The\tDET\ndog\n")
    pairs = os.path.join(d, "p.tsv")
    write(pairs, "a text\tpos\n")
    floats = os.path.join(d, "floats.npy")
    npy(floats, np.zeros((2, 9), np.float32))
    big = os.path.join(d, "big.npy")
    npy(big, np.array([1, 2, 300, 4] * 20, np.int64))
    cases = [
        (BIGRAM, ["--data", os.path.join(d, "absent.txt")], ["absent.txt", "No such file"], "missing data"),
        (BIGRAM, ["--data", short, "--seq", 8], ["short.txt", "too few for one window"], "data too short"),
        (BIGRAM, ["--data", notab], ["notab.tagged:2", "expected 'word<TAB>tag'"], "tagged line without a tab"),
        (BIGRAM, ["--data", pairs], ["p.tsv", "pairs data needs", "(tokens: i32[B, T], targets: i32[B, T])"],
         "pairs for a language model"),
        (CLASSIFIER, ["--data", TRAIN_TEXT], ["kjv-train.txt", "text data needs", "(text: i32[B, T], label: i32[B])"],
         "text for a classifier"),
        (BIGRAM, ["--data", TRAIN_TEXT, "--format", "tagged"], ["kjv-train.txt:1", "expected 'word<TAB>tag'"],
         "--format tagged on text"),
        (BIGRAM, ["--data", floats], ["floats.npy", "must be i32 or i64"], "f32 token file"),
        (BIGRAM, ["--data", big], ["big.npy", "token 300", "[0, 256)"], "token outside the vocabulary"),
        (BIGRAM, ["--data", TRAIN_TEXT, "--seq", 100], ["--seq 100 exceeds the 64 positions"], "--seq too long"),
        (BIGRAM, ["--data", short, "--seq", 2, "--batch", 5], ["short.txt", "fewer than --batch 5"],
         "fewer examples than a batch"),
    ]
    for exe, args, needles, what in cases:
        wts = w0 if exe == BIGRAM else os.path.join(d, "c0.safetensors")
        if exe == CLASSIFIER:
            run(CLASSIFIER, "init", "-o", wts)
        st, _, err = run(exe, "train", "-w", wts, *args, "-o", out)
        check(st == 1, f"{what}: exit 1 ({st})")
        one_error_line(err, *needles, what=what)
        check(read(out) == b"precious", f"{what}: -o untouched")
    # An unwritable output fails before training, leaving nothing.
    st, _, err = run(BIGRAM, "train", "-w", w0, "--data", TRAIN_TEXT, "--steps", 3, "-o",
                     os.path.join(d, "no", "dir", "w.safetensors"))
    check(st == 1, "unwritable -o: exit 1")
    one_error_line(err, "no/dir/w.safetensors", what="unwritable -o")
    # Divergence stops with an error and writes no weights.
    nan_out = os.path.join(d, "nan.safetensors")
    st, _, err = run(BIGRAM, "train", "-w", w0, "--data", TRAIN_TEXT, "--steps", 20, "--batch", 2, "--seq", 8,
                     "--schedule", "constant", "--lr", 1e30, "--clip-norm", 0, "-o", nan_out)
    check(st == 1 and "training diverged" in err and not os.path.exists(nan_out),
          f"divergence: exit 1, no output ({err[-200:]!r})")
    for args, needle in [
        (["-w", w0, "-o", out], "missing --data"),
        (["-w", w0, "--data", TRAIN_TEXT], "missing -o"),
        (["-w", w0, "--resume", w0, "--data", TRAIN_TEXT, "-o", out], "not both"),
        (["--data", TRAIN_TEXT, "-o", out], "missing -w"),
        (["-w", w0, "--data", TRAIN_TEXT, "--format", "csv", "-o", out], "--format takes"),
        (["-w", w0, "--data", TRAIN_TEXT, "--beta1", 1, "-o", out], "--beta1 takes a number in [0, 1)"),
        (["-w", w0, "--data", TRAIN_TEXT, "--schedule", "linear", "-o", out], "--schedule takes"),
        (["-w", w0, "--data", TRAIN_TEXT, "--steps", 0, "-o", out], "--steps takes a positive integer"),
        (["-w", w0, "--data", TRAIN_TEXT, "--log", out, "-o", out], "must be different files"),
    ]:
        st, _, err = run(BIGRAM, "train", *args)
        check(st == 2, f"train {args}: exit 2 ({st})")
        one_error_line(err, needle, what=f"train usage {needle}")
    check(read(out) == b"precious", "usage errors: -o untouched")


def test_tagged(d):
    sents = [[("the", "DET"), ("dog", "NOUN"), ("runs", "VERB")],
             [("a", "DET"), ("cat", "NOUN"), ("sleeps", "VERB"), (".", ".")],
             [("the", "DET"), ("cat", "NOUN"), ("runs", "VERB"), ("fast", "ADV")]] * 20
    text = "\n\n".join("\n".join(f"{w}\t{t}" for w, t in s) for s in sents) + "\n"
    data = os.path.join(d, "tiny.tagged")
    write(data, text)
    w0 = os.path.join(d, "w0.safetensors")
    out = os.path.join(d, "tagger.safetensors")
    st, _, err = run(BIGRAM, "train", "-w", w0, "--data", data, "--steps", 40, "--batch", 6,
                     "--schedule", "constant", "-o", out)
    check(st == 0, f"train on tagged text: exit 0 ({err[-300:]!r})")
    if st != 0:
        return
    meta, _, _ = safetensors(out)
    vocab = json.loads(meta["attn.vocab"])
    check(vocab["format"] == "tagged" and vocab["words"][:4] == ["<pad>", "<unk>", "cat", "runs"]
          and vocab["tags"][:3] == ["<pad>", "DET", "NOUN"],
          f"tagged: vocabularies by frequency, ties in byte order, in the metadata ({vocab})")
    loss, vals = eval_loss(BIGRAM, out, data)
    first = csv_rows(os.path.join(d, "tagger.csv"))[0][1]
    check(loss < 0.6 and first > 4 and int(vals["positions"]) == 11 * 20,
          f"tagged: eval after training ({first} -> {loss}, {vals})")
    _, t, _ = safetensors(out)
    W, b = t["head.weight"], t["head.bias"]
    pred = [int(np.argmax(W[vocab["words"].index(w)] + b)) for s in sents for w, _ in s]
    gold = [vocab["tags"].index(g) for s in sents for _, g in s]
    want = float(np.mean(np.array(pred) == np.array(gold)))
    check(abs(float(vals.get("accuracy", "nan")) - want) < 1e-6,
          f"tagged: eval's accuracy is the argmax per word against its tag ({vals.get('accuracy')}, numpy {want})")
    # Words the vocabulary does not know are <unk>; tags it does not know are not scored.
    other = os.path.join(d, "other.tagged")
    write(other, "the\tDET\nzebra\tNOUN\nruns\tVERB\nquickly\tADV\nnow\tINTJ\n")
    st, o, err = run(BIGRAM, "eval", "-w", out, "--data", other)
    check(st == 0 and "positions: 4" in o and "note: 1 positions" in err, f"tagged eval: unknown tag skipped ({o!r}, {err!r})")
    st, _, err = run(BIGRAM, "eval", "-w", w0, "--data", data)
    check(st == 1, "eval of tagged data without a vocabulary: exit 1")
    one_error_line(err, "w0.safetensors", "no vocabulary", what="eval without a vocabulary")


def test_unknown_classes(d):
    # Words seen fewer than --min-count times (default 2) train the class of
    # their shape (data.c unknown_class), which comes right after <unk>; an
    # unseen word later gets its class's id.
    sents = [[("the", "DET"), ("dog", "NOUN"), ("runs", "VERB")],
             [("a", "DET"), ("cat", "NOUN"), ("sleeps", "VERB")]] * 10
    sents += [[("the", "DET"), ("Zebras", "NOUN"), ("runs", "VERB")],
              [("a", "DET"), ("cat", "NOUN"), ("jumping", "VERB")],
              [("the", "DET"), ("re-entering", "VERB"), ("1,250", "NUM")]]
    text = "\n\n".join("\n".join(f"{w}\t{t}" for w, t in s) for s in sents) + "\n"
    data = os.path.join(d, "rare.tagged")
    write(data, text)
    w0 = os.path.join(d, "w0.safetensors")
    for extra, want in [([], ["<pad>", "<unk>", "<unk:9>", "<unk:A~s>", "<unk:a-~ing>",
                              "<unk:a~ing>", "the", "a"]),
                        (["--min-count", 1], ["<pad>", "<unk>", "the", "a"])]:
        out = os.path.join(d, "rare.safetensors")
        st, _, err = run(BIGRAM, "train", "-w", w0, "--data", data, "--steps", 60, "--batch", 6,
                         "--schedule", "constant", "--lr", "0.05", *extra, "-o", out)
        check(st == 0, f"train on tagged text with rare words: exit 0 ({err[-300:]!r})")
        if st != 0:
            return
        words = json.loads(safetensors(out)[0]["attn.vocab"])["words"]
        check(words[:len(want)] == want and ("Zebras" in words) == bool(extra),
              f"tagged {extra}: unknown-word classes of the rare words first ({words})")
    # With the classes (default): an unseen capitalised plural is <unk:A~s>,
    # so it scores exactly as Zebras does, and not as an unseen plain word.
    st, _, err = run(BIGRAM, "train", "-w", w0, "--data", data, "--steps", 60, "--batch", 6,
                     "--schedule", "constant", "--lr", "0.05", "-o", out)
    losses = []
    for word in ["Zebras", "Quokkas", "quokka"]:
        f = os.path.join(d, f"{word}.tagged")
        write(f, f"the\tDET\n{word}\tNOUN\nruns\tVERB\n")
        losses.append(eval_loss(BIGRAM, out, f)[0])
    check(losses[0] == losses[1] != losses[2],
          f"tagged eval: an unseen word takes its class's id ({losses})")


def test_classifier(d):
    rng = np.random.default_rng(3)
    lines = []
    alphabet = {"red": "abcdefgh", "green": "ijklmnop", "blue": "qrstuvwx"}
    for i in range(90):
        label = ["red", "green", "blue"][i % 3]
        word = "".join(rng.choice(list(alphabet[label]), size=rng.integers(3, 12)))
        lines.append(f"{word} yz\t{label}")
    data = os.path.join(d, "colors.tsv")
    write(data, "\n".join(lines) + "\n")
    w0 = os.path.join(d, "c0.safetensors")
    run(CLASSIFIER, "init", "--seed", 1, "-o", w0)
    out = os.path.join(d, "cls.safetensors")
    st, _, err = run(CLASSIFIER, "train", "-w", w0, "--data", data, "--steps", 60, "--batch", 9, "-o", out)
    check(st == 0, f"train a classifier on pairs: exit 0 ({err[-300:]!r})")
    if st != 0:
        return
    meta, _, _ = safetensors(out)
    vocab = json.loads(meta["attn.vocab"])
    check(vocab == {"format": "pairs", "labels": ["blue", "green", "red"]},
          f"pairs: labels numbered in byte order; byte-level text has no vocabulary ({vocab})")
    after, vals = eval_loss(CLASSIFIER, out, data)
    check(after < 0.3 and int(vals["positions"]) == 90, f"classifier: eval loss after training {after}")
    _, t, _ = safetensors(out)
    E, bias = t["embed.weight"], t["head.bias"]
    pred = []
    for line in lines:
        x = np.frombuffer(line.split("\t")[0].encode(), dtype=np.uint8)
        pred.append(int(np.argmax(E[x].astype(np.float64).mean(axis=0).astype(np.float32) + bias)))
    gold = [vocab["labels"].index(line.split("\t")[1]) for line in lines]
    want = float(np.mean(np.array(pred) == np.array(gold)))
    check(abs(float(vals.get("accuracy", "nan")) - want) < 1e-6,
          f"classifier: eval's accuracy is the argmax per example against its label ({vals.get('accuracy')}, numpy {want})")
    rows = csv_rows(os.path.join(d, "cls.csv"))
    check(rows[0][1] > 1.0, f"classifier: first loss near log 3 ({rows[0][1]})")
    bad = os.path.join(d, "bad_label.tsv")
    write(bad, "abc\tpurple\n")
    st, _, err = run(CLASSIFIER, "eval", "-w", out, "--data", bad)
    check(st == 1, "classifier eval with an unknown label: exit 1")
    one_error_line(err, "bad_label.tsv:1", "label 'purple'", what="unknown label")
    nums = os.path.join(d, "nums.tsv")
    write(nums, "abc\t0\ndef\t7\n")
    st, _, err = run(CLASSIFIER, "train", "-w", w0, "--data", nums, "--batch", 1, "--steps", 1,
                     "-o", os.path.join(d, "n.safetensors"))
    check(st == 1, "numbered labels beyond the class count: exit 1")
    one_error_line(err, "nums.tsv:2", "class 7", "3 classes", what="label out of range")


def main():
    d = tempfile.mkdtemp(prefix="train-test-", dir=os.getcwd())
    test_info()
    test_grad(d)
    test_train_text(d)
    test_lm_accuracy(d)
    test_schedules(d)
    test_update_vs_numpy(d)
    test_resume(d)
    test_checkpoint_errors(d)
    test_data_errors(d)
    test_tagged(d)
    test_unknown_classes(d)
    test_classifier(d)
    if failures:
        print(f"{len(failures)} check(s) failed; files kept in {d}")
        return 1
    shutil.rmtree(d)
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
