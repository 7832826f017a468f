//===- AttentionBackward.cpp - Tiled flash-attention backward -------------===//
//
// `attn.sdpa_grad` as the flash-attention backward pass: no T x S matrix
// exists, the scores are recomputed tile by tile. Per batch and head:
//
//  1. For each tile of queries, delta = rowsum(dO * O), which equals
//     rowsum(P * dP) also under dropout because O is the dropped-out output,
//     and, unless the op has the forward's as its `logsumexp` operand, an
//     online pass over the key tiles gives each query's logsumexp L (0 for a
//     query with every key masked, whose weights are then all 0).
//  2. For each tile of keys (outer), with dK and dV accumulators of the tile,
//     and each tile of queries that can see it (inner; causal tiles wholly
//     above the diagonal are skipped): P = exp(scale q k^T - L) (0 where
//     masked), dV += dropout(P)^T dO, dP = dropout'(dO v^T), dS = scale P (dP
//     - delta), dK += dS^T q and dQ[tile] += dS k.
//
// Dropout recomputes the forward's mask from the same (seed, stream) and the
// [B, H, T, S] index of each weight (Attention.cpp, abi.h).
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilders.h"

#include <limits>

using namespace mlir;

namespace attn {
namespace {

constexpr int64_t kQueryTile = 64;
constexpr int64_t kKeyTile = 64;

/// `acc[i, j] += sum_k lhs[lhsMap] * rhs[rhsMap]` over loops (i, j, k). A
/// left operand read transposed ((k, i): the P^T dO and dS^T Q products)
/// stays as it is: `attn-matmul-to-vector` has kernels for an A stored
/// [K, M] (`t?`), which copy each register tile's rows into a panel as they
/// go; that measured 5-15 % faster for the whole backward than a separate
/// transposed copy of the block.
Value contractInto(OpBuilder &b, Location loc, Value lhs, Value rhs,
                   AffineMap lhsMap, AffineMap rhsMap, Value acc) {
  MLIRContext *context = b.getContext();
  AffineMap outMap = AffineMap::get(
      3, 0, {getAffineDimExpr(0, context), getAffineDimExpr(1, context)},
      context);
  return linalg::GenericOp::create(
             b, loc, TypeRange{acc.getType()}, ValueRange{lhs, rhs},
             ValueRange{acc}, SmallVector<AffineMap>{lhsMap, rhsMap, outMap},
             SmallVector<utils::IteratorType>{utils::IteratorType::parallel,
                                              utils::IteratorType::parallel,
                                              utils::IteratorType::reduction},
             [](OpBuilder &nb, Location l, ValueRange a) {
               Value product = arith::MulFOp::create(nb, l, a[0], a[1]);
               linalg::YieldOp::create(
                   nb, l, arith::AddFOp::create(nb, l, a[2], product).getResult());
             })
      .getResult(0);
}

/// An element-wise generic over a [rows, cols] block reading `inputs` with
/// `maps` (2-D maps: the identity, or (d0) for per-row values).
Value blockwise(OpBuilder &b, Location loc, Type element,
                ArrayRef<OpFoldResult> sizes, ValueRange inputs,
                ArrayRef<AffineMap> maps, ScalarFn fn) {
  auto type = RankedTensorType::get(
      SmallVector<int64_t>(sizes.size(), ShapedType::kDynamic), element);
  Value init = tensor::EmptyOp::create(b, loc, sizes, element);
  SmallVector<AffineMap> allMaps(maps.begin(), maps.end());
  allMaps.push_back(b.getMultiDimIdentityMap(sizes.size()));
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, inputs, ValueRange{init}, allMaps,
             SmallVector<utils::IteratorType>(sizes.size(),
                                              utils::IteratorType::parallel),
             [&](OpBuilder &nb, Location l, ValueRange a) {
               linalg::YieldOp::create(nb, l, fn(nb, l, a.drop_back()));
             })
      .getResult(0);
}

/// Writes a [rows, C] tile into (batch, head, row0, 0) of a [B, H, R, C]
/// tensor.
Value insertTile(OpBuilder &b, Location loc, Value tile, Value into,
                 Value batch, Value head, Value row0, Value rows) {
  SmallVector<OpFoldResult> offsets = {batch, head, row0, b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(1), rows,
                                     tensor::getMixedSize(b, loc, into, 3)};
  SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
  return tensor::InsertSliceOp::create(b, loc, tile, into, offsets, sizes,
                                       strides);
}

Value slice1D(OpBuilder &b, Location loc, Value vector, Value offset,
              Value size) {
  auto type = cast<RankedTensorType>(vector.getType());
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({ShapedType::kDynamic}, type.getElementType()),
      vector, ArrayRef<OpFoldResult>{offset}, ArrayRef<OpFoldResult>{size},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
}

struct SdpaGradLowering : OpConversionPattern<SdpaGradOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SdpaGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    MLIRContext *context = b.getContext();
    Value q = adaptor.getQuery(), k = adaptor.getKey(), v = adaptor.getValue();
    Value o = adaptor.getOutput(), dO = adaptor.getGradOutput();
    Value forwardLse = adaptor.getLogsumexp();
    Value keyPadding = adaptor.getKeyPadding();
    bool causal = op.getMask() == MaskKind::causal;
    auto qType = cast<RankedTensorType>(q.getType());
    Type element = qType.getElementType();

    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value batches = dimOf(b, loc, q, 0), heads = dimOf(b, loc, q, 1);
    Value queries = dimOf(b, loc, q, 2), keys = dimOf(b, loc, k, 2);
    Value queryTile = arith::ConstantIndexOp::create(b, loc, kQueryTile);
    Value keyTile = arith::ConstantIndexOp::create(b, loc, kKeyTile);
    // Key s is visible to query t when s <= t + (S - T).
    Value offset = arith::SubIOp::create(b, loc, keys, queries);
    Value scale =
        attentionScale(b, loc, element, op.getScale(), dimOf(b, loc, q, 3));
    double inf = std::numeric_limits<double>::infinity();
    Value negInf = floatConstant(b, loc, element, -inf);
    Value zeroF = floatConstant(b, loc, element, 0);
    double rate = op.getDropout().convertToDouble();
    Value dropoutBase;
    if (adaptor.getSeed() && rate > 0) {
      Value seed =
          tensor::ExtractOp::create(b, loc, adaptor.getSeed(), ValueRange{});
      dropoutBase = dropoutStreamBase(b, loc, seed, op.getStream().value_or(0));
    }

    AffineExpr d0 = getAffineDimExpr(0, context),
               d1 = getAffineDimExpr(1, context),
               d2 = getAffineDimExpr(2, context);
    auto map3 = [&](ArrayRef<AffineExpr> exprs) {
      return AffineMap::get(3, 0, exprs, context);
    };
    AffineMap id2 = AffineMap::getMultiDimIdentityMap(2, context);
    AffineMap rowMap = AffineMap::get(2, 0, {d0}, context);
    auto rowType = RankedTensorType::get({ShapedType::kDynamic}, element);
    auto blockType = RankedTensorType::get(
        {ShapedType::kDynamic, ShapedType::kDynamic}, element);
    OpFoldResult headDim = tensor::getMixedSize(b, loc, q, 3);
    OpFoldResult valueDim = tensor::getMixedSize(b, loc, v, 3);
    auto tileType = [&](Value like) {
      auto t = cast<RankedTensorType>(like.getType());
      return RankedTensorType::get({ShapedType::kDynamic, t.getDimSize(3)},
                                   element);
    };

    // Whether key (s0 + j) is hidden from query (t0 + i), in a block body.
    auto hiddenAt = [&](OpBuilder &nb, Location l, Value batch, Value t0,
                        Value s0) -> Value {
      Value key = arith::AddIOp::create(nb, l, s0, linalg::IndexOp::create(nb, l, 1));
      Value hidden = arith::ConstantOp::create(nb, l, nb.getBoolAttr(false));
      if (causal) {
        Value query =
            arith::AddIOp::create(nb, l, t0, linalg::IndexOp::create(nb, l, 0));
        hidden = arith::CmpIOp::create(
            nb, l, arith::CmpIPredicate::sgt, key,
            arith::AddIOp::create(nb, l, query, offset));
      }
      if (keyPadding)
        hidden = arith::OrIOp::create(
            nb, l, hidden,
            tensor::ExtractOp::create(nb, l, keyPadding, ValueRange{batch, key}));
      return hidden;
    };
    // Causal: no query of the tile [t0, t0 + rows) sees keys past
    // t0 + rows - 1 + (S - T).
    auto keyEndFor = [&](OpBuilder &nb, Location l, Value t0, Value rows) {
      if (!causal)
        return keys;
      Value end = arith::AddIOp::create(
          nb, l, arith::AddIOp::create(nb, l, t0, rows), offset);
      end = arith::MaxSIOp::create(nb, l, end, zero);
      return arith::MinSIOp::create(nb, l, end, keys).getResult();
    };

    SmallVector<OpFoldResult> qSizes = tensor::getMixedSizes(b, loc, q);
    SmallVector<OpFoldResult> kSizes = tensor::getMixedSizes(b, loc, k);
    SmallVector<OpFoldResult> vSizes = tensor::getMixedSizes(b, loc, v);
    Value dq0 = filledTensor(b, loc, qType, qSizes, b.getFloatAttr(element, 0));
    Value dk0 = tensor::EmptyOp::create(b, loc, kSizes, element);
    Value dv0 = tensor::EmptyOp::create(b, loc, vSizes, element);

    auto batchLoop = scf::ForOp::create(
        b, loc, zero, batches, one, ValueRange{dq0, dk0, dv0},
        [&](OpBuilder &b, Location loc, Value batch, ValueRange outer) {
          auto headLoop = scf::ForOp::create(
              b, loc, zero, heads, one, outer,
              [&](OpBuilder &b, Location loc, Value head, ValueRange grads) {
                // Pass 1: delta (and, without the forward's, logsumexp) of
                // every query.
                SmallVector<Value> stats0 = {tensor::EmptyOp::create(
                    b, loc, SmallVector<OpFoldResult>{queries}, element)};
                if (!forwardLse)
                  stats0.push_back(tensor::EmptyOp::create(
                      b, loc, SmallVector<OpFoldResult>{queries}, element));
                auto statsLoop = scf::ForOp::create(
                    b, loc, zero, queries, queryTile, stats0,
                    [&](OpBuilder &b, Location loc, Value t0, ValueRange stats) {
                      Value rows = arith::MinSIOp::create(
                          b, loc, queryTile,
                          arith::SubIOp::create(b, loc, queries, t0));
                      auto insert1D = [&](Value tile, Value into) {
                        return tensor::InsertSliceOp::create(
                                   b, loc, tile, into, ArrayRef<OpFoldResult>{t0},
                                   ArrayRef<OpFoldResult>{rows},
                                   ArrayRef<OpFoldResult>{b.getIndexAttr(1)})
                            .getResult();
                      };
                      // delta = rowsum(dO * O).
                      Value oTile = tileOf(b, loc, o, batch, head, t0, rows);
                      Value doTile = tileOf(b, loc, dO, batch, head, t0, rows);
                      Value deltaInit = filledTensor(b, loc, rowType, {rows},
                                                     b.getFloatAttr(element, 0));
                      Value deltaTile =
                          linalg::GenericOp::create(
                              b, loc, TypeRange{rowType}, ValueRange{oTile, doTile},
                              ValueRange{deltaInit},
                              SmallVector<AffineMap>{id2, id2, rowMap},
                              SmallVector<utils::IteratorType>{
                                  utils::IteratorType::parallel,
                                  utils::IteratorType::reduction},
                              [](OpBuilder &nb, Location l, ValueRange a) {
                                linalg::YieldOp::create(
                                    nb, l,
                                    arith::AddFOp::create(
                                        nb, l, a[2],
                                        arith::MulFOp::create(nb, l, a[0], a[1]))
                                        .getResult());
                              })
                              .getResult(0);
                      SmallVector<Value> next = {insert1D(deltaTile, stats[0])};
                      if (forwardLse) {
                        scf::YieldOp::create(b, loc, next);
                        return;
                      }
                      Value qTile = tileOf(b, loc, q, batch, head, t0, rows);
                      Value m0 = filledTensor(b, loc, rowType, {rows},
                                              b.getFloatAttr(element, -inf));
                      Value l0 = filledTensor(b, loc, rowType, {rows},
                                              b.getFloatAttr(element, 0));
                      Value keyEnd = keyEndFor(b, loc, t0, rows);
                      // Full key tiles have a static width (buildTileLoop),
                      // so their element-wise ops vectorise without masks.
                      ValueRange keyResults = buildTileLoop(
                          b, loc, keyEnd, keyTile, ValueRange{m0, l0},
                          [&](OpBuilder &b, Location loc, Value s0, Value cols,
                              ValueRange state) {
                            Value kTile = tileOf(b, loc, k, batch, head, s0, cols);
                            Value scores = contract(b, loc, qTile, kTile,
                                                    map3({d0, d2}), map3({d1, d2}),
                                                    blockType, {rows, cols});
                            Value masked = blockwise(
                                b, loc, element, {rows, cols}, scores, {id2},
                                [&](OpBuilder &nb, Location l, ValueRange a) {
                                  Value s = arith::MulFOp::create(nb, l, a[0], scale);
                                  return arith::SelectOp::create(
                                             nb, l, hiddenAt(nb, l, batch, t0, s0),
                                             negInf, s)
                                      .getResult();
                                });
                            Value tileMax = reduceMax(b, loc, masked, 1);
                            // The new running maximum, and the one to shift
                            // by (0 while nothing is visible).
                            Value mNew = buildElementwise(
                                b, loc, rowType, {state[0], tileMax},
                                [](OpBuilder &nb, Location l, ValueRange a) {
                                  return arith::MaximumFOp::create(nb, l, a[0], a[1])
                                      .getResult();
                                });
                            Value mSafe = buildElementwise(
                                b, loc, rowType, mNew,
                                [&](OpBuilder &nb, Location l, ValueRange a) {
                                  Value isInf = arith::CmpFOp::create(
                                      nb, l, arith::CmpFPredicate::OEQ, a[0], negInf);
                                  return arith::SelectOp::create(nb, l, isInf,
                                                                 zeroF, a[0])
                                      .getResult();
                                });
                            // sum(exp(masked - mSafe)) per row, fused.
                            Value sumInit = filledTensor(b, loc, rowType, {rows},
                                                         b.getFloatAttr(element, 0));
                            Value rowSum =
                                linalg::GenericOp::create(
                                    b, loc, TypeRange{rowType},
                                    ValueRange{masked, mSafe}, ValueRange{sumInit},
                                    SmallVector<AffineMap>{id2, rowMap, rowMap},
                                    SmallVector<utils::IteratorType>{
                                        utils::IteratorType::parallel,
                                        utils::IteratorType::reduction},
                                    [](OpBuilder &nb, Location l, ValueRange a) {
                                      Value e = math::ExpOp::create(
                                          nb, l,
                                          arith::SubFOp::create(nb, l, a[0], a[1]));
                                      linalg::YieldOp::create(
                                          nb, l,
                                          arith::AddFOp::create(nb, l, a[2], e)
                                              .getResult());
                                    })
                                    .getResult(0);
                            Value lNext = buildElementwise(
                                b, loc, rowType, {state[0], mSafe, state[1], rowSum},
                                [](OpBuilder &nb, Location l, ValueRange a) {
                                  Value correction = math::ExpOp::create(
                                      nb, l, arith::SubFOp::create(nb, l, a[0], a[1]));
                                  return arith::AddFOp::create(
                                             nb, l,
                                             arith::MulFOp::create(nb, l, a[2],
                                                                   correction),
                                             a[3])
                                      .getResult();
                                });
                            scf::YieldOp::create(b, loc, ValueRange{mNew, lNext});
                          });
                      next.push_back(insert1D(
                          rowLogsumexp(b, loc, keyResults[0], keyResults[1]),
                          stats[1]));
                      scf::YieldOp::create(b, loc, next);
                    });
                Value delta = statsLoop.getResult(0);
                // This head's row of the forward's [B, H, T] logsumexp.
                Value lse =
                    forwardLse
                        ? tensor::ExtractSliceOp::create(
                              b, loc, rowType, forwardLse,
                              ArrayRef<OpFoldResult>{batch, head,
                                                     b.getIndexAttr(0)},
                              ArrayRef<OpFoldResult>{b.getIndexAttr(1),
                                                     b.getIndexAttr(1),
                                                     queries},
                              SmallVector<OpFoldResult>(3, b.getIndexAttr(1)))
                              .getResult()
                        : statsLoop.getResult(1);

                // Pass 2: key tiles outside, query tiles inside.
                auto keyLoop = scf::ForOp::create(
                    b, loc, zero, keys, keyTile, grads,
                    [&](OpBuilder &b, Location loc, Value s0, ValueRange acc) {
                      Value cols = arith::MinSIOp::create(
                          b, loc, keyTile, arith::SubIOp::create(b, loc, keys, s0));
                      Value kTile = tileOf(b, loc, k, batch, head, s0, cols);
                      Value vTile = tileOf(b, loc, v, batch, head, s0, cols);
                      Value dkTile0 = filledTensor(b, loc, tileType(k),
                                                   {cols, headDim},
                                                   b.getFloatAttr(element, 0));
                      Value dvTile0 = filledTensor(b, loc, tileType(v),
                                                   {cols, valueDim},
                                                   b.getFloatAttr(element, 0));
                      // Causal: queries before s0 - (S - T) see none of the
                      // tile; start at the query tile holding the first that
                      // does.
                      Value queryStart = zero;
                      if (causal) {
                        Value first = arith::MaxSIOp::create(
                            b, loc, arith::SubIOp::create(b, loc, s0, offset),
                            zero);
                        queryStart = arith::MulIOp::create(
                            b, loc,
                            arith::DivUIOp::create(b, loc, first, queryTile),
                            queryTile);
                      }
                      auto queryLoop = scf::ForOp::create(
                          b, loc, queryStart, queries, queryTile,
                          ValueRange{dkTile0, dvTile0, acc[0]},
                          [&](OpBuilder &b, Location loc, Value t0,
                              ValueRange state) {
                            Value rows = arith::MinSIOp::create(
                                b, loc, queryTile,
                                arith::SubIOp::create(b, loc, queries, t0));
                            Value qTile = tileOf(b, loc, q, batch, head, t0, rows);
                            Value doTile = tileOf(b, loc, dO, batch, head, t0, rows);
                            Value lseTile = slice1D(b, loc, lse, t0, rows);
                            Value deltaTile = slice1D(b, loc, delta, t0, rows);
                            Value scores = contract(b, loc, qTile, kTile,
                                                    map3({d0, d2}), map3({d1, d2}),
                                                    blockType, {rows, cols});
                            // P = exp(scale s - L), 0 where masked.
                            Value p = blockwise(
                                b, loc, element, {rows, cols},
                                ValueRange{scores, lseTile}, {id2, rowMap},
                                [&](OpBuilder &nb, Location l, ValueRange a) {
                                  Value s = arith::MulFOp::create(nb, l, a[0], scale);
                                  Value e = math::ExpOp::create(
                                      nb, l, arith::SubFOp::create(nb, l, s, a[1]));
                                  return arith::SelectOp::create(
                                             nb, l, hiddenAt(nb, l, batch, t0, s0),
                                             zeroF, e)
                                      .getResult();
                                });
                            Value pDropped = p;
                            if (dropoutBase)
                              pDropped = applyAttentionDropout(
                                  b, loc, p, dropoutBase, rate, batch, head,
                                  heads, queries, keys, t0, s0);
                            // dV += dropout(P)^T dO
                            Value dvNext = contractInto(b, loc, pDropped, doTile,
                                                        map3({d2, d0}),
                                                        map3({d2, d1}), state[1]);
                            // dP = dropout'(dO v^T); dS = scale P (dP - delta)
                            Value dpDropped = contract(b, loc, doTile, vTile,
                                                       map3({d0, d2}),
                                                       map3({d1, d2}), blockType,
                                                       {rows, cols});
                            Value dpKept = dpDropped;
                            if (dropoutBase)
                              dpKept = applyAttentionDropout(
                                  b, loc, dpDropped, dropoutBase, rate, batch,
                                  head, heads, queries, keys, t0, s0);
                            Value ds = blockwise(
                                b, loc, element, {rows, cols},
                                ValueRange{p, dpKept, deltaTile},
                                {id2, id2, rowMap},
                                [&](OpBuilder &nb, Location l, ValueRange a) {
                                  Value diff = arith::SubFOp::create(nb, l, a[1], a[2]);
                                  return arith::MulFOp::create(
                                             nb, l,
                                             arith::MulFOp::create(nb, l, a[0], diff),
                                             scale)
                                      .getResult();
                                });
                            // dK += dS^T q
                            Value dkNext = contractInto(b, loc, ds, qTile,
                                                        map3({d2, d0}),
                                                        map3({d2, d1}), state[0]);
                            // dQ[tile] += dS k
                            Value dqTile = tileOf(b, loc, state[2], batch, head,
                                                  t0, rows);
                            Value dqSum = contractInto(b, loc, ds, kTile,
                                                       map3({d0, d2}),
                                                       map3({d2, d1}), dqTile);
                            Value dqNext = insertTile(b, loc, dqSum, state[2],
                                                      batch, head, t0, rows);
                            scf::YieldOp::create(b, loc,
                                                 ValueRange{dkNext, dvNext, dqNext});
                          });
                      Value dkAll = insertTile(b, loc, queryLoop.getResult(0),
                                               acc[1], batch, head, s0, cols);
                      Value dvAll = insertTile(b, loc, queryLoop.getResult(1),
                                               acc[2], batch, head, s0, cols);
                      scf::YieldOp::create(
                          b, loc,
                          ValueRange{queryLoop.getResult(2), dkAll, dvAll});
                    });
                scf::YieldOp::create(b, loc, keyLoop.getResults());
              });
          scf::YieldOp::create(b, loc, headLoop.getResults());
        });
    rewriter.replaceOp(op, castToResults(b, loc, op, batchLoop.getResults()));
    return success();
  }
};

} // namespace

void populateAttentionBackwardPatterns(RewritePatternSet &patterns) {
  patterns.add<SdpaGradLowering>(patterns.getContext());
}

} // namespace attn
