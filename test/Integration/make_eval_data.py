"""Writes small training and held-out files for eval-data-formats.test:
tagged sentences (word<TAB>tag, a blank line after each; the held-out file
ends with a word the training data lacks) and input<TAB>label pairs.

  make_eval_data.py DIR
"""

import os
import random
import sys

WORDS = {"NOUN": ["dog", "cat", "earth"], "VERB": ["runs", "saw"],
         "DET": ["the", "a"], "ADJ": ["big", "small"]}
LABELS = {"pos": ["good", "great", "fine"], "neg": ["bad", "awful", "poor"]}


def sentence(rng):
    tags = ["DET", "ADJ", "NOUN", "VERB", "DET", "NOUN"]
    return "".join(f"{rng.choice(WORDS[t])}\t{t}\n" for t in tags) + "\n"


def pair(rng, label):
    return " ".join(rng.choice(LABELS[label]) for _ in range(4)) + f"\t{label}\n"


def main():
    out = sys.argv[1]
    rng = random.Random(1)
    write = lambda name, text: open(os.path.join(out, name), "w").write(text)
    write("train.tagged", "".join(sentence(rng) for _ in range(60)))
    write("valid.tagged", "".join(sentence(rng) for _ in range(10)) + "unseenword\tNOUN\n\n")
    labels = ["pos", "neg"]
    write("train.tsv", "".join(pair(rng, labels[i % 2]) for i in range(40)))
    write("valid.tsv", "".join(pair(rng, labels[i % 2]) for i in range(8)))


if __name__ == "__main__":
    main()
