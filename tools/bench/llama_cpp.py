#!/usr/bin/python3
"""llama.cpp's CPU throughput on gpt2_small's shape, as a baseline for attnc.

Writes a GGUF for llama.cpp's `gpt2` architecture with GPT-2 124M's shape
(12 layers, d=768, 12 heads, context 1024, vocab 50257) and random weights
(normal, std 0.02, seeded; biases zero, norms one), f32, with GPT-2's
tokenizer (encoder.json and vocab.bpe from scripts/fetch-gpt2-tokenizer.py),
makes Q8_0 and bf16 copies with llama-quantize, and runs llama-bench on each:
prompt processing of 256 tokens (pp256) and generation of 64 (tg64), the
median of 5 repetitions (after llama-bench's warm-up). Prints one table, with
llama.cpp's build, the CPU, the CPU features llama.cpp was built with, and
the load average.

Other work on a 2-core host wrecks these figures (llama.cpp's threads wait
for each other at every op: a busy core halves pp256 and can cut tg64
tenfold), so each llama-bench run waits (up to --max-wait s) until the CPUs
have been idle for 3 s, is run again (up to 3 times) when other processes
took over 5% of the CPU time meanwhile, and the table shows that share for
the run kept ("others"); the figures are only sound where it is ~0.

Needs the build of scripts/fetch-llama-cpp.sh; writes the GGUFs under
LLAMA_DIR/models. The GGUF writer is llama.cpp's own gguf-py, from the source
tree (so it matches the build, and needs nothing but numpy).

usage: tools/bench/llama_cpp.py [--llama-dir DIR] [--threads N] [--json OUT]
                                [--max-wait S] [--tokenizer DIR]
"""

import argparse
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKENIZER = os.path.expanduser("~/.cache/attnc/gpt2-tokenizer")
N_LAYER, N_EMBD, N_HEAD, N_CTX, N_VOCAB = 12, 768, 12, 1024, 50257
PROMPT, GEN, REPS, SEED = 256, 64, 5, 1
# llama-quantize's names for the copies made from the f32 file.
QUANTS = ["Q8_0", "BF16"]


def fail(msg):
    print(f"llama_cpp.py: error: {msg}", file=sys.stderr)
    sys.exit(1)


def load_tokenizer(path):
    """GPT-2's tokens by id and its merges by rank, as GGUF stores them."""
    try:
        with open(os.path.join(path, "encoder.json"), encoding="utf-8") as f:
            encoder = json.load(f)
        with open(os.path.join(path, "vocab.bpe"), encoding="utf-8") as f:
            merges = [l.rstrip("\n") for l in f if l.strip() and not l.startswith("#version")]
    except OSError as e:
        fail(f"{e}; run scripts/fetch-gpt2-tokenizer.py")
    tokens = sorted(encoder, key=encoder.get)
    if [encoder[t] for t in tokens] != list(range(N_VOCAB)):
        fail(f"{path}/encoder.json is not GPT-2's {N_VOCAB} tokens")
    return tokens, merges


def write_gguf(gguf, path, tokenizer_dir):
    tokens, merges = load_tokenizer(tokenizer_dir)
    eot = N_VOCAB - 1  # <|endoftext|>, GPT-2's bos and eos
    w = gguf.GGUFWriter(path, "gpt2")
    w.add_name("gpt2_small (random weights)")
    w.add_block_count(N_LAYER)
    w.add_context_length(N_CTX)
    w.add_embedding_length(N_EMBD)
    w.add_feed_forward_length(4 * N_EMBD)
    w.add_head_count(N_HEAD)
    w.add_layer_norm_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tokens)
    w.add_token_types([gguf.TokenType.CONTROL if i == eot else gguf.TokenType.NORMAL
                       for i in range(N_VOCAB)])
    w.add_token_merges(merges)
    w.add_bos_token_id(eot)
    w.add_eos_token_id(eot)

    rng = np.random.default_rng(SEED)
    T = gguf.MODEL_TENSOR

    def add(tensor, kind, shape, bid=None):
        # numpy shapes are ggml's ne reversed: a {n_embd, n_out} matrix is (n_out, n_embd).
        name = gguf.TENSOR_NAMES[tensor].format(bid=bid) + "." + kind
        if kind == "bias":
            data = np.zeros(shape, np.float32)
        elif len(shape) == 1:  # layer-norm gains
            data = np.ones(shape, np.float32)
        else:
            data = rng.standard_normal(shape, np.float32) * np.float32(0.02)
        w.add_tensor(name, data)

    d = N_EMBD
    add(T.TOKEN_EMBD, "weight", (N_VOCAB, d))  # also the output matrix: GPT-2 ties them
    add(T.POS_EMBD, "weight", (N_CTX, d))
    for i in range(N_LAYER):
        for t, n_out, n_in in [(T.ATTN_QKV, 3 * d, d), (T.ATTN_OUT, d, d),
                               (T.FFN_UP, 4 * d, d), (T.FFN_DOWN, d, 4 * d)]:
            add(t, "weight", (n_out, n_in), i)
            add(t, "bias", (n_out,), i)
        for t in (T.ATTN_NORM, T.FFN_NORM):
            add(t, "weight", (d,), i)
            add(t, "bias", (d,), i)
    add(T.OUTPUT_NORM, "weight", (d,))
    add(T.OUTPUT_NORM, "bias", (d,))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def system_info(bin_dir, model, threads):
    """llama.cpp's system_info line (the CPU backend's compiled-in features),
    which llama-completion prints once a model is loaded."""
    exe = os.path.join(bin_dir, "llama-completion")
    if not os.path.exists(exe):
        return "n/a (llama-completion not built)"
    r = subprocess.run([exe, "-m", model, "-t", str(threads), "-p", "Hello", "-n", "1",
                        "-no-cnv", "--no-warmup"],
                       capture_output=True, text=True, stdin=subprocess.DEVNULL)
    m = re.search(r"system_info: (.*)", r.stdout + r.stderr)
    return m.group(1).strip() if m else f"n/a (llama-completion exited {r.returncode})"


def cpu_ticks():
    """(busy, total) CPU time of the whole machine so far, in seconds."""
    with open("/proc/stat") as f:
        t = [int(x) for x in f.readline().split()[1:9]]
    hz = os.sysconf("SC_CLK_TCK")
    return (sum(t) - t[3] - t[4]) / hz, sum(t) / hz  # idle and iowait are not busy


def wait_idle(max_wait):
    """Wait until the CPUs were >= 95% idle over 3 s; False if they never were."""
    end = time.time() + max_wait
    while True:
        b0, t0 = cpu_ticks()
        time.sleep(3)
        b1, t1 = cpu_ticks()
        if b1 - b0 <= 0.05 * (t1 - t0):
            return True
        if time.time() > end:
            return False


def run_measured(cmd):
    """Runs cmd; returns it and the share of all CPU time that other
    processes used meanwhile (machine busy time less cmd's own)."""
    own0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    b0, t0 = cpu_ticks()
    r = subprocess.run(cmd, capture_output=True, text=True)
    b1, t1 = cpu_ticks()
    own1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = (own1.ru_utime + own1.ru_stime) - (own0.ru_utime + own0.ru_stime)
    return r, max(0.0, (b1 - b0 - own) / max(t1 - t0, 1e-9))


def cpu_model():
    with open("/proc/cpuinfo") as f:
        m = re.search(r"^model name\s*:\s*(.*)$", f.read(), re.M)
    return m.group(1) if m else platform.processor()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--llama-dir", default=os.path.join(ROOT, "build/bench/llama.cpp"),
                    help="scripts/fetch-llama-cpp.sh's output dir")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", metavar="OUT", help="write the results here")
    ap.add_argument("--max-wait", type=float, default=300,
                    help="seconds to wait for idle CPUs before each run")
    ap.add_argument("--tokenizer", default=TOKENIZER, help="dir with encoder.json and vocab.bpe")
    args = ap.parse_args()

    bin_dir = os.path.join(args.llama_dir, "build", "bin")
    bench, quantize = (os.path.join(bin_dir, b) for b in ("llama-bench", "llama-quantize"))
    for exe in (bench, quantize):
        if not os.access(exe, os.X_OK):
            fail(f"{exe} is not built; run scripts/fetch-llama-cpp.sh {args.llama_dir}")
    sys.path.insert(0, os.path.join(args.llama_dir, "src", "gguf-py"))
    try:
        import gguf
    except ImportError as e:
        fail(f"cannot import gguf-py from {args.llama_dir}/src ({e})")

    models = os.path.join(args.llama_dir, "models")
    os.makedirs(models, exist_ok=True)
    f32 = os.path.join(models, "gpt2_small-f32.gguf")
    print(f"writing {f32}", file=sys.stderr)
    write_gguf(gguf, f32, args.tokenizer)
    files = {"f32": f32}
    for q in QUANTS:
        out = os.path.join(models, f"gpt2_small-{q.lower()}.gguf")
        r = subprocess.run([quantize, f32, out, q, str(args.threads)],
                           capture_output=True, text=True)
        if r.returncode == 0:
            files[q.lower()] = out
        else:  # a format this build cannot make is left out of the table, said so
            print(f"llama-quantize {q} failed (exit {r.returncode}): {r.stderr.strip()[-300:]}",
                  file=sys.stderr)

    load_before = os.getloadavg()
    rows, others = [], {}
    for fmt, path in files.items():
        # Up to 3 tries; the one that other work disturbed least is kept.
        tries = []
        for attempt in range(3):
            print(f"llama-bench {fmt} ...", file=sys.stderr)
            if not wait_idle(args.max_wait):
                print(f"the CPUs were not idle within {args.max_wait:.0f} s; measuring anyway",
                      file=sys.stderr)
            r, busy = run_measured([bench, "-m", path, "-t", str(args.threads),
                                    "-p", str(PROMPT), "-n", str(GEN), "-r", str(REPS),
                                    "-o", "json"])
            if r.returncode != 0:
                fail(f"llama-bench on {path} exited {r.returncode}: {r.stderr.strip()[-500:]}")
            tries.append((busy, r.stdout))
            if busy <= 0.05:
                break
            print(f"other processes took {busy:.0%} of the CPUs meanwhile", file=sys.stderr)
        others[fmt], out = min(tries)
        rows += [dict(t, format=fmt) for t in json.loads(out)]
    load_after = os.getloadavg()

    def rate(fmt, key):
        """Median and spread of the runs' tokens/s."""
        ts = next(t for t in rows if t["format"] == fmt and t[key] > 0)["samples_ts"]
        return {"median": statistics.median(ts), "min": min(ts), "max": max(ts)}

    first = rows[0]
    tag_file = os.path.join(args.llama_dir, "tag")
    tag = open(tag_file).read().strip() if os.path.exists(tag_file) else "?"
    info = {
        "llama_cpp": {"tag": tag, "commit": first["build_commit"],
                      "build_number": first["build_number"]},
        "cpu": first.get("cpu_info") or cpu_model(),
        "system_info": system_info(bin_dir, f32, args.threads),
        "threads": args.threads,
        "loadavg_before": load_before, "loadavg_after": load_after,
        "results": [{"format": fmt, "others_cpu_share": others[fmt],
                     f"pp{PROMPT}_tps": rate(fmt, "n_prompt"), f"tg{GEN}_tps": rate(fmt, "n_gen")}
                    for fmt in files],
        "llama_bench": rows,
    }

    p, g = f"pp{PROMPT}", f"tg{GEN}"
    print(f"llama.cpp {tag} ({info['llama_cpp']['commit']}), gpt2_small random weights, "
          f"{args.threads} threads; tokens/s, median of {REPS} [min-max]")
    print(f"CPU: {info['cpu']} ({os.cpu_count()} cpus); {info['system_info']}")
    print(f"load average (1/5/15 min) before {'/'.join(f'{x:.2f}' for x in load_before)}, "
          f"after {'/'.join(f'{x:.2f}' for x in load_after)}")
    print(f"{'format':<8}{p:>22}{g:>22}{'others':>8}")
    for res in info["results"]:
        cells = [f"{r['median']:.1f} [{r['min']:.0f}-{r['max']:.0f}]"
                 for r in (res[p + "_tps"], res[g + "_tps"])]
        print(f"{res['format']:<8}{cells[0]:>22}{cells[1]:>22}{res['others_cpu_share']:>8.0%}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(info, f, indent=1)


if __name__ == "__main__":
    main()
