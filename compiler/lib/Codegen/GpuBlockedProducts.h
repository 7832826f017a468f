//===- GpuBlockedProducts.h - Products as kernels of block tiles -*- C++ -*-===//
//
// What attn-gpu-tensor-core-products and attn-gpu-simt-products share. A
// matrix product C += A B that MatmulMatch recognises (A stored [M, K] or
// [K, M], B [K, N] or [N, K]; or a batch of them, the batch one more
// dimension of blocks) becomes one kernel over the part of C that whole
// block tiles cover, with K taken in whole steps, and linalg products on
// views for the rest (the rows below the last whole tile, the columns
// right of it, the last K mod step terms), which become generic kernels. A
// product with no whole tile is left as it is. With a dynamic row count,
// all of that is one way of a branch on M >= the block's rows, the product
// as it was (on C itself, after its zero fill) the other: a decoding
// step's few rows then run on C whole, and the loops after the product
// (its bias) can join its kernels.
//
// The kernel is one scf.parallel whose dimensions are blocks and threads,
// an attribute naming the processor of each (GpuWarpTiles.h); what a block
// computes is the caller's.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_LIB_CODEGEN_GPUBLOCKEDPRODUCTS_H
#define ATTN_LIB_CODEGEN_GPUBLOCKEDPRODUCTS_H

#include "GpuSharedTiles.h"
#include "MatmulMatch.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/PatternMatch.h"

namespace attn {

/// Where a block's work is: the batch element (no indices for a 2-D
/// product), the block tile's index along the rows and the columns of C
/// (its first row is blockRow x blockM), the threads' indices, and the
/// terms to add.
struct BlockTile {
  llvm::SmallVector<mlir::Value> batch;
  mlir::Value blockRow, blockCol;
  /// The index of a thread dimension of the block (0 for one left out).
  std::function<mlir::Value(mlir::gpu::Processor)> thread;
  /// The first kEnd terms of A B, a multiple of the step.
  mlir::Value kEnd;
  /// Whether C starts from zero (its zero fill was dropped) rather than
  /// from its elements.
  bool zeroStart = false;
};

struct BlockedKernel {
  int64_t blockM, blockN, stepK;
  /// The block's thread dimensions and their sizes.
  llvm::SmallVector<std::pair<mlir::gpu::Processor, int64_t>> threads;
  /// The attribute naming the kernel loop's processors.
  llvm::StringRef processorsAttr;
  /// Whether emitBlock can start C from zero: a zero fill of C right before
  /// the product is then dropped, and the products on views start with
  /// fills of their own parts of C.
  bool canStartFromZero;
  /// Emits, where the builder stands, what one thread of the block does.
  std::function<void(mlir::OpBuilder &, mlir::Location,
                     const MatmulOperands &, const BlockTile &)>
      emitBlock;
};

/// Whether `operand` (A or B of `p`) holds a term of the product per row:
/// A stored [K, M], B stored [K, N].
inline bool holdsTermsDown(const MatmulOperands &p, mlir::Value operand) {
  return operand == p.a ? p.transposedA : !p.transposedB;
}

/// What a block stages of `operand` (A or B of `p`) for the `terms` terms
/// from `k`: its `side` rows of A or columns of B from `first`, at the
/// batch element `batch`, as the operand stores them.
TileSource stagedTerms(const MatmulOperands &p, mlir::Value operand,
                       llvm::ArrayRef<mlir::Value> batch, mlir::Value first,
                       int64_t side, mlir::Value k, int64_t terms);

/// The f32 products of `func` a kernel of whole tiles can take, each
/// operand its own buffer (the views replace A, B and C by position).
llvm::SmallVector<std::pair<mlir::linalg::LinalgOp, MatmulOperands>>
collectBlockableProducts(mlir::func::FuncOp func);

/// `op` as `kernel` over its whole tiles and products on views for the
/// rest; left as it is when no whole tile fits. A zero fill of C right
/// before `op` is taken into the kernel if it can start from zero.
void rewriteBlockedProduct(mlir::RewriterBase &rewriter,
                           mlir::linalg::LinalgOp op, const MatmulOperands &p,
                           const BlockedKernel &kernel);

} // namespace attn

#endif // ATTN_LIB_CODEGEN_GPUBLOCKEDPRODUCTS_H
