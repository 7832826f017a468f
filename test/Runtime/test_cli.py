#!/usr/bin/env python3
# ===- test_cli.py - The standalone executable's command line, end to end ---===#
#
# Drives the fake model's executable (attn_main around fake_model.c) the way
# a user would. Every file it feeds in is made here with `struct`, and every
# number it checks is recomputed here from the weight file, so the runtime's
# own readers and writers are not trusted to check themselves.
#
# usage: test_cli.py PATH/TO/attn-fake-lm
#
# ===-----------------------------------------------------------------------===#

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

EXE = os.path.abspath(sys.argv[1])
VOCAB, DIM = 16, 4
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args, **kw):
    """Runs the executable; returns (exit status, stdout bytes, stderr str)."""
    argv = [EXE] + [a if isinstance(a, bytes) else str(a) for a in args]
    p = subprocess.run(argv, capture_output=True, **kw)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def one_error_line(err, *needles, what):
    """stderr is exactly one line `error: ...` containing every needle."""
    lines = err.splitlines()
    ok = len(lines) == 1 and lines[0].startswith("error: ")
    ok = ok and all(n in lines[0] for n in needles)
    check(ok, f"{what}: stderr {err!r} should be one error line with {needles}")


# --- Files made independently of the runtime ---------------------------------

NPY_DTYPES = {"<f4": "f", "<i4": "i", "<i8": "q", "|b1": "B"}


def npy_bytes(descr, shape, values, fortran=False, major=1):
    shape_text = "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
        descr, "True" if fortran else "False", shape_text)
    pre = 10 if major == 1 else 12
    header += " " * ((64 - (pre + len(header) + 1) % 64) % 64) + "\n"
    length = struct.pack("<H" if major == 1 else "<I", len(header))
    data = struct.pack("<%d%s" % (len(values), NPY_DTYPES[descr]), *values)
    return b"\x93NUMPY" + bytes([major, 0]) + length + header.encode() + data


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def parse_npy(data):
    """(descr, shape, values) of a version 1.0 .npy, parsed here."""
    assert data[:8] == b"\x93NUMPY\x01\x00", data[:8]
    (hlen,) = struct.unpack("<H", data[8:10])
    header = data[10:10 + hlen].decode()
    d = eval(header, {"__builtins__": {}}, {"True": True, "False": False})
    assert not d["fortran_order"]
    shape = d["shape"]
    n = 1
    for s in shape:
        n *= s
    code = NPY_DTYPES[d["descr"]]
    body = data[10 + hlen:]
    assert len(body) == n * struct.calcsize(code), (len(body), n)
    return d["descr"], shape, list(struct.unpack("<%d%s" % (n, code), body))


def parse_safetensors(data):
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    tensors = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        assert t["dtype"] == "F32"
        tensors[name] = (t["shape"], list(struct.unpack("<%df" % ((e - b) // 4), data[base + b:base + e])))
    return header, tensors


def safetensors_bytes(tensors):
    """tensors: list of (name, dtype, shape, raw bytes)."""
    header, data, off = {}, b"", 0
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(raw)]}
        data += raw
        off += len(raw)
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + data


def logits_row(E, tok):
    """The fake model's logits for one token: E[tok] @ E^T, in double."""
    return [sum(E[tok * DIM + d] * E[v * DIM + d] for d in range(DIM)) for v in range(VOCAB)]


def argmax(row):
    return max(range(len(row)), key=lambda i: (row[i], -i))


# --- The tests ----------------------------------------------------------------

def test_info():
    st, out, err = run("info")
    out = out.decode()
    check(st == 0 and err == "", f"info exits 0 quietly ({st}, {err!r})")
    for needle in ["model: fake_lm", "target: x86-64-v3",
                   "forward(tokens: i32[B, T]) -> f32[B, T, 16]",
                   "stats(x: f32[N, 4], y: f32[N, 4]) -> (f32[N, 4], f32[])",
                   "embed_table() -> f32[64]",
                   "embed.weight  f32[16, 4]  normal(std: 1, mean: 0)",
                   "total: 1 tensor, 64 parameters"]:
        check(needle in out, f"info output has {needle!r}:\n{out}")


def test_usage():
    st, out, err = run()
    check(st == 2 and "usage:" in err, "no command: usage on stderr, exit 2")
    st, out, err = run("--help")
    check(st == 0 and b"usage:" in out and b"generate" in out, "--help: usage, exit 0")
    for cmd in ["info", "init", "forward", "generate", "grad", "train", "eval"]:
        st, out, err = run(cmd, "--help")
        check(st == 0 and out.startswith(b"usage: attn-fake-lm " + cmd.encode()),
              f"{cmd} --help exits 0 with its usage")
    cases = [
        (["frobnicate"], "unknown command 'frobnicate'"),
        (["info", "--bogus"], "unknown option '--bogus' for 'info'"),
        (["init", "--seed", "1"], "missing -o"),
        (["init", "--seed", "x", "-o", "w"], "--seed takes a non-negative integer"),
        (["init", "--seed", "-1", "-o", "w"], "--seed takes"),
        (["init", "-o"], "option '-o' needs a value"),
        (["init", "stray", "-o", "w"], "unexpected argument 'stray'"),
        (["forward", "-w", "w", "--in", "tokens", "-o", "o"], "--in takes ARG=FILE.npy"),
        (["forward", "--in", "a=b", "-o", "o"], "missing -w"),
        (["generate", "-w", "w"], "missing --prompt"),
        (["generate", "-w", "w", "--prompt", ""], "must not be empty"),
        (["generate", "-w", "w", "--prompt", "a", "--top-p", "1.5"], "--top-p takes a number in [0, 1]"),
        (["generate", "-w", "w", "--prompt", "a", "--temperature", "-1"], "--temperature takes"),
        (["generate", "-w", "w", "--prompt", "a", "--tokens", "many"], "--tokens takes"),
        (["forward", "--threads", "0"], "--threads takes an integer in 1..1024"),
        (["generate", "-o", "x"], "unknown option '-o' for 'generate'"),
        # A misspelling within max(1, length / 3) edits names what it meant
        # (a swap of neighbours is one edit); a word far from every name
        # suggests nothing.
        (["trian"], "unknown command 'trian'; did you mean 'train'?"),
        (["generate", "--temprature", "0"],
         "unknown option '--temprature' for 'generate'; did you mean '--temperature'?"),
        (["init", "--sede", "1"], "unknown option '--sede' for 'init'; did you mean '--seed'?"),
    ]
    for args, needle in cases:
        st, out, err = run(*args)
        check(st == 2, f"{args}: exit 2, got {st}")
        one_error_line(err, needle, what=str(args))


def test_untrainable(d):
    """fake_lm has no train { } section and no training entry points."""
    w = os.path.join(d, "untrainable.safetensors")
    run("init", "-o", w)
    data = os.path.join(d, "untrainable.txt")
    write(data, b"hello world\n" * 20)
    out = os.path.join(d, "untrainable-out.safetensors")
    cases = [
        (["train", "-w", w, "--data", data, "-o", out], ["model 'fake_lm' has no train { } section"]),
        (["grad", "-w", w, "--in", "tokens=x.npy", "-o", out], ["model 'fake_lm' has no entry point 'loss_grad'",
                                                                     "with a train { } section"]),
        (["eval", "-w", w, "--data", data], ["model 'fake_lm' has no entry point 'loss'"]),
    ]
    for args, needles in cases:
        st, _, err = run(*args)
        check(st == 1, f"{args[0]} on an untrainable model: exit 1")
        one_error_line(err, *needles, what=f"{args[0]} on an untrainable model")
    check(not os.path.exists(out), "nothing written for an untrainable model")


def test_init(d):
    w1, w1b, w2 = (os.path.join(d, n) for n in ["w1.safetensors", "w1b.safetensors", "w2.safetensors"])
    st, out, err = run("init", "--seed", "1", "-o", w1)
    check(st == 0 and out == b"" and err == "", f"init: exit 0, quiet ({st}, {err!r})")
    run("init", "--seed=1", "--threads", "1", "-o", w1b)
    run("init", "--seed", "2", "-o", w2)
    check(read(w1) == read(w1b), "init: the same seed gives the same file on 1 thread and all")
    check(read(w1) != read(w2), "init: another seed gives another file")
    header, tensors = parse_safetensors(read(w1))
    check(header.get("__metadata__", {}).get("model") == "fake_lm", "init: metadata names the model")
    shape, E = tensors["embed.weight"]
    check(shape == [16, 4] and len(E) == 64, "init: embed.weight [16, 4]")
    mean = sum(E) / 64
    check(abs(mean) < 0.75 and 0.5 < (sum(x * x for x in E) / 64) ** 0.5 < 1.5,
          "init: normal(0, 1) looks like it")
    return w1, E


def test_forward(d, w, E):
    tokens = [[1, 2, 3], [15, 0, 7]]
    flat = [t for row in tokens for t in row]
    tok_path = os.path.join(d, "tokens.npy")
    write(tok_path, npy_bytes("<i4", [2, 3], flat))
    out_path = os.path.join(d, "logits.npy")
    st, out, err = run("forward", "-w", w, "--in", f"tokens={tok_path}", "-o", out_path)
    check(st == 0 and err == "", f"forward: exit 0 ({st}, {err!r})")
    descr, shape, vals = parse_npy(read(out_path))
    check(descr == "<f4" and shape == (2, 3, 16), f"forward: f32 [2, 3, 16], got {descr} {shape}")
    want = [x for t in flat for x in logits_row(E, t)]
    worst = max(abs(a - b) for a, b in zip(vals, want))
    check(worst < 1e-5, f"forward: logits match E[tokens] @ E^T (max error {worst})")

    # numpy's default int64 ids are narrowed to the i32 argument; version 2.0.
    write(tok_path, npy_bytes("<i8", [2, 3], flat, major=2))
    out64 = os.path.join(d, "logits64.npy")
    st, _, err = run("forward", "-w", w, "--fn", "forward", "--in", f"tokens={tok_path}", "-o", out64)
    check(st == 0 and read(out64) == read(out_path), f"forward: i64 ids give the same logits ({err!r})")

    # Several results: OUT.0.npy, OUT.1.npy; argument order with params in between.
    x = [float(i) for i in range(12)]
    y = [0.5 * i - 2 for i in range(12)]
    xp, yp = os.path.join(d, "x.npy"), os.path.join(d, "y.npy")
    write(xp, npy_bytes("<f4", [3, 4], x))
    write(yp, npy_bytes("<f4", [3, 4], y))
    prefix = os.path.join(d, "stats.npy")
    st, _, err = run("forward", "-w", w, "--fn", "stats", "--in", f"y={yp}", "--in", f"x={xp}", "-o", prefix)
    check(st == 0, f"forward --fn stats: exit 0 ({err!r})")
    _, s0, v0 = parse_npy(read(os.path.join(d, "stats.0.npy")))
    _, s1, v1 = parse_npy(read(os.path.join(d, "stats.1.npy")))
    check(s0 == (3, 4) and v0 == [a + b for a, b in zip(x, y)], "stats: result 0 is x + y")
    check(s1 == () and abs(v1[0] - sum(a * b for a, b in zip(x, y))) < 1e-3, "stats: result 1 is sum(x * y)")
    check(not os.path.exists(prefix), "stats: no file at the bare prefix")
    return tok_path


def test_forward_errors(d, w):
    good = os.path.join(d, "good_tokens.npy")
    write(good, npy_bytes("<i4", [1, 2], [1, 2]))
    out = os.path.join(d, "keep.npy")
    write(out, b"precious")

    def bad(args, needles, what, status=1):
        st, o, err = run(*args)
        check(st == status, f"{what}: exit {status}, got {st} ({err!r})")
        one_error_line(err, *needles, what=what)
        check(read(out) == b"precious", f"{what}: -o not overwritten")

    def fwd(w_path, tokens_file, *extra):
        return ["forward", "-w", w_path, "--in", f"tokens={tokens_file}", *extra, "-o", out]

    # Weight files.
    bad(fwd(os.path.join(d, "nope.safetensors"), good), ["nope.safetensors", "No such file"], "missing weights")
    raw = read(w)
    trunc = os.path.join(d, "trunc.safetensors")
    write(trunc, raw[:-10])
    bad(fwd(trunc, good), ["trunc.safetensors", "embed.weight", "outside the data section"], "truncated weights")
    write(trunc, raw[:20])
    bad(fwd(trunc, good), ["trunc.safetensors", "header length"], "weights cut in the header")
    corrupt = os.path.join(d, "corrupt.safetensors")
    write(corrupt, raw[:8] + b"!" + raw[9:])
    bad(fwd(corrupt, good), ["corrupt.safetensors", "bad JSON"], "corrupt weights")
    shaped = os.path.join(d, "shape.safetensors")
    write(shaped, safetensors_bytes([("embed.weight", "F32", [16, 5], bytes(16 * 5 * 4))]))
    bad(fwd(shaped, good), ["shape.safetensors", "'embed.weight'", "[16, 5]", "expected [16, 4]"], "wrong shape")
    typed = os.path.join(d, "dtype.safetensors")
    write(typed, safetensors_bytes([("embed.weight", "F64", [16, 4], bytes(16 * 4 * 8))]))
    bad(fwd(typed, good), ["dtype.safetensors", "'embed.weight'", "dtype F64"], "wrong dtype")
    extra = os.path.join(d, "extra.safetensors")
    write(extra, safetensors_bytes([("embed.weight", "F32", [16, 4], bytes(256)),
                                    ("lm_head.weight", "F32", [1], bytes(4))]))
    bad(fwd(extra, good), ["extra.safetensors", "'lm_head.weight'", "not a parameter"], "extra tensor")
    missing = os.path.join(d, "missing.safetensors")
    write(missing, safetensors_bytes([("wte.weight", "F32", [16, 4], bytes(256))]))
    bad(fwd(missing, good), ["missing.safetensors", "'wte.weight'"], "renamed tensor")

    # Inputs.
    f32 = os.path.join(d, "f32_tokens.npy")
    write(f32, npy_bytes("<f4", [1, 2], [1.0, 2.0]))
    bad(fwd(w, f32), ["f32_tokens.npy", "argument 'tokens'", "dtype f32", "i32[B, T]"], "wrong input dtype")
    flat = os.path.join(d, "flat_tokens.npy")
    write(flat, npy_bytes("<i4", [2], [1, 2]))
    bad(fwd(w, flat), ["flat_tokens.npy", "argument 'tokens'", "rank 1"], "wrong input rank")
    big = os.path.join(d, "big_tokens.npy")
    write(big, npy_bytes("<i8", [1, 1], [1 << 40]))
    bad(fwd(w, big), ["big_tokens.npy", "'tokens'", "does not fit in i32"], "i64 id too large")
    fortran = os.path.join(d, "fortran.npy")
    write(fortran, npy_bytes("<i4", [1, 2], [1, 2], fortran=True))
    bad(fwd(w, fortran), ["fortran.npy", "Fortran"], "Fortran-order input")
    trunc_npy = os.path.join(d, "trunc.npy")
    write(trunc_npy, npy_bytes("<i4", [1, 2], [1, 2])[:-3])
    bad(fwd(w, trunc_npy), ["trunc.npy", "truncated"], "truncated input")
    bad(fwd(w, os.path.join(d, "absent.npy")), ["absent.npy", "No such file"], "missing input file")
    xp = os.path.join(d, "x34.npy")
    yp = os.path.join(d, "y24.npy")
    write(xp, npy_bytes("<f4", [3, 4], [0.0] * 12))
    write(yp, npy_bytes("<f4", [2, 4], [0.0] * 8))
    bad(["forward", "-w", w, "--fn", "stats", "--in", f"x={xp}", "--in", f"y={yp}", "-o", out],
        ["y24.npy", "argument 'y'", "N = 2", "argument 'x' has N = 3"], "inconsistent symbolic dim")
    bad(["forward", "-w", w, "--in", f"tokens={good}", "--in", f"mask={good}", "-o", out],
        ["forward has no argument 'mask'", "tokens"], "unknown --in name")
    bad(["forward", "-w", w, "--in", f"tokens={good}", "--in", f"tokens={good}", "-o", out],
        ["'tokens' is given twice"], "repeated --in")
    bad(["forward", "-w", w, "-o", out], ["missing --in tokens=FILE.npy"], "missing --in")
    bad(["forward", "-w", w, "--fn", "stats", "--in", f"x={xp}", "-o", out],
        ["stats: missing --in y=FILE.npy"], "one of two --in missing")
    bad(["forward", "-w", w, "--fn", "backward", "--in", f"tokens={good}", "-o", out],
        ["no entry point 'backward'", "forward, stats, embed_table"], "unknown --fn")

    # An output that cannot be written.
    st, _, err = run("forward", "-w", w, "--in", f"tokens={good}", "-o", os.path.join(d, "no", "dir", "o.npy"))
    check(st == 1, "unwritable -o: exit 1")
    one_error_line(err, "no/dir/o.npy", what="unwritable -o")
    check(not [n for n in os.listdir(d) if ".tmp." in n], "no temporary files left behind")


def greedy_ids(E, prompt, n):
    ids, last = [], prompt[-1]
    for _ in range(n):
        last = argmax(logits_row(E, last))
        ids.append(last)
    return ids


def test_generate(d, w, E):
    prompt = b"\x01\x02\x03"
    ids_path = os.path.join(d, "ids.npy")
    st, out, err = run("generate", "-w", w, "--prompt", prompt, "--tokens", 12,
                       "--temperature", 0, "--ids-out", ids_path)
    check(st == 0 and err == "", f"generate: exit 0 ({st}, {err!r})")
    want = greedy_ids(E, list(prompt), 12)
    check(out == prompt + bytes(want), f"generate --temperature 0: prompt then argmax bytes ({out!r} vs {want})")
    descr, shape, ids = parse_npy(read(ids_path))
    check(descr == "<i4" and shape == (12,) and ids == want, f"--ids-out holds the new ids as i32 ({ids})")

    st, out_k1, _ = run("generate", "-w", w, "--prompt", prompt, "--tokens", 12, "--top-k", 1, "--seed", 5)
    check(out_k1 == out, "--top-k 1 is greedy")
    st, out_win, _ = run("generate", "-w", w, "--prompt", prompt, "--tokens", 12, "--temperature", 0,
                         "--context", 1, "--threads", 1)
    check(out_win == out, "--context 1 gives the same tokens for this model")

    a = run("generate", "-w", w, "--prompt", prompt, "--tokens", 30, "--seed", 7)
    b = run("generate", "-w", w, "--prompt", prompt, "--tokens", 30, "--seed", 7, "--threads", 1)
    c = run("generate", "-w", w, "--prompt", prompt, "--tokens", 30, "--seed", 8)
    check(a[0] == 0 and a[1] == b[1], "generate: the same seed gives the same text on any thread count")
    check(a[1] != c[1], "generate: another seed gives other text")
    check(len(a[1]) == 33 and a[1].startswith(prompt), "generate: prompt plus 30 bytes")
    p = run("generate", "-w", w, "--prompt", prompt, "--tokens", 200, "--seed", 1,
            "--top-k", 3, "--temperature", 2)[1]
    allowed = {}
    for t in range(VOCAB):
        row = logits_row(E, t)
        allowed[t] = set(sorted(range(VOCAB), key=lambda v: (-row[v], v))[:3])
    seq = list(p)
    check(all(seq[i + 1] in allowed[seq[i]] for i in range(2, len(seq) - 1)),
          "generate --top-k 3: every token among the 3 most likely")

    st, out0, err = run("generate", "-w", w, "--prompt", "ab", "--tokens", 0)
    check(st == 1, "a prompt outside the 16-token vocabulary: exit 1")
    one_error_line(err, "token 97 at position 0", "vocabulary", what="prompt outside the vocabulary")
    check(out0 == b"", "nothing printed when generation cannot start")

    keep = os.path.join(d, "keep_ids.npy")
    write(keep, b"precious")
    st, _, err = run("generate", "-w", os.path.join(d, "nope.safetensors"), "--prompt", prompt, "--ids-out", keep)
    check(st == 1 and read(keep) == b"precious", "generate with missing weights: exit 1, --ids-out untouched")
    one_error_line(err, "nope.safetensors", what="generate with missing weights")


def main():
    d = tempfile.mkdtemp(prefix="cli-test-", dir=os.getcwd())
    test_info()
    test_usage()
    w, E = test_init(d)
    test_untrainable(d)
    test_forward(d, w, E)
    test_forward_errors(d, w)
    test_generate(d, w, E)
    if failures:
        print(f"{len(failures)} check(s) failed; files kept in {d}")
        return 1
    shutil.rmtree(d)
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
