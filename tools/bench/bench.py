#!/usr/bin/env python3
"""`make bench`: forward and generate throughput of attnc-compiled models
next to PyTorch CPU eager on the same weights and shapes, in one run.

For each model: `attnc compile` (timed), link tools/bench/driver.c with the
object and libattnrt, initialise weights (seed 1). Then three processes
keep the weights loaded: attnc on 1 thread, attnc on 2 threads (the
runtime's pool), and PyTorch (when it imports), started with
OPENBLAS_CORETYPE=SkylakeX OMP_WAIT_POLICY=PASSIVE and
torch.set_num_threads(2) (see MLIR22-NOTES) on an nn.Module built from
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
hand-written key/value cache over the same module's weights.

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

Usage: bench.py [--build DIR] [--attnc PATH] [--models a,b] [--rounds R]
                [--reps N] [--budget S] [--batches 1,8] [--gen-new N]
                [--train-budget S] [--no-torch] [--reuse]
"""

import argparse
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

        def generate(self, prompt, n):
            """Greedy decoding with a key/value cache."""
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

    def train_step(tokens, targets):
        model.train()
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
                train.update(b=b, clip=clip, opt=torch.optim.AdamW(
                    model.parameters(), lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=wd))
                loss, norm = train_step(tokens, targets)  # warm-up: step 1
                train["step1"] = {"loss": loss, "norm": norm}
            times, losses = [], []
            for _ in range(reps):
                t0 = time.perf_counter()
                loss, _ = train_step(tokens, targets)
                times.append(time.perf_counter() - t0)
                losses.append(loss)
            print(json.dumps({"seconds": times, "loss": losses, "step1": train["step1"]}),
                  flush=True)
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
                if b not in warm:
                    model(tokens)
                    warm.add(b)
                times = []
                for _ in range(reps):
                    t0 = time.perf_counter()
                    model(tokens)
                    times.append(time.perf_counter() - t0)
                print(json.dumps({"seconds": times}), flush=True)
            elif cmd["cmd"] == "generate":
                prompt = torch.from_numpy(lcg_tokens(cmd["prompt"]).astype(np.int64))[None]
                model.generate(prompt, 1)
                t0 = time.perf_counter()
                model.generate(prompt, cmd["new"])
                print(json.dumps({"seconds": [time.perf_counter() - t0]}), flush=True)


class TorchProcess:
    def __init__(self, model, weights, blas_dir):
        env = dict(os.environ, OPENBLAS_CORETYPE="SkylakeX", OMP_WAIT_POLICY="PASSIVE")
        if blas_dir:
            env["LD_LIBRARY_PATH"] = blas_dir + ":" + env.get("LD_LIBRARY_PATH", "")
        self.p = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--torch-worker", "--model", model,
             "--weights", weights], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env=env)
        self.info = json.loads(self.p.stdout.readline())
        self.hyper = None  # the optimizer values: attnc's (AttncProcess.hyper)

    def ask(self, **cmd):
        self.p.stdin.write(json.dumps(cmd) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError("the PyTorch worker died")
        return json.loads(line)

    def forward(self, b, reps):
        return self.ask(cmd="forward", b=b, reps=reps)["seconds"]

    def generate(self, prompt, new):
        return new / self.ask(cmd="generate", prompt=prompt, new=new)["seconds"][0]

    def train(self, b, reps):
        r = self.ask(cmd="train", b=b, reps=reps, hyper=self.hyper)
        self.step1 = r["step1"]
        return r["seconds"]

    def loss(self, b):
        return self.ask(cmd="loss", b=b)["loss"]

    def close(self):
        try:
            self.p.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
            self.p.stdin.close()
        except OSError:
            pass
        self.p.wait()


class AttncProcess:
    def __init__(self, exe, weights, threads):
        self.p = subprocess.Popen([exe, "serve", weights, str(threads)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)

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
        r = self.ask(f"generate {prompt} {new}")[0]
        return int(r[3]) / float(r[1])

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

    def close(self):
        try:
            self.p.stdin.write("quit\n")
            self.p.stdin.close()
        except OSError:
            pass
        self.p.wait()


# ------------------------------------------------------------------ the run


def openblas_dir(work):
    """A directory holding OpenBLAS's libblas.so.3 for PyTorch, or None when
    the system's BLAS is already OpenBLAS. Debian's python3-torch links the
    generic libblas.so.3; with the reference BLAS behind it PyTorch runs its
    products at ~2 GFLOP/s, which is no baseline. Without OpenBLAS installed,
    libopenblas0-pthread is fetched (apt-get download, no root) and unpacked
    under WORK, for the PyTorch child process only."""
    if os.environ.get("BENCH_BLAS_DIR"):
        return os.environ["BENCH_BLAS_DIR"]
    system = os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")
    if "openblas" in system:
        return None
    local = os.path.join(work, "openblas", "usr", "lib", "x86_64-linux-gnu", "openblas-pthread")
    if not os.path.exists(os.path.join(local, "libblas.so.3")):
        log("system BLAS is the reference one; fetching libopenblas0-pthread for PyTorch")
        try:
            run(["apt-get", "download", "libopenblas0-pthread"], cwd=work,
                stderr=subprocess.DEVNULL)
            deb = sorted(f for f in os.listdir(work) if f.startswith("libopenblas0-pthread"))[-1]
            run(["dpkg", "-x", os.path.join(work, deb), os.path.join(work, "openblas")])
        except (subprocess.CalledProcessError, OSError, IndexError):
            log("warning: could not fetch OpenBLAS: PyTorch runs on the reference BLAS")
            return None
    return local


def torch_available():
    try:
        subprocess.run([sys.executable, "-c", "import torch"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return True
    except subprocess.CalledProcessError:
        return False


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--attnc", help="the compiler to measure (default: BUILD/bin/attnc)")
    parser.add_argument("--work", help="scratch directory (default: BUILD/bench)")
    parser.add_argument("--models", default="char_gpt,gpt2_small")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reps", type=int, default=3, help="runs per system per round")
    parser.add_argument("--budget", type=float, default=30.0,
                        help="seconds of runs per system and workload, about")
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--reuse", action="store_true",
                        help="keep a model's object from an earlier run when it is newer than "
                             "attnc and every models/*.tfm")
    parser.add_argument("--batches", default=",".join(str(b) for b in BATCHES),
                        help="batch sizes of the forward runs")
    parser.add_argument("--train-budget", type=float, default=45.0,
                        help="seconds of train steps per system and model, about; 0: no "
                             "train step")
    parser.add_argument("--gen-new", type=int, default=32)
    parser.add_argument("--gen-prompt", type=int, default=64)
    parser.add_argument("--torch-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--weights", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.torch_worker:
        return torch_worker(args)

    attnc = args.attnc or os.path.join(args.build, "bin", "attnc")
    runtime = os.path.join(args.build, "lib", "libattnrt.a")
    work = args.work or os.path.join(args.build, "bench")
    os.makedirs(work, exist_ok=True)
    cc = shutil.which("clang-22") or shutil.which("cc")
    use_torch = not args.no_torch and torch_available()
    if not use_torch:
        log("PyTorch not importable (or --no-torch): attnc figures only")
    blas_dir = openblas_dir(work) if use_torch else None

    rows, notes, torch_info = [], [], None
    for model in args.models.split(","):
        src = os.path.join(ROOT, "models", model + ".tfm")
        obj = os.path.join(work, model + ".o")
        exe = os.path.join(work, model + "-bench")
        weights = os.path.join(work, model + ".safetensors")
        sources = [attnc] + [os.path.join(ROOT, "models", f)
                             for f in os.listdir(os.path.join(ROOT, "models"))]
        if args.reuse and os.path.exists(obj) and all(
                os.path.getmtime(obj) > os.path.getmtime(f) for f in sources):
            notes.append(f"{model}: object reused (--reuse), not recompiled")
        else:
            log(f"[{model}] attnc compile")
            t0 = time.perf_counter()
            run([attnc, "compile", src, "-o", obj])
            notes.append(f"{model}: `attnc compile` {time.perf_counter() - t0:.1f} s")
        run([cc, "-O2", "-o", exe, os.path.join(ROOT, "tools", "bench", "driver.c"), obj,
             runtime, f"-DMODEL_INFO={model}_model_info",
             "-I", os.path.join(ROOT, "runtime", "include"), "-lm", "-lpthread"])
        if not os.path.exists(weights):
            run([exe, "init", "1", weights])

        systems = {f"attnc/{t}": AttncProcess(exe, weights, t) for t in THREADS}
        if use_torch:
            log(f"[{model}] PyTorch: load and check")
            torch_proc = TorchProcess(model, weights, blas_dir)
            torch_info = torch_proc.info
            tokens = os.path.join(work, "tokens-B1.npy")
            np.save(tokens, lcg_tokens(T).reshape(1, T))
            out = os.path.join(work, f"{model}-B1.npy")
            run([exe, "forward", weights, "1", str(T), "1", out])
            check = torch_proc.ask(cmd="check", tokens=tokens, reference=out)
            notes.append(f"{model}: PyTorch vs attnc output, B=1 T={T}: relative error "
                         f"{check['rel_err']:.1e}; PyTorch's cached decoding matches its "
                         f"full recomputation: {check['cache_ok']}")
            systems["PyTorch/2"] = torch_proc
        try:
            for b in [int(x) for x in args.batches.split(",")]:
                log(f"[{model}] forward B={b} T={T}")
                res = measure(systems, b, args.rounds, args.reps, args.budget)
                ref = res["PyTorch/2"][0] if "PyTorch/2" in res else None
                for name in sorted(res, key=lambda n: (not n.startswith("PyTorch"), n)):
                    med, n = res[name]
                    system, threads = name.split("/")
                    rows.append((model, f"forward B={b} T={T}", system + " eager" * (system == "PyTorch"),
                                 threads, f"{b * T / med:,.0f}",
                                 f"{ref / med:.2f}" if ref else "-", n))
            if args.gen_new:
                log(f"[{model}] generate")
                gen = {name: s.generate(args.gen_prompt, args.gen_new)
                       for name, s in systems.items()}
                ref = gen.get("PyTorch/2")
                for name in sorted(gen, key=lambda n: (not n.startswith("PyTorch"), n)):
                    system, threads = name.split("/")
                    rows.append((model, f"generate {args.gen_new} after {args.gen_prompt}",
                                 system + " eager" * (system == "PyTorch"), threads,
                                 f"{gen[name]:,.1f}",
                                 f"{gen[name] / ref:.2f}" if ref else "-", 1))
            if args.train_budget > 0:
                b = MODELS[model]["train_b"]
                work_name = f"train step B={b} T={T}"
                log(f"[{model}] {work_name}")
                losses = {name: s.loss(b) for name, s in systems.items()}
                if "PyTorch/2" in systems:
                    systems["PyTorch/2"].hyper = systems["attnc/1"].hyper()
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
                for name in sorted(res, key=lambda n: (not n.startswith("PyTorch"), n)):
                    med, n = res[name]
                    system, threads = name.split("/")
                    rows.append((model, work_name, system + " eager" * (system == "PyTorch"),
                                 threads, f"{b * T / med:,.1f}",
                                 f"{ref / med:.2f}" if ref else "-", n))
        finally:
            for s in systems.values():
                s.close()

    print(f"machine: {cpu_model()}, {os.cpu_count()} cores; "
          f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}")
    print("tokens/s, median of the runs after a warm-up, systems interleaved; "
          "ratio = tokens/s / PyTorch's (2 threads)")
    if torch_info:
        print(f"PyTorch {torch_info['version']} eager, BLAS {torch_info['blas']}, "
              "OPENBLAS_CORETYPE=SkylakeX OMP_WAIT_POLICY=PASSIVE, torch.set_num_threads(2)")
    print()
    header = ("model", "workload", "system", "threads", "tokens/s", "ratio", "runs")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(str(c) for c in row) + " |")
    print()
    for note in notes:
        print(note)


if __name__ == "__main__":
    sys.exit(main())
