"""Tag accuracy of a trained pos_tagger binary on held-out tagged text, next
to the most-frequent-tag baseline measured on the same split.

  check_pos_tagger.py --exe BIN -w W.safetensors --train TRAIN.tagged
                      --valid VALID.tagged --dir SCRATCH
                      [--min-accuracy 0.95] [--min-gain 0.03] [--seq 128]

The word and tag ids are rebuilt from the vocabulary the runtime stored in
the weights' metadata (`attn.vocab`, docs/Training.md): word i of "words" is
id i, a word not in it gets the id of its unknown-word class (`<unk:...>`,
computed as runtime/src/data.c's unknown_class does) if the vocabulary has
it, else 1 (`<unk>`); case kept; tag i of "tags" is class i,
0 being padding. Sentences are cut into pieces of at most --seq words, as
`train`/`eval` cut them (the model's learned positions stop at 128). The
pieces, sorted by length, go through the binary's `forward` in padded
batches (padding id 0, masked by the model as keys and never scored); the
prediction of a word is the argmax of its logits over all the model's tag
ids. Accuracy is over every validation word whose tag the vocabulary knows.

Cross-check of the id convention: the mean cross entropy of these logits
against the tags must equal the `eval` command's loss on the same file
(which builds its ids in the runtime) to 1e-3 relative: a different word
numbering would change the logits and the loss by far more.

The baseline: each word gets its most frequent tag in the training file
(ties: the tag first seen with that word), a word never seen in training
gets the most frequent tag overall.

Passes when accuracy >= --min-accuracy and accuracy - baseline >= --min-gain.
"""

import argparse
import collections
import json
import os
import struct
import subprocess
import sys

import numpy as np


def read_tagged(path):
    sentences, cur = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip(" \t"):
                if cur:
                    sentences.append(cur)
                cur = []
                continue
            word, tag = line.split("\t")
            cur.append((word, tag))
    if cur:
        sentences.append(cur)
    return sentences


SUFFIXES = ["ing", "ion", "ness", "ment", "able", "ible", "ive", "ous", "ful",
            "less", "ed", "ly", "er", "est", "al", "ic", "ity", "ism", "ist",
            "ize", "ise", "es", "s", "y"]


def unknown_class(word):
    """The runtime's class of a word its vocabulary lacks (data.c)."""
    digit = any("0" <= c <= "9" for c in word)
    shape = "9" if digit else "A" if "A" <= word[0] <= "Z" else "a"
    hyphen = "-" if "-" in word else ""
    folded = "".join(c.lower() if "A" <= c <= "Z" else c for c in word)
    suffix = next((s for s in SUFFIXES if not digit and len(word.encode()) > len(s)
                   and folded.endswith(s)), None)
    return f"<unk:{shape}{hyphen}{'~' + suffix if suffix else ''}>"


def lookup(word_id, word):
    if word in word_id:
        return word_id[word]
    return word_id.get(unknown_class(word), 1)


def metadata(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    return header.get("__metadata__", {})


def log_softmax(x):
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("-w", dest="weights", required=True)
    ap.add_argument("--train", required=True)
    ap.add_argument("--valid", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--min-accuracy", type=float, default=0.95)
    ap.add_argument("--min-gain", type=float, default=0.03)
    ap.add_argument("--threads", default="2")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)

    vocab = json.loads(metadata(args.weights)["attn.vocab"])
    assert vocab["format"] == "tagged", vocab["format"]
    word_id = {w: i for i, w in enumerate(vocab["words"])}
    tag_id = {t: i for i, t in enumerate(vocab["tags"])}
    tags = vocab["tags"]

    train = read_tagged(args.train)
    valid = read_tagged(args.valid)

    # Pieces of at most --seq words, as the runtime cuts sentences.
    pieces = []
    for s in valid:
        for i in range(0, len(s), args.seq):
            pieces.append(s[i:i + args.seq])
    order = sorted(range(len(pieces)), key=lambda i: len(pieces[i]))

    correct = scored = 0
    unk_correct = unk_scored = 0
    nll = 0.0
    unknown_words = sum(1 for p in pieces for w, _ in p if w not in word_id)
    for start in range(0, len(order), args.batch):
        batch = [pieces[i] for i in order[start:start + args.batch]]
        T = max(len(p) for p in batch)
        words = np.zeros((len(batch), T), dtype=np.int32)
        gold = np.zeros((len(batch), T), dtype=np.int64)
        oov = np.zeros((len(batch), T), dtype=bool)
        for r, p in enumerate(batch):
            for c, (w, t) in enumerate(p):
                words[r, c] = lookup(word_id, w)
                oov[r, c] = w not in word_id
                gold[r, c] = tag_id.get(t, 0)
        inp = os.path.join(args.dir, "words.npy")
        out = os.path.join(args.dir, "logits.npy")
        np.save(inp, words)
        subprocess.run([args.exe, "forward", "-w", args.weights, "--in", f"words={inp}",
                        "--threads", args.threads, "-o", out], check=True)
        logits = np.load(out).astype(np.float64)
        assert logits.shape[:2] == words.shape, (logits.shape, words.shape)
        pred = logits.argmax(axis=-1)
        mask = gold > 0  # padding and tags the vocabulary does not know
        correct += int(((pred == gold) & mask).sum())
        unk = mask & oov
        unk_correct += int(((pred == gold) & unk).sum())
        unk_scored += int(unk.sum())
        scored += int(mask.sum())
        lp = log_softmax(logits)
        nll -= float(np.take_along_axis(lp, gold[..., None], axis=-1)[..., 0][mask].sum())
    accuracy = correct / scored
    my_loss = nll / scored

    ev = subprocess.run([args.exe, "eval", "-w", args.weights, "--data", args.valid, "--seq",
                         str(args.seq), "--threads", args.threads], check=True, capture_output=True, text=True)
    eval_loss = float(ev.stdout.split("loss:")[1].split()[0])

    # The most-frequent-tag baseline on the same words.
    counts = collections.defaultdict(collections.Counter)
    overall = collections.Counter()
    for s in train:
        for w, t in s:
            counts[w][t] += 1
            overall[t] += 1
    top = overall.most_common(1)[0][0]
    best = {w: c.most_common(1)[0][0] for w, c in counts.items()}
    base_ok = base_n = 0
    for s in valid:
        for w, t in s:
            if t not in tag_id:
                continue
            base_n += 1
            base_ok += best.get(w, top) == t
    baseline = base_ok / base_n

    print(f"validation: {len(valid)} sentences, {scored} words scored, "
          f"{unknown_words} ({unknown_words / scored:.2%}) outside the model's {len(word_id)}-word vocabulary")
    print(f"eval loss: {eval_loss:.6f} (runtime), {my_loss:.6f} (from forward's logits)")
    print(f"tag accuracy: {accuracy:.4%} ({correct}/{scored}); on words in the vocabulary "
          f"{(correct - unk_correct) / max(1, scored - unk_scored):.4%}, on words outside it {unk_correct / max(1, unk_scored):.4%}")
    print(f"most-frequent-tag baseline: {baseline:.4%} ({base_ok}/{base_n}, unknown words -> {top})")
    print(f"gain over the baseline: {100 * (accuracy - baseline):.2f} points")
    failures = []
    if base_n != scored:
        failures.append(f"the baseline scored {base_n} words, the model {scored}")
    if abs(my_loss - eval_loss) > 1e-3 * max(1.0, abs(eval_loss)):
        failures.append(f"the loss of forward's logits {my_loss} differs from eval's {eval_loss}: "
                        "the word ids here are not the runtime's")
    if accuracy < args.min_accuracy:
        failures.append(f"accuracy {accuracy:.4%} < {args.min_accuracy:.2%}")
    if accuracy - baseline < args.min_gain:
        failures.append(f"gain {100 * (accuracy - baseline):.2f} points < {100 * args.min_gain:.1f}")
    for f in failures:
        print("FAIL:", f)
    if failures:
        sys.exit(1)
    print("ok: pos_tagger")


if __name__ == "__main__":
    main()
