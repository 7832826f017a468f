#!/bin/sh
# Packs what the GPU machine needs, where attnc is: gpu_check.py's
# prepared bundle (GPU executables, CPU results) as one xz archive (the
# executables' PTX compresses about 30 times), the runtime's CUDA unit test
# and on-device.sh, into PACK_DIR.
#   pack.sh BUILD_DIR BUNDLE_DIR PACK_DIR
set -eu
build=$1 bundle=$2 pack=$3
mkdir -p "$pack"
tar -C "$(dirname "$bundle")" -cf - --exclude=work "$(basename "$bundle")" |
  xz -T0 -6 > "$pack/bundle.tar.xz"
cp "$build/bin/attn-runtime-cuda" "$(dirname "$0")/on-device.sh" "$pack/"
ls -l "$pack"
