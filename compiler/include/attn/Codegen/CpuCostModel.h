//===- CpuCostModel.h - Sizes and thresholds of the CPU target --*- C++ -*-===//
//
// Every size, threshold and kernel choice of the CPU code generator, derived
// from the target in one place (as IREE's LLVMCPU KernelDispatch does), so
// that the passes hold mechanism and this file holds strategy. The passes
// that consume it take the vector target as options and call `forTarget`;
// docs/Codegen.md has the measurements behind each value.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_CODEGEN_CPUCOSTMODEL_H
#define ATTN_CODEGEN_CPUCOSTMODEL_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>

namespace attn {

/// How wide the target's vector registers are, and how many there are.
struct VectorTarget {
  /// f32 lanes per vector register: 16 with AVX-512, 8 with AVX2.
  int64_t lanes = 16;
  /// Vector registers: 32 with AVX-512, 16 with AVX2.
  int64_t registers = 32;
  /// AVX512-VNNI's vpdpwssd (int16 pairs into int32 lanes): a single row
  /// times int8 weights rounds the row to int16 and multiplies on it
  /// (RowDotInt16.cpp) instead of widening each weight to f32.
  bool int16Dot = false;
  /// AMX-TILE with AMX-BF16: 16 x 16 f32 tiles of C updated by tdpbf16ps
  /// (PackedGemmAmx.cpp), which `--precision bf16` uses for its packed
  /// products.
  bool amxBf16 = false;
  /// 512-bit FMAs a core starts per cycle: 2 on Intel's server cores with
  /// AVX-512 (Skylake-SP to Granite Rapids), 1 on AMD Zen 4 (which splits
  /// them into 256-bit halves) and wherever the CPU is not known.
  int64_t fmaUnits = 1;
};

/// The vector target of an attnc `--target` ("host", "x86-64-v3",
/// "x86-64-v4", an LLVM CPU name); "host" asks the build machine for
/// AVX-512F, AVX512-VNNI and AMX-BF16, and its FMA units follow the name
/// LLVM gives its CPU.
VectorTarget vectorTargetFor(llvm::StringRef target);

/// The per-core caches the packed products block for.
struct CacheSizes {
  /// L2 bytes per core: 1 MiB on AMD Zen 4 (and the default for CPUs not
  /// in cacheSizesFor's table), 2 MiB on Intel Sapphire Rapids.
  int64_t l2Bytes = 1 << 20;
};

/// The caches of an attnc `--target`: the build machine's (sysfs) for
/// "host", a table of LLVM's CPU names otherwise.
CacheSizes cacheSizesFor(llvm::StringRef target);

/// Whether an attnc `--target` has AVX512-BF16's vdpbf16ps (with AVX-512F),
/// which `--precision bf16` needs.
bool hasBf16Dot(llvm::StringRef target);

/// The code generator's decisions for one CPU target.
struct CpuCostModel {
  VectorTarget target;
  CacheSizes caches;

  /// Matrix products (attn-matmul-to-vector), packed kernel: a register
  /// tile of `tileRows` x `tileCols` f32 accumulators. With 32 registers
  /// 8 x 2 vectors leave room for the two B vectors and the broadcast of A;
  /// with 16, 6 x 2. With two FMA units (f32 products on AVX-512) 6 x 4:
  /// 24 FMAs for 4 loads of B and 6 broadcasts, where 8 x 2's 16 FMAs and
  /// 10 loads left the 4-wide issue, not the FMA units, the limit.
  int64_t tileRows = 8;
  int64_t tileCols = 32;
  /// Columns the products split into: the thread pool's unit (Dispatch.cpp)
  /// and the narrow tile at a range's end (tileRows x splitCols), two
  /// vectors, so that ranges of N = 192 split evenly over 2 threads.
  int64_t splitCols = 32;
  /// Blocks of B packed at a time (N x K): a quarter of L2, which stays
  /// there while rows of A stream through L1 (tuned on Zen 4's 1 MiB L2:
  /// 512 x 128 f32, 256 KiB); blockN follows the L2 size.
  int64_t blockN = 128;
  int64_t blockK = 512;
  /// With A stored [K, M] (weight gradients) each register tile's rows of A
  /// are copied into a panel once per column block of B: wider column
  /// blocks let one panel serve more register tiles. Half of L2 (256 x 512
  /// on Zen 4).
  int64_t blockNTransposedA = 512;
  int64_t blockKTransposedA = 256;

  /// `attnc --precision bf16` (AVX512-BF16 only): the packed kernel rounds
  /// A and B to bf16 as it packs them and multiplies pairs of them with
  /// vdpbf16ps, accumulating in f32 (PackedGemmBf16.cpp); the few-rows
  /// kernels below stay f32. Not a tuning choice but the user's, carried
  /// here so that every kernel of a module follows it.
  bool bf16Products = false;
  /// Which instructions the packed kernel's bf16 products run on: vdpbf16ps
  /// on vector registers (PackedGemmBf16.cpp), or AMX tiles (tdpbf16ps,
  /// PackedGemmAmx.cpp) where the target has AMX-BF16. `EmulatedAmxTiles`
  /// is the AMX kernel with each tile instruction done by f32 vector
  /// instructions: it checks that kernel's loop nest, packing and edges on
  /// any AVX-512 CPU (`attnc --amx emulate`), slowly.
  enum class Bf16Kernel { Vectors, AmxTiles, EmulatedAmxTiles };
  Bf16Kernel bf16Kernel = Bf16Kernel::Vectors;
  bool amxKernel() const {
    return bf16Products && bf16Kernel != Bf16Kernel::Vectors;
  }

  /// Products of fewer rows than this take the few-rows kernels below
  /// instead of the packed one: 8 (6 with 16 registers), the register
  /// tile's rows they were tuned against, also where the tile is 6 x 64.
  int64_t fewRowsBelow = 8;
  /// Dot-product kernel (B stored [N, K], fewer than `fewRowsBelow` rows):
  /// groups of `dotRows` rows x `dotCols` columns of vector accumulators
  /// along K, so W is read once per group of rows; a single row takes
  /// `singleRowDotCols` columns, which keeps more rows of W in flight.
  int64_t dotRows = 4;
  int64_t dotCols = 4;
  int64_t singleRowDotCols = 8;
  /// From this many elements of W (4 bytes each: 1 MiB, more than stays in
  /// cache) a single row takes one column at a time, reading W's rows front
  /// to back as one sequential stream, `rowDotUnroll` vectors per step.
  int64_t streamedWeightElements = 1 << 18;
  int64_t rowDotUnroll = 4;

  /// Few-rows kernel for B stored [K, N] (attention's P V while decoding,
  /// AxpyKernels.cpp): groups of `dotRows` rows take the register tile's
  /// columns (2 vectors, 4 with two FMA units); a single row takes `axpyRowVectors` vectors along
  /// `axpyChains` chains of K, 8 accumulators, enough to hide an FMA's
  /// latency at two FMAs a cycle (and few enough for 16 registers).
  int64_t axpyRowVectors = 4;
  int64_t axpyChains = 2;

  /// Products on the thread pool: split by `splitCols` columns when there
  /// are at least `parallelMatmulMinTiles` of them and either
  /// `parallelMatmulWork` multiply-adds or a B of `parallelMatmulWeights`
  /// elements. Smaller products (attention's tiles) would spend more waking
  /// the pool than computing; a decoding step's products are few
  /// multiply-adds but stream all of B from memory, which two cores read
  /// faster than one.
  int64_t parallelMatmulWork = 1 << 20;
  int64_t parallelMatmulWeights = 1 << 16;
  int64_t parallelMatmulMinTiles = 2;

  /// Outer loops on the thread pool (attn-parallelize-loops): the elements
  /// the loop writes from which waking the pool pays, for iterations that
  /// are rows of vector code, and for iterations holding loops of dynamic
  /// trip count or calls (attention's heads), low enough to split a
  /// prefill's heads, high enough to keep a decoding step (one query per
  /// head) on the calling thread.
  int64_t parallelLoopMinWork = 1 << 16;
  int64_t parallelLoopMinWorkHeavy = 1 << 12;

  /// Other linalg ops (attn-vectorize-linalg): the registers of f32 one
  /// tile of an element-wise op spans along its innermost loop (more kept
  /// too many values live in the attention backward's masked steps, and
  /// LLVM spilled them), of a reduction along it, and the most registers a
  /// static reduction may span to be one vector (one horizontal reduction
  /// per row, as a layer norm's).
  int64_t elementwiseRegisters = 1;
  int64_t reductionRegisters = 4;
  int64_t wholeRowReductionRegisters = 64;

  /// Attention's tiled loop nest (convert-attn-to-linalg): queries and keys
  /// per tile.
  int64_t attentionQueryTile = 64;
  int64_t attentionKeyTile = 64;

  /// attn-matmul-to-vector's `amx` option for a kernel ("off", "tiles",
  /// "emulate") and back.
  static llvm::StringRef bf16KernelOption(Bf16Kernel kernel);
  static std::optional<Bf16Kernel> parseBf16KernelOption(llvm::StringRef);

  /// The model of `target` with `caches`, for f32 or bf16 products.
  static CpuCostModel forTarget(VectorTarget target, CacheSizes caches = {},
                                bool bf16Products = false);
  /// The model of an attnc `--target`.
  static CpuCostModel forTarget(llvm::StringRef target,
                                bool bf16Products = false) {
    return forTarget(vectorTargetFor(target), cacheSizesFor(target),
                     bf16Products);
  }
};

} // namespace attn

#endif // ATTN_CODEGEN_CPUCOSTMODEL_H
