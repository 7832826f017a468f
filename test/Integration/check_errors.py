"""Bad input to executables built by attnc, beyond what test/Runtime's fake
model covers: weight files of other (real) models, inputs that do not fit
the compiled entry points' argument tables, and inputs outside what the
model allows (ids beyond the vocabulary, sequences beyond the learned
positions).

  check_errors.py GROUP --dir D --char-gpt EXE --char-gpt-w W
                  [--gpt2-params P] [--lm-params P]
                  [--vaswani EXE --vaswani-w W]
                  [--pos-tagger EXE --pos-tagger-w W]

--gpt2-params and --lm-params are the parameter tables (`attnc emit
--stage params`) of the reduced gpt2_small and one_layer_lm: their weight
files are written here from the tables (every name and shape, random
values, with the model's name in __metadata__ as `init` writes it), so
that the test needs no build of those models.

GROUP `inputs`: weight files and argument tables; GROUP `limits`: ids and
sequence lengths the model cannot read (TOOLS.md: "a sequence longer than
the model allows" is an error naming the file and the tensor).

Every case must exit with status 1, print exactly one line `error: ...` on
standard error containing the expected fragments, leave an existing -o /
--ids-out file untouched and no temporary file behind. Prints one line per
case; exits 1 if any failed.
"""

import argparse
import json
import os
import struct
import subprocess
import sys

import numpy as np

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


def read(path):
    with open(path, "rb") as f:
        return f.read()


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def drop_tensor(src, name, dst):
    """Copies a safetensors file without tensor `name` (data offsets kept
    contiguous)."""
    data = read(src)
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out_header, out_data, offset = {}, b"", 0
    for key, t in header.items():
        if key == "__metadata__":
            out_header[key] = t
            continue
        if key == name:
            continue
        b, e = t["data_offsets"]
        raw = data[base + b:base + e]
        out_header[key] = dict(t, data_offsets=[offset, offset + len(raw)])
        out_data += raw
        offset += len(raw)
    h = json.dumps(out_header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    write(dst, struct.pack("<Q", len(h)) + h + out_data)


def weights_from_params(params_path, model, out):
    """Writes a safetensors file holding every parameter listed in an
    `attnc emit --stage params` table (lines `NAME  [D0, D1]  INIT`)."""
    rng = np.random.default_rng(0)
    header, data, offset = {}, b"", 0
    with open(params_path) as f:
        for line in f:
            fields = line.split(None, 1)
            if len(fields) != 2 or "[" not in fields[1]:
                continue
            name = fields[0]
            dims = fields[1][fields[1].index("[") + 1:fields[1].index("]")]
            shape = [int(d) for d in dims.split(",") if d.strip()]
            raw = rng.standard_normal(shape).astype("<f4").tobytes()
            header[name] = {"dtype": "F32", "shape": shape,
                            "data_offsets": [offset, offset + len(raw)]}
            data += raw
            offset += len(raw)
    if not header:
        raise SystemExit(f"{params_path}: no parameter lines")
    header["__metadata__"] = {"format": "pt", "model": model}
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    write(out, struct.pack("<Q", len(h)) + h + data)


class Runner:
    def __init__(self, d):
        self.d = d
        self.keep = os.path.join(d, "keep.npy")
        write(self.keep, b"precious")

    def path(self, name):
        return os.path.join(self.d, name)

    def npy(self, name, array):
        p = self.path(name)
        np.save(p, array)
        return p

    def bad(self, what, argv, *needles, keep=None):
        keep = keep or self.keep
        write(keep, b"precious")
        before = set(os.listdir(os.path.dirname(keep)))
        p = subprocess.run(argv, capture_output=True)
        err = p.stderr.decode("utf-8", "replace")
        lines = err.splitlines()
        ok = check(p.returncode == 1,
                   f"{what}: exit status {p.returncode}, expected 1 "
                   f"(stderr {err.strip()!r})")
        ok &= check(len(lines) == 1 and lines[0].startswith("error: ")
                    and all(n in lines[0] for n in needles),
                    f"{what}: stderr {err!r} should be one line 'error: ...' "
                    f"containing {list(needles)}")
        ok &= check(read(keep) == b"precious", f"{what}: {keep} was overwritten")
        left = [n for n in set(os.listdir(os.path.dirname(keep))) - before
                if ".tmp." in n]
        ok &= check(not left, f"{what}: temporary files left behind: {left}")
        if ok:
            print(f"ok: {what}: {lines[0]}")


def group_inputs(r, a):
    exe, w = a.char_gpt, a.char_gpt_w
    tok = r.npy("tokens.npy", np.array([[1, 2, 3], [4, 5, 6]], np.int32))

    def fwd(weights, tokens, *extra):
        return [exe, "forward", "-w", weights, "--in", f"tokens={tokens}",
                *extra, "-o", r.keep]

    # Weight files of other models.
    if a.gpt2_w:
        r.bad("gpt2_small weights into char_gpt (same names, other shapes)",
              fwd(a.gpt2_w, tok), os.path.basename(a.gpt2_w), "'wte.weight'",
              "[512, 64]", "expected [256, 32]")
    if a.lm_w:
        r.bad("one_layer_lm weights into char_gpt (other names)",
              fwd(a.lm_w, tok), os.path.basename(a.lm_w), "'E'",
              "not a parameter of model 'char_gpt'")
    if a.vaswani_w:
        r.bad("vaswani_base weights into char_gpt",
              fwd(a.vaswani_w, tok), os.path.basename(a.vaswani_w),
              "tensor '", "char_gpt")
        r.bad("char_gpt weights into vaswani_base",
              [a.vaswani, "forward", "-w", w, "--fn", "encode", "--in",
               f"src={tok}", "-o", r.keep], os.path.basename(w), "tensor '",
              "vaswani_base")
    missing = r.path("missing_ln_f_bias.safetensors")
    drop_tensor(w, "ln_f.bias", missing)
    r.bad("char_gpt weights without ln_f.bias", fwd(missing, tok),
          "missing_ln_f_bias.safetensors", "'ln_f.bias'", "missing")
    r.bad("generate with another model's weights",
          [exe, "generate", "-w", a.gpt2_w or missing, "--prompt", "ab",
           "--tokens", "2", "--ids-out", r.keep],
          os.path.basename(a.gpt2_w or missing))

    # Inputs that do not match the compiled argument table.
    r.bad("f32 tokens", fwd(w, r.npy("f32_tokens.npy",
                                     np.array([[1.0, 2.0]], np.float32))),
          "f32_tokens.npy", "argument 'tokens'", "dtype f32", "i32[B, T]")
    r.bad("bool tokens", fwd(w, r.npy("bool_tokens.npy",
                                      np.array([[True, False]]))),
          "bool_tokens.npy", "argument 'tokens'", "dtype bool")
    r.bad("rank-3 tokens", fwd(w, r.npy("rank3.npy",
                                        np.zeros((1, 2, 3), np.int32))),
          "rank3.npy", "argument 'tokens'", "rank 3")
    r.bad("f64 tokens (unsupported .npy dtype)",
          fwd(w, r.npy("f64.npy", np.zeros((1, 2), np.float64))), "f64.npy")
    r.bad("loss with targets of another shape",
          [exe, "forward", "-w", w, "--fn", "loss", "--in", f"tokens={tok}",
           "--in", "targets=" + r.npy("targets.npy",
                                      np.zeros((2, 4), np.int32)),
           "-o", r.keep], "targets.npy", "argument 'targets'", "T = 4",
          "argument 'tokens' has T = 3")
    r.bad("loss without targets",
          [exe, "forward", "-w", w, "--fn", "loss", "--in", f"tokens={tok}",
           "-o", r.keep], "missing --in targets=FILE.npy")
    r.bad("an entry point the model does not have",
          [exe, "forward", "-w", w, "--fn", "encode", "--in", f"tokens={tok}",
           "-o", r.keep], "no entry point 'encode'", "forward, loss")

    if a.vaswani:
        vw = a.vaswani_w
        tgt = r.npy("tgt.npy", np.ones((1, 3), np.int32))
        src = r.npy("src.npy", np.ones((1, 4), np.int32))

        def decode(memory, source=src, target=tgt):
            return [a.vaswani, "forward", "-w", vw, "--fn", "decode", "--in",
                    f"tgt={target}", "--in", f"memory={memory}", "--in",
                    f"src={source}", "-o", r.keep]

        r.bad("decode: memory with a wrong static dim",
              decode(r.npy("mem33.npy", np.zeros((1, 4, 33), np.float32))),
              "mem33.npy", "argument 'memory'", "[1, 4, 33]", "32")
        r.bad("decode: i32 memory",
              decode(r.npy("mem_i32.npy", np.zeros((1, 4, 32), np.int32))),
              "mem_i32.npy", "argument 'memory'", "dtype i32")
        good_mem = r.npy("mem.npy", np.zeros((1, 4, 32), np.float32))
        r.bad("decode: S differs between memory and src",
              decode(good_mem, source=r.npy("src5.npy",
                                            np.ones((1, 5), np.int32))),
              "src5.npy", "S = 5", "S = 4")
        r.bad("decode: B differs between tgt and memory",
              decode(good_mem, target=r.npy("tgt2.npy",
                                            np.ones((2, 3), np.int32))),
              "B = 2", "B = 1")
        r.bad("generate on an encoder-decoder: a source byte beyond its "
              "vocabulary",
              [a.vaswani, "generate", "-w", vw, "--prompt", "z", "--ids-out",
               r.keep], "source vocabulary", "122")


def group_limits(r, a):
    exe, w = a.char_gpt, a.char_gpt_w
    # char_gpt: 256 learned positions (wpe), 256 token ids (wte).
    r.bad("char_gpt: a sequence longer than its 256 positions",
          [exe, "forward", "-w", w, "--in",
           "tokens=" + r.npy("long.npy", np.ones((1, 257), np.int32)),
           "-o", r.keep], "long.npy", "'tokens'", "257")
    r.bad("char_gpt: a token id beyond the vocabulary",
          [exe, "forward", "-w", w, "--in",
           "tokens=" + r.npy("big_id.npy", np.array([[1, 256]], np.int32)),
           "-o", r.keep], "big_id.npy", "'tokens'", "256")
    r.bad("char_gpt: a negative token id",
          [exe, "forward", "-w", w, "--in",
           "tokens=" + r.npy("neg_id.npy", np.array([[1, -1]], np.int32)),
           "-o", r.keep], "neg_id.npy", "'tokens'", "-1")
    r.bad("char_gpt: generate past the 256 positions without --context",
          [exe, "generate", "-w", w, "--prompt", "a" * 250, "--tokens", "10",
           "--temperature", "0", "--ids-out", r.keep], "256")
    if a.pos_tagger:
        r.bad("pos_tagger: 129 words for its 128 positions",
              [a.pos_tagger, "forward", "-w", a.pos_tagger_w, "--in",
               "words=" + r.npy("words129.npy", np.ones((2, 129), np.int32)),
               "-o", r.keep], "words129.npy", "'words'", "129")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("group", choices=["inputs", "limits"])
    parser.add_argument("--dir", required=True)
    parser.add_argument("--char-gpt", required=True)
    parser.add_argument("--char-gpt-w", required=True)
    parser.add_argument("--gpt2-params")
    parser.add_argument("--lm-params")
    parser.add_argument("--vaswani")
    parser.add_argument("--vaswani-w")
    parser.add_argument("--pos-tagger")
    parser.add_argument("--pos-tagger-w")
    a = parser.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    r = Runner(a.dir)
    a.gpt2_w = a.lm_w = None
    if a.gpt2_params:
        a.gpt2_w = r.path("gpt2_small.safetensors")
        weights_from_params(a.gpt2_params, "gpt2_small", a.gpt2_w)
    if a.lm_params:
        a.lm_w = r.path("one_layer_lm.safetensors")
        weights_from_params(a.lm_params, "one_layer_lm", a.lm_w)
    {"inputs": group_inputs, "limits": group_limits}[a.group](r, a)
    if failures:
        print(f"{len(failures)} check(s) failed; files kept in {a.dir}")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
