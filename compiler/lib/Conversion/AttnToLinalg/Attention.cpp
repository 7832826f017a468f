//===- Attention.cpp - Tiled online-softmax lowering of attn.sdpa ---------===//
//
// Scaled dot-product attention as a flash-attention loop nest: for each batch,
// head and tile of queries, a loop over tiles of keys keeps a running row
// maximum, a running sum of exponentials and a running output accumulator
// (the online softmax), so only a Tq x Tk block of scores ever exists. With a
// causal mask the key loop stops at the last key any query of the tile can
// see, skipping the tiles above the diagonal. A query whose keys are all
// masked gets zeros. With fewer key/value heads than query heads
// (grouped-query attention), query head h reads the key and value tiles of
// head h floordiv (H / H_kv): the heads of a group are consecutive
// iterations of the head loop, so their key/value head stays in cache and no
// copy of it per query head exists.
//
//===----------------------------------------------------------------------===//

#include "AttentionOperands.h"

#include <limits>

using namespace mlir;

namespace attn {

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

/// One tile of queries, rows [t0, t0 + rows) of (batch, head), its slice of
/// `q`, and the key/value head the query head reads.
struct QueryTile {
  Value batch, head, t0, rows, q, kvHead;
};

/// The online softmax's running state of a query tile: each row's maximum
/// score, its sum of exp(score - max) and its unnormalised output.
struct SoftmaxState {
  Value max, sum, acc;
};

/// What one key tile's online-softmax step gives the output accumulation:
/// the block's exp(score - new max), each row's correction exp(old max - new
/// max), and the running maximum and sum after the block.
struct SoftmaxStep {
  Value p, correction, max, sum;
};

/// `state` updated in place by an element-wise generic over its shape: the
/// running state is the generic's output (so bufferisation reuses one buffer
/// per tile), `inputs` read with `inputMap`; `fn` gets the inputs' elements,
/// then the state's.
Value updateInPlace(OpBuilder &b, Location loc, Value state, ValueRange inputs,
                    AffineMap inputMap, ScalarFn fn) {
  auto type = cast<RankedTensorType>(state.getType());
  int64_t rank = type.getRank();
  SmallVector<AffineMap> maps(inputs.size(), inputMap);
  maps.push_back(AffineMap::getMultiDimIdentityMap(rank, b.getContext()));
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, inputs, ValueRange{state}, maps,
             iterators,
             [&](OpBuilder &nb, Location l, ValueRange a) {
               linalg::YieldOp::create(nb, l, fn(nb, l, a));
             })
      .getResult(0);
}

/// The stages of one `attn.sdpa`'s loop nest and the values they all read:
/// the operands, their sizes and the constants, built once in front of the
/// nest.
struct TiledSdpa : AttentionOperands {
  MLIRContext *context;
  Value zero, one, queryTile, keyTile;
  /// Key s is visible to query t when s <= t + offset (offset = S - T).
  Value offset;
  Value negInf, zeroF;
  /// The empty output (and logsumexp) tensors the nest fills tile by tile.
  SmallVector<Value> outputs;
  bool withLogsumexp;
  OpFoldResult valueDim;
  RankedTensorType rowType, blockType, accType;

  /// Builds the values in front of the nest.
  static TiledSdpa create(OpBuilder &b, Location loc, SdpaOp op,
                          SdpaOp::Adaptor adaptor, AttentionTiles tiles);

  /// The (i, j, k) loops' map reading `exprs`.
  AffineMap map3(ArrayRef<AffineExpr> exprs) const {
    return AffineMap::get(3, 0, exprs, context);
  }
  AffineExpr dim(unsigned i) const { return getAffineDimExpr(i, context); }
  /// A [rows, cols] block's identity map and its per-row (d0) map.
  AffineMap id2() const {
    return AffineMap::getMultiDimIdentityMap(2, context);
  }
  AffineMap rowMap2() const { return AffineMap::get(2, 0, {dim(0)}, context); }
  static SmallVector<utils::IteratorType> par2() {
    return SmallVector<utils::IteratorType>(2, utils::IteratorType::parallel);
  }

  // The stages and their helpers, each described where it is defined.
  ValueRange buildLoopNest(OpBuilder &b, Location loc) const;
  SmallVector<Value> buildQueryTile(OpBuilder &b, Location loc, Value batch,
                                    Value head, Value t0,
                                    ValueRange outputs) const;
  Value causalKeyEnd(OpBuilder &b, Location loc, Value t0, Value rows) const;
  void buildKeyTile(OpBuilder &b, Location loc, const QueryTile &tile, Value s0,
                    Value cols, ValueRange state) const;
  Value maskedScores(OpBuilder &b, Location loc, const QueryTile &tile,
                     Value kTile, Value s0, Value cols) const;
  SoftmaxStep onlineSoftmax(OpBuilder &b, Location loc, const QueryTile &tile,
                            Value masked, const SoftmaxState &state,
                            Value cols) const;
  Value accumulateOutput(OpBuilder &b, Location loc, const QueryTile &tile,
                         Value s0, const SoftmaxStep &step, Value vTile,
                         Value acc) const;
  Value normalizeOutput(OpBuilder &b, Location loc, const QueryTile &tile,
                        Value acc, Value sum) const;
  SmallVector<Value> writeQueryTile(OpBuilder &b, Location loc,
                                    const QueryTile &tile, Value out,
                                    const SoftmaxState &state,
                                    ValueRange outputs) const;
};

TiledSdpa TiledSdpa::create(OpBuilder &b, Location loc, SdpaOp op,
                            SdpaOp::Adaptor adaptor, AttentionTiles tiles) {
  TiledSdpa s;
  // Attention dropout (training entry points) drops and rescales the
  // weights that multiply the values, not the softmax's normaliser.
  static_cast<AttentionOperands &>(s) =
      AttentionOperands::get(b, loc, op, adaptor);
  s.context = b.getContext();
  s.zero = arith::ConstantIndexOp::create(b, loc, 0);
  s.one = arith::ConstantIndexOp::create(b, loc, 1);
  s.queryTile = arith::ConstantIndexOp::create(b, loc, tiles.query);
  s.keyTile = arith::ConstantIndexOp::create(b, loc, tiles.key);
  s.offset = arith::SubIOp::create(b, loc, s.keys, s.queries);
  s.negInf = floatConstant(b, loc, s.element,
                           -std::numeric_limits<double>::infinity());
  s.zeroF = floatConstant(b, loc, s.element, 0);

  SmallVector<OpFoldResult> outSizes = {s.batches, s.heads, s.queries,
                                        tensor::getMixedSize(b, loc, s.v, 3)};
  s.outputs = {tensor::EmptyOp::create(b, loc, outSizes, s.element)};
  // Each query's logsumexp, for sdpa_grad (attn-share-attention-stats).
  s.withLogsumexp = static_cast<bool>(op.getLogsumexp());
  if (s.withLogsumexp)
    s.outputs.push_back(tensor::EmptyOp::create(
        b, loc, ArrayRef<OpFoldResult>(outSizes).drop_back(), s.element));
  s.valueDim = tensor::getMixedSize(b, loc, s.v, 3);
  s.rowType = RankedTensorType::get({ShapedType::kDynamic}, s.element);
  s.blockType = RankedTensorType::get(
      {ShapedType::kDynamic, ShapedType::kDynamic}, s.element);
  s.accType = RankedTensorType::get(
      {ShapedType::kDynamic,
       cast<RankedTensorType>(s.v.getType()).getDimSize(3)},
      s.element);
  return s;
}

/// The loops over batches, heads and query tiles, carrying the outputs;
/// returns their final values.
ValueRange TiledSdpa::buildLoopNest(OpBuilder &b, Location loc) const {
  auto batchLoop = scf::ForOp::create(
      b, loc, zero, batches, one, outputs,
      [&](OpBuilder &b, Location loc, Value batch, ValueRange outer) {
        auto headLoop = scf::ForOp::create(
            b, loc, zero, heads, one, outer,
            [&](OpBuilder &b, Location loc, Value head, ValueRange headArgs) {
              auto queryLoop = scf::ForOp::create(
                  b, loc, zero, queries, queryTile, headArgs,
                  [&](OpBuilder &b, Location loc, Value t0,
                      ValueRange queryArgs) {
                    scf::YieldOp::create(
                        b, loc,
                        buildQueryTile(b, loc, batch, head, t0, queryArgs));
                  });
              scf::YieldOp::create(b, loc, queryLoop.getResults());
            });
        scf::YieldOp::create(b, loc, headLoop.getResults());
      });
  return batchLoop.getResults();
}

/// One query tile: the online softmax over the key tiles it can see, then its
/// normalised output (and logsumexp) written into `outputs`.
SmallVector<Value> TiledSdpa::buildQueryTile(OpBuilder &b, Location loc,
                                             Value batch, Value head, Value t0,
                                             ValueRange outputs) const {
  Value rows = arith::MinSIOp::create(
      b, loc, queryTile, arith::SubIOp::create(b, loc, queries, t0));
  QueryTile tile{batch,
                 head,
                 t0,
                 rows,
                 tileOf(b, loc, q, batch, head, t0, rows),
                 kvHeadOf(b, loc, head, group)};
  Value m0 = filledTensor(
      b, loc, rowType, {rows},
      b.getFloatAttr(element, -std::numeric_limits<double>::infinity()));
  Value l0 = filledTensor(b, loc, rowType, {rows}, b.getFloatAttr(element, 0));
  Value acc0 = filledTensor(b, loc, accType, {rows, valueDim},
                            b.getFloatAttr(element, 0));
  Value keyEnd = causalKeyEnd(b, loc, t0, rows);
  // Full key tiles have a static width (buildTileLoop).
  ValueRange keyResults = buildTileLoop(
      b, loc, keyEnd, keyTile, ValueRange{m0, l0, acc0},
      [&](OpBuilder &b, Location loc, Value s0, Value cols, ValueRange state) {
        buildKeyTile(b, loc, tile, s0, cols, state);
      });
  SoftmaxState last{keyResults[0], keyResults[1], keyResults[2]};
  Value out = normalizeOutput(b, loc, tile, last.acc, last.sum);
  return writeQueryTile(b, loc, tile, out, last, outputs);
}

/// The end of the keys a query tile [t0, t0 + rows) sees: all of them, or
/// with a causal mask none past t0 + rows - 1 + (S - T).
Value TiledSdpa::causalKeyEnd(OpBuilder &b, Location loc, Value t0,
                              Value rows) const {
  if (!causal)
    return keys;
  Value end = arith::AddIOp::create(
      b, loc, arith::AddIOp::create(b, loc, t0, rows), offset);
  end = arith::MaxSIOp::create(b, loc, end, zero);
  return arith::MinSIOp::create(b, loc, end, keys);
}

/// One key tile [s0, s0 + cols) of a query tile: its scores, the online
/// softmax update and the output accumulation; yields the new state.
void TiledSdpa::buildKeyTile(OpBuilder &b, Location loc, const QueryTile &tile,
                             Value s0, Value cols, ValueRange state) const {
  SoftmaxState current{state[0], state[1], state[2]};
  Value kTile = tileOf(b, loc, k, tile.batch, tile.kvHead, s0, cols);
  Value vTile = tileOf(b, loc, v, tile.batch, tile.kvHead, s0, cols);
  Value masked = maskedScores(b, loc, tile, kTile, s0, cols);
  SoftmaxStep step = onlineSoftmax(b, loc, tile, masked, current, cols);
  Value accNext = accumulateOutput(b, loc, tile, s0, step, vTile, current.acc);
  scf::YieldOp::create(b, loc, ValueRange{step.max, step.sum, accNext});
}

/// The block's scores q k^T, scaled, and -inf where key s0 + j is hidden
/// from query t0 + i (the causal mask and the key padding).
Value TiledSdpa::maskedScores(OpBuilder &b, Location loc, const QueryTile &tile,
                              Value kTile, Value s0, Value cols) const {
  Value rows = tile.rows;
  // scores[i, j] = q[i] . k[j]
  Value scores = contract(b, loc, tile.q, kTile, map3({dim(0), dim(2)}),
                          map3({dim(1), dim(2)}), blockType, {rows, cols});
  Value init = tensor::EmptyOp::create(
      b, loc, SmallVector<OpFoldResult>{rows, cols}, element);
  return linalg::GenericOp::create(
             b, loc, TypeRange{blockType}, ValueRange{scores}, ValueRange{init},
             SmallVector<AffineMap>{id2(), id2()}, par2(),
             [&](OpBuilder &nb, Location l, ValueRange a) {
               Value s = arith::MulFOp::create(nb, l, a[0], scale);
               Value key = arith::AddIOp::create(
                   nb, l, s0, linalg::IndexOp::create(nb, l, 1));
               Value hidden =
                   arith::ConstantOp::create(nb, l, nb.getBoolAttr(false));
               if (causal) {
                 Value query = arith::AddIOp::create(
                     nb, l, tile.t0, linalg::IndexOp::create(nb, l, 0));
                 Value limit = arith::AddIOp::create(nb, l, query, offset);
                 hidden = arith::CmpIOp::create(
                     nb, l, arith::CmpIPredicate::sgt, key, limit);
               }
               if (keyPadding) {
                 Value padded = tensor::ExtractOp::create(
                     nb, l, keyPadding, ValueRange{tile.batch, key});
                 hidden = arith::OrIOp::create(nb, l, hidden, padded);
               }
               linalg::YieldOp::create(
                   nb, l,
                   arith::SelectOp::create(nb, l, hidden, negInf, s)
                       .getResult());
             })
      .getResult(0);
}

/// The online softmax's step over one block of masked scores: the new row
/// maximum, the block's exp(score - max), and the running sum rescaled by
/// exp(old max - new max) plus the block's row sums.
SoftmaxStep TiledSdpa::onlineSoftmax(OpBuilder &b, Location loc,
                                     const QueryTile &tile, Value masked,
                                     const SoftmaxState &state,
                                     Value cols) const {
  Value tileMax = reduceMax(b, loc, masked, 1);
  Value mNew = buildElementwise(
      b, loc, rowType, {state.max, tileMax},
      [](OpBuilder &nb, Location l, ValueRange a) {
        return arith::MaximumFOp::create(nb, l, a[0], a[1]).getResult();
      });
  // A row with nothing visible yet keeps max -inf; shift by 0 instead so exp
  // gives 0, not NaN.
  Value mSafe = buildElementwise(
      b, loc, rowType, {mNew}, [&](OpBuilder &nb, Location l, ValueRange a) {
        Value isInf = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ,
                                            a[0], negInf);
        return arith::SelectOp::create(nb, l, isInf, zeroF, a[0]).getResult();
      });
  Value pInit = tensor::EmptyOp::create(
      b, loc, SmallVector<OpFoldResult>{tile.rows, cols}, element);
  Value p = linalg::GenericOp::create(
                b, loc, TypeRange{blockType}, ValueRange{masked, mSafe},
                ValueRange{pInit},
                SmallVector<AffineMap>{id2(), rowMap2(), id2()}, par2(),
                [](OpBuilder &nb, Location l, ValueRange a) {
                  linalg::YieldOp::create(
                      nb, l,
                      math::ExpOp::create(
                          nb, l, arith::SubFOp::create(nb, l, a[0], a[1]))
                          .getResult());
                })
                .getResult(0);
  Value correction = buildElementwise(
      b, loc, rowType, {state.max, mSafe},
      [](OpBuilder &nb, Location l, ValueRange a) {
        return math::ExpOp::create(nb, l,
                                   arith::SubFOp::create(nb, l, a[0], a[1]))
            .getResult();
      });
  Value rowSum = reduceSum(b, loc, p, 1);
  AffineMap id1 = AffineMap::getMultiDimIdentityMap(1, context);
  Value mNext =
      updateInPlace(b, loc, state.max, mNew, id1,
                    [](OpBuilder &, Location, ValueRange a) { return a[0]; });
  // sum = sum * correction + rowsum(p)
  Value sumNext = updateInPlace(
      b, loc, state.sum, {correction, rowSum}, id1,
      [](OpBuilder &nb, Location l, ValueRange a) {
        return arith::AddFOp::create(
                   nb, l, arith::MulFOp::create(nb, l, a[2], a[0]), a[1])
            .getResult();
      });
  return {p, correction, mNext, sumNext};
}

/// acc = acc * correction + dropout(p) @ v, in place.
Value TiledSdpa::accumulateOutput(OpBuilder &b, Location loc,
                                  const QueryTile &tile, Value s0,
                                  const SoftmaxStep &step, Value vTile,
                                  Value acc) const {
  Value pDropped = step.p;
  if (dropoutBase)
    pDropped =
        applyAttentionDropout(b, loc, step.p, dropoutBase, rate, tile.batch,
                              tile.head, heads, queries, keys, tile.t0, s0);
  Value pv = contract(b, loc, pDropped, vTile, map3({dim(0), dim(2)}),
                      map3({dim(2), dim(1)}), accType, {tile.rows, valueDim});
  return linalg::GenericOp::create(
             b, loc, TypeRange{accType}, ValueRange{step.correction, pv},
             ValueRange{acc}, SmallVector<AffineMap>{rowMap2(), id2(), id2()},
             par2(),
             [](OpBuilder &nb, Location l, ValueRange a) {
               linalg::YieldOp::create(
                   nb, l,
                   arith::AddFOp::create(
                       nb, l, arith::MulFOp::create(nb, l, a[2], a[0]), a[1])
                       .getResult());
             })
      .getResult(0);
}

/// The tile's output acc / sum, 0 for a query that saw no key (sum 0).
Value TiledSdpa::normalizeOutput(OpBuilder &b, Location loc,
                                 const QueryTile &tile, Value acc,
                                 Value sum) const {
  Value oInit = tensor::EmptyOp::create(
      b, loc, SmallVector<OpFoldResult>{tile.rows, valueDim}, element);
  return linalg::GenericOp::create(
             b, loc, TypeRange{accType}, ValueRange{acc, sum},
             ValueRange{oInit}, SmallVector<AffineMap>{id2(), rowMap2(), id2()},
             par2(),
             [&](OpBuilder &nb, Location l, ValueRange a) {
               Value none = arith::CmpFOp::create(
                   nb, l, arith::CmpFPredicate::OEQ, a[1], zeroF);
               Value quotient = arith::DivFOp::create(nb, l, a[0], a[1]);
               linalg::YieldOp::create(
                   nb, l,
                   arith::SelectOp::create(nb, l, none, zeroF, quotient)
                       .getResult());
             })
      .getResult(0);
}

/// `outputs` with the tile's output `out` and, when the op returns it, its
/// rows' logsumexp written at (batch, head, t0).
SmallVector<Value> TiledSdpa::writeQueryTile(OpBuilder &b, Location loc,
                                             const QueryTile &tile, Value out,
                                             const SoftmaxState &state,
                                             ValueRange outputs) const {
  SmallVector<OpFoldResult> offsets = {tile.batch, tile.head, tile.t0,
                                       b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(1),
                                     tile.rows, valueDim};
  SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
  SmallVector<Value> updated = {tensor::InsertSliceOp::create(
      b, loc, out, outputs[0], offsets, sizes, strides)};
  if (withLogsumexp) {
    updated.push_back(tensor::InsertSliceOp::create(
        b, loc, rowLogsumexp(b, loc, state.max, state.sum), outputs[1],
        ArrayRef<OpFoldResult>(offsets).drop_back(),
        ArrayRef<OpFoldResult>(sizes).drop_back(),
        ArrayRef<OpFoldResult>(strides).drop_back()));
  }
  return updated;
}

struct SdpaLowering : OpConversionPattern<SdpaOp> {
  SdpaLowering(MLIRContext *context, AttentionTiles tiles)
      : OpConversionPattern(context), tiles(tiles) {}

  LogicalResult
  matchAndRewrite(SdpaOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    TiledSdpa sdpa = TiledSdpa::create(rewriter, loc, op, adaptor, tiles);
    ValueRange results = sdpa.buildLoopNest(rewriter, loc);
    rewriter.replaceOp(op, castToResults(rewriter, loc, op, results));
    return success();
  }

  AttentionTiles tiles;
};

} // namespace

void populateAttentionPatterns(RewritePatternSet &patterns,
                               AttentionTiles tiles) {
  patterns.add<SdpaLowering>(patterns.getContext(), tiles);
}

} // namespace attn
