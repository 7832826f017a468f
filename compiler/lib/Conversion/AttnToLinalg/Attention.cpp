//===- Attention.cpp - Tiled online-softmax lowering of attn.sdpa ---------===//
//
// Scaled dot-product attention as a flash-attention loop nest: for each batch,
// head and tile of queries, a loop over tiles of keys keeps a running row
// maximum, a running sum of exponentials and a running output accumulator
// (the online softmax), so only a Tq x Tk block of scores ever exists. With a
// causal mask the key loop stops at the last key any query of the tile can
// see, skipping the tiles above the diagonal. A query whose keys are all
// masked gets zeros.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilders.h"

#include <limits>

using namespace mlir;

namespace attn {
namespace {

/// Tile sizes: a 64 x 64 f32 score block is 16 KiB, which stays in L1 next to
/// the query and key tiles.
constexpr int64_t kQueryTile = 64;
constexpr int64_t kKeyTile = 64;

} // namespace

/// A contraction `out[i, j] = sum_k a[map_a] * b[map_b]` over loops
/// (i, j, k) into a fresh zero tensor of `type` with `sizes`.
Value contract(OpBuilder &b, Location loc, Value lhs, Value rhs,
               AffineMap lhsMap, AffineMap rhsMap, RankedTensorType type,
               ArrayRef<OpFoldResult> sizes) {
  MLIRContext *context = b.getContext();
  Value init = filledTensor(b, loc, type, sizes,
                            b.getFloatAttr(type.getElementType(), 0));
  AffineMap outMap = AffineMap::get(
      3, 0, {getAffineDimExpr(0, context), getAffineDimExpr(1, context)},
      context);
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ValueRange{lhs, rhs}, ValueRange{init},
             SmallVector<AffineMap>{lhsMap, rhsMap, outMap},
             SmallVector<utils::IteratorType>{utils::IteratorType::parallel,
                                              utils::IteratorType::parallel,
                                              utils::IteratorType::reduction},
             [](OpBuilder &nb, Location l, ValueRange a) {
               Value product = arith::MulFOp::create(nb, l, a[0], a[1]);
               linalg::YieldOp::create(nb, l,
                                       arith::AddFOp::create(nb, l, a[2], product)
                                           .getResult());
             })
      .getResult(0);
}

Value rowLogsumexp(OpBuilder &b, Location loc, Value max, Value sumExp) {
  auto type = cast<RankedTensorType>(max.getType());
  Value zero = floatConstant(b, loc, type.getElementType(), 0);
  return buildElementwise(
      b, loc, type, {max, sumExp}, [&](OpBuilder &nb, Location l, ValueRange a) {
        Value none =
            arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ, a[1], zero);
        Value lse =
            arith::AddFOp::create(nb, l, a[0], math::LogOp::create(nb, l, a[1]));
        return arith::SelectOp::create(nb, l, none, zero, lse).getResult();
      });
}

/// The [rows, cols] slice at (b, h, row0, 0) of a [B, H, R, C] tensor.
Value tileOf(OpBuilder &b, Location loc, Value tensor, Value batch, Value head,
             Value row0, Value rows) {
  auto type = cast<RankedTensorType>(tensor.getType());
  auto tileType = RankedTensorType::get(
      {ShapedType::kDynamic, type.getDimSize(3)}, type.getElementType());
  SmallVector<OpFoldResult> offsets = {batch, head, row0, b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(1), rows,
                                     tensor::getMixedSize(b, loc, tensor, 3)};
  SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(b, loc, tileType, tensor, offsets,
                                        sizes, strides);
}

Value applyAttentionDropout(OpBuilder &b, Location loc, Value weights,
                            Value base, double rate, Value batch, Value head,
                            Value heads, Value queries, Value keys, Value t0,
                            Value s0) {
  auto type = cast<RankedTensorType>(weights.getType());
  Type element = type.getElementType();
  // The row-major index in [B, H, T, S] of element (i, j) of the block is
  // ((b H + h) T + t0 + i) S + s0 + j.
  Value plane = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, batch, heads), head);
  Value rowBase = arith::MulIOp::create(b, loc, plane, queries);
  Value scale = floatConstant(b, loc, element, 1.0 / (1.0 - rate));
  Value zero = floatConstant(b, loc, element, 0.0);
  return buildElementwise(
      b, loc, type, weights, [&](OpBuilder &nb, Location l, ValueRange a) {
        Value t = arith::AddIOp::create(
            nb, l, arith::AddIOp::create(nb, l, rowBase, t0),
            linalg::IndexOp::create(nb, l, 0));
        Value s = arith::AddIOp::create(nb, l, s0,
                                        linalg::IndexOp::create(nb, l, 1));
        Value index = arith::AddIOp::create(
            nb, l, arith::MulIOp::create(nb, l, t, keys), s);
        Value keep = dropoutKeep(
            nb, l, base,
            arith::IndexCastOp::create(nb, l, nb.getI64Type(), index), rate);
        return arith::SelectOp::create(nb, l, keep,
                                       arith::MulFOp::create(nb, l, a[0], scale),
                                       zero)
            .getResult();
      });
}

namespace {

struct SdpaLowering : OpConversionPattern<SdpaOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SdpaOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    MLIRContext *context = b.getContext();
    Value q = adaptor.getQuery(), k = adaptor.getKey(), v = adaptor.getValue();
    Value keyPadding = adaptor.getKeyPadding();
    bool causal = op.getMask() == MaskKind::causal;
    auto outType = cast<RankedTensorType>(op.getResult().getType());
    Type element = outType.getElementType();
    auto vType = cast<RankedTensorType>(v.getType());

    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value batches = dimOf(b, loc, q, 0), heads = dimOf(b, loc, q, 1);
    Value queries = dimOf(b, loc, q, 2), keys = dimOf(b, loc, k, 2);
    Value headDim = dimOf(b, loc, q, 3);
    Value queryTile = arith::ConstantIndexOp::create(b, loc, kQueryTile);
    Value keyTile = arith::ConstantIndexOp::create(b, loc, kKeyTile);
    // Key s is visible to query t when s <= t + (S - T).
    Value offset = arith::SubIOp::create(b, loc, keys, queries);

    Value scale = attentionScale(b, loc, element, op.getScale(), headDim);
    Value negInf = floatConstant(b, loc, element,
                                 -std::numeric_limits<double>::infinity());
    Value zeroF = floatConstant(b, loc, element, 0);
    // Attention dropout (training entry points): the weights that multiply
    // the values are dropped and rescaled; the softmax's normaliser is not.
    double rate = op.getDropout().convertToDouble();
    Value dropoutBase;
    if (adaptor.getSeed() && rate > 0) {
      Value seed =
          tensor::ExtractOp::create(b, loc, adaptor.getSeed(), ValueRange{});
      dropoutBase = dropoutStreamBase(b, loc, seed, op.getStream().value_or(0));
    }

    SmallVector<OpFoldResult> outSizes = {batches, heads, queries,
                                          tensor::getMixedSize(b, loc, v, 3)};
    SmallVector<Value> results = {
        tensor::EmptyOp::create(b, loc, outSizes, element)};
    // Each query's logsumexp, for sdpa_grad (attn-share-attention-stats).
    bool withLogsumexp = static_cast<bool>(op.getLogsumexp());
    if (withLogsumexp)
      results.push_back(tensor::EmptyOp::create(
          b, loc, ArrayRef<OpFoldResult>(outSizes).drop_back(), element));
    OpFoldResult valueDim = tensor::getMixedSize(b, loc, v, 3);
    auto rowType = RankedTensorType::get({ShapedType::kDynamic}, element);
    auto blockType = RankedTensorType::get(
        {ShapedType::kDynamic, ShapedType::kDynamic}, element);
    auto accType = RankedTensorType::get(
        {ShapedType::kDynamic, vType.getDimSize(3)}, element);

    AffineExpr d0 = getAffineDimExpr(0, context),
               d1 = getAffineDimExpr(1, context),
               d2 = getAffineDimExpr(2, context);
    auto map = [&](ArrayRef<AffineExpr> exprs) {
      return AffineMap::get(3, 0, exprs, context);
    };
    AffineMap rowMap2 = AffineMap::get(2, 0, {d0}, context);
    AffineMap id2 = AffineMap::getMultiDimIdentityMap(2, context);
    SmallVector<utils::IteratorType> par2(2, utils::IteratorType::parallel);

    auto batchLoop = scf::ForOp::create(
        b, loc, zero, batches, one, results,
        [&](OpBuilder &b, Location loc, Value batch, ValueRange outer) {
          auto headLoop = scf::ForOp::create(
              b, loc, zero, heads, one, outer,
              [&](OpBuilder &b, Location loc, Value head, ValueRange headArgs) {
                auto queryLoop = scf::ForOp::create(
                    b, loc, zero, queries, queryTile, headArgs,
                    [&](OpBuilder &b, Location loc, Value t0,
                        ValueRange queryArgs) {
                      Value rows = arith::MinSIOp::create(
                          b, loc, queryTile,
                          arith::SubIOp::create(b, loc, queries, t0));
                      Value qTile = tileOf(b, loc, q, batch, head, t0, rows);
                      Value m0 = filledTensor(
                          b, loc, rowType, {rows},
                          b.getFloatAttr(element,
                                         -std::numeric_limits<double>::infinity()));
                      Value l0 = filledTensor(b, loc, rowType, {rows},
                                              b.getFloatAttr(element, 0));
                      Value acc0 = filledTensor(b, loc, accType,
                                                {rows, valueDim},
                                                b.getFloatAttr(element, 0));
                      // Causal: no query of the tile sees keys past
                      // t0 + rows - 1 + (S - T).
                      Value keyEnd = keys;
                      if (causal) {
                        Value end = arith::AddIOp::create(
                            b, loc, arith::AddIOp::create(b, loc, t0, rows),
                            offset);
                        end = arith::MaxSIOp::create(b, loc, end, zero);
                        keyEnd = arith::MinSIOp::create(b, loc, end, keys);
                      }
                      // Full key tiles have a static width (buildTileLoop).
                      ValueRange keyResults = buildTileLoop(
                          b, loc, keyEnd, keyTile, ValueRange{m0, l0, acc0},
                          [&](OpBuilder &b, Location loc, Value s0, Value cols,
                              ValueRange state) {
                            Value m = state[0], sumExp = state[1], acc = state[2];
                            Value kTile = tileOf(b, loc, k, batch, head, s0, cols);
                            Value vTile = tileOf(b, loc, v, batch, head, s0, cols);
                            // scores[i, j] = q[i] . k[j]
                            Value scores = contract(
                                b, loc, qTile, kTile, map({d0, d2}),
                                map({d1, d2}), blockType, {rows, cols});
                            // Scale and mask.
                            Value init = tensor::EmptyOp::create(
                                b, loc, SmallVector<OpFoldResult>{rows, cols},
                                element);
                            Value masked =
                                linalg::GenericOp::create(
                                    b, loc, TypeRange{blockType},
                                    ValueRange{scores}, ValueRange{init},
                                    SmallVector<AffineMap>{id2, id2}, par2,
                                    [&](OpBuilder &nb, Location l,
                                        ValueRange a) {
                                      Value s = arith::MulFOp::create(
                                          nb, l, a[0], scale);
                                      Value key = arith::AddIOp::create(
                                          nb, l, s0,
                                          linalg::IndexOp::create(nb, l, 1));
                                      Value hidden = arith::ConstantOp::create(
                                          nb, l, nb.getBoolAttr(false));
                                      if (causal) {
                                        Value query = arith::AddIOp::create(
                                            nb, l, t0,
                                            linalg::IndexOp::create(nb, l, 0));
                                        Value limit = arith::AddIOp::create(
                                            nb, l, query, offset);
                                        hidden = arith::CmpIOp::create(
                                            nb, l, arith::CmpIPredicate::sgt,
                                            key, limit);
                                      }
                                      if (keyPadding) {
                                        Value padded = tensor::ExtractOp::create(
                                            nb, l, keyPadding,
                                            ValueRange{batch, key});
                                        hidden = arith::OrIOp::create(
                                            nb, l, hidden, padded);
                                      }
                                      linalg::YieldOp::create(
                                          nb, l,
                                          arith::SelectOp::create(nb, l, hidden,
                                                                  negInf, s)
                                              .getResult());
                                    })
                                    .getResult(0);
                            // Online softmax update.
                            Value tileMax = reduceMax(b, loc, masked, 1);
                            Value mNew = buildElementwise(
                                b, loc, rowType, {m, tileMax},
                                [](OpBuilder &nb, Location l, ValueRange a) {
                                  return arith::MaximumFOp::create(nb, l, a[0],
                                                                   a[1])
                                      .getResult();
                                });
                            // A row with nothing visible yet keeps max -inf;
                            // shift by 0 instead so exp gives 0, not NaN.
                            Value mSafe = buildElementwise(
                                b, loc, rowType, {mNew},
                                [&](OpBuilder &nb, Location l, ValueRange a) {
                                  Value isInf = arith::CmpFOp::create(
                                      nb, l, arith::CmpFPredicate::OEQ, a[0],
                                      negInf);
                                  return arith::SelectOp::create(nb, l, isInf,
                                                                 zeroF, a[0])
                                      .getResult();
                                });
                            Value pInit = tensor::EmptyOp::create(
                                b, loc, SmallVector<OpFoldResult>{rows, cols},
                                element);
                            Value p =
                                linalg::GenericOp::create(
                                    b, loc, TypeRange{blockType},
                                    ValueRange{masked, mSafe}, ValueRange{pInit},
                                    SmallVector<AffineMap>{id2, rowMap2, id2},
                                    par2,
                                    [](OpBuilder &nb, Location l, ValueRange a) {
                                      linalg::YieldOp::create(
                                          nb, l,
                                          math::ExpOp::create(
                                              nb, l,
                                              arith::SubFOp::create(nb, l, a[0],
                                                                    a[1]))
                                              .getResult());
                                    })
                                    .getResult(0);
                            Value correction = buildElementwise(
                                b, loc, rowType, {m, mSafe},
                                [](OpBuilder &nb, Location l, ValueRange a) {
                                  return math::ExpOp::create(
                                             nb, l,
                                             arith::SubFOp::create(nb, l, a[0],
                                                                   a[1]))
                                      .getResult();
                                });
                            Value rowSum = reduceSum(b, loc, p, 1);
                            // The running state is updated in place (the
                            // loop-carried tensors are the generics' outputs),
                            // so bufferisation reuses one buffer per tile.
                            auto updateInPlace = [&](Value state,
                                                     ValueRange inputs,
                                                     AffineMap inputMap,
                                                     ScalarFn fn) {
                              auto type = cast<RankedTensorType>(state.getType());
                              int64_t rank = type.getRank();
                              SmallVector<AffineMap> maps(inputs.size(),
                                                          inputMap);
                              maps.push_back(
                                  AffineMap::getMultiDimIdentityMap(rank, context));
                              SmallVector<utils::IteratorType> iterators(
                                  rank, utils::IteratorType::parallel);
                              return linalg::GenericOp::create(
                                         b, loc, TypeRange{type}, inputs,
                                         ValueRange{state}, maps, iterators,
                                         [&](OpBuilder &nb, Location l,
                                             ValueRange a) {
                                           linalg::YieldOp::create(
                                               nb, l, fn(nb, l, a));
                                         })
                                  .getResult(0);
                            };
                            AffineMap id1 =
                                AffineMap::getMultiDimIdentityMap(1, context);
                            Value mNext = updateInPlace(
                                m, mNew, id1,
                                [](OpBuilder &, Location, ValueRange a) {
                                  return a[0];
                                });
                            // sum = sum * correction + rowsum(p)
                            Value sumNext = updateInPlace(
                                sumExp, {correction, rowSum}, id1,
                                [](OpBuilder &nb, Location l, ValueRange a) {
                                  return arith::AddFOp::create(
                                             nb, l,
                                             arith::MulFOp::create(nb, l, a[2],
                                                                   a[0]),
                                             a[1])
                                      .getResult();
                                });
                            // acc = acc * correction + dropout(p) @ v
                            Value pDropped = p;
                            if (dropoutBase)
                              pDropped = applyAttentionDropout(
                                  b, loc, p, dropoutBase, rate, batch, head,
                                  heads, queries, keys, t0, s0);
                            Value pv = contract(b, loc, pDropped, vTile,
                                                map({d0, d2}),
                                                map({d2, d1}), accType,
                                                {rows, valueDim});
                            Value accNext =
                                linalg::GenericOp::create(
                                    b, loc, TypeRange{accType},
                                    ValueRange{correction, pv}, ValueRange{acc},
                                    SmallVector<AffineMap>{rowMap2, id2, id2},
                                    par2,
                                    [](OpBuilder &nb, Location l, ValueRange a) {
                                      linalg::YieldOp::create(
                                          nb, l,
                                          arith::AddFOp::create(
                                              nb, l,
                                              arith::MulFOp::create(nb, l, a[2],
                                                                    a[0]),
                                              a[1])
                                              .getResult());
                                    })
                                    .getResult(0);
                            scf::YieldOp::create(
                                b, loc, ValueRange{mNext, sumNext, accNext});
                          });
                      Value mFinal = keyResults[0];
                      Value lFinal = keyResults[1];
                      Value accFinal = keyResults[2];
                      Value oInit = tensor::EmptyOp::create(
                          b, loc, SmallVector<OpFoldResult>{rows, valueDim},
                          element);
                      Value oTile =
                          linalg::GenericOp::create(
                              b, loc, TypeRange{accType},
                              ValueRange{accFinal, lFinal}, ValueRange{oInit},
                              SmallVector<AffineMap>{id2, rowMap2, id2}, par2,
                              [&](OpBuilder &nb, Location l, ValueRange a) {
                                Value none = arith::CmpFOp::create(
                                    nb, l, arith::CmpFPredicate::OEQ, a[1],
                                    zeroF);
                                Value quotient =
                                    arith::DivFOp::create(nb, l, a[0], a[1]);
                                linalg::YieldOp::create(
                                    nb, l,
                                    arith::SelectOp::create(nb, l, none, zeroF,
                                                            quotient)
                                        .getResult());
                              })
                              .getResult(0);
                      SmallVector<OpFoldResult> offsets = {
                          batch, head, t0, b.getIndexAttr(0)};
                      SmallVector<OpFoldResult> sizes = {
                          b.getIndexAttr(1), b.getIndexAttr(1), rows, valueDim};
                      SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
                      SmallVector<Value> updated = {tensor::InsertSliceOp::create(
                          b, loc, oTile, queryArgs[0], offsets, sizes, strides)};
                      if (withLogsumexp) {
                        updated.push_back(tensor::InsertSliceOp::create(
                            b, loc, rowLogsumexp(b, loc, mFinal, lFinal),
                            queryArgs[1],
                            ArrayRef<OpFoldResult>(offsets).drop_back(),
                            ArrayRef<OpFoldResult>(sizes).drop_back(),
                            ArrayRef<OpFoldResult>(strides).drop_back()));
                      }
                      scf::YieldOp::create(b, loc, updated);
                    });
                scf::YieldOp::create(b, loc, queryLoop.getResults());
              });
          scf::YieldOp::create(b, loc, headLoop.getResults());
        });
    rewriter.replaceOp(op, castToResults(b, loc, op, batchLoop.getResults()));
    return success();
  }
};

} // namespace

void populateAttentionPatterns(RewritePatternSet &patterns) {
  patterns.add<SdpaLowering>(patterns.getContext());
}

} // namespace attn
