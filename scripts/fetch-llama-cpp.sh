#!/usr/bin/env bash
# ===- fetch-llama-cpp.sh - llama.cpp's CPU build, for the baseline bench -===#
#
# Builds llama-bench and llama-quantize (and llama-completion) from
# llama.cpp's source, for tools/bench/llama_cpp.py. The project fetches
# only Debian packages and npm packages; the npm package node-llama-cpp
# carries the llama.cpp release it was built with as a git bundle
# (llama/gitRelease.bundle, tag in llama/llama.cpp.info.json), so the
# source comes from `npm pack` of a pinned version of it.
# Running it again skips what is done: the clone when OUT/src is at the tag,
# the configure when OUT/build has build.ninja; ninja rebuilds what changed.
#
# usage: scripts/fetch-llama-cpp.sh [OUT]
#        default OUT: build/bench/llama.cpp (in the repository); writes
#        OUT/src (the clone), OUT/build/bin/llama-{bench,quantize,completion},
#        OUT/build.log and OUT/ccache (unless CCACHE_DIR is set)
#
# ===-----------------------------------------------------------------------===#
set -euo pipefail

PACKAGE=node-llama-cpp@3.22.1
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/build/bench/llama.cpp}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SRC=$OUT/src
BUILD=$OUT/build

die() { echo "fetch-llama-cpp: error: $*" >&2; exit 1; }

# The tag the clone was made at, recorded once it is complete, so that an
# interrupted clone is redone rather than trusted.
if [[ -f $OUT/tag && -d $SRC/.git ]] &&
   git -C "$SRC" rev-parse -q --verify "refs/tags/$(cat "$OUT/tag")" >/dev/null; then
  TAG=$(cat "$OUT/tag")
  echo "fetch-llama-cpp: $SRC is already at $TAG"
else
  command -v npm >/dev/null || die "npm is not installed (apt-get install npm)"
  TMP=$(mktemp -d)
  trap 'rm -rf "$TMP"' EXIT
  echo "fetch-llama-cpp: npm pack $PACKAGE"
  TGZ=$(cd "$TMP" && npm pack --loglevel=error "$PACKAGE" 2>"$TMP/npm.log" | tail -n1) ||
    die "npm pack $PACKAGE failed ($(grep -m1 -o 'code .*' "$TMP/npm.log"); is the npm registry reachable?)"
  tar -xzf "$TMP/$TGZ" -C "$TMP" package/llama/gitRelease.bundle \
      package/llama/llama.cpp.info.json 2>/dev/null ||
    die "$PACKAGE has no llama/gitRelease.bundle or llama/llama.cpp.info.json"
  TAG=$(node -p 'require(process.argv[1]).tag' "$TMP/package/llama/llama.cpp.info.json")
  BUNDLE=$TMP/package/llama/gitRelease.bundle
  git bundle list-heads "$BUNDLE" >/dev/null 2>&1 || die "$BUNDLE is not a git bundle"

  rm -rf "$SRC" "$OUT/tag"
  git clone -q --no-checkout "$BUNDLE" "$SRC"
  # The bundle holds the release as a single squashed commit at HEAD and no
  # tag refs; name that commit after the release so the checkout is by tag.
  if ! git -C "$SRC" rev-parse -q --verify "refs/tags/$TAG" >/dev/null; then
    git -C "$SRC" tag "$TAG" HEAD
  fi
  git -C "$SRC" -c advice.detachedHead=false checkout -q "$TAG"
  echo "$TAG" >"$OUT/tag"
  echo "fetch-llama-cpp: cloned llama.cpp $TAG ($(git -C "$SRC" rev-parse --short HEAD)) into $SRC"
fi

# llama.cpp's AMX code (ggml-cpu/amx/mmq.cpp) needs a compiler barrier
# before its _tile_loadconfig under GCC 12, so clang builds it where the CPU
# has AMX (-march=native compiles that code out elsewhere, e.g. on Zen 4).
if [[ -z ${CXX:-} ]] && grep -qw amx_int8 /proc/cpuinfo; then
  [[ -x /usr/lib/llvm-22/bin/clang++ ]] ||
    die "this CPU has AMX, which GCC 12 miscompiles in llama.cpp; install clang-22"
  export CC=/usr/lib/llvm-22/bin/clang CXX=/usr/lib/llvm-22/bin/clang++
fi
export CCACHE_DIR=${CCACHE_DIR:-$OUT/ccache}

if [[ ! -f $BUILD/build.ninja ]]; then
  # Offline: no server (its web UI is downloaded), no OpenSSL or curl, no
  # examples; static libraries so the binaries stand alone. The clone is a
  # release tag, so it is not labelled a -dev version.
  cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DGGML_CCACHE=ON \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_BUILD_IS_DEV=OFF -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF \
    >"$OUT/configure.log" 2>&1 ||
    { tail -n 20 "$OUT/configure.log" >&2; die "cmake configure failed (see $OUT/configure.log)"; }
fi
# llama-completion only for the system_info line (the CPU features built in)
# that llama_cpp.py reports. GCC 12's AVX-512 headers warn a lot, hence the log.
echo "fetch-llama-cpp: building in $BUILD (log: $OUT/build.log)"
ninja -C "$BUILD" -j2 llama-bench llama-quantize llama-completion >"$OUT/build.log" 2>&1 ||
  { grep -m5 -A3 'error' "$OUT/build.log" >&2; die "build failed (see $OUT/build.log)"; }
echo "fetch-llama-cpp: built llama.cpp $TAG: $BUILD/bin/{llama-bench,llama-quantize,llama-completion}"
