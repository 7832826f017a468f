#!/usr/bin/env python3
"""The example models on an NVIDIA GPU against their CPU builds.

Two halves, because the machine with the GPU has no LLVM to build with:

  gpu_check.py prepare --out DIR [--models a,b] [--attnc PATH] [--gpu-target T]
                       [--precision f32|tf32]
      (where attnc is) builds each model for the CPU and for --target cuda
      (with --precision, which the CPU build leaves at f32),
      draws weights (`init --seed`) and inputs, runs the CPU build's
      forward, grad, greedy generation and a short training run, and keeps
      the results (large gradients as a fixed sample of their elements, so
      that the bundle stays small) beside the GPU executables in DIR.

  gpu_check.py run --dir DIR [--models a,b] [--sanitize] [--held-out]
      (where the GPU is) runs the GPU executables on the same weights and
      inputs and compares: init's weights byte for byte, forward and
      gradients by relative L2 error ||gpu - cpu|| / ||cpu||, greedy
      generation's token ids exactly, training's loss curve. With
      --held-out also issue 16's training criterion: char_gpt trained
      1,000 steps on the shipped text reaches the CPU build's held-out
      loss (data/kjv-valid.txt) within 0.05 (about 260 s on an H200 with
      the generic kernels; prepare's --held-out-steps sets the steps). Prints one line per check and a table last;
      exits 1 when any check fails. With no GPU the executables say `no
      CUDA driver or GPU found` and every check is reported as skipped
      with that reason.

Tolerance: 1e-4 relative for f32 (the GPU's kernels sum in another order
than the CPU's; both are f32 with f32 accumulation); a model may state a
looser bound for its gradients, with the reason (vaswani_base, 1e-3). Training diverges
slowly by rounding, so its losses are compared step by step at 1e-3.
A --precision tf32 bundle on a GPU: 1e-2 for forward, gradients and
training losses (TF32 keeps 10 of an f32 operand's 23 mantissa bits, so
each product of two operands is within about 2e-3 of the f32 one, and
layers pass that on), and greedy generation is reported (WARN) rather
than failed where its ids part: a near tie between two logits of a model
with drawn weights goes either way within that error. Under cuda-on-host
the products of a tf32 build are f32, and the f32 tolerances apply.
Needs numpy only.
"""

import argparse
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROOT_DATA = os.path.join(ROOT, "data")

TOLERANCE = 1e-4
TRAIN_TOLERANCE = 1e-3
# A --precision tf32 build on a GPU (see the docstring).
TF32_TOLERANCE = 1e-2
SAMPLE = 8192          # elements kept of a larger gradient
# Seconds for one executable's run (`run --timeout`: the cuda-on-host
# builds run their kernels' loops in order on the CPU, and char_gpt's 20
# training steps take 130 s alone on a 2-core Xeon).
COMMAND_TIMEOUT = 150

# Each model: the init seed, its inputs (name: (id bound, shape, padded
# tail)), the forward entry points checked (entry, {argument: input}), the
# loss's arguments, and the greedy generation (prompt, tokens) if any.
MODELS = {
    "char_gpt": dict(
        seed=1,
        inputs={"tokens": (256, [2, 100], 0), "targets": (256, [2, 100], 0)},
        forward=[("forward", {"tokens": "tokens"})],
        loss=["tokens", "targets"],
        generate=("In the beginning God", 40),
        train=True,
        held_out=True),
    "one_layer_lm": dict(
        seed=2,
        inputs={"tokens": (256, [3, 13], 0), "targets": (256, [3, 13], 0)},
        forward=[("forward", {"tokens": "tokens"})],
        loss=["tokens", "targets"],
        generate=("Hello", 20)),
    "tiny_llama": dict(
        seed=3,
        inputs={"tokens": (256, [2, 21], 0), "targets": (256, [2, 21], 0)},
        forward=[("forward", {"tokens": "tokens"})],
        loss=["tokens", "targets"],
        generate=("Once upon", 24)),
    "gpt2_small": dict(
        seed=4,
        inputs={"tokens": (50257, [1, 12], 0), "targets": (50257, [1, 12], 0)},
        forward=[("forward", {"tokens": "tokens"})],
        loss=["tokens", "targets"],
        generate=("The", 8),
        tokenizer=True),
    "pos_tagger": dict(
        seed=5,
        inputs={"words": (20000, [2, 15], 4), "tags": (48, [2, 15], 4)},
        forward=[("forward", {"words": "words"})],
        loss=["words", "tags"]),
    "sentence_classifier": dict(
        seed=6,
        inputs={"text": (256, [2, 23], 5), "label": (2, [2], 0)},
        forward=[("forward", {"text": "text"})],
        loss=["text", "label"]),
    "vaswani_base": dict(
        seed=7,
        inputs={"src": (37000, [2, 9], 2), "tgt_in": (37000, [2, 7], 0),
                "tgt_out": (37000, [2, 7], 2)},
        forward=[("encode", {"src": "src"}),
                 ("decode", {"tgt": "tgt_in", "memory": "=encode",
                             "src": "src"})],
        loss=["src", "tgt_in", "tgt_out"],
        generate=("Guten Tag", 6),
        # Its gradients come back through the 37,000-word output projection:
        # the GPU's generic kernels sum those 37,000 products in one f32
        # chain, the CPU's in blocks. The CPU build itself is 7.0e-5 from
        # the double-precision reference (worst tensor 8.4e-5); the
        # project's bound against that reference is 1e-3.
        grad_tolerance=1e-3),
}

TRAIN_STEPS = 20
TRAIN_BATCH = 8
TRAIN_SEQ = 64
# The held-out check: issue 16's "reaches the CPU build's held-out loss
# +- 0.05 after 1,000 steps", with the short run's batch and window.
HELD_OUT_STEPS = 1000
HELD_OUT_TOLERANCE = 0.05
HELD_OUT_TIMEOUT = 1200  # seconds for the GPU's 1,000 steps


# --- small helpers ----------------------------------------------------------

def run(cmd, log, timeout=None, env=None):
    """Runs cmd; returns (ok, seconds, output). Never raises."""
    timeout = timeout or COMMAND_TIMEOUT
    start = time.time()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=timeout, env=env)
        out, ok = p.stdout.decode(errors="replace"), p.returncode == 0
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") + f"\n[timeout after {timeout} s]"
        ok = False
    except OSError as e:
        out, ok = str(e), False
    seconds = time.time() - start
    log.write(f"$ {' '.join(cmd)}\n{out}\n[{'ok' if ok else 'FAILED'} in {seconds:.2f} s]\n\n")
    log.flush()
    return ok, seconds, out


def read_safetensors(path):
    """{name: (dtype string, shape, raw bytes)}."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    tensors = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        begin, end = meta["data_offsets"]
        tensors[name] = (meta["dtype"], meta["shape"], data[begin:end])
    return tensors


def f32_tensors(path):
    out = {}
    for name, (dtype, shape, raw) in read_safetensors(path).items():
        if dtype == "F32":
            out[name] = np.frombuffer(raw, dtype="<f4").reshape(shape)
    return out


def sample(values):
    """A fixed, evenly spaced sample of a tensor's elements."""
    flat = values.reshape(-1).astype(np.float64)
    if flat.size <= SAMPLE:
        return flat
    return flat[np.linspace(0, flat.size - 1, SAMPLE).astype(np.int64)]


def relative_error(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        return float("inf")
    if not np.all(np.isfinite(got)):
        return float("nan")
    scale = np.linalg.norm(want)
    return float(np.linalg.norm(got - want) / (scale if scale > 0 else 1.0))


def draw_inputs(spec, seed, directory):
    rng = np.random.default_rng(seed)
    paths = {}
    for name, (bound, shape, padded) in spec["inputs"].items():
        ids = rng.integers(1 if padded else 0, bound, size=shape).astype(np.int32)
        if padded and len(shape) == 2:
            ids[-1, shape[1] - padded:] = 0   # the last example padded
        path = os.path.join(directory, f"in_{name}.npy")
        np.save(path, ids)
        paths[name] = path
    return paths


def forward_args(exe, entry, bindings, inputs, refs, weights, out):
    cmd = [exe, "forward", "-w", weights, "--entry", entry, "-o", out]
    for arg, source in bindings.items():
        path = refs[source[1:]] if source.startswith("=") else inputs[source]
        cmd += ["--in", f"{arg}={path}"]
    return cmd


def loss_args(exe, spec, inputs, weights, out):
    cmd = [exe, "grad", "-w", weights, "-o", out]
    for name in spec["loss"]:
        cmd += ["--in", f"{name}={inputs[name]}"]
    return cmd


def generate_args(exe, spec, weights, ids, bundle):
    prompt, tokens = spec["generate"]
    cmd = [exe, "generate", "-w", weights, "--prompt", prompt, "--tokens", str(tokens),
           "--temperature", "0", "--ids-out", ids]
    if spec.get("tokenizer"):
        cmd += ["--tokenizer", os.path.join(bundle, "gpt2-tokenizer")]
    return cmd


def parse_loss(output):
    for line in output.splitlines():
        if line.startswith("loss"):
            try:
                return float(line.split()[-1])
            except ValueError:
                pass
    return None


def tensor_digests(path):
    return {name: hashlib.sha256(raw).hexdigest()
            for name, (_, _, raw) in read_safetensors(path).items()}


def read_losses(csv_path):
    with open(csv_path) as f:
        rows = f.read().split("\n")[1:]
    return [float(r.split(",")[1]) for r in rows if r]


# --- prepare (where attnc is) ------------------------------------------------

def prepare_model(name, spec, args, out, log):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    model = os.path.join(ROOT, "models", f"{name}.tfm")
    cpu, gpu = os.path.join(d, "cpu"), os.path.join(d, "gpu")
    gpu_options = ["--target", args.gpu_target, "--precision", args.precision]
    for exe, target in ((cpu, []), (gpu, gpu_options)):
        ok, _, text = run([args.attnc, "build", model, "-o", exe] + target, log, timeout=3600)
        if not ok:
            sys.exit(f"error: building {name} {target}: {text}")
    weights = os.path.join(d, "cpu_w.safetensors")
    run([cpu, "init", "--seed", str(spec["seed"]), "-o", weights], log)
    ref = {"digests": tensor_digests(weights), "forward": {}, "grad": {}}
    inputs = draw_inputs(spec, spec["seed"], d)
    refs = {}
    for entry, bindings in spec["forward"]:
        path = os.path.join(d, f"ref_{entry}.npy")
        ok, _, text = run(forward_args(cpu, entry, bindings, inputs, refs, weights, path), log)
        if not ok:
            sys.exit(f"error: {name} {entry} on the CPU: {text}")
        refs[entry] = path
    grads = os.path.join(d, "cpu_grads.safetensors")
    ok, _, text = run(loss_args(cpu, spec, inputs, weights, grads), log)
    if not ok:
        sys.exit(f"error: {name} grad on the CPU: {text}")
    ref["loss"] = parse_loss(text)
    np.savez_compressed(os.path.join(d, "ref_grads.npz"),
                        **{k: sample(v) for k, v in f32_tensors(grads).items()})
    if spec.get("generate"):
        ok, _, text = run(generate_args(cpu, spec, weights,
                                        os.path.join(d, "ref_generate.npy"), out), log)
        if not ok:
            sys.exit(f"error: {name} generate on the CPU: {text}")
    if spec.get("train"):
        trained = os.path.join(d, "cpu_trained.safetensors")
        run([cpu, "train", "-w", weights, "--data", os.path.join(ROOT_DATA, "kjv-train.txt"),
             "--steps", str(TRAIN_STEPS), "--batch", str(TRAIN_BATCH), "--seq",
             str(TRAIN_SEQ), "-o", trained, "--log", os.path.join(d, "ref_train.csv")], log, timeout=3600)
        np.savez_compressed(os.path.join(d, "ref_trained.npz"),
                            **{k: sample(v) for k, v in f32_tensors(trained).items()})
        os.remove(trained)
        os.remove(trained.replace(".safetensors", ".ckpt.safetensors"))
    if spec.get("held_out"):
        ok, _, text = train_and_eval(cpu, weights, ROOT_DATA, args.held_out_steps, out,
                                     log, timeout=3600)
        if not ok:
            sys.exit(f"error: {name} held-out training on the CPU: {last_line(text)}")
        ref["held_out"] = {"steps": args.held_out_steps, "loss": parse_held_out(text)}
    with open(os.path.join(d, "ref.json"), "w") as f:
        json.dump(ref, f, indent=1)
    # Only what `run` reads travels: the weights are drawn again there.
    for path in (weights, grads, cpu):
        os.remove(path)


def train_and_eval(exe, weights, data, steps, work, log, timeout):
    """`steps` steps of `train` from `weights` on data/kjv-train.txt, then
    `eval` on data/kjv-valid.txt: (ok, seconds, eval's output)."""
    trained = os.path.join(work, "held_out.safetensors")
    ok, secs, text = run([exe, "train", "-w", weights, "--data",
                          os.path.join(data, "kjv-train.txt"), "--steps",
                          str(steps), "--batch", str(TRAIN_BATCH), "--seq",
                          str(TRAIN_SEQ), "-o", trained], log, timeout=timeout)
    if ok:
        ok, _, text = run([exe, "eval", "-w", trained, "--data",
                           os.path.join(data, "kjv-valid.txt"), "--seq", str(TRAIN_SEQ)],
                          log, timeout=timeout)
    for path in (trained, trained.replace(".safetensors", ".ckpt.safetensors")):
        if os.path.exists(path):
            os.remove(path)
    return ok, secs, text


def parse_held_out(output):
    """eval's `loss: X` line."""
    for line in output.splitlines():
        if line.startswith("loss:"):
            return float(line.split()[1])
    return None


def prepare(args):
    os.makedirs(args.out, exist_ok=True)
    shutil.copy(os.path.abspath(__file__), os.path.join(args.out, "gpu_check.py"))
    for text in ("kjv-train.txt", "kjv-valid.txt"):
        shutil.copy(os.path.join(ROOT_DATA, text), args.out)
    if any(MODELS[m].get("tokenizer") for m in args.models):
        tokenizer = os.path.join(args.out, "gpt2-tokenizer")
        os.makedirs(tokenizer, exist_ok=True)
        for f in ("encoder.json", "vocab.bpe"):
            shutil.copy(os.path.join(args.tokenizer, f), tokenizer)
    # TF32's rounding shows only where the products run on tensor cores.
    with open(os.path.join(args.out, "bundle.json"), "w") as f:
        json.dump({"tf32": args.precision == "tf32" and args.gpu_target != "cuda-on-host"}, f)
    with open(os.path.join(args.out, "prepare.log"), "w") as log:
        for name in args.models:
            print(f"preparing {name}", flush=True)
            prepare_model(name, MODELS[name], args, args.out, log)


# --- run (where the GPU is) --------------------------------------------------

class Report:
    def __init__(self):
        self.rows = []

    def add(self, model, check, status, detail):
        self.rows.append((model, check, status, detail))
        print(f"{status}: {model} {check}: {detail}", flush=True)

    def failed(self):
        return any(r[2] == "FAIL" for r in self.rows)

    def table(self):
        lines = ["| model | check | result | detail |", "|---|---|---|---|"]
        lines += [f"| {m} | {c} | {s} | {d} |" for m, c, s, d in self.rows]
        return "\n".join(lines)


NO_GPU = "no CUDA driver or GPU found"


def check_model(name, spec, args, report, log):
    d = os.path.join(args.dir, name)
    gpu = os.path.join(d, "gpu")
    with open(os.path.join(d, "ref.json")) as f:
        ref = json.load(f)
    work = os.path.join(args.work, name)
    os.makedirs(work, exist_ok=True)
    weights = os.path.join(work, "w.safetensors")
    ok, secs, text = run([gpu, "init", "--seed", str(spec["seed"]), "-o", weights], log)
    if not ok:
        status = "SKIP" if NO_GPU in text else "FAIL"
        report.add(name, "init", status, text.strip().splitlines()[-1] if text.strip() else "failed")
        return
    same = tensor_digests(weights) == ref["digests"]
    report.add(name, "init", "ok" if same else "FAIL",
               f"weights {'equal' if same else 'differ from'} the CPU build's ({secs:.1f} s)")
    inputs = {n: os.path.join(d, f"in_{n}.npy") for n in spec["inputs"]}
    refs = {entry: os.path.join(d, f"ref_{entry}.npy") for entry, _ in spec["forward"]}
    for entry, bindings in spec["forward"]:
        out = os.path.join(work, f"{entry}.npy")
        ok, secs, text = run(forward_args(gpu, entry, bindings, inputs, refs, weights, out), log)
        if not ok:
            report.add(name, entry, "FAIL", last_line(text))
            continue
        err = relative_error(np.load(out), np.load(refs[entry]))
        report.add(name, entry, verdict(err, limit(args, TOLERANCE)),
                   f"rel err {err:.2e} ({secs:.1f} s)")
    grads = os.path.join(work, "grads.safetensors")
    ok, secs, text = run(loss_args(gpu, spec, inputs, weights, grads), log)
    if not ok:
        report.add(name, "grad", "FAIL", last_line(text))
    else:
        check_grads(name, np.load(os.path.join(d, "ref_grads.npz")),
                    f32_tensors(grads), parse_loss(text), ref["loss"], secs, report,
                    limit(args, spec.get("grad_tolerance", TOLERANCE)),
                    limit(args, TOLERANCE))
    if spec.get("generate"):
        ids = os.path.join(work, "generate.npy")
        ok, secs, text = run(generate_args(gpu, spec, weights, ids, args.dir), log)
        if not ok:
            report.add(name, "generate", "FAIL", last_line(text))
        else:
            got, want = np.load(ids), np.load(os.path.join(d, "ref_generate.npy"))
            same = got.shape == want.shape and bool(np.all(got == want))
            if not same and args.tf32:
                report.add(name, "generate", "WARN",
                           f"{equal_prefix(got, want)} of {len(want.reshape(-1))} greedy "
                           f"tokens equal before the first that differs (TF32: a near tie "
                           f"between two logits goes either way) ({secs:.1f} s)")
            else:
                report.add(name, "generate", "ok" if same else "FAIL",
                           f"{len(want.reshape(-1))} greedy tokens "
                           f"{'equal' if same else 'differ'} ({secs:.1f} s)")
    if spec.get("train"):
        check_train(name, gpu, weights, d, work, report, log, limit(args, TRAIN_TOLERANCE))
    if spec.get("held_out") and args.held_out:
        check_held_out(name, gpu, weights, ref, args.dir, work, report, log)
    if args.sanitize and name in args.sanitize:
        for tool in ("memcheck", "initcheck"):
            ok, secs, text = run(["compute-sanitizer", "--tool", tool, "--print-limit", "20"]
                                 + loss_args(gpu, spec, inputs, weights,
                                             os.path.join(work, f"{tool}.safetensors")),
                                 log, timeout=240)
            summary = [l for l in text.splitlines() if "ERROR SUMMARY" in l]
            report.add(name, f"grad under {tool}", "ok" if ok and "0 errors" in "".join(summary)
                       else "FAIL", (summary[-1] if summary else last_line(text)) + f" ({secs:.0f} s)")


def limit(args, f32_tolerance):
    """The tolerance of a check: its f32 one, or TF32's where that is looser
    and the bundle's products run on tensor cores."""
    return max(f32_tolerance, TF32_TOLERANCE) if args.tf32 else f32_tolerance


def equal_prefix(got, want):
    got, want = got.reshape(-1), want.reshape(-1)
    n = min(len(got), len(want))
    differs = np.nonzero(got[:n] != want[:n])[0]
    return int(differs[0]) if len(differs) else n


def check_grads(name, want_all, got_all, loss, want_loss, secs, report, tolerance,
                loss_tolerance):
    if loss is None or want_loss is None or not np.isfinite(loss):
        report.add(name, "loss", "FAIL", f"loss {loss} (CPU {want_loss})")
    else:
        err = abs(loss - want_loss) / max(abs(want_loss), 1e-30)
        report.add(name, "loss", verdict(err, loss_tolerance),
                   f"{loss:.6f} vs CPU {want_loss:.6f}")
    worst, bad = 0.0, []
    for pname in want_all.files:
        if pname not in got_all:
            bad.append(f"{pname} missing")
            continue
        err = relative_error(sample(got_all[pname]), want_all[pname])
        if not err <= tolerance:
            bad.append(f"{pname} {err:.2e}")
        worst = max(worst, err) if np.isfinite(err) else float("nan")
    detail = f"{len(want_all.files)} gradients, worst rel err {worst:.2e} ({secs:.1f} s)"
    if bad:
        detail += (f"; over {tolerance:g}: " + ", ".join(bad[:12]) +
                   (" ..." if len(bad) > 12 else ""))
    report.add(name, "grad", "FAIL" if bad else "ok", detail)


def check_train(name, gpu, weights, d, work, report, log, tolerance):
    trained = os.path.join(work, "trained.safetensors")
    csv = os.path.join(work, "train.csv")
    ok, secs, text = run([gpu, "train", "-w", weights, "--data",
                          os.path.join(os.path.dirname(d), "kjv-train.txt"),
                          "--steps", str(TRAIN_STEPS), "--batch", str(TRAIN_BATCH), "--seq",
                          str(TRAIN_SEQ), "-o", trained, "--log", csv], log)
    if not ok:
        report.add(name, "train", "FAIL", last_line(text))
        return
    got, want = read_losses(csv), read_losses(os.path.join(d, "ref_train.csv"))
    errs = [abs(a - b) / abs(b) for a, b in zip(got, want)]
    worst = max(errs) if errs and len(got) == len(want) else float("inf")
    ref_w = np.load(os.path.join(d, "ref_trained.npz"))
    got_w = f32_tensors(trained)
    werr = max(relative_error(sample(got_w[k]), ref_w[k]) for k in ref_w.files)
    report.add(name, f"train {TRAIN_STEPS} steps", verdict(worst, tolerance),
               f"losses worst rel diff {worst:.2e}, last {got[-1] if got else None} vs CPU "
               f"{want[-1]:.6f}; weights rel err {werr:.2e} ({secs:.1f} s)")


def check_held_out(name, gpu, weights, ref, bundle, work, report, log):
    steps, want = ref["held_out"]["steps"], ref["held_out"]["loss"]
    ok, secs, text = train_and_eval(gpu, weights, bundle, steps, work, log,
                                    HELD_OUT_TIMEOUT)
    got = parse_held_out(text) if ok else None
    check = f"held-out after {steps} steps"
    if got is None or want is None:
        report.add(name, check, "FAIL",
                   last_line(text) if not ok else "no held-out loss (prepare's or eval's)")
        return
    report.add(name, check, verdict(abs(got - want), HELD_OUT_TOLERANCE),
               f"held-out loss {got:.4f} vs CPU {want:.4f} (limit +-{HELD_OUT_TOLERANCE}; "
               f"{steps} steps in {secs:.0f} s)")


def verdict(err, tol):
    return "ok" if err <= tol else "FAIL"


def last_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1][:300] if lines else "failed with no output"


def run_checks(args):
    global COMMAND_TIMEOUT
    COMMAND_TIMEOUT = args.timeout
    args.work = args.work or os.path.join(args.dir, "work")
    bundle = os.path.join(args.dir, "bundle.json")
    args.tf32 = False
    if os.path.exists(bundle):
        with open(bundle) as f:
            args.tf32 = json.load(f)["tf32"]
    report = Report()
    with open(os.path.join(args.log_dir or args.dir, "gpu_check.log"), "w") as log:
        for name in args.models:
            if not os.path.isdir(os.path.join(args.dir, name)):
                report.add(name, "-", "SKIP", "not prepared")
                continue
            check_model(name, MODELS[name], args, report, log)
    print("\n" + report.table())
    return 1 if report.failed() else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    prep = sub.add_parser("prepare")
    prep.add_argument("--out", required=True)
    prep.add_argument("--attnc", default=os.path.join(ROOT, "build", "bin", "attnc"))
    prep.add_argument("--models", default=",".join(MODELS))
    prep.add_argument("--gpu-target", default="cuda",
                      help="cuda, cuda-sm_80, or cuda-on-host (the GPU target's loops "
                      "run on the CPU: checks the GPU lowering's structure anywhere)")
    prep.add_argument("--precision", default="f32", choices=["f32", "tf32"],
                      help="the GPU build's --precision (tf32: products on tensor cores)")
    prep.add_argument("--held-out-steps", type=int, default=HELD_OUT_STEPS,
                      help="the CPU reference run of `run --held-out` (fewer only to "
                      "try the check itself)")
    prep.add_argument("--tokenizer", default=os.path.expanduser("~/.cache/attnc/gpt2-tokenizer"),
                      help="GPT-2's encoder.json and vocab.bpe (make fetches them)")
    r = sub.add_parser("run")
    r.add_argument("--dir", required=True)
    r.add_argument("--work")
    r.add_argument("--log-dir")
    r.add_argument("--models", help="default: the models the bundle holds")
    r.add_argument("--sanitize", default="", help="models whose grad also runs "
                   "under compute-sanitizer's memcheck and initcheck")
    r.add_argument("--timeout", type=int, default=COMMAND_TIMEOUT,
                   help="seconds for one executable's run (default %(default)s)")
    r.add_argument("--held-out", action="store_true",
                   help=f"also train char_gpt {HELD_OUT_STEPS} steps and compare the "
                   "held-out loss with the CPU build's")
    args = p.parse_args()
    if args.models is None:
        args.models = ",".join(m for m in MODELS if os.path.isdir(os.path.join(args.dir, m)))
    args.models = [m for m in args.models.split(",") if m]
    unknown = [m for m in args.models if m not in MODELS]
    if unknown:
        p.error(f"unknown model {unknown[0]}; the models are {', '.join(MODELS)}")
    if args.command == "prepare":
        prepare(args)
        return 0
    args.sanitize = [m for m in args.sanitize.split(",") if m]
    return run_checks(args)


if __name__ == "__main__":
    sys.exit(main())
