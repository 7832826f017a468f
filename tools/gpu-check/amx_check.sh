#!/bin/sh
# --precision bf16's products on AMX tiles (docs/Codegen.md, On AMX tiles)
# checked on another machine's CPU: the GPU machine's, when it has
# AMX-BF16, since the hosts attnc is built on have had none.
#   amx_check.sh prepare BUILD_DIR OUT_DIR   (where attnc is)
#   amx_check.sh run DIR                     (on the machine to check)
# prepare builds the models of test/Integration/precision's amx-tiles.test
# for sapphirerapids, with their numpy checks; run prints the CPU, then the
# checks' lines, or one SKIP line with the reason.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
case "${1:-}" in
prepare)
  set -e
  build=$2 out=$3 tests=$root/test/Integration
  mkdir -p "$out/precision"
  "$build/bin/attnc" build "$tests/precision/Inputs/bf16_products.tfm" \
    --target sapphirerapids --precision bf16 -o "$out/bf16_products"
  "$build/bin/attnc" build "$tests/precision/Inputs/int8_rows.tfm" \
    --target sapphirerapids --weights int8 --precision bf16 -o "$out/int8_rows"
  cp "$tests/precision/check_bf16_products.py" \
    "$tests/precision/check_int8_rows.py" "$out/precision/"
  cp "$tests/check_low_precision.py" "$tests/safetensors_io.py" "$out/"
  cp "$0" "$out/amx_check.sh"
  ;;
run)
  dir=$(cd "$2" && pwd) work=$(mktemp -d)
  grep -m1 "model name" /proc/cpuinfo
  if ! grep -m1 '^flags' /proc/cpuinfo | grep -qw amx_bf16; then
    echo "SKIP: AMX: this CPU has no AMX-BF16"
    exit 0
  fi
  "$dir/bf16_products" info | grep precision
  for shape in 2x21 2x9; do
    python3 "$dir/precision/check_bf16_products.py" --exe "$dir/bf16_products" \
      --dir "$work/$shape" --shape "$shape" ||
      echo "FAIL: AMX: bf16 products, shape $shape"
  done
  python3 "$dir/precision/check_int8_rows.py" --exe "$dir/int8_rows" \
    --dir "$work/int8" --bf16-products ||
    echo "FAIL: AMX: int8 weights with bf16 products"
  ;;
*)
  echo "usage: amx_check.sh prepare BUILD_DIR OUT_DIR | run DIR" >&2
  exit 2
  ;;
esac
