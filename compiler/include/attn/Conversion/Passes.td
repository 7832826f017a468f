//===- Passes.td - Conversion passes of attnc --------------*- tablegen -*-===//
//
// The conversions of the attn dialect to upstream dialects.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_CONVERSION_PASSES_TD
#define ATTN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertAttnToLinalg : Pass<"convert-attn-to-linalg", "::mlir::ModuleOp"> {
  let summary = "Lowers attn ops to linalg, tensor, arith, math and scf";
  let description = [{
    Input: a module whose functions no longer read `attn.get_param` (see
    `attn-bind-params`). Output: the same computation on tensors in upstream
    dialects: element-wise ops and reductions as `linalg.generic`, products as
    contractions, shape ops as `tensor` ops, and `attn.sdpa` as a tiled
    online-softmax loop nest (`scf.for` over query and key tiles) that never
    materialises the `T x S` score matrix and skips key tiles above the
    causal diagonal, `attn.sdpa_grad` as the matching tiled backward pass.
    `dropout` (and attention dropout) with a seed draws abi.h's
    counter-based mask; without one it is the identity. The gradient ops and
    the optimizer update become reductions and element-wise generics,
    `attn.gather_grad` a sequential scatter-add loop (docs/Codegen.md).
    Module-level `attn.param` and `attn.train` ops are left alone.
    Fails with a diagnostic on an op it cannot lower.

    `attention` chooses the form of `attn.sdpa` and `attn.sdpa_grad`:
    - `tiles` (the default, the CPU target): the tiled loop nests above.
    - `rows` (the GPU target): parallel loops over rows, each a sequential
      online softmax over the keys (or queries) it meets, its row and
      accumulators in scalars (AttentionRows.cpp); ops with a dynamic head
      dimension take the `materialized` form. On a target that maps each
      parallel loop's iterations to threads, the tiled nests would keep
      their batch, head and tile loops on the host.
    - `materialized`: whole-tensor ops over the `[B, H, T, S]` score
      matrix (AttentionMaterialized.cpp).

    `query-tile` and `key-tile` size the tiles of the loop nests, forward
    and backward: 64 x 64 by default, an f32 score block of 16 KiB that
    stays in L1 next to the query and key tiles (the pipeline sets them
    from the CPU cost model, docs/Codegen.md). Fails with a diagnostic on
    a tile size below 1.

    `warp-norms` (the GPU target) lowers `attn.layer_norm` and
    `attn.rms_norm` to one parallel loop over the rows and the lanes of a
    warp (NormalizationRows.cpp): each lane sums its strided part of the
    row, `gpu.subgroup_reduce` combines the lanes, and each lane writes its
    part of the result. The lane count is `gpu.subgroup_size` until
    `attn-gpu-warp-lanes` fixes it.
  }];
  let options = [
    Option<"attention", "attention", "std::string", /*default=*/"\"tiles\"",
           "The form of attention: tiles, rows or materialized">,
    Option<"queryTile", "query-tile", "int64_t", /*default=*/"64",
           "Queries per tile of the attention loop nests (at least 1)">,
    Option<"keyTile", "key-tile", "int64_t", /*default=*/"64",
           "Keys per tile of the attention loop nests (at least 1)">,
    Option<"warpNorms", "warp-norms", "bool", /*default=*/"false",
           "Layer and RMS norms as one loop over rows and a warp's lanes">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect", "::mlir::gpu::GPUDialect"
  ];
}

#endif // ATTN_CONVERSION_PASSES_TD
