#!/usr/bin/env python3
"""`make bench`: forward, generate and train-step throughput of
attnc-compiled models next to PyTorch CPU eager on the same weights and
shapes, attnc's matrix products next to OpenBLAS, its attention next to
PyTorch's, and the machine's FMA peak and bandwidth, in one run.

For each model: `attnc compile` (timed), link tools/bench/driver.c with the
object and libattnrt, initialise weights (seed 1). Then three processes
keep the weights loaded: attnc on 1 thread, attnc on 2 threads (the
runtime's pool), and PyTorch (when it imports), started with
OPENBLAS_CORETYPE=SkylakeX (where the CPU has AVX-512) OMP_WAIT_POLICY=PASSIVE
and torch.set_num_threads(2) (see MLIR22-NOTES) on an nn.Module built from
nn.Embedding, nn.MultiheadAttention(batch_first=True) with a causal mask,
nn.LayerNorm, nn.Linear and GELU, loaded from the same safetensors file.
Runs are interleaved in rounds (each system a few runs per round), so that
a change in the machine's load hits every system alike; the figures are
medians over all runs after a warm-up, timing only the forward call (no
process start-up or file I/O). PyTorch's output is compared with attnc's,
so that both compute the same function.

`generate`: greedy, N new tokens after a P-token prompt, prompt processing
included. attnc through the runtime's attn_generate (its prefill/decode_step
path, with the key/value cache, when the model has them); PyTorch with a
hand-written key/value cache over the same module's weights; attnc also
built with each of --weight-formats (`attnc --weights bf16|int8`: the
products read a bf16 or Q8_0 copy of their weights), whose decode bound
counts the products' weights at that size.

--precisions bf16 (default where the CPU has AVX512-BF16): the models built
with `attnc --precision bf16` too ("attnc bf16-products": products on
bf16 operands with f32 accumulation), in the forward, generate, prefill
and train rows, and the gemm section's products built so (columns "bf16");
with int8 among --weight-formats, also `--weights int8 --precision bf16`
in the generate and prefill rows ("attnc int8 bf16-products"), and the
sdpa section's attention built so (columns "attnc bf16"),
with PyTorch's own bf16 beside them in the forward and train rows
("PyTorch bf16-autocast": torch.autocast("cpu", dtype=torch.bfloat16)). --rounds
rounds, systems in turn, medians; each round starts with the read loop of
`peak` (0.5 s on 1 and 2 threads), whose medians give the decode step's
bound: the host's bandwidth moves over minutes, so the bound is measured
next to the steps it bounds.

`train step`: one optimizer step on a fixed batch (B from MODELS, T = 256,
targets = the next tokens), timed whole. attnc: the compiled train_step
through attn_run (driver.c: hyperparameters at the model's constant rate,
dropout seed, gradient buffer zeroed, AdamW and global-norm clipping as
compiled, dropout as in the model). PyTorch: the same module in train mode
with nn.Dropout where the model has dropout, F.cross_entropy,
loss.backward(), clip_grad_norm_(clip), torch.optim.AdamW (the model's
lr, betas, eps, weight_decay; PyTorch's defaults otherwise), zero_grad().
Before the first step both compute the loss on that batch with dropout off
(attnc's `loss` entry, the module in eval mode), which must agree; the step
1 losses (dropout on, different masks) are printed too. The first step is
the warm-up. Each system trains its own copy of the weights, which drift
apart (dropout masks differ); the work per step does not depend on them.
Train steps run after the forward and generate runs (which see the initial
weights).

Sections (--only, default all; printed in this order, each its own table):

`peak`: the machine's f32 peak, tools/bench/peak.c (clang-22 -O3
-march=native): a pure-FMA loop with 16 independent AVX-512 accumulators
(12 AVX2 ones without AVX-512) on 1 and 2 threads, and a read loop over a
512 MiB buffer (--peak-mib) on 1 and 2 threads; the best run in
--peak-seconds. The model sections use it for their "% FMA peak" column
(useful FLOPs per token: 2 per weight of every matrix product + causal
attention's 2 d T per layer for a forward, 3x that for a train step) and
for the decode-step bound (every weight but the position table read once
at the read loop's bandwidth, measured again in the generate rounds).

`gemm`: every matrix product char_gpt and gpt2_small run (--models), at
their shapes: per layer (qkv, proj, fc, fc_out, head) the forward x W^T at
M = B*T rows in --gemm-m, and the backward products dy W and dy^T x (the
head: x^T dy) at M in --gemm-bwd-m. attnc: a generated model with one fn
per product (BUILD/bench/gemm_MODEL.tfm), each a call through attn_run
(driver.c `call`); OpenBLAS: cblas_sgemm with the same operand layouts
(tools/bench/blas.c, dlopened libopenblas.so.0: the system's, else
Debian's libopenblas0-pthread fetched without root), OPENBLAS_CORETYPE=
SkylakeX where the CPU has AVX-512, openblas_set_num_threads(1 or 2). GFLOP/s = 2 m n k / seconds.

`sdpa`: scaled dot-product attention alone, B=1 H=4 D=64, T in --sdpa-t,
causal and not, forward and forward + backward: attnc's `forward` and
`loss_grad` of a generated model (sum(attention(q * wq, k * wk, v * wv)),
gradients through [D] scales) against PyTorch's scaled_dot_product_attention
(PyTorch 1.13: F._scaled_dot_product_attention, its predecessor) with the
same loss and .backward(), 1 and 2 threads; useful GFLOP/s (4 B H T^2 D
forward, 3x for forward + backward, causal counted as half), and the extra
memory of one call (peak RSS growth). Both are checked to agree first.

`forward`, `generate`, `train`: the model workloads described above.

`dp`: data-parallel training (docs/Training.md) against threads, for the
models of --models: the executable of `attnc build` runs `train` on
data/kjv-train.txt (T = 256, the train section's global batch, seed 1,
--dp-steps steps, the first a warm-up) as 1 process of 1 thread, 1
process of 2 threads, and `mpirun -np 2` processes of 1 thread each with
half the batch each (and again with --shard-optimizer), in --rounds
rounds, configurations in turn. tokens/s: the median over the rounds of
the median step (the loss log's tokens_per_s); MPI %: the share of a step
the processes spent in MPI collectives (train's last line: the all-reduce,
and waiting there for the other process). Skipped without OpenMPI's
mpirun.

`llamacpp`: llama.cpp, built from source the first time
(scripts/fetch-llama-cpp.sh: the release the npm package node-llama-cpp
carries as a git bundle, -march=native), on gpt2_small's shape with random
weights in f32, bf16 and Q8_0 (tools/bench/llama_cpp.py: llama-bench's
pp256 and tg64, 2 threads, after waiting for idle CPUs), printed beside
this run's gpt2_small prefill and decode rows of attnc. Skipped, with the
reason, when llama.cpp cannot be fetched or built.

The kernel sections time back-to-back calls (as many as fill a share of
--gemm-budget / --sdpa-budget seconds per system and case), interleaved in
--rounds rounds; the figure is the median per call.

Usage: bench.py [--only SECTIONS] [--build DIR] [--attnc PATH] [--models a,b]
                [--rounds R] [--reps N] [--budget S] [--batches 1,8]
                [--gen-new N] [--train-budget S] [--gemm-m LIST]
                [--gemm-bwd-m LIST] [--gemm-budget S] [--sdpa-t LIST]
                [--sdpa-budget S] [--peak-seconds S] [--no-torch] [--reuse]
                [--weight-formats bf16,int8] [--precisions bf16]
"""

import argparse
import contextlib
import datetime
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# What the PyTorch twin of each model needs beyond its weights (the .tfm
# files fix these; the weights give vocab, d and the layer count).
# `dropout`: the rate after attention and after the MLP in each block;
# `embed_dropout`: the rate on wte + wpe; `train_b`: the train step's batch.
MODELS = {
    "char_gpt": {"heads": 6, "gelu": "none", "dropout": 0.1, "embed_dropout": 0.0,
                 "train_b": 8},
    "gpt2_small": {"heads": 12, "gelu": "tanh", "dropout": 0.1, "embed_dropout": 0.1,
                   "train_b": 4},
}

T = 256
BATCHES = (1, 8)
THREADS = (1, 2)


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def run(cmd, **kwargs):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, **kwargs).stdout


def read_safetensors(path):
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        out[name] = np.frombuffer(data[begin:end], dtype=np.float32).reshape(entry["shape"])
    return out


def lcg_tokens(n):
    """The ids driver.c uses."""
    state, out = 12345, np.empty(n, dtype=np.int32)
    for i in range(n):
        state = (state * 1664525 + 1013904223) & 0xFFFFFFFF
        out[i] = (state >> 8) % 256
    return out


# ---------------------------------------------------------------- PyTorch side


def torch_worker(args):
    """The child process: loads the module, then serves JSON commands."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.set_num_threads(2)
    # attnc's entry points flush denormals (FTZ, DAZ); so does the baseline.
    torch.set_flush_denormal(True)
    weights = read_safetensors(args.weights)
    cfg = MODELS[args.model]
    vocab, d = weights["wte.weight"].shape
    ctx = weights["wpe.weight"].shape[0]
    layers = 1 + max(int(k.split(".")[1]) for k in weights if k.startswith("h."))
    heads = cfg["heads"]

    class FeedForward(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear1 = nn.Linear(d, 4 * d)
            self.linear2 = nn.Linear(4 * d, d)
            self.act = nn.GELU(approximate=cfg["gelu"])

        def forward(self, x):
            return self.linear2(self.act(self.linear1(x)))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(d)
            self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
            self.ln_2 = nn.LayerNorm(d)
            self.mlp = FeedForward()
            self.drop = nn.Dropout(cfg["dropout"])

        def forward(self, x, mask):
            h = self.ln_1(x)
            x = x + self.drop(self.attn(h, h, h, attn_mask=mask, need_weights=False)[0])
            return x + self.drop(self.mlp(self.ln_2(x)))

        def cached(self, x, cache):
            """The same block on new positions x [1, t, d] with the keys and
            values of the earlier ones in `cache`."""
            h = self.ln_1(x)
            q, k, v = F.linear(h, self.attn.in_proj_weight, self.attn.in_proj_bias).split(d, -1)
            split = lambda z: z.view(1, -1, heads, d // heads).transpose(1, 2)
            q, k, v = split(q), split(k), split(v)
            if cache is not None:
                k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
            t, s = q.shape[2], k.shape[2]
            att = (q @ k.transpose(-1, -2)) / math.sqrt(d // heads)
            hidden = torch.ones(t, s, dtype=torch.bool).triu(s - t + 1)
            y = (att.masked_fill(hidden, float("-inf")).softmax(-1) @ v)
            x = x + self.attn.out_proj(y.transpose(1, 2).reshape(1, t, d))
            return x + self.mlp(self.ln_2(x)), (k, v)

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab, d)
            self.wpe = nn.Embedding(ctx, d)
            self.h = nn.ModuleList(Block() for _ in range(layers))
            self.ln_f = nn.LayerNorm(d)
            self.drop = nn.Dropout(cfg["embed_dropout"])

        def forward(self, tokens):
            t = tokens.shape[1]
            x = self.drop(self.wte(tokens) + self.wpe(torch.arange(t)))
            mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
            for block in self.h:
                x = block(x, mask)
            return self.ln_f(x) @ self.wte.weight.t()

        def generate(self, prompt, n, stamps=None):
            """Greedy decoding with a key/value cache; the time after each
            token is appended to `stamps`."""
            caches, out, pos = [None] * len(self.h), [], 0
            tokens = prompt
            for _ in range(n):
                t = tokens.shape[1]
                x = self.wte(tokens) + self.wpe(torch.arange(pos, pos + t))
                for i, block in enumerate(self.h):
                    x, caches[i] = block.cached(x, caches[i])
                logits = self.ln_f(x[:, -1]) @ self.wte.weight.t()
                pos += t
                tokens = logits.argmax(-1).view(1, 1)
                out.append(int(tokens))
                if stamps is not None:
                    stamps.append(time.perf_counter())
            return out

    model = GPT()
    model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in weights.items()})
    model.eval()
    with open("/proc/self/maps") as f:
        blas = sorted({l.split()[-1] for l in f if "blas" in l.split()[-1]})
    openblas = [b for b in blas if "openblas" in b]
    info = {"blas": "OpenBLAS (" + os.path.basename(openblas[0]) + ")" if openblas
            else os.path.basename(blas[0]) if blas else "unknown",
            "version": torch.__version__}
    print(json.dumps(info), flush=True)
    warm = set()
    train = {}  # the optimizer and the batch shape trained on

    def batch(b):
        """The batch driver.c's `train` and `loss` use."""
        ids = torch.from_numpy(lcg_tokens(b * (T + 1)).reshape(b, T + 1).astype(np.int64))
        return ids[:, :-1].contiguous(), ids[:, 1:].contiguous()

    def precision(cmd):
        """PyTorch's bf16 mixed precision when the command asks, else nothing."""
        if cmd.get("autocast"):
            return torch.autocast("cpu", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def train_step(tokens, targets, cmd):
        model.train()
        with precision(cmd):
            logits = model(tokens)
        loss = F.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1))
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), train["clip"])
        train["opt"].step()
        train["opt"].zero_grad()
        model.eval()
        return float(loss), float(norm)

    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["cmd"] == "quit":
            break
        if cmd["cmd"] == "train":
            b, reps = cmd["b"], cmd["reps"]
            tokens, targets = batch(b)
            if train.get("b") != b:
                lr, beta1, beta2, eps, wd, clip = cmd["hyper"]
                train.update(b=b, clip=clip, step1={}, opt=torch.optim.AdamW(
                    model.parameters(), lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=wd))
            # A warm-up step per precision; the autocast rows train the
            # same weights after the f32 rows' steps.
            mode = bool(cmd.get("autocast"))
            if mode not in train["step1"]:
                loss, norm = train_step(tokens, targets, cmd)
                train["step1"][mode] = {"loss": loss, "norm": norm}
            times, losses = [], []
            for _ in range(reps):
                t0 = time.perf_counter()
                loss, _ = train_step(tokens, targets, cmd)
                times.append(time.perf_counter() - t0)
                losses.append(loss)
            print(json.dumps({"seconds": times, "loss": losses,
                              "step1": train["step1"][mode]}), flush=True)
            continue
        if cmd["cmd"] == "loss":
            tokens, targets = batch(cmd["b"])
            with torch.no_grad():
                logits = model(tokens)
                loss = F.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1))
            print(json.dumps({"loss": float(loss)}), flush=True)
            continue
        with torch.no_grad():
            if cmd["cmd"] == "check":
                tokens = torch.from_numpy(np.load(cmd["tokens"]).astype(np.int64))
                ref = np.load(cmd["reference"])
                out = model(tokens).numpy()
                check = {"rel_err": float(np.linalg.norm(out - ref) / np.linalg.norm(ref))}
                # The cached decoding agrees with full recomputation.
                prompt = tokens[:, :8]
                seq, full = prompt, []
                for _ in range(4):
                    nxt = model(seq)[0, -1].argmax().view(1, 1)
                    full.append(int(nxt))
                    seq = torch.cat([seq, nxt], 1)
                check["cache_ok"] = model.generate(prompt, 4) == full
                print(json.dumps(check), flush=True)
            elif cmd["cmd"] == "forward":
                b, reps = cmd["b"], cmd["reps"]
                tokens = torch.from_numpy(lcg_tokens(b * T).reshape(b, T).astype(np.int64))
                if (b, cmd.get("autocast")) not in warm:
                    with precision(cmd):
                        model(tokens)
                    warm.add((b, cmd.get("autocast")))
                times = []
                for _ in range(reps):
                    t0 = time.perf_counter()
                    with precision(cmd):
                        model(tokens)
                    times.append(time.perf_counter() - t0)
                print(json.dumps({"seconds": times}), flush=True)
            elif cmd["cmd"] == "generate":
                prompt = torch.from_numpy(lcg_tokens(cmd["prompt"]).astype(np.int64))[None]
                model.generate(prompt, 1)
                stamps = []
                t0 = time.perf_counter()
                model.generate(prompt, cmd["new"], stamps)
                print(json.dumps({"seconds": [time.perf_counter() - t0],
                                  "first": stamps[0] - t0}), flush=True)


def memory_status():
    """(VmRSS, VmHWM) of this process, bytes."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                key, value = line.split(":")
                out[key] = int(value.split()[0]) * 1024
    return out["VmRSS"], out["VmHWM"]


def sdpa_worker():
    """The PyTorch side of the sdpa section, a child process serving JSON
    commands: F.scaled_dot_product_attention where it exists (PyTorch 2),
    else PyTorch 1.13's F._scaled_dot_product_attention(q, k, v, None, 0.0,
    False, is_causal), its predecessor (the math path: q k^T, softmax, @ v).
    Inputs: [B, H, T, D] in [-1, 1); forward under no_grad; forward +
    backward as attnc's `loss` entry: sum(sdpa(q * wq, k * wk, v * wv))
    with wq, wk, wv ones of [D] that require gradients, .backward()."""
    import torch
    import torch.nn.functional as F

    torch.set_flush_denormal(True)
    if hasattr(F, "scaled_dot_product_attention"):
        name = "F.scaled_dot_product_attention"
        sdpa = lambda q, k, v, causal: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    else:
        name = "F._scaled_dot_product_attention (PyTorch 1.13; math path)"
        sdpa = lambda q, k, v, causal: F._scaled_dot_product_attention(
            q, k, v, None, 0.0, False, causal)[0]
    print(json.dumps({"version": torch.__version__, "sdpa": name}), flush=True)
    inputs, warm = {}, set()

    def get(shape):
        key = tuple(shape)
        if key not in inputs:
            inputs.clear()
            g = torch.Generator().manual_seed(1)
            qkv = [torch.rand(*shape, generator=g) * 2 - 1 for _ in range(3)]
            ws = [torch.ones(shape[-1], requires_grad=True) for _ in range(3)]
            inputs[key] = (qkv, ws)
        return inputs[key]

    def once(qkv, ws, causal, backward):
        if not backward:
            with torch.no_grad():
                sdpa(*qkv, causal)
            return
        for w in ws:
            w.grad = None
        sdpa(*(x * w for x, w in zip(qkv, ws)), causal).sum().backward()

    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["cmd"] == "quit":
            break
        if cmd["cmd"] == "check":
            # attnc's saved inputs, forward result and loss_grad gradients.
            qkv = [torch.from_numpy(np.load(os.path.join(cmd["fwd"], f"in{i}.npy")))
                   for i in range(3)]
            ref = np.load(os.path.join(cmd["fwd"], "out.npy"))
            with torch.no_grad():
                out = sdpa(*qkv, cmd["causal"]).numpy()
            qkv = [torch.from_numpy(np.load(os.path.join(cmd["grad"], f"in{i}.npy")))
                   for i in range(3)]
            ws = [torch.ones(qkv[0].shape[-1], requires_grad=True) for _ in range(3)]
            sdpa(*(x * w for x, w in zip(qkv, ws)), cmd["causal"]).sum().backward()
            grads = np.concatenate([w.grad.numpy() for w in ws])
            got = np.load(os.path.join(cmd["grad"], "grads.npy"))[cmd["grad_index"]]
            rel = lambda a, b: float(np.linalg.norm(a - b) / np.linalg.norm(b))
            print(json.dumps({"forward": rel(ref, out), "grads": rel(got, grads)}), flush=True)
            continue
        torch.set_num_threads(cmd["threads"])
        qkv, ws = get(cmd["shape"])
        causal, backward = cmd["causal"], cmd["backward"]
        if cmd["cmd"] == "mem":
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            rss, _ = memory_status()
            once(qkv, ws, causal, backward)
            print(json.dumps({"bytes": memory_status()[1] - rss}), flush=True)
            continue
        key = (tuple(cmd["shape"]), causal, backward, cmd["threads"])
        if key not in warm:
            once(qkv, ws, causal, backward)
            warm.add(key)
        t0 = time.perf_counter()
        for _ in range(cmd["reps"]):
            once(qkv, ws, causal, backward)
        print(json.dumps({"seconds": time.perf_counter() - t0}), flush=True)


class Worker:
    """A child process that answers commands on stdin; `QUIT` ends it."""
    QUIT = "quit"

    def close(self):
        try:
            self.p.stdin.write(self.QUIT + "\n")
            self.p.stdin.close()
        except OSError:
            pass
        self.p.wait()


class TorchWorker(Worker):
    """This script run as a PyTorch worker (`args`): one JSON command a line,
    one JSON answer a line, after a first line of JSON information. After
    each answer it waits `pause` seconds: OpenBLAS's threads keep spinning
    for a while after a call, taking a core from whatever runs next
    (measured: char_gpt forward B=1 on attnc's 2 threads ran at 14,234
    tokens/s right after PyTorch's runs with a 0.2 s pause, 32,549 with 1 s,
    36,577 with no PyTorch process at all)."""
    QUIT = json.dumps({"cmd": "quit"})

    def __init__(self, args, blas_dir, env=None, pause=0.0):
        env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE", **openblas_env(),
                   **(env or {}))
        if blas_dir:
            env["LD_LIBRARY_PATH"] = blas_dir + ":" + env.get("LD_LIBRARY_PATH", "")
        self.p = subprocess.Popen([sys.executable, os.path.abspath(__file__)] + args,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  env=env)
        self.info = json.loads(self.p.stdout.readline())
        self.pause = pause

    def ask(self, **cmd):
        self.p.stdin.write(json.dumps(cmd) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError(f"the PyTorch worker ({type(self).__name__}) died")
        time.sleep(self.pause)
        return json.loads(line)


class SdpaTorchProcess(TorchWorker):
    """The sdpa section's worker; time_kernel pauses after its runs."""

    def __init__(self, blas_dir, env=None):
        super().__init__(["--sdpa-worker"], blas_dir, env)


class BlasProcess(Worker):
    """tools/bench/blas.c: cblas_sgemm of OpenBLAS, dlopened."""

    def __init__(self, exe, lib):
        env = dict(os.environ, **openblas_env())
        self.p = subprocess.Popen([exe, lib, "serve"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=env)
        self.core = self.p.stdout.readline().split()[1]

    def sgemm(self, ta, tb, m, n, k, threads, reps):
        self.p.stdin.write(f"sgemm {ta} {tb} {m} {n} {k} {threads} {reps}\n")
        self.p.stdin.flush()
        seconds = float(self.p.stdout.readline().split()[1])
        if self.p.stdout.readline().strip() != "ok":
            raise RuntimeError("the OpenBLAS driver died")
        return seconds


class TorchProcess(TorchWorker):
    """The model sections' worker: a 1 s pause after every answer."""
    autocast = False

    def __init__(self, model, weights, blas_dir):
        super().__init__(["--torch-worker", "--model", model, "--weights", weights],
                         blas_dir, pause=1.0)
        self.hyper = None  # the optimizer values: attnc's (AttncProcess.hyper)

    def forward(self, b, reps):
        return self.ask(cmd="forward", b=b, reps=reps,
                        autocast=self.autocast)["seconds"]

    def generate(self, prompt, new):
        """tokens/s, the seconds of one decode step (after the first
        token) and the seconds until the first token (the prompt's
        prefill)."""
        r = self.ask(cmd="generate", prompt=prompt, new=new)
        return (new / r["seconds"][0], (r["seconds"][0] - r["first"]) / max(new - 1, 1),
                r["first"])

    def train(self, b, reps):
        r = self.ask(cmd="train", b=b, reps=reps, hyper=self.hyper,
                     autocast=self.autocast)
        self.step1 = r["step1"]
        return r["seconds"]

    def loss(self, b):
        return self.ask(cmd="loss", b=b)["loss"]


class TorchAutocast(TorchProcess):
    """A TorchProcess's forward and train under torch.autocast("cpu",
    dtype=torch.bfloat16) (products on bf16, the rest f32), in the same
    process and on the same weights, as a second system: a second copy of
    gpt2_small with its optimizer state does not fit beside the others."""
    autocast = True

    def __init__(self, worker):
        self.__dict__.update(worker.__dict__)

    def close(self):
        pass  # the worker's own close ends the process


def shape_args(shapes):
    """Shapes as driver.c reads them: 2048x192 4x256 ..."""
    return " ".join("x".join(str(d) for d in shape) for shape in shapes)


class AttncProcess(Worker):
    def __init__(self, exe, weights, threads, env=None):
        self.p = subprocess.Popen([exe, "serve", weights, str(threads)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True,
                                  env=dict(os.environ, **(env or {})))

    def ask(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        out = []
        while True:
            reply = self.p.stdout.readline()
            if not reply:
                raise RuntimeError("the attnc driver died")
            if reply.strip() == "ok":
                return out
            out.append(reply.split())

    def forward(self, b, reps):
        return [float(r[1]) for r in self.ask(f"forward {b} {T} {reps}")]

    def generate(self, prompt, new):
        """tokens/s, the seconds of one decode step (after the first
        token) and the seconds until the first token (the prompt's
        prefill)."""
        r = self.ask(f"generate {prompt} {new}")[0]
        seconds, tokens, first = float(r[1]), int(r[3]), float(r[5])
        return tokens / seconds, (seconds - first) / max(tokens - 1, 1), first

    def call(self, entry, reps, shapes):
        """Seconds of `reps` back-to-back calls of `entry` on f32 inputs of
        `shapes` (driver.c's `call`)."""
        return float(self.ask(f"call {entry} {reps} {shape_args(shapes)}")[0][1])

    def mem(self, entry, shapes):
        return int(self.ask(f"mem {entry} {shape_args(shapes)}")[0][1])

    def save(self, entry, out_dir, shapes):
        self.ask(f"save {entry} {out_dir} {shape_args(shapes)}")

    def train(self, b, reps):
        out = []
        for r in self.ask(f"train {b} {T} {reps}"):
            if r[0] == "warm-up":
                self.step1 = {"loss": float(r[4]), "norm": float(r[6])}
            else:
                out.append(float(r[1]))
        return out

    def loss(self, b):
        return float(self.ask(f"loss {b} {T}")[0][1])

    def hyper(self):
        return [float(x) for x in self.ask("hyper")[0][1:]]


# ------------------------------------------------------------------ the run


def fetch_openblas(work):
    """Debian's libopenblas0-pthread, fetched (apt-get download, no root) and
    unpacked under WORK once: the directory holding its libblas.so.3 and
    libopenblas.so.0, or None. Only the bench's child processes use it; the
    system's BLAS stays as it is."""
    local = os.path.join(work, "openblas", "usr", "lib", "x86_64-linux-gnu", "openblas-pthread")
    if not os.path.exists(os.path.join(local, "libblas.so.3")):
        log("fetching libopenblas0-pthread (apt-get download) into " + work)
        try:
            run(["apt-get", "download", "libopenblas0-pthread"], cwd=work,
                stderr=subprocess.DEVNULL)
            deb = sorted(f for f in os.listdir(work) if f.startswith("libopenblas0-pthread"))[-1]
            run(["dpkg", "-x", os.path.join(work, deb), os.path.join(work, "openblas")])
        except (subprocess.CalledProcessError, OSError, IndexError):
            return None
    return local


def openblas_dir(work):
    """A directory holding OpenBLAS's libblas.so.3 for PyTorch, or None when
    the system's BLAS is already OpenBLAS. Debian's python3-torch links the
    generic libblas.so.3; with the reference BLAS behind it PyTorch runs its
    products at ~2 GFLOP/s, which is no baseline. Without OpenBLAS installed,
    libopenblas0-pthread is fetched and unpacked under WORK (fetch_openblas),
    for the PyTorch child process only."""
    if os.environ.get("BENCH_BLAS_DIR"):
        return os.environ["BENCH_BLAS_DIR"]
    system = os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")
    if "openblas" in system:
        return None
    local = fetch_openblas(work)
    if not local:
        log("warning: could not fetch OpenBLAS: PyTorch runs on the reference BLAS")
    return local


def openblas_lib(work):
    """The libopenblas.so.0 the GEMM section times cblas_sgemm of: under
    BENCH_BLAS_DIR, the system's (any Debian libopenblas0-* variant), or the
    one fetch_openblas unpacks. None when there is none."""
    dirs = [os.environ.get("BENCH_BLAS_DIR", ""), "/usr/lib/x86_64-linux-gnu",
            os.path.dirname(os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3"))]
    for d in dirs:
        lib = os.path.join(d, "libopenblas.so.0")
        if d and os.path.exists(lib):
            return lib
    local = fetch_openblas(work)
    return os.path.join(local, "libopenblas.so.0") if local else None


def torch_available():
    try:
        subprocess.run([sys.executable, "-c", "import torch"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return True
    except subprocess.CalledProcessError:
        return False


# The vector extensions the generated code and the BLAS can use: a table's
# figures mean little without them, and a VM's "model name" often omits the
# generation ("AMD EPYC").
VECTOR_FLAGS = ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16",
                "amx_tile", "amx_bf16")


def cpu_fields():
    """The first processor's fields of /proc/cpuinfo ({} where there is none)."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break  # the first processor is enough
                key, _, value = line.partition(":")
                fields[key.strip()] = value.strip()
    except OSError:
        pass
    return fields


def openblas_env():
    """OPENBLAS_CORETYPE=SkylakeX (OpenBLAS's AVX-512 kernels, which its
    detection misses on some VMs) where the CPU has AVX-512; elsewhere
    OpenBLAS chooses for itself: SkylakeX's kernels would stop a CPU without
    AVX-512 with an illegal instruction."""
    if "avx512f" in cpu_fields().get("flags", "").split():
        return {"OPENBLAS_CORETYPE": "SkylakeX"}
    return {}


def cpu_model():
    """The CPU as a benchmark table states it: model name, family and model
    numbers, and which of VECTOR_FLAGS it has."""
    fields = cpu_fields()
    name = fields.get("model name") or platform.processor() or "unknown"
    if "cpu family" in fields and "model" in fields:
        name += f" (family {fields['cpu family']} model {fields['model']})"
    flags = set(fields.get("flags", "").split())
    have = [flag for flag in VECTOR_FLAGS if flag in flags]
    if have:
        name += ", " + " ".join(have)
    return name


def measure(systems, b, rounds, reps, budget, what="forward"):
    """Interleaved rounds of `reps` runs per system (fewer for slow ones, so
    that a system spends about `budget` seconds in all); medians. `what`:
    "forward" or "train" (one optimizer step a run)."""
    times = {name: [] for name in systems}
    per_run = {name: getattr(sys_, what)(b, 1)[0]  # + warm-up
               for name, sys_ in systems.items()}
    for r in range(rounds):
        for name, sys_ in systems.items():
            k = max(1, min(reps, int(budget / rounds / max(per_run[name], 1e-9))))
            if r > 0 and sum(times[name]) > budget:
                continue
            times[name] += getattr(sys_, what)(b, k)
    return {name: (statistics.median(t), len(t)) for name, t in times.items()}


SECTIONS = ("peak", "gemm", "sdpa", "forward", "generate", "train", "dp", "llamacpp")

# The products of a GPT block and its head, per layer: K (input features)
# and N (output features) in units of d; the head's N is the vocabulary.
GEMM_LAYERS = (("qkv", 1, 3), ("proj", 1, 1), ("fc", 1, 4), ("fc_out", 4, 1), ("head", 1, None))


class Bench:
    """What every section needs: paths, the compiler and the C compiler."""

    def __init__(self, args):
        self.args = args
        self.attnc = args.attnc or os.path.join(args.build, "bin", "attnc")
        self.runtime = os.path.join(args.build, "lib", "libattnrt.a")
        self.work = args.work or os.path.join(args.build, "bench")
        os.makedirs(self.work, exist_ok=True)
        self.cc = shutil.which("clang-22") or shutil.which("cc")
        self.notes = []

    def driver(self, name, src, sources, label=None, weights="f32",
               precision="f32"):
        """Compiles `src` (model `name`) with attnc (`--weights`,
        `--precision`) unless --reuse finds an object newer than every file
        of `sources`, and links driver.c with it: the driver's path."""
        variant = (name + ("" if weights == "f32" else "-" + weights) +
                   ("" if precision == "f32" else "-p" + precision))
        obj = os.path.join(self.work, variant + ".o")
        exe = os.path.join(self.work, variant + "-bench")
        label = label or variant
        if self.args.reuse and os.path.exists(obj) and all(
                os.path.getmtime(obj) > os.path.getmtime(f) for f in sources):
            self.notes.append(f"{label}: object reused (--reuse), not recompiled")
        else:
            log(f"[{label}] attnc compile")
            t0 = time.perf_counter()
            run([self.attnc, "compile", src, "--weights", weights, "--precision",
                 precision, "-o", obj])
            self.notes.append(f"{label}: `attnc compile` {time.perf_counter() - t0:.1f} s")
        run([self.cc, "-O2", "-o", exe, os.path.join(ROOT, "tools", "bench", "driver.c"), obj,
             self.runtime, f"-DMODEL_INFO={name}_model_info",
             "-I", os.path.join(ROOT, "runtime", "include"), "-lm", "-lpthread"])
        return exe

    def generated_model(self, name, text):
        """Writes a generated .tfm under WORK (only when its text changed,
        so that --reuse can keep the object) and returns its path."""
        path = os.path.join(self.work, name + ".tfm")
        if not os.path.exists(path) or open(path).read() != text:
            with open(path, "w") as f:
                f.write(text)
        return path


def markdown(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def time_kernel(runners, budget, rounds, pause=None):
    """Seconds per call of each runner (name -> fn(reps) -> seconds for reps
    back-to-back calls; each warms itself up), interleaved in `rounds`
    rounds: each sample is as many calls as fill budget/rounds (at least
    one), at least 2 samples per runner and no more once a runner has spent
    `budget` seconds. `pause`: name -> seconds to sleep after that runner
    (OpenBLAS's threads spin for a while after a call). Medians."""
    estimate, samples, spent = {}, {}, {}
    for name, fn in runners.items():
        t = fn(1)
        estimate[name], spent[name] = t, t
        # A call that fills a round's share is a sample of its own (the
        # runner warmed up before timing it).
        samples[name] = [t] if t * rounds >= budget else []
        time.sleep((pause or {}).get(name, 0))
    for _ in range(rounds):
        for name, fn in runners.items():
            if len(samples[name]) >= rounds or (
                    len(samples[name]) >= 2 and spent[name] > budget):
                continue
            k = max(1, int(budget / rounds / max(estimate[name], 1e-9)))
            t = fn(k)
            spent[name] += t
            samples[name].append(t / k)
            time.sleep((pause or {}).get(name, 0))
    return {name: statistics.median(v) for name, v in samples.items()}


def model_lets(model):
    """The `let` constants of models/MODEL.tfm (d, vocab, layers, ...)."""
    import re
    with open(os.path.join(ROOT, "models", model + ".tfm")) as f:
        return {m.group(1): int(m.group(2))
                for m in re.finditer(r"^\s*let\s+(\w+)\s*=\s*(\d+)\s*$", f.read(), re.M)}


# ------------------------------------------------------------ peak section


def peak_exe(bench):
    """tools/bench/peak.c, built once per run."""
    exe = os.path.join(bench.work, "peak")
    if not getattr(bench, "peak_built", False):
        run([bench.cc, "-O3", "-march=native", "-pthread", "-o", exe,
             os.path.join(ROOT, "tools", "bench", "peak.c")])
        bench.peak_built = True
    return exe


def read_bandwidth(bench, threads, seconds):
    """GB/s of the read loop over --peak-mib on `threads` threads, the best
    run in `seconds`."""
    out = run([peak_exe(bench), "read", str(threads), str(bench.args.peak_mib),
               str(seconds)]).split()
    return float(out[1])


def run_peak(bench):
    """FMA peak (1 and 2 threads) and read bandwidth over 512 MiB: a dict
    with keys ("fma", threads) in GFLOP/s and ("read", threads) in GB/s,
    and the table rows."""
    exe = peak_exe(bench)
    seconds = bench.args.peak_seconds
    peak, rows = {}, []
    for threads in THREADS:
        log(f"[peak] FMA loop, {threads} thread(s)")
        out = run([exe, "fma", str(threads), str(seconds)]).split()
        peak[("fma", threads)] = float(out[1])
        rows.append((f"f32 FMA loop ({out[3]}, {out[5]} lanes)", threads,
                     f"{float(out[1]):.1f} GFLOP/s"))
    for threads in THREADS:
        log(f"[peak] read bandwidth, {threads} thread(s)")
        peak[("read", threads)] = read_bandwidth(bench, threads, seconds)
        rows.append((f"read, {bench.args.peak_mib} MiB buffer", threads,
                     f"{peak[('read', threads)]:.1f} GB/s"))
    return peak, rows


# ------------------------------------------------------------ llama.cpp section


def run_llama_cpp(bench):
    """llama.cpp on gpt2_small's shape (tools/bench/llama_cpp.py), built from
    source by scripts/fetch-llama-cpp.sh on the first run: its info dict, or
    None with a note when it cannot be built or run."""
    out = os.path.join(bench.work, "llama.cpp")
    results = os.path.join(bench.work, "llama_cpp.json")
    for cmd in ([os.path.join(ROOT, "scripts", "fetch-llama-cpp.sh"), out],
                [sys.executable, os.path.join(ROOT, "tools", "bench", "llama_cpp.py"),
                 "--llama-dir", out, "--threads", str(THREADS[-1]), "--json", results]):
        log(f"[llamacpp] {os.path.basename(cmd[0])}")
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if done.returncode:
            reason = (done.stderr.strip().splitlines() or ["no message"])[-1]
            bench.notes.append(f"llama.cpp: skipped ({reason})")
            return None
    with open(results) as f:
        return json.load(f)


def llama_cpp_rows(info, rows, decode_rows):
    """gpt2_small side by side: llama.cpp's pp256 and tg64 per format, and
    attnc's prefill and decode steps (2 threads) from this run's tables."""
    def rate(cell):
        return float(cell.replace(",", ""))
    out = []
    for res in info["results"]:
        out.append(("llama.cpp " + res["format"], f"{res['pp256_tps']['median']:,.0f}",
                    f"{res['tg64_tps']['median']:,.1f}"))
    prefill = {r[2]: rate(r[4]) for r in rows
               if r[0] == "gpt2_small" and r[1].startswith("prefill") and str(r[3]) == "2"}
    decode = {r[1]: rate(r[4]) for r in decode_rows
              if r[0] == "gpt2_small" and str(r[2]) == "2"}
    for system in sorted(set(prefill) | set(decode)):
        if system.startswith("attnc"):
            out.append((system, f"{prefill[system]:,.0f}" if system in prefill else "-",
                        f"{decode[system]:,.1f}" if system in decode else "-"))
    return out


# ------------------------------------------------------------ GEMM section


def gemm_model(model, d, vocab):
    """The .tfm of one fn per product of MODEL's layers (the weights are
    parameters, stored [N, K] as linear layers keep them), in the forms the
    compiled models run: the forward x W^T, the input gradient dy W, the
    weight gradient dy^T x (LinearOp's gradient; the head, a matmul with
    transpose(wte.weight), takes x^T dy)."""
    lines = [f"# Generated by tools/bench/bench.py: the matrix products of {model}.",
             f"model gemm_{model} {{"]
    layers = []
    for layer, k, n in GEMM_LAYERS:
        K, N = k * d, (n * d if n else vocab)
        layers.append((layer, K, N))
        lines.append(f"  param w_{layer}: f32[{N}, {K}]")
    for layer, K, N in layers:
        lines.append(f"  fn fwd_{layer}(x: f32[M, {K}]) {{ return x @ transpose(w_{layer}) }}")
        lines.append(f"  fn dx_{layer}(dy: f32[M, {N}]) {{ return dy @ w_{layer} }}")
        if layer == "head":
            lines.append(f"  fn dw_{layer}(x: f32[M, {K}], dy: f32[M, {N}]) "
                         f"{{ return transpose(x) @ dy }}")
        else:
            lines.append(f"  fn dw_{layer}(dy: f32[M, {N}], x: f32[M, {K}]) "
                         f"{{ return transpose(dy) @ x }}")
    lines.append("}")
    return "\n".join(lines) + "\n", layers


def gemm_cases(layer, K, N, M):
    """(label, attnc entry, its input shapes, (ta, tb, m, n, k) for
    cblas_sgemm: C[m, n] = op(A) op(B))."""
    return [
        ("x W^T", f"fwd_{layer}", [(M, K)], ("n", "t", M, N, K)),
        ("dy W", f"dx_{layer}", [(M, N)], ("n", "n", M, K, N)),
        ("x^T dy", f"dw_{layer}", [(M, K), (M, N)], ("t", "n", K, N, M)) if layer == "head"
        else ("dy^T x", f"dw_{layer}", [(M, N), (M, K)], ("t", "n", N, K, M)),
    ]


def run_gemm(bench, peak):
    args = bench.args
    lib = openblas_lib(bench.work)
    if not lib:
        log("warning: no OpenBLAS (libopenblas.so.0): the GEMM section is skipped")
        bench.notes.append("GEMM: skipped, no OpenBLAS found or fetched")
        return [], []
    blas_exe = os.path.join(bench.work, "blas")
    run([bench.cc, "-O2", "-o", blas_exe, os.path.join(ROOT, "tools", "bench", "blas.c"),
         "-ldl"])
    blas = BlasProcess(blas_exe, lib)
    # The compiled entry allocates its result per call: with glibc's
    # defaults a large one is a fresh mmap, faulted in and zeroed every
    # call. Keeping the heap makes the figure the product's, as OpenBLAS's
    # (writing into a buffer it was given) is.
    heap = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "17179869184"}
    rows, ratios, rates, bf16_ratios = [], {}, {}, {}
    bf16 = "bf16" in args.precisions.split(",")
    forward_m = [int(x) for x in args.gemm_m.split(",")]
    backward_m = [int(x) for x in args.gemm_bwd_m.split(",") if x]
    try:
        for model in args.models.split(","):
            lets = model_lets(model)
            text, layers = gemm_model(model, lets["d"], lets["vocab"])
            src = bench.generated_model(f"gemm_{model}", text)
            exe = bench.driver(f"gemm_{model}", src, [bench.attnc, src])
            attnc = {t: AttncProcess(exe, "-", t, heap) for t in THREADS}
            if bf16:
                exe16 = bench.driver(f"gemm_{model}", src, [bench.attnc, src],
                                     precision="bf16")
                attnc.update({("bf16", t): AttncProcess(exe16, "-", t, heap)
                              for t in THREADS})
            try:
                for layer, K, N in layers:
                    for M in sorted(set(forward_m) | set(backward_m)):
                        for i, (label, entry, shapes, (ta, tb, m, n, k)) in enumerate(
                                gemm_cases(layer, K, N, M)):
                            if M not in (forward_m if i == 0 else backward_m):
                                continue
                            log(f"[gemm] {model} {layer} {label} M={M}")
                            runners = {}
                            for t in THREADS:
                                runners[f"attnc/{t}"] = (
                                    lambda reps, t=t: attnc[t].call(entry, reps, shapes))
                                runners[f"OpenBLAS/{t}"] = (
                                    lambda reps, t=t: blas.sgemm(ta, tb, m, n, k, t, reps))
                                if bf16:
                                    runners[f"bf16/{t}"] = (
                                        lambda reps, t=t: attnc[("bf16", t)].call(
                                            entry, reps, shapes))
                            res = time_kernel(runners, args.gemm_budget, args.rounds,
                                              {f"OpenBLAS/{THREADS[-1]}": 0.1})
                            flops = 2.0 * m * n * k
                            row = [model, f"{layer} {label}", M, f"{m} x {n} x {k}"]
                            for t in THREADS:
                                a = flops / res[f"attnc/{t}"] * 1e-9
                                b = flops / res[f"OpenBLAS/{t}"] * 1e-9
                                row += [f"{a:.1f}", f"{b:.1f}", f"{a / b:.2f}"]
                                group = ("M <= 8" if M <= 8 else "M >= 256", t)
                                ratios.setdefault(group, []).append(a / b)
                                rates.setdefault(group, []).append((a, b))
                                if bf16:
                                    c = flops / res[f"bf16/{t}"] * 1e-9
                                    row += [f"{c:.1f}", f"{c / b:.2f}"]
                                    bf16_ratios.setdefault(group, []).append(c / b)
                            rows.append(row)
            finally:
                for p in attnc.values():
                    p.close()
    finally:
        blas.close()
    bench.notes.append(
        f"GEMM: OpenBLAS {os.path.realpath(lib)} (cblas_sgemm, core {blas.core}, "
        f"{' '.join(f'{k}={v}' for k, v in openblas_env().items()) or 'core detected'}, "
        "openblas_set_num_threads); attnc: a generated model, "
        "one fn per product (build/bench/gemm_MODEL.tfm), through attn_run, result "
        "allocated per call with the heap kept (MALLOC_MMAP_MAX_=0), inputs pseudo-random")
    summary = []
    for (group, t), r in sorted(ratios.items()):
        geo = math.exp(sum(math.log(x) for x in r) / len(r))
        line = (f"GEMM {group}, {t} thread(s): attnc / OpenBLAS geometric mean "
                f"{geo:.2f} over {len(r)} products, {sum(x >= 0.9 for x in r)} at >= 0.90 "
                "(the target)")
        if ("fma", t) in peak:
            fma = peak[("fma", t)]
            med = lambda i: statistics.median(x[i] for x in rates[(group, t)])
            line += (f"; median GFLOP/s as % of the FMA peak: attnc {100 * med(0) / fma:.0f} %, "
                     f"OpenBLAS {100 * med(1) / fma:.0f} %")
        summary.append(line)
    for (group, t), r in sorted(bf16_ratios.items()):
        geo = math.exp(sum(math.log(x) for x in r) / len(r))
        summary.append(f"GEMM {group}, {t} thread(s): attnc --precision bf16 / OpenBLAS "
                       f"f32 geometric mean {geo:.2f} over {len(r)} products")
    return rows, summary


# ------------------------------------------------------------ sdpa section


SDPA_MODEL = """# Generated by tools/bench/bench.py: scaled dot-product attention alone.
# `loss` is what the sdpa section's forward + backward runs (loss_grad):
# gradients flow to q, k and v through the [D] scales (ones).
model sdpa_{name} {{
  param wq: f32[{d}] init ones()
  param wk: f32[{d}] init ones()
  param wv: f32[{d}] init ones()

  fn forward(q: f32[B, H, T, {d}], k: f32[B, H, T, {d}], v: f32[B, H, T, {d}]) {{
    return attention(q, k, v, mask: {mask})
  }}

  fn loss(q: f32[B, H, T, {d}], k: f32[B, H, T, {d}], v: f32[B, H, T, {d}]) {{
    return sum(attention(q * wq, k * wk, v * wv, mask: {mask}))
  }}

  train {{
    loss      = loss
    optimizer = adam()
  }}
}}
"""


def run_sdpa(bench, use_torch, blas_dir):
    args = bench.args
    B, H, D = args.sdpa_batch, args.sdpa_heads, args.sdpa_dim
    lengths = [int(x) for x in args.sdpa_t.split(",")]
    bf16 = "bf16" in args.precisions.split(",")
    rows, notes = [], []
    torch_proc = SdpaTorchProcess(blas_dir) if use_torch else None
    # Memory: one call in processes whose allocator returns what is freed.
    small = {"MALLOC_MMAP_THRESHOLD_": "16384", "MALLOC_TRIM_THRESHOLD_": "0"}
    torch_mem = SdpaTorchProcess(blas_dir, small) if use_torch else None
    # Gradient buffer: wq, wk, wv at 16-float-aligned offsets.
    stride = (D + 15) // 16 * 16
    grad_index = [j * stride + i for j in range(3) for i in range(D)]
    try:
        for mask in ("causal", "none"):
            name = "causal" if mask == "causal" else "full"
            src = bench.generated_model(f"sdpa_{name}",
                                        SDPA_MODEL.format(name=name, d=D, mask=mask))
            exe = bench.driver(f"sdpa_{name}", src, [bench.attnc, src])
            attnc = {t: AttncProcess(exe, "-", t) for t in THREADS}
            if bf16:
                exe_p = bench.driver(f"sdpa_{name}", src, [bench.attnc, src],
                                     precision="bf16")
                attnc.update({("bf16", t): AttncProcess(exe_p, "-", t) for t in THREADS})
            attnc_mem = AttncProcess(exe, "-", 1, small)
            try:
                if torch_proc:
                    check_t = min(lengths)
                    shape = [(B, H, check_t, D)] * 3
                    dirs = [os.path.join(bench.work, f"sdpa_{name}_{e}") for e in ("fwd", "grad")]
                    for dir_, entry in zip(dirs, ("forward", "loss_grad")):
                        os.makedirs(dir_, exist_ok=True)
                        attnc[1].save(entry, dir_, shape)
                    c = torch_proc.ask(cmd="check", fwd=dirs[0], grad=dirs[1],
                                       causal=mask == "causal", grad_index=grad_index)
                    notes.append(f"sdpa mask {mask}: PyTorch vs attnc at B={B} H={H} "
                                 f"T={check_t} D={D}: forward relative error "
                                 f"{c['forward']:.1e}, gradients of the q/k/v scales "
                                 f"{c['grads']:.1e}")
                for T in lengths:
                    shape = [(B, H, T, D)] * 3
                    for backward in (False, True):
                        entry = "loss_grad" if backward else "forward"
                        log(f"[sdpa] mask {mask} T={T} {entry}")
                        runners = {}
                        for t in THREADS:
                            runners[f"attnc/{t}"] = (
                                lambda reps, t=t: attnc[t].call(entry, reps, shape))
                            if torch_proc:
                                runners[f"PyTorch/{t}"] = (
                                    lambda reps, t=t: torch_proc.ask(
                                        cmd="sdpa", shape=shape[0], causal=mask == "causal",
                                        backward=backward, threads=t, reps=reps)["seconds"])
                            if bf16:
                                runners[f"bf16/{t}"] = (
                                    lambda reps, t=t: attnc[("bf16", t)].call(
                                        entry, reps, shape))
                        res = time_kernel(runners, args.sdpa_budget, args.rounds)
                        flops = 4.0 * B * H * T * T * D * (0.5 if mask == "causal" else 1.0)
                        flops *= 3 if backward else 1
                        row = [mask, T, "forward + backward" if backward else "forward"]
                        for t in THREADS:
                            a = flops / res[f"attnc/{t}"] * 1e-9
                            if torch_proc:
                                b = flops / res[f"PyTorch/{t}"] * 1e-9
                                row += [f"{a:.1f}", f"{b:.1f}", f"{a / b:.2f}"]
                            else:
                                row += [f"{a:.1f}", "-", "-"]
                            if bf16:
                                c = flops / res[f"bf16/{t}"] * 1e-9
                                row += [f"{c:.1f}", f"{c / a:.2f}"]
                        mib = lambda x: f"{x / 2**20:.1f}"
                        row.append(mib(attnc_mem.mem(entry, shape)))
                        row.append(mib(torch_mem.ask(
                            cmd="mem", shape=shape[0], causal=mask == "causal",
                            backward=backward, threads=1)["bytes"]) if torch_mem else "-")
                        rows.append(row)
            finally:
                for p in list(attnc.values()) + [attnc_mem]:
                    p.close()
    finally:
        for p in (torch_proc, torch_mem):
            if p:
                p.close()
    notes.append(
        f"sdpa: B={B} H={H} D={D}, q, k, v [B, H, T, D] in [-1, 1); useful FLOPs "
        "4 B H T^2 D for the forward, 3x that for forward + backward, causal counted as "
        "half; attnc: a generated model (build/bench/sdpa_causal.tfm, sdpa_full.tfm), "
        "`forward` and `loss_grad` of sum(attention(q * wq, k * wk, v * wv)) through "
        "attn_run" + (f"; PyTorch {torch_proc.info['version']}: {torch_proc.info['sdpa']}, "
                      "the same loss and .backward(), torch.set_num_threads(1 or 2)"
                      if torch_proc else "") +
        "; extra MiB: growth of the peak RSS during one call (results and temporaries), "
        "in a process with MALLOC_MMAP_THRESHOLD_=16384")
    return rows, notes


# ------------------------------------------------------------ model sections


def run_dp(bench):
    """The dp section: rows (model, global batch, configuration, tokens/s,
    ratio to 1 process of 2 threads, MPI % of a step) and notes."""
    args = bench.args
    mpirun = shutil.which("mpirun")
    if not mpirun:
        return [], ["dp: no mpirun (OpenMPI's openmpi-bin): section skipped"]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", ATTN_RUNTIME_LIB=bench.runtime,
               ATTN_CLI_LIB=os.path.join(args.build, "lib", "libattncli.a"))
    data = os.path.join(ROOT, "data", "kjv-train.txt")
    rows, notes = [], []
    for model in [m for m in args.models.split(",") if m]:
        exe = os.path.join(bench.work, model + "-cli")
        log(f"[{model}] attnc build (dp)")
        t0 = time.perf_counter()
        run([bench.attnc, "build", os.path.join(ROOT, "models", model + ".tfm"), "-o", exe],
            env=env)
        notes.append(f"{model}: `attnc build` {time.perf_counter() - t0:.1f} s (dp)")
        w0 = os.path.join(bench.work, model + "-dp-w0.safetensors")
        run([exe, "init", "--seed", "1", "-o", w0])
        batch = MODELS.get(model, {}).get("train_b", 8)
        configs = [
            ("1 process x 1 thread", [], batch, 1, []),
            ("1 process x 2 threads", [], batch, 2, []),
            ("2 processes x 1 thread", [mpirun, "--oversubscribe", "-np", "2"],
             batch // 2, 1, []),
            ("2 processes x 1 thread, --shard-optimizer",
             [mpirun, "--oversubscribe", "-np", "2"], batch // 2, 1, ["--shard-optimizer"]),
        ]
        rates = {c[0]: [] for c in configs}
        shares = {c[0]: [] for c in configs}
        for r in range(args.rounds):
            for name, launcher, b, threads, extra in configs:
                out = os.path.join(bench.work, f"{model}-dp.safetensors")
                cmd = launcher + [exe, "train", "-w", w0, "--data", data, "--seq", str(T),
                                  "--batch", str(b), "--steps", str(args.dp_steps),
                                  "--seed", "1", "--threads", str(threads), "-o", out] + extra
                log(f"[{model}] dp round {r + 1}: {name}")
                p = subprocess.run(cmd, env=env, capture_output=True, text=True)
                if p.returncode != 0:
                    raise SystemExit(f"dp: {' '.join(cmd)} failed:\n{p.stderr}")
                with open(os.path.join(bench.work, f"{model}-dp.csv")) as f:
                    steps = [float(line.split(",")[4]) for line in list(f)[1:]]
                rates[name].append(statistics.median(steps[1:] or steps))
                for line in p.stderr.splitlines():
                    if line.startswith("data-parallel:") and "%" in line:
                        shares[name].append(float(line.rsplit("(", 1)[1].rstrip("%)")))
        base = statistics.median(rates["1 process x 2 threads"])
        for name, *_ in configs:
            rate = statistics.median(rates[name])
            share = f"{statistics.median(shares[name]):.1f}" if shares[name] else "-"
            rows.append((model, f"{batch} x {T}", name, f"{rate:,.1f}",
                         f"{rate / base:.2f}", share))
    return rows, notes


def param_shapes(path):
    """{name: shape} from a safetensors header."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    return {k: v["shape"] for k, v in header.items() if k != "__metadata__"}


def model_flops(weights):
    """FLOPs per token of a forward at T tokens: 2 per weight of every
    matrix product (every 2-D parameter but the position table; the token
    table counts once, as the head) plus causal attention, 2 d T per layer
    (q k^T and p v over T/2 keys on average); and the bytes a decode step
    streams (every parameter but the position table)."""
    shapes = param_shapes(weights)
    numel = lambda s: math.prod(s)
    matmul = sum(numel(s) for k, s in shapes.items() if len(s) == 2 and k != "wpe.weight")
    layers = 1 + max(int(k.split(".")[1]) for k in shapes if k.startswith("h."))
    d = shapes["wte.weight"][1]
    weight_bytes = 4 * sum(numel(s) for k, s in shapes.items() if k != "wpe.weight")
    return (lambda t: 2.0 * matmul + 2.0 * layers * d * t), weight_bytes


# Bytes per weight of a product read in each `attnc --weights` format
# (int8: one byte and an f32 scale per 32).
WEIGHT_FORMAT_BYTES = {"f32": 4.0, "bf16": 2.0, "int8": 1.0 + 4.0 / 32}


def decode_bytes(weights, fmt):
    """The bytes a decode step streams when the products read `fmt`: as
    model_flops's, the products' weights (2-D, rows of whole 32-blocks, not
    the position table) at the format's size."""
    shapes = param_shapes(weights)
    low = sum(math.prod(s) for k, s in shapes.items()
              if len(s) == 2 and k != "wpe.weight" and s[1] % 32 == 0)
    f32 = 4 * sum(math.prod(s) for k, s in shapes.items() if k != "wpe.weight")
    return f32 - 4 * low + WEIGHT_FORMAT_BYTES[fmt] * low


def run_models(bench, sections, use_torch, blas_dir, peak):
    args = bench.args
    rows, decode_rows, torch_info = [], [], None
    notes = bench.notes
    pct = lambda flops, threads: (f"{100 * flops / (peak[('fma', threads)] * 1e9):.1f}"
                                  if ("fma", threads) in peak else "-")
    for model in args.models.split(","):
        src = os.path.join(ROOT, "models", model + ".tfm")
        weights = os.path.join(bench.work, model + ".safetensors")
        sources = [bench.attnc] + [os.path.join(ROOT, "models", f)
                                   for f in os.listdir(os.path.join(ROOT, "models"))]
        exe = bench.driver(model, src, sources)
        if not os.path.exists(weights):
            run([exe, "init", "1", weights])
        flops_at, weight_bytes = model_flops(weights)

        systems = {f"attnc/{t}": AttncProcess(exe, weights, t) for t in THREADS}
        # The --precisions builds: every row, products on bf16 operands.
        for precision in [p for p in args.precisions.split(",") if p]:
            exe_p = bench.driver(model, src, sources, precision=precision)
            systems.update({f"attnc {precision}-products/{t}":
                            AttncProcess(exe_p, weights, t) for t in THREADS})
        # The inference-only builds of --weight-formats: generate rows only.
        formats = [f for f in args.weight_formats.split(",") if f]
        decoders = dict(systems)
        if "generate" in sections:
            for fmt in formats:
                low = bench.driver(model, src, sources, weights=fmt)
                decoders.update({f"attnc {fmt}/{t}": AttncProcess(low, weights, t)
                                 for t in THREADS})
            # int8 weights with bf16 products: prefill on vdpbf16ps,
            # decoding on the int16 rows (docs/Codegen.md).
            for precision in [p for p in args.precisions.split(",") if p]:
                if "int8" in formats:
                    both = bench.driver(model, src, sources, weights="int8",
                                        precision=precision)
                    decoders.update({f"attnc int8 {precision}-products/{t}":
                                     AttncProcess(both, weights, t) for t in THREADS})
        if use_torch:
            log(f"[{model}] PyTorch: load and check")
            torch_proc = TorchProcess(model, weights, blas_dir)
            torch_info = torch_proc.info
            tokens = os.path.join(bench.work, "tokens-B1.npy")
            np.save(tokens, lcg_tokens(T).reshape(1, T))
            out = os.path.join(bench.work, f"{model}-B1.npy")
            run([exe, "forward", weights, "1", str(T), "1", out])
            check = torch_proc.ask(cmd="check", tokens=tokens, reference=out)
            notes.append(f"{model}: PyTorch vs attnc output, B=1 T={T}: relative error "
                         f"{check['rel_err']:.1e}; PyTorch's cached decoding matches its "
                         f"full recomputation: {check['cache_ok']}")
            systems["PyTorch/2"] = torch_proc
            decoders["PyTorch/2"] = torch_proc
            # Beside the bf16-products builds, PyTorch's own bf16 (forward
            # and train rows).
            if "bf16" in args.precisions.split(","):
                systems["PyTorch bf16-autocast/2"] = TorchAutocast(torch_proc)
        order = lambda res: sorted(res, key=lambda n: (not n.startswith("PyTorch"), n))
        try:
            for b in [int(x) for x in args.batches.split(",")] if "forward" in sections else []:
                log(f"[{model}] forward B={b} T={T}")
                res = measure(systems, b, args.rounds, args.reps, args.budget)
                ref = res["PyTorch/2"][0] if "PyTorch/2" in res else None
                for name in order(res):
                    med, n = res[name]
                    system, threads = name.split("/")
                    rows.append((model, f"forward B={b} T={T}", system + " eager" * (system == "PyTorch"),
                                 threads, f"{b * T / med:,.0f}",
                                 f"{ref / med:.2f}" if ref else "-",
                                 pct(flops_at(T) * b * T / med, int(threads)), n))
            if args.gen_new and "generate" in sections:
                log(f"[{model}] generate")
                # --rounds rounds, systems in turn, each round starting with
                # the read loop on 1 and 2 threads: the host's bandwidth
                # moves by up to 1.5x over minutes (other tenants), so the
                # bound of a decode step is measured next to it, not only in
                # the peak section. Medians of the rounds.
                runs = {name: [] for name in decoders}
                reads = {t: [] for t in THREADS}
                for _ in range(args.rounds):
                    for t in THREADS:
                        reads[t].append(read_bandwidth(bench, t, 0.5))
                    for name, s in decoders.items():
                        runs[name].append(s.generate(args.gen_prompt, args.gen_new))
                gen = {name: (statistics.median(r[0] for r in rs),
                              statistics.median(r[1] for r in rs))
                       for name, rs in runs.items()}
                ref = gen.get("PyTorch/2")
                for name in order(gen):
                    system, threads = name.split("/")
                    rows.append((model, f"generate {args.gen_new} after {args.gen_prompt}",
                                 system + " eager" * (system == "PyTorch"), threads,
                                 f"{gen[name][0]:,.1f}",
                                 f"{gen[name][0] / ref[0]:.2f}" if ref else "-", "-",
                                 len(runs[name])))
                    step = gen[name][1]
                    bw = statistics.median(reads[int(threads)])
                    # A --weights build's products stream that format;
                    # the others' (bf16 products included) stream f32.
                    fmt = system.split(" ")[1] if system.startswith("attnc ") else "f32"
                    fmt = "f32" if fmt.endswith("-products") else fmt
                    streamed = decode_bytes(weights, fmt)
                    bound = streamed / (bw * 1e9) if bw else None
                    decode_rows.append((
                        model, system + " eager" * (system == "PyTorch"), threads,
                        f"{step * 1e3:.2f}", f"{1 / step:,.1f}", f"{streamed / 1e6:.1f}",
                        f"{bound * 1e3:.2f}" if bound else "-",
                        f"{100 * bound / step:.0f}" if bound else "-"))
                # Prompt processing as llama.cpp reports it: a prompt of
                # T - 1 tokens (the context holds T with the new one)
                # through the cache (attnc's `prefill`, PyTorch's
                # hand-written cached forward), logits of the last position
                # only; the median of 3 in turn.
                p = T - 1
                log(f"[{model}] prefill {p} tokens")
                firsts = {name: [] for name in decoders}
                for _ in range(3):
                    for name, s in decoders.items():
                        firsts[name].append(s.generate(p, 1)[2])
                first = {name: statistics.median(v) for name, v in firsts.items()}
                ref = first.get("PyTorch/2")
                for name in order(first):
                    system, threads = name.split("/")
                    rows.append((model, f"prefill {p} (last logits)",
                                 system + " eager" * (system == "PyTorch"), threads,
                                 f"{p / first[name]:,.0f}",
                                 f"{ref / first[name]:.2f}" if ref else "-", "-", 3))
            if args.train_budget > 0 and "train" in sections:
                b = MODELS[model]["train_b"]
                work_name = f"train step B={b} T={T}"
                log(f"[{model}] {work_name}")
                losses = {name: s.loss(b) for name, s in systems.items()}
                if "PyTorch/2" in systems:
                    for name in systems:
                        if name.startswith("PyTorch"):
                            systems[name].hyper = systems["attnc/1"].hyper()
                    ref = losses["PyTorch/2"]
                    notes.append(
                        f"{model}: loss on the train batch B={b} T={T} before any step, dropout "
                        f"off (attnc's `loss` entry, PyTorch's module in eval mode): attnc "
                        f"{losses['attnc/1']:.6f} (1 thread) / {losses['attnc/2']:.6f} "
                        f"(2 threads), PyTorch {ref:.6f}; relative difference "
                        f"{abs(losses['attnc/1'] - ref) / abs(ref):.1e}")
                res = measure(systems, b, args.rounds, args.reps, args.train_budget, "train")
                notes.append(f"{model}: train step 1 (dropout on, each system its own masks): " +
                             ", ".join(f"{name} loss {s.step1['loss']:.4f} grad norm "
                                       f"{s.step1['norm']:.3f}"
                                       for name, s in systems.items()))
                ref = res["PyTorch/2"][0] if "PyTorch/2" in res else None
                for name in order(res):
                    med, n = res[name]
                    system, threads = name.split("/")
                    rows.append((model, work_name, system + " eager" * (system == "PyTorch"),
                                 threads, f"{b * T / med:,.1f}",
                                 f"{ref / med:.2f}" if ref else "-",
                                 pct(3 * flops_at(T) * b * T / med, int(threads)), n))
        finally:
            for s in {id(s): s for s in [*decoders.values(), *systems.values()]}.values():
                s.close()
        notes.append(f"{model}: {flops_at(T) / 1e6:.1f} MFLOP per token forward at T={T} "
                     f"(x3 for a train step), {weight_bytes / 1e6:.1f} MB of weights per "
                     "decode step")
    return rows, decode_rows, torch_info


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--attnc", help="the compiler to measure (default: BUILD/bin/attnc)")
    parser.add_argument("--work", help="scratch directory (default: BUILD/bench)")
    parser.add_argument("--only", default=",".join(SECTIONS),
                        help="the sections to run, of " + ",".join(SECTIONS) +
                             " (default: all); forward, generate and train need peak for "
                             "their %% of peak columns and run it too")
    parser.add_argument("--models", default="char_gpt,gpt2_small",
                        help="the models of the forward, generate, train and gemm sections")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reps", type=int, default=3, help="runs per system per round")
    parser.add_argument("--budget", type=float, default=30.0,
                        help="seconds of runs per system and workload, about")
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--reuse", action="store_true",
                        help="keep a model's object from an earlier run when it is newer than "
                             "attnc and every models/*.tfm (generated models: their .tfm)")
    parser.add_argument("--batches", default=",".join(str(b) for b in BATCHES),
                        help="batch sizes of the forward runs")
    parser.add_argument("--train-budget", type=float, default=30.0,
                        help="seconds of train steps per system and model, about; 0: no "
                             "train step")
    parser.add_argument("--weight-formats", default="bf16,int8",
                        help="generate and prefill rows of attnc builds with these "
                             "--weights too (empty: none)")
    parser.add_argument("--precisions", default=None,
                        help="attnc builds with these --precision too (default: bf16 "
                             "where the CPU has AVX512-BF16; empty: none)")
    parser.add_argument("--dp-steps", type=int, default=6,
                        help="train steps per run of the dp section (the first is a "
                             "warm-up)")
    parser.add_argument("--gen-new", type=int, default=64)
    parser.add_argument("--gen-prompt", type=int, default=64)
    parser.add_argument("--peak-seconds", type=float, default=1.0,
                        help="seconds per peak measurement")
    parser.add_argument("--peak-mib", type=int, default=512,
                        help="the read-bandwidth buffer, MiB")
    parser.add_argument("--gemm-m", default="1,8,256,2048",
                        help="rows M (B*T) of the forward products")
    parser.add_argument("--gemm-bwd-m", default="256,2048",
                        help="rows M of the backward products (empty: none)")
    parser.add_argument("--gemm-budget", type=float, default=0.25,
                        help="seconds per system, thread count and product, about")
    parser.add_argument("--sdpa-t", default="256,512,1024,2048")
    parser.add_argument("--sdpa-batch", type=int, default=1)
    parser.add_argument("--sdpa-heads", type=int, default=4)
    parser.add_argument("--sdpa-dim", type=int, default=64)
    parser.add_argument("--sdpa-budget", type=float, default=0.6,
                        help="seconds per system, thread count and case, about")
    parser.add_argument("--torch-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--sdpa-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--weights", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.torch_worker:
        return torch_worker(args)
    if args.sdpa_worker:
        return sdpa_worker()
    if args.precisions is None:
        flags = cpu_fields().get("flags", "").split()
        args.precisions = "bf16" if "avx512_bf16" in flags else ""
    sections = [x for x in args.only.split(",") if x]
    for x in sections:
        if x not in SECTIONS:
            parser.error(f"--only: unknown section '{x}' (sections: {', '.join(SECTIONS)})")

    bench = Bench(args)
    started, load_before = time.perf_counter(), os.getloadavg()[0]
    model_sections = [x for x in ("forward", "generate", "train") if x in sections]
    needs_torch = bool(({"sdpa"} | set(model_sections)) & set(sections)) and not args.no_torch
    use_torch = needs_torch and torch_available()
    if needs_torch and not use_torch:
        log("PyTorch not importable: attnc figures only")
    blas_dir = openblas_dir(bench.work) if use_torch else None

    elapsed = []

    def timed(name, fn):
        t0, load = time.perf_counter(), os.getloadavg()[0]
        result = fn()
        elapsed.append(f"{name} {time.perf_counter() - t0:.0f} s, load {load:.1f} -> "
                       f"{os.getloadavg()[0]:.1f}")
        return result

    peak, peak_rows = {}, []
    if "peak" in sections or model_sections:
        peak, peak_rows = timed("peak", lambda: run_peak(bench))
    gemm_rows, gemm_summary = (timed("gemm", lambda: run_gemm(bench, peak))
                               if "gemm" in sections else ([], []))
    sdpa_rows, sdpa_notes = (timed("sdpa", lambda: run_sdpa(bench, use_torch, blas_dir))
                             if "sdpa" in sections else ([], []))
    rows, decode_rows, torch_info = (
        timed("models", lambda: run_models(bench, model_sections, use_torch, blas_dir, peak))
        if model_sections else ([], [], None))
    dp_rows, dp_notes = timed("dp", lambda: run_dp(bench)) if "dp" in sections else ([], [])
    llama = timed("llamacpp", lambda: run_llama_cpp(bench)) if "llamacpp" in sections else None

    print(f"machine: {cpu_model()}, {os.cpu_count()} cores; "
          f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}; sections: {','.join(sections)}; "
          f"{time.perf_counter() - started:.0f} s ({', '.join(elapsed)}); 1-minute load "
          f"average {load_before:.2f} at the start, {os.getloadavg()[0]:.2f} at the end")
    if torch_info:
        print(f"PyTorch {torch_info['version']} eager, BLAS {torch_info['blas']}, "
              + " ".join([f"{k}={v}" for k, v in openblas_env().items()]
                         + ["OMP_WAIT_POLICY=PASSIVE"])
              + ", torch.set_num_threads(2)")
    if peak_rows:
        print("\nMachine peak (tools/bench/peak.c, clang -O3 -march=native; best run):\n")
        print(markdown(("measure", "threads", "value"), peak_rows))
    if gemm_rows:
        print("\nGEMM, GFLOP/s (2 m n k / seconds per call, median); ratio = attnc / OpenBLAS;"
              " m x n x k: C[m, n] = A[m, k] B[k, n]; M = B*T:\n")
        header = ["model", "product", "M", "m x n x k"]
        for t in THREADS:
            header += [f"attnc/{t}", f"OpenBLAS/{t}", "ratio"]
            if "bf16" in args.precisions.split(","):
                header += [f"attnc bf16/{t}", "bf16 ratio"]
        print(markdown(header, gemm_rows))
        print()
        for line in gemm_summary:
            print(line)
    if sdpa_rows:
        print("\nsdpa, useful GFLOP/s (median); ratio = attnc / PyTorch; bf16 / f32: "
              "attnc --precision bf16 over attnc; extra MiB: peak memory growth during "
              "one call (f32 build):\n")
        header = ["mask", "T", "pass"]
        for t in THREADS:
            header += [f"attnc/{t}", f"PyTorch/{t}", "ratio"]
            if "bf16" in args.precisions.split(","):
                header += [f"attnc bf16/{t}", "bf16 / f32"]
        print(markdown(header + ["attnc extra MiB", "PyTorch extra MiB"], sdpa_rows))
    if rows:
        print("\nModels: tokens/s, median of the runs after a warm-up, systems interleaved; "
              "ratio = tokens/s / PyTorch's (2 threads); % FMA peak: useful FLOPs/s over "
              "the FMA loop's at the same thread count:\n")
        print(markdown(("model", "workload", "system", "threads", "tokens/s", "ratio",
                        "% FMA peak", "runs"), rows))
    if decode_rows:
        print("\nDecode step (generate, after the first token; median of the rounds) vs "
              "streaming the weights once at the read bandwidth of the same thread count, "
              "measured at the start of each round (median; % of bound = bound / step; "
              "target >= 90):\n")
        print(markdown(("model", "system", "threads", "ms/step", "steps/s", "weights MB",
                        "bound ms", "% of bound"), decode_rows))
    if dp_rows:
        print("\nData-parallel train steps (train, T = 256, global batch as the train "
              "section's): tokens/s, median of the rounds' median steps; ratio = "
              "tokens/s / 1 process of 2 threads; MPI %: the share of a step in MPI "
              "collectives (the all-reduce and waiting there):\n")
        print(markdown(("model", "global batch", "configuration", "tokens/s", "ratio",
                        "MPI % of step"), dp_rows))
    if llama:
        cpp = llama["llama_cpp"]
        print(f"\nllama.cpp {cpp['tag']} ({cpp['commit']}; built with: {llama['system_info']}) "
              f"on gpt2_small's shape with random weights, {llama['threads']} threads, beside "
              "attnc's gpt2_small of this run: llama-bench's pp256 (a 256-token prompt) and "
              "tg64 (64 tokens from an empty context), tokens/s, median of 5; attnc's prefill "
              "of 255 tokens and decode steps after 64 (steps/s), 2 threads:\n")
        print(markdown(("system", "prompt tokens/s", "generation tokens/s"),
                       llama_cpp_rows(llama, rows, decode_rows)))
    print()
    for note in bench.notes + sdpa_notes + dp_notes:
        print(note)


if __name__ == "__main__":
    sys.exit(main())
