#!/usr/bin/env python3
"""`make bench`: forward (and generate) throughput of attnc-compiled models
next to PyTorch CPU eager on the same weights and shapes, in one run.

For each model: `attnc compile` (timed), link tools/bench/driver.c with the
object and libattnrt, initialise weights (seed 1), then time `forward` on
B x T tokens in-process (driver.c: one warm-up, then the median of the runs;
no process start-up or file I/O). PyTorch runs in a child process started
with OPENBLAS_CORETYPE=SkylakeX OMP_WAIT_POLICY=PASSIVE and
torch.set_num_threads(2) (see MLIR22-NOTES), on an nn.Module built from
nn.Embedding, nn.MultiheadAttention(batch_first=True) with a causal mask,
nn.LayerNorm, nn.Linear and GELU, loaded from the same safetensors file; its
output is compared with attnc's so that both compute the same function.

Usage: bench.py [--build DIR] [--models a,b] [--reps N] [--threads 1,2]
                [--no-torch] [--budget SECONDS]
"""

import argparse
import datetime
import json
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
MODELS = {
    "char_gpt": {"heads": 6, "gelu": "none"},
    "gpt2_small": {"heads": 12, "gelu": "tanh"},
}

T = 256
BATCHES = (1, 8)


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


# ---------------------------------------------------------------- PyTorch side


def torch_worker(args):
    """Runs in the child process with the fair environment."""
    import torch
    from torch import nn

    torch.set_num_threads(args.torch_threads)
    weights = read_safetensors(args.weights)
    cfg = MODELS[args.model]
    vocab, d = weights["wte.weight"].shape
    ctx = weights["wpe.weight"].shape[0]
    layers = 1 + max(int(k.split(".")[1]) for k in weights if k.startswith("h."))

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
            self.attn = nn.MultiheadAttention(d, cfg["heads"], batch_first=True)
            self.ln_2 = nn.LayerNorm(d)
            self.mlp = FeedForward()

        def forward(self, x, mask):
            h = self.ln_1(x)
            x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab, d)
            self.wpe = nn.Embedding(ctx, d)
            self.h = nn.ModuleList(Block() for _ in range(layers))
            self.ln_f = nn.LayerNorm(d)

        def forward(self, tokens):
            t = tokens.shape[1]
            x = self.wte(tokens) + self.wpe(torch.arange(t))
            mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
            for block in self.h:
                x = block(x, mask)
            return self.ln_f(x) @ self.wte.weight.t()

    model = GPT()
    model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in weights.items()})
    model.eval()
    result = {}
    with torch.no_grad():
        if args.check:
            tokens = torch.from_numpy(np.load(args.check_tokens).astype(np.int64))
            ref = np.load(args.check)
            out = model(tokens).numpy()
            result["rel_err"] = float(np.linalg.norm(out - ref) / np.linalg.norm(ref))
        for b in args.batches:
            tokens = torch.from_numpy(lcg_tokens(b * T).reshape(b, T).astype(np.int64))
            model(tokens)  # warm-up
            times, spent = [], 0.0
            for _ in range(args.reps):
                t0 = time.perf_counter()
                model(tokens)
                times.append(time.perf_counter() - t0)
                spent += times[-1]
                if spent > args.budget:
                    break
            result[f"forward_B{b}"] = times
        if args.gen_new:
            prompt = torch.from_numpy(lcg_tokens(args.gen_prompt).astype(np.int64))[None]
            seq = prompt
            t0 = time.perf_counter()
            for _ in range(args.gen_new):  # as attnc's runtime: full forward per token
                logits = model(seq)[0, -1]
                seq = torch.cat([seq, logits.argmax().view(1, 1)], dim=1)
            result["generate"] = [time.perf_counter() - t0]
    with open("/proc/self/maps") as f:
        blas = sorted({l.split()[-1] for l in f if "blas" in l.split()[-1]})
    result["blas"] = os.path.basename(blas[0]) if blas else "unknown"
    print(json.dumps(result))


def lcg_tokens(n):
    """The ids driver.c uses."""
    state, out = 12345, np.empty(n, dtype=np.int32)
    for i in range(n):
        state = (state * 1664525 + 1013904223) & 0xFFFFFFFF
        out[i] = (state >> 8) % 256
    return out


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


# ------------------------------------------------------------------ attnc side


def torch_version():
    return run([sys.executable, "-c", "import torch; print(torch.__version__)"]).strip()


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--attnc", help="the compiler to measure (default: BUILD/bin/attnc)")
    parser.add_argument("--work", help="scratch directory (default: BUILD/bench)")
    parser.add_argument("--models", default="char_gpt,gpt2_small")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--budget", type=float, default=20.0,
                        help="seconds per measurement before stopping early")
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--gen-new", type=int, default=32)
    parser.add_argument("--gen-prompt", type=int, default=64)
    # Child-process mode.
    parser.add_argument("--torch-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--weights", help=argparse.SUPPRESS)
    parser.add_argument("--batches", type=lambda s: [int(x) for x in s.split(",")],
                        default=list(BATCHES), help=argparse.SUPPRESS)
    parser.add_argument("--torch-threads", type=int, default=2, help=argparse.SUPPRESS)
    parser.add_argument("--check", help=argparse.SUPPRESS)
    parser.add_argument("--check-tokens", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.torch_worker:
        return torch_worker(args)

    attnc = args.attnc or os.path.join(args.build, "bin", "attnc")
    runtime = os.path.join(args.build, "lib", "libattnrt.a")
    work = args.work or os.path.join(args.build, "bench")
    os.makedirs(work, exist_ok=True)
    cc = shutil.which("clang-22") or shutil.which("cc")
    threads = [int(t) for t in args.threads.split(",")]
    use_torch = not args.no_torch and torch_available()
    if not use_torch:
        log("PyTorch not importable (or --no-torch): attnc figures only")
    blas_dir = openblas_dir(work) if use_torch else None

    rows, notes, blas = [], [], None
    for model in args.models.split(","):
        src = os.path.join(ROOT, "models", model + ".tfm")
        obj = os.path.join(work, model + ".o")
        exe = os.path.join(work, model + "-bench")
        weights = os.path.join(work, model + ".safetensors")
        log(f"[{model}] attnc compile")
        t0 = time.perf_counter()
        run([attnc, "compile", src, "-o", obj])
        compile_s = time.perf_counter() - t0
        notes.append(f"{model}: attnc compile {compile_s:.1f} s")
        run([cc, "-O2", "-o", exe, os.path.join(ROOT, "tools", "bench", "driver.c"), obj,
             runtime, f"-DMODEL_INFO={model}_model_info",
             "-I", os.path.join(ROOT, "runtime", "include"), "-lm", "-lpthread"])
        if not os.path.exists(weights):
            run([exe, "init", "1", weights])

        attnc_tps = {}
        check_out = None
        for b in BATCHES:
            for nt in threads:
                log(f"[{model}] attnc forward B={b} T={T} threads={nt}")
                out_npy = os.path.join(work, f"{model}-B1.npy") if b == 1 else None
                cmd = [exe, "forward", weights, str(b), str(T), str(args.reps), str(nt),
                       str(args.budget)] + ([out_npy] if out_npy else [])
                times = [float(l.split()[1]) for l in run(cmd).splitlines()
                         if l.startswith("seconds")]
                attnc_tps[(b, nt)] = (b * T / statistics.median(times), len(times))
                if out_npy:
                    check_out = out_npy
        gen = None
        if args.gen_new and attnc_tps[(1, threads[0])][0] > 2 * args.gen_prompt:
            log(f"[{model}] attnc generate")
            line = run([exe, "generate", weights, str(args.gen_prompt), str(args.gen_new),
                        str(threads[-1])]).split()
            gen = int(line[3]) / float(line[1])

        torch_res = {}
        if use_torch:
            log(f"[{model}] PyTorch forward")
            np.save(os.path.join(work, "tokens-B1.npy"), lcg_tokens(T).reshape(1, T))
            env = dict(os.environ, OPENBLAS_CORETYPE="SkylakeX", OMP_WAIT_POLICY="PASSIVE")
            if blas_dir:
                env["LD_LIBRARY_PATH"] = blas_dir + ":" + env.get("LD_LIBRARY_PATH", "")
            cmd = [sys.executable, os.path.abspath(__file__), "--torch-worker",
                   "--model", model, "--weights", weights, "--reps", str(args.reps),
                   "--budget", str(args.budget), "--check", check_out,
                   "--check-tokens", os.path.join(work, "tokens-B1.npy"),
                   "--gen-new", str(args.gen_new if gen else 0),
                   "--gen-prompt", str(args.gen_prompt)]
            torch_res = json.loads(run(cmd, env=env).splitlines()[-1])
            notes.append(f"{model}: attnc vs PyTorch output, B=1 T={T}: "
                         f"relative error {torch_res['rel_err']:.1e}")
            blas = torch_res["blas"]

        for b in BATCHES:
            ref = None
            if f"forward_B{b}" in torch_res:
                ts = torch_res[f"forward_B{b}"]
                ref = b * T / statistics.median(ts)
                rows.append((model, f"forward B={b} T={T}", "PyTorch eager", "2",
                             f"{ref:,.0f}", "1.00", len(ts)))
            for nt in threads:
                tps, n = attnc_tps[(b, nt)]
                ratio = f"{tps / ref:.2f}" if ref else "-"
                rows.append((model, f"forward B={b} T={T}", "attnc", str(nt),
                             f"{tps:,.0f}", ratio, n))
        if gen:
            ref = None
            if "generate" in torch_res:
                ref = args.gen_new / torch_res["generate"][0]
                rows.append((model, f"generate {args.gen_new} after {args.gen_prompt}",
                             "PyTorch eager", "2", f"{ref:,.1f}", "1.00", 1))
            rows.append((model, f"generate {args.gen_new} after {args.gen_prompt}", "attnc",
                         str(threads[-1]), f"{gen:,.1f}", f"{gen / ref:.2f}" if ref else "-", 1))

    ncores = os.cpu_count()
    print(f"machine: {cpu_model()}, {ncores} cores; "
          f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}")
    print("tokens/s, median of runs after a warm-up; ratio = attnc / PyTorch (2 threads)")
    if use_torch:
        print(f"PyTorch {torch_version()} eager, BLAS {blas}, OPENBLAS_CORETYPE=SkylakeX "
              "OMP_WAIT_POLICY=PASSIVE, torch.set_num_threads(2)")
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
