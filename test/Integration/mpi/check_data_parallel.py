"""Data-parallel training under mpirun gives what one process gives.

  check_data_parallel.py --exe CHAR_GPT --mpirun "MPIRUN ARGS" --data DATA_DIR
                         --dir SCRATCH

The model is the reduced char_gpt (test/Integration/Inputs/char_gpt.tfm),
dropout 0.1 on; every process runs one thread, so two processes fit CI's
two cores.

1. Same run: 20 steps of `mpirun -np 2 train --batch 4` against one process
   with `--batch 8`, same seed: the global batch of a step is the one the
   single process draws, rank r taking rows 4r to 4r + 3, and each rank's
   dropout masks are those of its rows in the single process (`<loss>_grad`
   is told its first row, ATTN_ARG_DROPOUT_ROW). The loss of every
   step agrees to 1e-5 relative, the gradient norm too, and so does every
   trained tensor (the norm of the difference over the norm of the tensor),
   with one exception the test states: the key third of each attention's
   in_proj_bias. Its gradient is zero in exact arithmetic (adding b_k to
   every key adds q.b_k to every score of a row, which the softmax
   cancels), so what train_step computes there is rounding noise, which
   Adam divides by its own size into steps of about lr; the noise depends
   on the order of the sums, so the two runs move those weights by
   unrelated steps of at most about lr each. They are checked against
   that bound instead (20 steps x the largest lr, twice).
2. The checkpoint records the global batch (8) and either run's
   checkpoint resumes under the other N: 10 steps under -np 2 resumed to
   20 by one process (no --batch: the global batch), and 10 steps by one
   process resumed to 20 under -np 2 --batch 4, both equal the 20-step
   single-process run to the same tolerance; 10 steps resumed to 20, both
   under -np 2, equals the 20-step -np 2 run byte for byte. A global batch
   that does not split over N processes (-np 3 of 8) is refused with one
   line.
3. --shard-optimizer (each process updates its half of the parameters and
   keeps its half of Adam's moments, which rank 0 gathers for the
   checkpoint) gives the unsharded -np 2 run's checkpoint.
4. eval under -np 2 prints what one process prints.
5. Failures stop the job: rank 1 alone given a missing --data file makes
   every process exit non-zero with one error line, from rank 1; the same
   error on every rank is one line too; rank 1 killed with SIGKILL after
   the checkpoint of step 5 stops the job (mpirun reports the signal)
   within a minute, and the checkpoint it leaves loads and resumes.
"""

import argparse
import json
import os
import shlex
import shutil
import struct
import subprocess
import sys

import numpy as np

TOL = 1e-5
failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


def load_st(path):
    with open(path, "rb") as f:
        b = f.read()
    n = struct.unpack("<Q", b[:8])[0]
    header = json.loads(b[8:8 + n])
    data = b[8 + n:]
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        s, e = v["data_offsets"]
        dtype = {"F32": np.float32, "I64": np.int64}[v["dtype"]]
        out[k] = np.frombuffer(data[s:e], dtype=dtype).reshape(v["shape"])
    return out, header.get("__metadata__", {})


def read_csv(path):
    rows = []
    with open(path) as f:
        next(f)
        for line in f:
            step, loss, lr, norm, _ = line.strip().split(",")
            rows.append((int(step), float(loss), float(lr), float(norm)))
    return rows


def key_bias_slice(name, shape):
    """The key third of an attention's packed in_proj_bias, else None."""
    if name.endswith("attn.in_proj_bias"):
        d = shape[0] // 3
        return slice(d, 2 * d)
    return None


def compare_weights(a_path, b_path, what, lr_bound):
    a, _ = load_st(a_path)
    b, _ = load_st(b_path)
    worst, worst_name = 0.0, ""
    for name, y in b.items():
        if name not in a:
            check(False, f"{what}: {name} missing")
            return
        x, y = a[name].astype(np.float64), y.astype(np.float64)
        if x.dtype.kind != "f":
            continue
        keys = key_bias_slice(name, y.shape)
        if keys is not None:
            gap = float(np.max(np.abs(x[keys] - y[keys])))
            if gap > lr_bound:
                check(False, f"{what}: {name}'s key biases differ by {gap:.3g} "
                             f"> {lr_bound:.3g}")
            x, y = np.delete(x, np.r_[keys]), np.delete(y, np.r_[keys])
        scale = np.linalg.norm(y)
        rel = np.linalg.norm(x - y) / scale if scale > 0 else np.linalg.norm(x)
        if rel > worst:
            worst, worst_name = rel, name
    check(worst <= TOL, f"{what}: weights equal to {worst:.2g} relative "
                        f"(worst {worst_name or '-'}; tolerance {TOL:g})")


def compare_curves(a_path, b_path, what):
    a, b = read_csv(a_path), read_csv(b_path)
    if [r[0] for r in a] != [r[0] for r in b]:
        check(False, f"{what}: the logs have other steps")
        return
    loss = max(abs(x[1] - y[1]) / abs(y[1]) for x, y in zip(a, b))
    norm = max(abs(x[3] - y[3]) / abs(y[3]) for x, y in zip(a, b))
    lr = max(abs(x[2] - y[2]) for x, y in zip(a, b))
    check(loss <= TOL and norm <= TOL and lr == 0,
          f"{what}: {len(a)} steps, losses equal to {loss:.2g} relative, "
          f"gradient norms to {norm:.2g}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--mpirun", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--dir", required=True)
    args = ap.parse_args()
    exe = os.path.abspath(args.exe)
    d = os.path.abspath(args.dir)
    args.data = os.path.abspath(args.data)
    train_txt = os.path.join(args.data, "kjv-train.txt")
    valid_txt = os.path.join(args.data, "kjv-valid.txt")
    mpirun = shlex.split(args.mpirun)
    here = os.path.dirname(os.path.abspath(__file__))
    os.makedirs(d, exist_ok=True)
    os.chdir(d)

    def run(cmd, timeout=300):
        p = subprocess.run([str(x) for x in cmd], capture_output=True,
                           timeout=timeout, cwd=d)
        return p.returncode, p.stdout.decode(), p.stderr.decode("utf-8", "replace")

    def single(*a):
        return run([exe] + list(a) + ["--threads", "1"])

    def mpi(n, *a, wrap=(), env_exe=None):
        return run(mpirun + ["-np", str(n)] + list(wrap) +
                   [env_exe or exe] + list(a) + ["--threads", "1"])

    common = ["--data", train_txt, "--seq", "64", "--seed", "1"]
    rc, _, err = single("init", "--seed", "1", "-o", "w0.safetensors")
    check(rc == 0, "init " + err.strip())

    # 1. The same 20 steps.
    rc, _, err = single("train", "-w", "w0.safetensors", *common, "--batch", "8",
                        "--steps", "20", "-o", "one.safetensors")
    check(rc == 0, "one process, --batch 8: " + err.strip().splitlines()[-1])
    rc, _, err = mpi(2, "train", "-w", "w0.safetensors", *common, "--batch", "4",
                     "--steps", "20", "-o", "two.safetensors")
    check(rc == 0 and "data-parallel: 2 processes of --batch 4" in err,
          "mpirun -np 2, --batch 4: " + err.strip().splitlines()[-1])
    # The largest rate of the first 20 steps of char_gpt's schedule (cosine,
    # warmup 100, lr 1e-3): 2e-4; Adam moves a weight by about lr a step.
    lr_bound = 2 * 20 * 2e-4
    compare_curves("two.csv", "one.csv", "-np 2 --batch 4 vs --batch 8")
    compare_weights("two.safetensors", "one.safetensors",
                    "-np 2 --batch 4 vs --batch 8", lr_bound)
    _, meta = load_st("two.ckpt.safetensors")
    batch = json.loads(meta["attn.train"])["batch"]
    check(batch == 8, f"the -np 2 checkpoint records the global batch ({batch})")

    # 2. Resuming across N.
    rc, _, err = mpi(2, "train", "-w", "w0.safetensors", *common, "--batch", "4",
                     "--steps", "10", "-o", "two10.safetensors")
    check(rc == 0, "-np 2, 10 steps")
    rc, _, err = single("train", "--resume", "two10.ckpt.safetensors",
                        "--data", train_txt, "--steps", "20",
                        "-o", "two10_one20.safetensors")
    check(rc == 0, "one process resumes the -np 2 checkpoint: " +
          err.strip().splitlines()[-1])
    compare_weights("two10_one20.safetensors", "one.safetensors",
                    "-np 2 to step 10, one process to 20", lr_bound)
    rc, _, err = single("train", "-w", "w0.safetensors", *common, "--batch", "8",
                        "--steps", "10", "-o", "one10.safetensors")
    check(rc == 0, "one process, 10 steps")
    # A resumed run continues the log --log names (a copy here).
    shutil.copy("one10.csv", "one10_two20.csv")
    rc, _, err = mpi(2, "train", "--resume", "one10.ckpt.safetensors",
                     "--data", train_txt, "--batch", "4", "--steps", "20",
                     "-o", "one10_two20.safetensors")
    check(rc == 0, "-np 2 resumes the one-process checkpoint: " +
          err.strip().splitlines()[-1])
    compare_weights("one10_two20.safetensors", "one.safetensors",
                    "one process to step 10, -np 2 to 20", lr_bound)
    compare_curves("one10_two20.csv", "one.csv",
                   "one process to step 10, -np 2 to 20")
    shutil.copy("two10.csv", "two10_two20.csv")
    rc, _, err = mpi(2, "train", "--resume", "two10.ckpt.safetensors",
                     "--data", train_txt, "--steps", "20",
                     "-o", "two10_two20.safetensors")
    same = (open("two10_two20.ckpt.safetensors", "rb").read() ==
            open("two.ckpt.safetensors", "rb").read())
    # The log's last column is a measured speed; the others must match.
    curve = [r[:3] for r in read_csv("two10_two20.csv")] == \
        [r[:3] for r in read_csv("two.csv")] and \
        [r[3] for r in read_csv("two10_two20.csv")] == \
        [r[3] for r in read_csv("two.csv")]
    check(rc == 0 and same and curve,
          "-np 2 to step 10 resumed by -np 2 to 20: the checkpoint of the "
          "20-step -np 2 run byte for byte, and its loss curve")
    rc, _, err = mpi(3, "train", "--resume", "two10.ckpt.safetensors",
                     "--data", train_txt, "--steps", "20", "-o", "bad.safetensors")
    lines = [l for l in err.splitlines() if l.startswith("error:")]
    check(rc != 0 and len(lines) == 1 and "does not split evenly over 3" in lines[0],
          "-np 3 of a global batch of 8 is refused: " + " | ".join(lines))

    # 3. The optimizer state sharded.
    rc, _, err = mpi(2, "train", "-w", "w0.safetensors", *common, "--batch", "4",
                     "--steps", "20", "--shard-optimizer", "-o", "shard.safetensors")
    check(rc == 0 and "optimizer state sharded" in err, "--shard-optimizer runs")
    compare_weights("shard.ckpt.safetensors", "two.ckpt.safetensors",
                    "--shard-optimizer vs -np 2 (weights and moments)", lr_bound)

    # 4. eval.
    rc1, out1, _ = single("eval", "-w", "one.safetensors", "--data", valid_txt,
                          "--seq", "64")
    rc2, out2, _ = mpi(2, "eval", "-w", "one.safetensors", "--data", valid_txt,
                       "--seq", "64")
    check(rc1 == 0 and rc2 == 0 and out1 == out2 and "positions:" in out1,
          "eval under -np 2 prints what one process prints: " +
          out2.replace("\n", " "))

    # 5. Failures.
    rank1 = os.path.join(here, "Inputs", "rank1_data.sh")
    rc, _, err = mpi(2, "train", "-w", "w0.safetensors", *common, "--batch", "4",
                     "--steps", "20", "-o", "fail.safetensors",
                     wrap=["sh", rank1])
    lines = [l for l in err.splitlines() if "error" in l.lower() and
             l.startswith("error:")]
    check(rc != 0 and len(lines) == 1 and lines[0].startswith("error: rank 1: ") and
          "No such file" in lines[0] and not os.path.exists(os.path.join(d, "fail.safetensors")),
          "rank 1 alone without its data stops the job with one line: " +
          " | ".join(lines))
    rc, _, err = mpi(2, "train", "-w", "w0.safetensors", "--data", "missing.txt",
                     "--steps", "20", "-o", "fail.safetensors")
    lines = [l for l in err.splitlines() if l.startswith("error:")]
    check(rc != 0 and len(lines) == 1 and "missing.txt" in lines[0],
          "the same error on both ranks is one line: " + " | ".join(lines))
    kill = os.path.join(here, "Inputs", "rank1_kill.sh")
    env_ckpt = "killed.ckpt.safetensors"
    try:
        rc, _, err = run(mpirun + ["-np", "2", "-x", "KILL_AFTER=" + env_ckpt,
                                   "sh", kill, exe, "train", "-w", "w0.safetensors",
                                   *common, "--batch", "4", "--steps", "100000",
                                   "--save-every", "5", "-o", "killed.safetensors",
                                   "--threads", "1"], timeout=60)
        stopped = True
    except subprocess.TimeoutExpired:
        rc, err, stopped = None, "", False
    check(stopped and rc != 0 and "signal 9" in err,
          "rank 1 killed: the job stops with mpirun's report (" +
          " ".join(l for l in err.splitlines() if "signal" in l) + ")")
    # Resuming checks every tensor and the checksum; one more step will do.
    _, meta = load_st(env_ckpt)
    at = json.loads(meta["attn.train"])["step"]
    rc, _, err = single("train", "--resume", env_ckpt, "--data", train_txt,
                        "--steps", str(at + 1), "-o", "after_kill.safetensors")
    check(rc == 0 and at % 5 == 0 and at >= 5,
          f"the checkpoint left behind (step {at}) loads and resumes")

    if failures:
        print(f"FAIL: {len(failures)} checks failed")
        return 1
    print("ok: data-parallel training equals one process")
    return 0


if __name__ == "__main__":
    sys.exit(main())
