//===- AttentionMaterialized.cpp - attn.sdpa over its whole score matrix --===//
//
// Scaled dot-product attention and its adjoints as whole-tensor linalg ops
// over the [B, H, T, S] scores: the lowering of targets that map every
// parallel loop of a linalg op to threads (the GPU target). There the flash
// loop nests of Attention.cpp and AttentionBackward.cpp would keep their
// batch, head and tile loops on the host, one launch per tile and op; here
// each step is one op over all batches, heads and queries. The price is the
// score matrix in memory (B*H*T*S floats, a few of them in the backward).
//
// The function computed is Attention.cpp's: masked scores are -inf, a query
// with every key masked gets zeros (and logsumexp 0), dropout draws the same
// counter-based mask over the [B, H, T, S] weights. With fewer key/value
// heads than query heads (grouped-query attention, G per key/value head),
// the ops read key and value head h floordiv G for query head h, and the
// adjoints of keys and values reduce over the G query heads of each group
// through [B, H_kv, G, ...] views of the per-query-head tensors.
//
//===----------------------------------------------------------------------===//

#include "AttentionOperands.h"

#include <limits>

using namespace mlir;

namespace attn {
namespace {

/// The loops of a 4-D or 5-D attention op: batch, head, then the op's own.
AffineMap loopMap(MLIRContext *context, unsigned loops,
                  ArrayRef<unsigned> dims) {
  SmallVector<AffineExpr> exprs;
  for (unsigned d : dims)
    exprs.push_back(getAffineDimExpr(d, context));
  return AffineMap::get(loops, 0, exprs, context);
}

/// A generic over `loops` loops writing `init` (its map: the first
/// `init`-rank loops), the loops past that rank being reductions. `fn` gets
/// the inputs' elements and then the output's.
Value generic(OpBuilder &b, Location loc, Value init, ValueRange inputs,
              ArrayRef<AffineMap> inputMaps, unsigned loops, ScalarFn fn) {
  auto type = cast<RankedTensorType>(init.getType());
  unsigned rank = type.getRank();
  SmallVector<AffineMap> maps(inputMaps.begin(), inputMaps.end());
  maps.push_back(loopMap(b.getContext(), loops,
                         llvm::to_vector(llvm::seq<unsigned>(0, rank))));
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  iterators.append(loops - rank, utils::IteratorType::reduction);
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, inputs, ValueRange{init}, maps,
             iterators,
             [&](OpBuilder &nb, Location l, ValueRange a) {
               linalg::YieldOp::create(nb, l, fn(nb, l, a));
             })
      .getResult(0);
}

/// The map of a key or value operand [B, H_kv, ...] in a loop nest whose
/// loop 1 runs over the query heads: `loopMap` with head `d1 floordiv
/// group`.
AffineMap kvLoopMap(MLIRContext *context, unsigned loops,
                    ArrayRef<unsigned> dims, int64_t group) {
  AffineMap map = loopMap(context, loops, dims);
  if (group == 1)
    return map;
  SmallVector<AffineExpr> exprs(map.getResults());
  exprs[1] = exprs[1].floorDiv(group);
  return AffineMap::get(loops, 0, exprs, context);
}

/// `sum over the loops past the result's rank of lhs * rhs`, into a zero
/// tensor of `sizes`.
Value product(OpBuilder &b, Location loc, Type element,
              ArrayRef<OpFoldResult> sizes, Value lhs, AffineMap lhsMap,
              Value rhs, AffineMap rhsMap) {
  auto type = RankedTensorType::get(
      SmallVector<int64_t>(sizes.size(), ShapedType::kDynamic), element);
  Value zeros = filledTensor(b, loc, type, sizes, b.getFloatAttr(element, 0));
  return generic(b, loc, zeros, {lhs, rhs}, {lhsMap, rhsMap},
                 lhsMap.getNumDims(),
                 [](OpBuilder &nb, Location l, ValueRange a) {
                   Value p = arith::MulFOp::create(nb, l, a[0], a[1]);
                   return arith::AddFOp::create(nb, l, a[2], p).getResult();
                 });
}

/// What the forward and the backward share: the operands, sizes, the
/// scaled, masked scores and the dropout mask.
struct AttentionParts : AttentionOperands {
  /// [B, H, T, S] sizes.
  SmallVector<OpFoldResult> scoreSizes() const {
    return {batches, heads, queries, keys};
  }

  template <typename AttentionOp, typename OpAdaptor>
  static AttentionParts get(OpBuilder &b, Location loc, AttentionOp op,
                            OpAdaptor adaptor) {
    return {AttentionOperands::get(b, loc, op, adaptor)};
  }

  /// scale * q k^T, -inf where key s is hidden from query t.
  Value maskedScores(OpBuilder &b, Location loc) const {
    MLIRContext *context = b.getContext();
    Value raw = product(b, loc, element, scoreSizes(), q,
                        loopMap(context, 5, {0, 1, 2, 4}), k,
                        kvLoopMap(context, 5, {0, 1, 3, 4}, group));
    Value negInf = floatConstant(b, loc, element,
                                 -std::numeric_limits<double>::infinity());
    // Key s is visible to query t when s <= t + (S - T).
    Value offset = arith::SubIOp::create(b, loc, keys, queries);
    Value init = tensor::EmptyOp::create(b, loc, scoreSizes(), element);
    return generic(
        b, loc, init, {raw}, {loopMap(context, 4, {0, 1, 2, 3})}, 4,
        [&](OpBuilder &nb, Location l, ValueRange a) {
          Value s = arith::MulFOp::create(nb, l, a[0], scale);
          Value key = linalg::IndexOp::create(nb, l, 3);
          Value hidden = arith::ConstantOp::create(nb, l, nb.getBoolAttr(false));
          if (causal) {
            Value limit = arith::AddIOp::create(
                nb, l, linalg::IndexOp::create(nb, l, 2), offset);
            hidden = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sgt,
                                           key, limit);
          }
          if (keyPadding) {
            Value batch = linalg::IndexOp::create(nb, l, 0);
            Value padded = tensor::ExtractOp::create(nb, l, keyPadding,
                                                     ValueRange{batch, key});
            hidden = arith::OrIOp::create(nb, l, hidden, padded);
          }
          return arith::SelectOp::create(nb, l, hidden, negInf, s).getResult();
        });
  }

  /// Each query's logsumexp over its visible keys (0 when it sees none).
  Value logsumexp(OpBuilder &b, Location loc, Value scores) const {
    Value max = reduceMax(b, loc, scores, 3);
    Value negInf = floatConstant(b, loc, element,
                                 -std::numeric_limits<double>::infinity());
    Value zero = floatConstant(b, loc, element, 0);
    auto rowType = cast<RankedTensorType>(max.getType());
    // A query that sees no key keeps max -inf: shift by 0 so exp gives 0.
    Value safeMax = buildElementwise(
        b, loc, rowType, {max}, [&](OpBuilder &nb, Location l, ValueRange a) {
          Value none = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ,
                                             a[0], negInf);
          return arith::SelectOp::create(nb, l, none, zero, a[0]).getResult();
        });
    Value sumExp = reduceSum(b, loc, shiftedExp(b, loc, scores, safeMax, 3), 3);
    return rowLogsumexp(b, loc, safeMax, sumExp);
  }

  /// The softmax weights exp(scores - logsumexp): 0 where hidden, and for
  /// every key of a query that sees none.
  Value weights(OpBuilder &b, Location loc, Value scores, Value lse) const {
    MLIRContext *context = b.getContext();
    Value init = tensor::EmptyOp::create(b, loc, scoreSizes(), element);
    return generic(b, loc, init, {scores, lse},
                   {loopMap(context, 4, {0, 1, 2, 3}),
                    loopMap(context, 4, {0, 1, 2})},
                   4, [](OpBuilder &nb, Location l, ValueRange a) {
                     return math::ExpOp::create(
                                nb, l, arith::SubFOp::create(nb, l, a[0], a[1]))
                         .getResult();
                   });
  }

  /// The scores' gradient dS = scale P (dP - delta).
  Value scoreGradient(OpBuilder &b, Location loc, Value p, Value dp,
                      Value delta) const {
    MLIRContext *context = b.getContext();
    return generic(
        b, loc, tensor::EmptyOp::create(b, loc, scoreSizes(), element),
        {p, dp, delta},
        {loopMap(context, 4, {0, 1, 2, 3}), loopMap(context, 4, {0, 1, 2, 3}),
         loopMap(context, 4, {0, 1, 2})},
        4, [&](OpBuilder &nb, Location l, ValueRange a) {
          Value diff = arith::SubFOp::create(nb, l, a[1], a[2]);
          Value scaled = arith::MulFOp::create(nb, l, a[0], scale);
          return arith::MulFOp::create(nb, l, scaled, diff).getResult();
        });
  }

  /// The adjoint of keys or values, [B, H_kv, S, C] of `sizes`: `sum_t
  /// weights[b, h, t, s] x[b, h, t, c]` of [B, H, T, S] weights and a [B, H,
  /// T, C] `x`, summed over the G query heads h of each key/value head.
  Value kvAdjoint(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                  Value weights, Value x) const {
    MLIRContext *context = b.getContext();
    if (group == 1)
      return product(b, loc, element, sizes, weights,
                     loopMap(context, 5, {0, 1, 4, 2}), x,
                     loopMap(context, 5, {0, 1, 4, 3}));
    // Loops (b, kv head, s, c, member, t) over [B, H_kv, G, ...] views.
    return product(b, loc, element, sizes, groupHeads(b, loc, weights, group),
                   loopMap(context, 6, {0, 1, 4, 5, 2}),
                   groupHeads(b, loc, x, group),
                   loopMap(context, 6, {0, 1, 4, 5, 3}));
  }

  /// `x` with attention dropout's mask and scale applied (x itself without
  /// dropout): the stream's element ((b H + h) T + t) S + s.
  Value dropout(OpBuilder &b, Location loc, Value x) const {
    if (!dropoutBase)
      return x;
    MLIRContext *context = b.getContext();
    Value keepScale = floatConstant(b, loc, element, 1.0 / (1.0 - rate));
    Value zero = floatConstant(b, loc, element, 0);
    SmallVector<Value> sizes = {batches, heads, queries, keys};
    Value init = tensor::EmptyOp::create(b, loc, scoreSizes(), element);
    return generic(
        b, loc, init, {x}, {loopMap(context, 4, {0, 1, 2, 3})}, 4,
        [&](OpBuilder &nb, Location l, ValueRange a) {
          Value index = linearIndexInBody(nb, l, sizes);
          Value keep = dropoutKeep(nb, l, dropoutBase, index, rate);
          Value kept = arith::MulFOp::create(nb, l, a[0], keepScale);
          return arith::SelectOp::create(nb, l, keep, kept, zero).getResult();
        });
  }
};

} // namespace

Value AttentionOperands::rowDelta(OpBuilder &b, Location loc, Value o,
                                  Value dO) const {
  MLIRContext *context = b.getContext();
  auto rowType = RankedTensorType::get(
      SmallVector<int64_t>(3, ShapedType::kDynamic), element);
  return generic(
      b, loc,
      filledTensor(b, loc, rowType, rowSizes(), b.getFloatAttr(element, 0)),
      {dO, o},
      {loopMap(context, 4, {0, 1, 2, 3}), loopMap(context, 4, {0, 1, 2, 3})},
      4, [](OpBuilder &nb, Location l, ValueRange a) {
        Value prod = arith::MulFOp::create(nb, l, a[0], a[1]);
        return arith::AddFOp::create(nb, l, a[2], prod).getResult();
      });
}

namespace {

struct MaterializedSdpaLowering : OpConversionPattern<SdpaOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SdpaOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    MLIRContext *context = b.getContext();
    AttentionParts parts = AttentionParts::get(b, loc, op, adaptor);
    Value scores = parts.maskedScores(b, loc);
    Value lse = parts.logsumexp(b, loc, scores);
    Value weights = parts.dropout(b, loc, parts.weights(b, loc, scores, lse));
    SmallVector<OpFoldResult> outSizes = parts.rowSizes();
    outSizes.push_back(tensor::getMixedSize(b, loc, parts.v, 3));
    // out[b, h, t, e] = sum_s weights[b, h, t, s] v[b, h / G, s, e]
    SmallVector<Value> results = {
        product(b, loc, parts.element, outSizes, weights,
                loopMap(context, 5, {0, 1, 2, 4}), parts.v,
                kvLoopMap(context, 5, {0, 1, 4, 3}, parts.group))};
    if (op.getLogsumexp())
      results.push_back(lse);
    rewriter.replaceOp(op, castToResults(b, loc, op, results));
    return success();
  }
};

struct MaterializedSdpaGradLowering : OpConversionPattern<SdpaGradOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SdpaGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    MLIRContext *context = b.getContext();
    AttentionParts parts = AttentionParts::get(b, loc, op, adaptor);
    Value o = adaptor.getOutput(), dO = adaptor.getGradOutput();
    Type element = parts.element;
    Value scores = parts.maskedScores(b, loc);
    Value lse = adaptor.getLogsumexp();
    if (!lse)
      lse = parts.logsumexp(b, loc, scores);
    Value p = parts.weights(b, loc, scores, lse);
    Value pDropped = parts.dropout(b, loc, p);
    auto sizesOf = [&](Value like) {
      return tensor::getMixedSizes(b, loc, like);
    };
    // dV[b, h, s, e] = sum_t dropout(P)[b, h, t, s] dO[b, h, t, e]
    Value dv = parts.kvAdjoint(b, loc, sizesOf(parts.v), pDropped, dO);
    // dP = dropout'(dO v^T): the same mask and scale.
    Value dp = parts.dropout(
        b, loc,
        product(b, loc, element, parts.scoreSizes(), dO,
                loopMap(context, 5, {0, 1, 2, 4}), parts.v,
                kvLoopMap(context, 5, {0, 1, 3, 4}, parts.group)));
    Value delta = parts.rowDelta(b, loc, o, dO);
    Value ds = parts.scoreGradient(b, loc, p, dp, delta);
    // dQ[b, h, t, d] = sum_s dS[b, h, t, s] k[b, h / G, s, d]
    Value dq = product(b, loc, element, sizesOf(parts.q), ds,
                       loopMap(context, 5, {0, 1, 2, 4}), parts.k,
                       kvLoopMap(context, 5, {0, 1, 4, 3}, parts.group));
    // dK[b, h, s, d] = sum_t dS[b, h, t, s] q[b, h, t, d]
    Value dk = parts.kvAdjoint(b, loc, sizesOf(parts.k), ds, parts.q);
    rewriter.replaceOp(op, castToResults(b, loc, op, {dq, dk, dv}));
    return success();
  }
};

} // namespace

void populateMaterializedAttentionPatterns(RewritePatternSet &patterns) {
  patterns.add<MaterializedSdpaLowering, MaterializedSdpaGradLowering>(
      patterns.getContext());
}

} // namespace attn
