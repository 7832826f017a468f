#!/bin/bash
# The GPU machine's work in one call, for a lease too short for more than
# one or two: the runtime's CUDA unit test; the f32 checks of every model,
# the tf32 checks and char_gpt's 1,000-step held-out run side by side (none
# of them is timed, and their small kernels leave the GPU mostly idle);
# then make bench-gpu with the GPU to itself, ptxas's registers and spills
# of its attention and product kernels, and the kernel profiles of
# gpt2_small's tf32 train step and generation; and, where the machine's
# CPU has AMX-BF16, amx_check.sh's checks. Each part has its own time
# limit, so the call ends inside the device's per-call limit with what
# finished. Two files come back: summary.txt (also printed: the GPU, the
# unit test's verdict and every table) and logs.tar.xz (every log).
#   session.sh F32_PACK TF32_PACK OUT_DIR
# The packs are pack.sh's; the benchmark travels in TF32_PACK (pack.sh's
# BENCH_DIR). CHECK_LIMIT, BENCH_LIMIT and PROFILE_LIMIT (seconds) bound
# the checks, the benchmark and each profile; BENCH_ARGS is passed to
# bench_gpu.py run and TF32_ARGS to the tf32 checks' gpu_check.py run (e.g.
# --sanitize char_gpt).
set -u
f32=$(realpath "$1") tf32=$(realpath "$2") out=$3
CHECK_LIMIT=${CHECK_LIMIT:-210} BENCH_LIMIT=${BENCH_LIMIT:-240}
PROFILE_LIMIT=${PROFILE_LIMIT:-60}
BENCH_ARGS=${BENCH_ARGS:-} TF32_ARGS=${TF32_ARGS:-}
export PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
# gpt2_small's PTX is JIT-compiled by the driver once, then read from its
# cache by each later process: the default cache is too small for it.
export CUDA_CACHE_MAXSIZE=4294967296
run=/tmp/gpu-session logs=/tmp/gpu-session/logs
rm -rf "$run" && mkdir -p "$logs"/{f32,tf32,held-out,bench} "$out"

unpack() {
  mkdir -p "$2" &&
    python3 -c "import tarfile,sys; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$1" "$2"
}
unpack "$f32/bundle.tar.xz" "$run/f32" || exit 1
unpack "$tf32/bundle.tar.xz" "$run/tf32" || exit 1

check() {  # bundle, log folder, gpu_check.py run options...
  local bundle=$run/$1/gpu-bundle log=$logs/$2
  shift 2
  timeout "$CHECK_LIMIT" python3 "$bundle/gpu_check.py" run --dir "$bundle" \
    --log-dir "$log" "$@" > "$log/check.txt" 2>&1
  echo "[exit $?]" >> "$log/check.txt"
}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm \
  --format=csv > "$logs/gpu.txt" 2>&1
(mkdir -p "$run/unit" && cd "$run/unit" && "$f32/attn-runtime-cuda") > "$logs/unit.txt" 2>&1
echo "runtime-cuda unit test: exit $? (77: skipped)" >> "$logs/unit.txt"

check f32 f32 &
check tf32 tf32 $TF32_ARGS &
check f32 held-out --models char_gpt --held-out --work "$run/held-out" &
if [ -d "$f32/amx" ]; then
  timeout 120 sh "$f32/amx/amx_check.sh" run "$f32/amx" > "$logs/amx.txt" 2>&1 &
fi
wait

if [ -f "$tf32/bench.tar.xz" ]; then
  unpack "$tf32/bench.tar.xz" "$run/bench" &&
    timeout "$BENCH_LIMIT" python3 "$run"/bench/*/bench_gpu.py run \
      --dir "$(dirname "$run"/bench/*/bench_gpu.py)" --out "$logs/bench" $BENCH_ARGS \
      > "$logs/bench/bench.txt" 2>&1
  echo "[exit $?]" >> "$logs/bench/bench.txt"
  bench=$(dirname "$run"/bench/*/bench_gpu.py)
  # Registers and spills of the attention and product kernels (ptxas -v).
  timeout 60 python3 "$bench/ptx_registers.py" "$bench"/ptx/*.ptx \
    > "$logs/bench/registers.txt" 2>&1
  # Where gpt2_small's tf32 train step spends its time: one warm-up and one
  # timed step with every launch waited for (ATTN_CUDA_PROFILE).
  if [ -f "$bench/gpt2_small.safetensors" ]; then
    echo "train 8 1024 1" | ATTN_CUDA_PROFILE=1 timeout "$PROFILE_LIMIT" \
      "$bench/gpt2_small_tf32" serve "$bench/gpt2_small.safetensors" 1 \
      > "$logs/bench/profile.txt" 2>&1
    # ... and its decoding: a 64-token prompt, then 63 steps.
    echo "generate 64 64" | ATTN_CUDA_PROFILE=1 timeout "$PROFILE_LIMIT" \
      "$bench/gpt2_small_tf32" serve "$bench/gpt2_small.safetensors" 1 \
      > "$logs/bench/profile-decode.txt" 2>&1
  fi
fi

{
  cat "$logs/gpu.txt"
  tail -n 1 "$logs/unit.txt"
  for part in f32 tf32 held-out; do
    echo "== $part checks"
    grep -E '^(ok|FAIL|WARN|SKIP):' "$logs/$part/check.txt"
    tail -n 1 "$logs/$part/check.txt"
  done
  echo "== AMX (the machine's CPU)"
  grep -E '^(model name|precision|ok:|FAIL|SKIP)' "$logs/amx.txt" 2>/dev/null
  echo "== bench-gpu"
  grep -v '^|' "$logs/bench/bench.txt" 2>/dev/null | tail -n 5
  grep '^|' "$logs/bench/bench.txt" 2>/dev/null | awk '!seen[$0]++'
  echo "== registers and spills (ptxas -v), the 30 most spilled kernels"
  head -n 32 "$logs/bench/registers.txt" 2>/dev/null
  echo "== gpt2_small tf32 train step, kernel profile"
  head -n 46 "$logs/bench/profile.txt" 2>/dev/null
  echo "== gpt2_small tf32 generation (64 + 63 tokens), kernel profile"
  head -n 25 "$logs/bench/profile-decode.txt" 2>/dev/null
} > "$out/summary.txt"
tar -C "$run" -cf - logs | xz -T0 -6 > "$out/logs.tar.xz"
cat "$out/summary.txt"
