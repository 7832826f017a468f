//===- MatmulMatch.h - Matrix products and epilogues on buffers -*- C++ -*-===//
//
// What attn-group-matmul-epilogues and attn-matmul-to-vector agree on: which
// linalg ops are 2-D f32 matrix products the kernels compute, and which
// element-wise op after a product is an epilogue the kernels can apply to
// their register tiles.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_LIB_TRANSFORMS_MATMULMATCH_H
#define ATTN_LIB_TRANSFORMS_MATMULMATCH_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>
#include <string>

namespace attn {

struct MatmulOperands {
  mlir::Value a, b, c;
  /// B is stored as [N, K] (a linear layer's weight) rather than [K, N].
  bool transposedB = false;
  /// A is stored as [K, M] (dY in a weight gradient dY^T X) rather than
  /// [M, K].
  bool transposedA = false;
  /// B holds a weight's low-precision copy (`attnc --weights`, stored
  /// [N, K]): bf16, or i8 with these f32 scales [N, K / block] (null
  /// otherwise).
  mlir::Value scales;
  /// The elements of a row of B per scale (a constant, so that finding a
  /// vector's scale is a shift, not a division).
  int64_t scaleBlock = 0;
  /// The leading dimensions A, B and C share, one product each
  /// (matchBatchedMatmul; 0 for a 2-D product).
  unsigned batchRank = 0;

  bool lowPrecisionB() const {
    return !llvm::cast<mlir::MemRefType>(b.getType()).getElementType().isF32();
  }
};

/// A 2-D f32 product C[m, n] += A[m, k] * B[k, n] (or B[n, k], A[k, m]) with
/// buffer semantics, named or generic, every operand with a unit innermost
/// stride; or the product of A [M, K] with a weight's low-precision copy
/// (the linalg.generic convert-attn-to-linalg makes of `attn.dequantize`:
/// C[m, n] += A[m, k] * extf(B[n, k]), or * (sitofp(B[n, k]) * S[n, k /
/// block])).
std::optional<MatmulOperands> matchMatmul(mlir::linalg::LinalgOp op);

/// A batch of f32 products C[b..., m, n] += A[b..., m, k] * B[b..., k, n]
/// (A's or B's last two dimensions either way round) with buffer semantics,
/// b... the same leading loops of all three operands in the same order
/// (attention's products over [B, H, T, S] when materialised), every
/// operand with a unit innermost stride. 2-D products are matchMatmul's.
std::optional<MatmulOperands> matchBatchedMatmul(mlir::linalg::LinalgOp op);

/// An element-wise op `out[m, n] = f(C[m, n], e1, ..., en)` over the product
/// C: a 2-D all-parallel linalg.generic on buffers reading C once through
/// the identity map, every other input a full f32 matrix [M, N] (identity
/// map) or a row vector [N] broadcast over the rows (a bias), writing one
/// f32 matrix, with a body of scalar arith and math ops that uses only its
/// arguments and constants (not the output's old value).
struct Epilogue {
  mlir::linalg::GenericOp op;
  /// The inputs other than C, in order, and whether each is a row vector.
  llvm::SmallVector<mlir::Value> extras;
  llvm::SmallVector<bool> rowVector;
  mlir::Value out;
  /// The input position of C.
  unsigned productInput = 0;
  /// Equal for two epilogues with the same body, input kinds and order:
  /// one kernel serves both.
  std::string key;
};

std::optional<Epilogue> matchEpilogue(mlir::linalg::GenericOp op,
                                      mlir::Value c);

/// Whether `op` is a `linalg.fill` of +0.0 into exactly `c` (on buffers):
/// a product into `c` right after it can start from zeros instead.
bool isZeroFillOf(mlir::Operation *op, mlir::Value c);

/// The zero fill of exactly `c` that comes before `op` with only
/// side-effect-free ops between them, if there is one.
mlir::linalg::FillOp precedingZeroFill(mlir::Operation *op, mlir::Value c);

/// The attribute attn-group-matmul-epilogues puts on an epilogue it placed
/// right after its product (MatmulToVector fuses only those).
inline constexpr llvm::StringLiteral kMatmulEpilogueAttr =
    "attn.matmul_epilogue";

} // namespace attn

#endif // ATTN_LIB_TRANSFORMS_MATMULMATCH_H
