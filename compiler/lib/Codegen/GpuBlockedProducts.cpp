//===- GpuBlockedProducts.cpp - Products as kernels of block tiles --------===//
//
// The kernel over a product's whole block tiles and the linalg products on
// views around it (GpuBlockedProducts.h).
//
//===----------------------------------------------------------------------===//

#include "GpuBlockedProducts.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;

namespace attn {
namespace {

/// A range [offset, offset + size) of rows, columns or terms.
struct Range {
  OpFoldResult offset, size;
};

Value constantIndex(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

/// The view of `memref` over its batch dimensions whole, then `rows` x
/// `columns`.
Value view(OpBuilder &b, Location loc, Value memref, unsigned batchRank,
           Range rows, Range columns) {
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  SmallVector<OpFoldResult> offsets(batchRank, zero), sizes;
  for (unsigned d = 0; d < batchRank; ++d)
    sizes.push_back(memref::getMixedSize(b, loc, memref, d));
  offsets.append({rows.offset, columns.offset});
  sizes.append({rows.size, columns.size});
  SmallVector<OpFoldResult> strides(batchRank + 2, one);
  return memref::SubViewOp::create(b, loc, memref, offsets, sizes, strides);
}

/// `op` (C += A B) restricted to rows `m`, columns `n` and terms `k`, those
/// elements of C set to zero first if `fromZero`.
void productOnViews(RewriterBase &rewriter, linalg::LinalgOp op,
                    const MatmulOperands &p, Range m, Range n, Range k,
                    bool fromZero = false) {
  if (isZeroInteger(m.size) || isZeroInteger(n.size) || isZeroInteger(k.size))
    return;
  Location loc = op.getLoc();
  unsigned batch = p.batchRank;
  Value a = p.transposedA ? view(rewriter, loc, p.a, batch, k, m)
                          : view(rewriter, loc, p.a, batch, m, k);
  Value b = p.transposedB ? view(rewriter, loc, p.b, batch, n, k)
                          : view(rewriter, loc, p.b, batch, k, n);
  Value c = view(rewriter, loc, p.c, batch, m, n);
  if (fromZero) {
    Value zero =
        arith::ConstantOp::create(rewriter, loc, rewriter.getF32FloatAttr(0));
    linalg::FillOp::create(rewriter, loc, zero, c);
  }
  Operation *copy = rewriter.clone(*op.getOperation());
  copy->setOperands({a, b, c});
}

/// The index in each batch dimension (sizes `batchSizes`, the last the
/// fastest) of the flat batch index `flat`.
SmallVector<Value> batchIndices(OpBuilder &b, Location loc, Value flat,
                                ArrayRef<OpFoldResult> batchSizes) {
  SmallVector<Value> indices;
  AffineExpr stride = b.getAffineConstantExpr(1);
  SmallVector<Value> symbols;
  for (OpFoldResult size : batchSizes)
    symbols.push_back(getValueOrCreateConstantIndexOp(b, loc, size));
  // Dimension d's index: (flat floordiv (size d+1 * ... )) mod size d.
  for (int64_t d = batchSizes.size() - 1; d >= 0; --d) {
    AffineExpr index = b.getAffineDimExpr(0).floorDiv(stride);
    if (d > 0)
      index = index % b.getAffineSymbolExpr(d);
    SmallVector<Value> operands{flat};
    operands.append(symbols);
    indices.insert(indices.begin(),
                   affine::AffineApplyOp::create(
                       b, loc,
                       AffineMap::get(1, symbols.size(), index, b.getContext()),
                       operands));
    stride = stride * b.getAffineSymbolExpr(d);
  }
  return indices;
}

/// The kernel: blocks over `blocksM` x `blocksN` tiles of C and the batch
/// (its dimensions flattened), then the block's threads, the first `kEnd`
/// terms. A dimension that is one iteration is left out (GpuWarpTiles.h).
void emitKernel(OpBuilder &b, Location loc, const MatmulOperands &p,
                const BlockedKernel &kernel, ArrayRef<OpFoldResult> batchSizes,
                OpFoldResult blocksM, OpFoldResult blocksN, Value kEnd,
                bool zeroStart) {
  using gpu::Processor;
  Value zero = constantIndex(b, loc, 0), one = constantIndex(b, loc, 1);
  SmallVector<Value> uppers;
  SmallVector<int64_t> processors;
  auto addDim = [&](OpFoldResult upper, Processor processor) {
    if (isConstantIntValue(upper, 1))
      return;
    uppers.push_back(getValueOrCreateConstantIndexOp(b, loc, upper));
    processors.push_back(static_cast<int64_t>(processor));
  };
  OpFoldResult batch = b.getIndexAttr(1);
  for (OpFoldResult size : batchSizes)
    batch = affine::makeComposedFoldedAffineApply(
        b, loc, b.getAffineSymbolExpr(0) * b.getAffineSymbolExpr(1),
        {batch, size});
  addDim(batch, Processor::BlockZ);
  addDim(blocksM, Processor::BlockY);
  addDim(blocksN, Processor::BlockX);
  for (auto [processor, size] : kernel.threads)
    addDim(b.getIndexAttr(size), processor);
  SmallVector<Value> lowers(uppers.size(), zero), steps(uppers.size(), one);
  auto loop = scf::ParallelOp::create(
      b, loc, lowers, uppers, steps,
      [&](OpBuilder &b, Location loc, ValueRange ivs) {
        auto index = [&](Processor processor) {
          auto it = llvm::find(processors, static_cast<int64_t>(processor));
          return it == processors.end() ? zero : ivs[it - processors.begin()];
        };
        BlockTile tile{
            batchSizes.empty()
                ? SmallVector<Value>{}
                : batchIndices(b, loc, index(Processor::BlockZ), batchSizes),
            index(Processor::BlockY), index(Processor::BlockX), index, kEnd,
            zeroStart};
        kernel.emitBlock(b, loc, p, tile);
      });
  loop->setAttr(kernel.processorsAttr, b.getDenseI64ArrayAttr(processors));
}

} // namespace

TileSource stagedTerms(const MatmulOperands &p, Value operand,
                       ArrayRef<Value> batch, Value first, int64_t side,
                       Value k, int64_t terms) {
  SmallVector<Value> at(batch);
  if (holdsTermsDown(p, operand))
    return {operand, at, k, first, terms, side};
  return {operand, at, first, k, side, terms};
}

SmallVector<std::pair<linalg::LinalgOp, MatmulOperands>>
collectBlockableProducts(func::FuncOp func) {
  SmallVector<std::pair<linalg::LinalgOp, MatmulOperands>> products;
  func.walk([&](linalg::LinalgOp op) {
    std::optional<MatmulOperands> p = matchMatmul(op);
    if (!p)
      p = matchBatchedMatmul(op);
    if (p && !p->lowPrecisionB() && p->a != p->b && p->a != p->c &&
        p->b != p->c)
      products.emplace_back(op, *p);
  });
  return products;
}

void rewriteBlockedProduct(RewriterBase &rewriter, linalg::LinalgOp op,
                           const MatmulOperands &p,
                           const BlockedKernel &kernel) {
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  AffineExpr d0 = rewriter.getAffineDimExpr(0);
  auto apply = [&](AffineExpr e, OpFoldResult x) {
    return affine::makeComposedFoldedAffineApply(rewriter, loc, e, {x});
  };
  unsigned batch = p.batchRank;
  SmallVector<OpFoldResult> batchSizes;
  for (unsigned d = 0; d < batch; ++d)
    batchSizes.push_back(memref::getMixedSize(rewriter, loc, p.c, d));
  OpFoldResult m = memref::getMixedSize(rewriter, loc, p.c, batch);
  OpFoldResult n = memref::getMixedSize(rewriter, loc, p.c, batch + 1);
  OpFoldResult k =
      memref::getMixedSize(rewriter, loc, p.a, batch + (p.transposedA ? 0 : 1));
  OpFoldResult blocksM = apply(d0.floorDiv(kernel.blockM), m);
  OpFoldResult blocksN = apply(d0.floorDiv(kernel.blockN), n);
  OpFoldResult kWhole = apply(d0.floorDiv(kernel.stepK) * kernel.stepK, k);
  if (isZeroInteger(blocksM) || isZeroInteger(blocksN) || isZeroInteger(kWhole))
    return;
  OpFoldResult mWhole = apply(d0.floorDiv(kernel.blockM) * kernel.blockM, m);
  OpFoldResult nWhole = apply(d0.floorDiv(kernel.blockN) * kernel.blockN, n);
  OpFoldResult zero = rewriter.getIndexAttr(0);
  linalg::FillOp zeroFill = precedingZeroFill(op, p.c);
  bool fromZero = zeroFill && kernel.canStartFromZero;
  bool branched = !getConstantIntValue(m);
  if (branched) {
    // Fewer rows than a block tile (a decoding step's): the product whole,
    // on C itself, so that the loops after it (its bias) can join its
    // kernels; the tiles in the other way. Each way takes the zero fill.
    Value many = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::sge,
        getValueOrCreateConstantIndexOp(rewriter, loc, m),
        arith::ConstantIndexOp::create(rewriter, loc, kernel.blockM));
    auto branch = scf::IfOp::create(rewriter, loc, many, /*else=*/true);
    rewriter.setInsertionPointToStart(branch.elseBlock());
    if (zeroFill)
      rewriter.clone(*zeroFill);
    rewriter.clone(*op);
    rewriter.setInsertionPointToStart(branch.thenBlock());
    if (zeroFill && !fromZero)
      rewriter.clone(*zeroFill);
  }

  emitKernel(rewriter, loc, p, kernel, batchSizes, blocksM, blocksN,
             getValueOrCreateConstantIndexOp(rewriter, loc, kWhole), fromZero);
  Range mAll{zero, m}, nAll{zero, n};
  Range kFirst{zero, kWhole};
  // The tiles and these two parts of C are disjoint; the last K mod step
  // terms are added to all of C after them.
  productOnViews(rewriter, op, p, {mWhole, apply(d0 % kernel.blockM, m)},
                 nAll, kFirst, fromZero);
  productOnViews(rewriter, op, p, {zero, mWhole},
                 {nWhole, apply(d0 % kernel.blockN, n)}, kFirst, fromZero);
  productOnViews(rewriter, op, p, mAll, nAll,
                 {kWhole, apply(d0 % kernel.stepK, k)});
  rewriter.eraseOp(op);
  if (zeroFill && (fromZero || branched))
    rewriter.eraseOp(zeroFill);
}

} // namespace attn
