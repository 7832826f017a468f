#!/usr/bin/env python3
# ===- gpt2_bpe.py - An independent GPT-2 encoder, for the tokenizer's tests -===#
#
# The reference the C tokenizer (runtime/src/bpe.c) is checked against: GPT-2's
# encoder as OpenAI's encoder.py defines it, on the same encoder.json and
# vocab.bpe, with the pre-tokenizer pattern given to Python's `regex` module
# (Debian's python3-regex) rather than matched by hand, and merges applied
# as encoder.py applies them: the lowest-ranked adjacent pair, every
# occurrence left to right, until no pair has a rank.
#
# usage: gpt2_bpe.py --tokenizer DIR (--text TEXT | --file FILE)
#        prints the ids, space-separated, on one line
#
# ===-----------------------------------------------------------------------===#

import argparse
import json
import os

import regex

PATTERN = regex.compile(
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")


def byte_alphabet():
    """bytes_to_unicode: byte -> the printable character that spells it."""
    keep = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
            + list(range(ord("®"), ord("ÿ") + 1)))
    chars, extra = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars


class Encoder:
    def __init__(self, directory):
        with open(os.path.join(directory, "encoder.json"), encoding="utf-8") as f:
            self.ids = json.load(f)
        with open(os.path.join(directory, "vocab.bpe"), encoding="utf-8") as f:
            lines = f.read().split("\n")[1:-1]
        self.ranks = {tuple(line.split(" ")): r for r, line in enumerate(lines)}
        self.alphabet = byte_alphabet()
        self.cache = {}

    def merge(self, word):
        """The tokens of one piece (a string of the byte alphabet)."""
        parts = list(word)
        while len(parts) > 1:
            pairs = {(a, b) for a, b in zip(parts, parts[1:])}
            best = min(pairs, key=lambda p: self.ranks.get(p, float("inf")))
            if best not in self.ranks:
                break
            merged, i = [], 0
            while i < len(parts):
                if i + 1 < len(parts) and (parts[i], parts[i + 1]) == best:
                    merged.append(parts[i] + parts[i + 1])
                    i += 2
                else:
                    merged.append(parts[i])
                    i += 1
            parts = merged
        return parts

    def encode(self, text):
        out = []
        for piece in PATTERN.findall(text):
            word = "".join(self.alphabet[b] for b in piece.encode("utf-8"))
            if word not in self.cache:
                self.cache[word] = [self.ids[t] for t in self.merge(word)]
            out.extend(self.cache[word])
        return out


def main():
    ap = argparse.ArgumentParser(description="GPT-2's encoder, for reference.")
    ap.add_argument("--tokenizer", required=True)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--text")
    src.add_argument("--file")
    args = ap.parse_args()
    if args.file:
        with open(args.file, encoding="utf-8", newline="") as f:
            text = f.read()
    else:
        text = args.text
    print(" ".join(str(i) for i in Encoder(args.tokenizer).encode(text)))


if __name__ == "__main__":
    main()
