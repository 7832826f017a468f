#!/bin/sh
# `make demo`: compiles models/char_gpt.tfm to a standalone executable,
# trains it on the shipped King James text with the held-out loss beside
# the training loss, generates from it, and shows what one of its attention
# heads looks at. Each part says what it shows; every file goes to DIR.
#
#   scripts/demo.sh BUILD STEPS
set -e

build=$1
steps=$2
dir=$build/demo
exe=$dir/char_gpt
mkdir -p "$dir"

part() {
  printf '\n== %s\n' "$1"
  shift
  for line in "$@"; do
    printf '   %s\n' "$line"
  done
  echo
}

part "1. Compile models/char_gpt.tfm into the executable $exe" \
  "A byte-level GPT: 4 layers of 6-head causal self-attention, d = 192." \
  "info lists its entry points (forward, the derived prefill, decode_step," \
  "attention_weights and the training ones) and its parameters."
"$build/bin/attnc" build models/char_gpt.tfm -o "$exe"
"$exe" info

part "2. Initial weights, drawn from the model's initialisers (seed 1)" \
  "Untrained, every byte is about equally likely: the first loss is near" \
  "ln 256 = 5.55."
"$exe" init --seed 1 -o "$dir/init.safetensors"

part "3. Train for $steps steps on data/kjv-train.txt (Genesis and Exodus)" \
  "Each step: 8 windows of 128 bytes, AdamW, the learning rate warming up" \
  "to 0.003 over 30 steps and then falling to 0 along a cosine. The" \
  "held-out loss is that of data/kjv-valid.txt (Ruth), which training" \
  "never sees. The loss curve goes to $dir/trained.csv and is drawn in" \
  "$dir/trained.svg (open it in a browser)."
"$exe" train -w "$dir/init.safetensors" --data data/kjv-train.txt \
  --eval-data data/kjv-valid.txt --steps "$steps" --batch 8 --seq 128 \
  --lr 3e-3 --warmup 30 --schedule-steps "$steps" --save-every 200 --seed 1 \
  -o "$dir/trained.safetensors"
first=$(sed -n '2s/^1,\([^,]*\),.*/\1/p' "$dir/trained.csv")
echo "The first step's loss was $first (ln 256 = 5.55: a uniform guess)."

part "4. The trained model on the held-out text" \
  "Mean loss per byte, its exponential (perplexity) and how often the most" \
  "likely next byte is the right one."
"$exe" eval -w "$dir/trained.safetensors" --data data/kjv-valid.txt --seq 128

part "5. Text it generates from the prompt \"And God said\"" \
  "100 bytes sampled one at a time (temperature 0.5, from the most likely" \
  "bytes that make up 90% of the probability), with the key/value cache."
"$exe" generate -w "$dir/trained.safetensors" --prompt "And God said" \
  --tokens 100 --temperature 0.5 --top-p 0.9 --seed 1
echo

part "6. What head 4 of layer 0 looks at in \"And God said\"" \
  "A row per byte (the query, ␣ a space) with its weights over the bytes" \
  "up to it (the keys: attention is causal, so the weights after the" \
  "diagonal are 0); each row sums to 1. Weight just left of the diagonal" \
  "is attention to the previous byte. The same weights as a heat map:" \
  "$dir/attention.svg."
"$exe" attention -w "$dir/trained.safetensors" --prompt "And God said" \
  --layer 0 --head 4 -o "$dir/attention.svg"

part "Files in $dir" \
  "char_gpt                   the executable ('$exe --help')" \
  "trained.safetensors        the trained weights" \
  "trained.ckpt.safetensors   the checkpoint (--resume continues it)" \
  "trained.csv, trained.svg   the loss curve: data and plot" \
  "attention.svg              the attention heat map"
