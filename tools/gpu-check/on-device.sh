#!/bin/sh
# Runs on the GPU machine: unpacks a bundle made by pack.sh, runs the
# runtime's CUDA unit test and gpu_check.py over the bundle's models, then
# bench_gpu.py if the pack has it, then the pack's extra.sh if there is one. Logs go to $OUT (or the directory
# given as the second argument).
#   on-device.sh PACK_DIR [OUT_DIR] [gpu_check.py run options...]
set -u
pack=$1
out=${2:-${OUT:-/tmp/gpu-out}}
shift 2 2>/dev/null || shift $#
mkdir -p "$out" /tmp/gpu-unit
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm \
  --format=csv 2>&1 | tee "$out/gpu.txt"
# A bundle unpacked before (another pack's) would add its models to this run.
rm -rf /tmp/gpu-bundle /tmp/gpu-bench
python3 -c "import tarfile,sys; tarfile.open(sys.argv[1]).extractall('/tmp')" \
  "$pack/bundle.tar.xz" || exit 1
(cd /tmp/gpu-unit && "$pack/attn-runtime-cuda") > "$out/unit.txt" 2>&1
echo "runtime-cuda unit test: exit $? (77: skipped)" | tee -a "$out/unit.txt"
PYTHONUNBUFFERED=1 python3 /tmp/gpu-bundle/gpu_check.py run --dir /tmp/gpu-bundle \
  --log-dir "$out" "$@" 2>&1 | tee "$out/check.txt"
# make bench-gpu's measurements, when the pack has them (pack.sh BENCH_DIR).
if [ -f "$pack/bench.tar.xz" ]; then
  python3 -c "import tarfile,sys; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" \
    "$pack/bench.tar.xz" /tmp/gpu-bench &&
    PYTHONUNBUFFERED=1 python3 /tmp/gpu-bench/*/bench_gpu.py run \
      --dir "$(dirname /tmp/gpu-bench/*/bench_gpu.py)" --out "$out" 2>&1 |
    tee "$out/bench.txt"
fi
# Diagnostics of the moment (timings, sanitizer runs) travel as the
# pack's extra.sh, run last with the same variables.
if [ -f "$pack/extra.sh" ]; then
  . "$pack/extra.sh"
fi
