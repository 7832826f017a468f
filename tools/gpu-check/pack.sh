#!/bin/sh
# Packs what the GPU machine needs, where attnc is: gpu_check.py's
# prepared bundle (GPU executables, CPU results) as one xz archive (the
# executables' PTX compresses about 30 times), the runtime's CUDA unit test
# and on-device.sh, into PACK_DIR, with amx_check.sh's AMX models (the
# machine's CPU may have AMX); with BENCH_DIR (bench_gpu.py prepare's
# output), that too, which on-device.sh then runs after the checks.
#   pack.sh BUILD_DIR BUNDLE_DIR PACK_DIR [BENCH_DIR]
set -eu
build=$1 bundle=$2 pack=$3 bench=${4:-}
mkdir -p "$pack"
tar -C "$(dirname "$bundle")" -cf - --exclude=work "$(basename "$bundle")" |
  xz -T0 -6 > "$pack/bundle.tar.xz"
if [ -n "$bench" ]; then
  tar -C "$(dirname "$bench")" -cf - --exclude='*.safetensors' "$(basename "$bench")" |
    xz -T0 -6 > "$pack/bench.tar.xz"
fi
cp "$build/bin/attn-runtime-cuda" "$(dirname "$0")/on-device.sh" "$pack/"
sh "$(dirname "$0")/amx_check.sh" prepare "$build" "$pack/amx"
ls -l "$pack"
