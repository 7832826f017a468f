//===- AttentionOperands.h - What every attention lowering reads -*- C++ -*-===//
//
// The operands, sizes and constants of an `attn.sdpa` or `attn.sdpa_grad`
// (the same operands and attributes) that the whole-tensor and the per-row
// lowerings (AttentionMaterialized.cpp, AttentionRows.cpp) both build
// first, and the row statistic both backward passes read.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_CONVERSION_ATTNTOLINALG_ATTENTIONOPERANDS_H
#define ATTN_CONVERSION_ATTNTOLINALG_ATTENTIONOPERANDS_H

#include "LinalgBuilders.h"

namespace attn {

struct AttentionOperands {
  mlir::Value q, k, v, keyPadding;
  bool causal = false;
  /// Query heads per key/value head (1 without grouped-query attention).
  int64_t group = 1;
  mlir::Type element;
  mlir::Value batches, heads, queries, keys, scale;
  double rate = 0;
  /// Attention dropout's stream; null without dropout.
  mlir::Value dropoutBase;

  /// [B, H, T] sizes.
  llvm::SmallVector<mlir::OpFoldResult> rowSizes() const {
    return {batches, heads, queries};
  }

  template <typename AttentionOp, typename OpAdaptor>
  static AttentionOperands get(mlir::OpBuilder &b, mlir::Location loc,
                               AttentionOp op, OpAdaptor adaptor) {
    AttentionOperands p;
    p.q = adaptor.getQuery();
    p.k = adaptor.getKey();
    p.v = adaptor.getValue();
    p.keyPadding = adaptor.getKeyPadding();
    p.causal = op.getMask() == MaskKind::causal;
    p.group = attentionGroupSize(p.q, p.k);
    p.element =
        mlir::cast<mlir::RankedTensorType>(p.q.getType()).getElementType();
    p.batches = dimOf(b, loc, p.q, 0);
    p.heads = dimOf(b, loc, p.q, 1);
    p.queries = dimOf(b, loc, p.q, 2);
    p.keys = dimOf(b, loc, p.k, 2);
    p.scale = attentionScale(b, loc, p.element, op.getScale(),
                             dimOf(b, loc, p.q, 3));
    p.rate = op.getDropout().convertToDouble();
    if (adaptor.getSeed() && p.rate > 0) {
      // The seed of the rows of [B, H, T, S] probabilities the call has.
      mlir::Value rowElements = mlir::arith::MulIOp::create(
          b, loc, mlir::arith::MulIOp::create(b, loc, p.heads, p.queries),
          p.keys);
      mlir::Value seed =
          dropoutSeed(b, loc, op, adaptor.getSeed(), rowElements);
      p.dropoutBase =
          dropoutStreamBase(b, loc, seed, op.getStream().value_or(0));
    }
    return p;
  }

  /// delta = rowsum(dO * O) [B, H, T], which equals rowsum(P * dP) under
  /// dropout too.
  mlir::Value rowDelta(mlir::OpBuilder &b, mlir::Location loc, mlir::Value o,
                       mlir::Value dO) const;
};

} // namespace attn

#endif // ATTN_CONVERSION_ATTNTOLINALG_ATTENTIONOPERANDS_H
