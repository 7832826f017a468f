//===- Passes.h - Code generation transforms of attnc -----------*- C++ -*-===//
//
// The passes between bufferisation and the LLVM dialect that make the loops
// fast on the CPU: register-tiled, packed matrix products; tiled and
// vectorised linalg ops; polynomial math; progressive vector lowering; and
// parallel loops on the runtime's thread pool. Each is a plain pass over
// `func.func` (or the module) so that lit tests can run it alone.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TRANSFORMS_PASSES_H
#define ATTN_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

#include <memory>

namespace attn {

/// How wide the target's vector registers are, and so every tile size.
struct VectorTarget {
  /// f32 lanes per vector register: 16 with AVX-512, 8 with AVX2.
  int64_t lanes = 16;
  /// Vector registers: 32 with AVX-512, 16 with AVX2.
  int64_t registers = 32;
};

/// The vector target of an attnc `--target` ("host", "x86-64-v3",
/// "x86-64-v4"); "host" asks the build machine for AVX-512F.
VectorTarget vectorTargetFor(llvm::StringRef target);

/// `attn-fuse-elementwise`: on tensors, a single-use element-wise generic
/// read element for element (no broadcast) by another generic is fused into
/// it. Reshapes are not propagated (the products stay 2-D matmuls).
std::unique_ptr<mlir::Pass> createFuseElementwisePass();

/// `attn-group-matmul-epilogues`: on buffers, before the temporaries are
/// planned, a matrix product moves next to the zero fill of its result and
/// to the element-wise op reading it (marked `attn.matmul_epilogue`), which
/// attn-matmul-to-vector then folds into its kernel; a copy of a buffer that
/// only a fill writes becomes that fill.
std::unique_ptr<mlir::Pass> createGroupMatmulEpiloguesPass();

/// `attn-reuse-buffers`: on buffers, temporaries of one type and the same
/// dynamic sizes whose lifetimes (alloc to dealloc in one block) do not
/// overlap share one allocation, so a forward pass mallocs (and the kernel
/// zero-fills) a few buffers instead of one per intermediate tensor.
std::unique_ptr<mlir::Pass> createReuseBuffersPass();

/// `attn-plan-arena`: the temporaries left local to an entry point live in
/// one arena, at offsets planned at compile time from their lifetimes
/// (first fit over slots); sizes that depend on the call's dims are computed
/// at the function's entry. The arena is the function's argument marked
/// `kArenaArgAttr` when it is large enough and 64-byte aligned, else one
/// allocated for the call; the bytes needed are stored into the argument
/// marked `kArenaNeedArgAttr`. Without those arguments the arena is
/// allocated at every call.
std::unique_ptr<mlir::Pass> createPlanArenaPass();

/// The argument attributes of an entry point's arena (`memref<?xi8>`, abi.h
/// ATTN_ARG_ARENA) and of the bytes it needs (`memref<i64>`,
/// ATTN_ARG_ARENA_NEED), added by `attn-finalize-entry-points` and consumed
/// (removed) by `attn-plan-arena`.
inline constexpr llvm::StringLiteral kArenaArgAttr = "attn.arena";
inline constexpr llvm::StringLiteral kArenaNeedArgAttr = "attn.arena_need";

/// An entry point calling another (`train_step` calls `<loss>_grad`) is
/// lowered without the call until both are on buffers: `attn-bind-params`
/// takes the call out, each of its results becoming an argument of the
/// caller marked `kEntryCallResultAttr` (the result's index), and records
/// it in the caller's `kEntryCallAttr` (`{callee = @f, args = array<i64:
/// ...>}`, the caller's argument passed as each argument of the bound
/// callee); `attn-compose-entry-calls` puts the call back at the top of the
/// caller after bufferisation, passing the arena on as well.
inline constexpr llvm::StringLiteral kEntryCallAttr = "attn.entry_call";
inline constexpr llvm::StringLiteral kEntryCallResultAttr =
    "attn.entry_call_result";

/// `attn-compose-entry-calls`: see `kEntryCallAttr`.
std::unique_ptr<mlir::Pass> createComposeEntryCallsPass();

/// `attn-matmul-to-vector`: every 2-D f32 matrix product on buffers
/// (`linalg.matmul`, also with a transposed B through its indexing maps, or
/// a `linalg.generic` with the same contraction) becomes a blocked loop nest:
/// blocks of B (N: 128, K: 512) packed into an aligned buffer with B^T
/// transposed on the way, and a register tile of MR x (2 * lanes) vector
/// accumulators (8 x 32 on AVX-512) updated with `vector.fma` per k; the
/// rows left over below MR run a 1-row tile, the columns past N are masked.
/// The loop nest is one internal function per module and kind of B
/// (`__attn_sgemm_nt_16x32`, ...); each product calls it.
std::unique_ptr<mlir::Pass> createMatmulToVectorPass(VectorTarget target = {});

/// `attn-vectorize-linalg`: every other linalg op on buffers is tiled to one
/// vector along its innermost loop (all other loops to 1) and vectorised,
/// masked where the innermost size is dynamic or not a multiple; ops the
/// vectoriser cannot take are left for `convert-linalg-to-loops`.
std::unique_ptr<mlir::Pass> createVectorizeLinalgPass(VectorTarget target = {});

/// `attn-math-approximation`: exp, tanh, erf (and the other functions MLIR
/// approximates) on f32 become polynomials, so they vectorise and never call
/// libm per element.
std::unique_ptr<mlir::Pass> createMathApproximationPass();

/// `attn-lower-vector`: progressive lowering of the vector ops the two
/// passes above create (masks, transfers, multi-reductions, transposes,
/// contractions, broadcasts) to 1-D vector ops that convert-vector-to-llvm
/// takes as they are.
std::unique_ptr<mlir::Pass> createLowerVectorPass();

/// `attn-lower-dynamic-reshapes`: memref.expand_shape ops splitting a dynamic
/// dim into several dynamic dims become memref.reinterpret_cast (MLIR 22's
/// expand-strided-metadata crashes on them).
std::unique_ptr<mlir::Pass> createLowerDynamicReshapesPass();

/// `attn-parallelize-loops`: an outermost scf.for of an entry point (or a
/// perfect nest of two, flattened) whose iterations provably touch disjoint
/// memory is outlined into a task run by the runtime's
/// `attn_parallel_for(NULL, n, task, arg)` on the calling context's pool.
std::unique_ptr<mlir::Pass> createParallelizeLoopsPass();

/// `attn-gpu-map-loops` (GPU target): on buffers, after linalg became
/// `scf.parallel` loops, every buffer not passed in host memory lives on the
/// device (host allocations become `gpu.alloc`, copies parallel loops);
/// each outermost parallel loop becomes one kernel (its loops collapsed and
/// tiled into blocks of threads, marked for `convert-parallel-loops-to-
/// gpu`); other host ops that touch device memory run on one GPU thread,
/// and host reads of device values are copied back to the host.
std::unique_ptr<mlir::Pass> createGpuMapLoopsPass();

/// Registers the passes above for `attnc-opt`.
void registerAttnCodegenPasses();

} // namespace attn

#endif // ATTN_TRANSFORMS_PASSES_H
