# -*- Python -*-
# lit configuration of the attnc regression tests.

import os
import shutil
import subprocess

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "ATTN"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".tfm", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.attn_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%models", os.path.join(config.attn_src_root, "models")))
config.substitutions.append(("%scripts", os.path.join(config.attn_src_root, "scripts")))

# The example models of the language specification, beside the checkout in
# ../shared/spec/examples: they must compile unchanged, while the copies in
# models/ may differ (GPT-2's initialisers). `REQUIRES: spec` where they are.
spec_examples = os.path.join(config.attn_src_root, "..", "shared", "spec",
                             "examples")
if os.path.isdir(spec_examples):
    config.available_features.add("spec")
    config.substitutions.append(("%spec_examples", spec_examples))

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tools = ["attnc", "attnc-opt", "attn-ref"]
llvm_config.add_tool_substitutions(tools, [config.attn_tools_dir])
llvm_config.add_tool_substitutions(["split-file", "llc", "mlir-translate"],
                                  [config.llvm_tools_dir])

# The PyTorch cross-checks (`REQUIRES: torch`) need a Python that imports
# torch and numpy (Debian's python3-torch); the first python3 on PATH may be
# another installation, so Debian's is tried too.
def find_torch_python():
    for name in ["python3", "/usr/bin/python3"]:
        path = shutil.which(name)
        if path and subprocess.run([path, "-c", "import torch, numpy"],
                                   stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL).returncode == 0:
            return path
    return None

torch_python = find_torch_python()
if torch_python:
    config.available_features.add("torch")
    config.substitutions.append(("%torch_python", torch_python))

# numpy-only scripts (`REQUIRES: numpy`) run with %python, a Python that
# imports numpy (Debian's python3-numpy), found as the torch one is.
def find_numpy_python():
    for name in ["/usr/bin/python3", "python3"]:
        path = shutil.which(name)
        if path and subprocess.run([path, "-c", "import numpy"],
                                   stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL).returncode == 0:
            return path
    return None

numpy_python = find_numpy_python()
if numpy_python:
    config.available_features.add("numpy")
    config.substitutions.append(("%python", numpy_python))

# The CUDA toolkit's PTX assembler (`REQUIRES: ptxas`): what the driver's
# JIT compiler will make of attnc's PTX, checked without a GPU.
ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
if os.access(ptxas, os.X_OK):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))

# The build tree, which test/Integration/install installs from.
config.substitutions.append(("%attn_build", config.attn_obj_root))

# C programs linked against a compiled model and the runtime (test/Integration/c-api).
config.substitutions.append(
    ("%runtime_include", os.path.join(config.attn_src_root, "runtime", "include")))
config.substitutions.append(
    ("%attnrt_lib", os.path.join(config.attn_obj_root, "lib", "libattnrt.a")))
# The command line of `attnc build`'s executables (attn_main), linked before
# libattnrt by a test that builds one by hand.
config.substitutions.append(
    ("%cli_include", os.path.join(config.attn_src_root, "runtime", "cli", "include")))
config.substitutions.append(
    ("%attncli_lib", os.path.join(config.attn_obj_root, "lib", "libattncli.a")))
config.substitutions.append(
    ("%cc", shutil.which("clang-22") or shutil.which("cc") or "cc"))

# Data-parallel training (test/Integration/mpi, `REQUIRES: mpi`) runs the
# executables under OpenMPI's mpirun (Debian's openmpi-bin, which `make`
# installs); without it those tests are unsupported. %mpirun runs N
# processes on this machine alone, more than its cores if need be, and lets
# root run them (OpenMPI refuses root unless told).
def find_open_mpi():
    path = shutil.which("mpirun")
    if not path:
        return None
    try:
        out = subprocess.run([path, "--version"], capture_output=True,
                             timeout=30).stdout.decode("utf-8", "replace")
    except (OSError, subprocess.SubprocessError):
        return None
    return path if "Open MPI" in out else None

open_mpi = find_open_mpi()
if open_mpi:
    config.available_features.add("mpi")
    config.substitutions.append(
        ("%mpirun", open_mpi + " --oversubscribe"))
    config.environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    config.environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"

# Code that needs a CPU feature runs only where the host has it
# (`REQUIRES: avx512bf16`: attnc --precision bf16's vdpbf16ps); lit reports
# the test unsupported elsewhere. Compile-only tests name a --target instead.
def host_cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()

if "avx512f" in host_cpu_flags():
    config.available_features.add("avx512f")
if "avx512_bf16" in host_cpu_flags() and "avx512f" in host_cpu_flags():
    config.available_features.add("avx512bf16")
# (`REQUIRES: avx512vnni`: attnc --weights int8's vpdpwssd row products)
if "avx512_vnni" in host_cpu_flags() and "avx512f" in host_cpu_flags():
    config.available_features.add("avx512vnni")

# (`REQUIRES: amx-bf16`: --precision bf16's products on AMX tiles)
if {"amx_tile", "amx_bf16"} <= host_cpu_flags():
    config.available_features.add("amx-bf16")

# Numerical tests of GPU builds (`REQUIRES: cuda-gpu`) run where the CUDA
# driver is installed and sees a GPU (nvidia-smi lists one); lit reports
# them unsupported elsewhere, as on CI.
def has_cuda_gpu():
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and "GPU" in out.stdout

if has_cuda_gpu():
    config.available_features.add("cuda-gpu")

# The long training tests (test/Long, `REQUIRES: long`) run only with
# `lit -Dlong=1`, which `make test-long` passes; `-Dbrown=DIR` says where
# scripts/fetch-brown.py wrote the tagged Brown corpus (default:
# ~/.cache/attnc/brown).
if lit_config.params.get("long"):
    config.available_features.add("long")
config.substitutions.append(
    ("%brown", lit_config.params.get("brown",
                                     os.path.expanduser("~/.cache/attnc/brown"))))

# GPT-2's tokenizer files (encoder.json, vocab.bpe) for the tests of
# `--tokenizer` (`REQUIRES: gpt2-tokenizer`): scripts/fetch-gpt2-tokenizer.py
# writes them to `-Dgpt2_tokenizer=DIR`, which `make test` passes (default:
# ~/.cache/attnc/gpt2-tokenizer). Without them those tests are unsupported:
# run that script to fetch them.
gpt2_tokenizer = lit_config.params.get(
    "gpt2_tokenizer", os.path.expanduser("~/.cache/attnc/gpt2-tokenizer"))
if all(os.path.isfile(os.path.join(gpt2_tokenizer, f))
       for f in ["encoder.json", "vocab.bpe"]):
    config.available_features.add("gpt2-tokenizer")
config.substitutions.append(("%gpt2_tokenizer", gpt2_tokenizer))

# The independent GPT-2 encoder the tokenizer is compared with
# (test/Integration/gpt2_bpe.py) needs Python's `regex` module (Debian's
# python3-regex): `REQUIRES: python-regex`, run with %regex_python.
def find_regex_python():
    for name in ["/usr/bin/python3", "python3"]:
        path = shutil.which(name)
        if path and subprocess.run([path, "-c", "import regex"],
                                   stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL).returncode == 0:
            return path
    return None

regex_python = find_regex_python()
if regex_python:
    config.available_features.add("python-regex")
    config.substitutions.append(("%regex_python", regex_python))
