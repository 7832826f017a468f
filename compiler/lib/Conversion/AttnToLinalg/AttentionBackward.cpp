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
// With fewer key/value heads than query heads (grouped-query attention, G
// query heads per key/value head) the loops run over key/value heads, and
// inside each key tile over the G query heads of its group, then their query
// tiles: the key tile's dK and dV accumulate the whole group's sums, each
// key/value block is read once per group, and no two iterations of the
// (batch, key/value head) loops write the same dK, dV or dQ. q, O, dO, dQ
// and the forward's logsumexp are read through [B, H_kv, G, ...] views, so
// each iteration's slice of dQ is indexed by the loops' induction variables
// (what `attn-parallelize-loops` proves independence from).
//
//===----------------------------------------------------------------------===//

#include "AttentionOperands.h"

#include <limits>

using namespace mlir;

namespace attn {
namespace {

/// `acc[i, j] += sum_k lhs[lhsMap] * rhs[rhsMap]` over loops (i, j, k). A
/// left operand read transposed ((k, i): the P^T dO and dS^T Q products)
/// stays as it is: `attn-matmul-to-vector` has kernels for an A stored
/// [K, M] (`t?`), which copy each register tile's rows into a panel as they
/// go, cheaper than a separate transposed copy of the block
/// (docs/Codegen.md).
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

/// The offsets, sizes and strides of the [rows, C] tile at (lead..., row0,
/// 0) of `tensor`, whose rank is lead.size() + 2.
struct TileBox {
  SmallVector<OpFoldResult> offsets, sizes, strides;
};
TileBox tileBox(OpBuilder &b, Location loc, Value tensor, ValueRange lead,
                Value row0, Value rows) {
  int64_t rank = lead.size() + 2;
  TileBox box;
  box.offsets.append(lead.begin(), lead.end());
  box.offsets.append({row0, b.getIndexAttr(0)});
  box.sizes.assign(lead.size(), b.getIndexAttr(1));
  box.sizes.append({rows, tensor::getMixedSize(b, loc, tensor, rank - 1)});
  box.strides.assign(rank, b.getIndexAttr(1));
  return box;
}

/// The [rows, C] tile at (lead..., row0, 0) of `tensor`.
Value planeTile(OpBuilder &b, Location loc, Value tensor, ValueRange lead,
                Value row0, Value rows) {
  auto type = cast<RankedTensorType>(tensor.getType());
  auto tileType = RankedTensorType::get(
      {ShapedType::kDynamic, type.getShape().back()}, type.getElementType());
  TileBox box = tileBox(b, loc, tensor, lead, row0, rows);
  return tensor::ExtractSliceOp::create(b, loc, tileType, tensor, box.offsets,
                                        box.sizes, box.strides);
}

/// Writes a [rows, C] tile into (lead..., row0, 0) of `into`.
Value insertTile(OpBuilder &b, Location loc, Value tile, Value into,
                 ValueRange lead, Value row0, Value rows) {
  TileBox box = tileBox(b, loc, into, lead, row0, rows);
  return tensor::InsertSliceOp::create(b, loc, tile, into, box.offsets,
                                       box.sizes, box.strides);
}

/// A [B, H_kv, G, T, C] view collapsed back to [B, H, T, C].
Value ungroupHeads(OpBuilder &b, Location loc, Value x) {
  return tensor::CollapseShapeOp::create(
      b, loc, x, SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}, {4}});
}

Value slice1D(OpBuilder &b, Location loc, Value vector, Value offset,
              Value size) {
  auto type = cast<RankedTensorType>(vector.getType());
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({ShapedType::kDynamic}, type.getElementType()),
      vector, ArrayRef<OpFoldResult>{offset}, ArrayRef<OpFoldResult>{size},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
}

/// One query head: `head` its index in [0, H) (the dropout stream's),
/// `kvHead` the key/value head it reads, `lead` the index of its [T, C]
/// plane in q, O, dO and dQ: (batch, head), or (batch, kvHead, member) in
/// their grouped views.
struct QueryHead {
  Value batch, head, kvHead;
  SmallVector<Value, 3> lead;
};

/// A block of queries [t0, t0 + rows) and keys [s0, s0 + cols) of a query
/// head.
struct Block {
  const QueryHead &qh;
  Value t0, rows, s0, cols;
};

/// Per query of one (batch, head): delta = rowsum(dO * O) and the
/// logsumexp of its scores ([T]; [G, T] for the query heads of a group).
struct RowStats {
  Value delta, lse;
};

/// The stages of one `attn.sdpa_grad`'s loop nests and the values they all
/// read: the operands, their sizes and the constants, built once in front
/// of the nests.
struct TiledSdpaGrad : AttentionOperands {
  MLIRContext *context;
  /// q (of the base), O, dO (and dQ, the forward's logsumexp) as [B, H_kv,
  /// G, ...] views when `group` > 1.
  Value o, dO;
  /// The forward's [B, H, T] logsumexp; null when the backward recomputes it.
  Value forwardLse;
  Value zero, one, queryTile, keyTile;
  /// The key/value heads and the group size, as indices (group > 1 only).
  Value kvHeads, groupSize;
  /// Key s is visible to query t when s <= t + offset (offset = S - T).
  Value offset;
  Value negInf, zeroF;
  OpFoldResult headDim, valueDim;
  /// dQ (zeros), dK and dV as the loop nest starts.
  SmallVector<Value> grads;
  RankedTensorType rowType, blockType;

  /// Builds the values in front of the nests.
  static TiledSdpaGrad create(OpBuilder &b, Location loc, SdpaGradOp op,
                              SdpaGradOp::Adaptor adaptor,
                              AttentionTiles tiles);

  /// The (i, j, k) loops' map reading `exprs`.
  AffineMap map3(ArrayRef<AffineExpr> exprs) const {
    return AffineMap::get(3, 0, exprs, context);
  }
  AffineExpr dim(unsigned i) const { return getAffineDimExpr(i, context); }
  /// A [rows, cols] block's identity map and its per-row (d0) map.
  AffineMap id2() const {
    return AffineMap::getMultiDimIdentityMap(2, context);
  }
  AffineMap rowMap() const { return AffineMap::get(2, 0, {dim(0)}, context); }
  /// The type of a [rows, C] tile of the [B, H, R, C] `like`.
  RankedTensorType tileType(Value like) const {
    auto t = cast<RankedTensorType>(like.getType());
    return RankedTensorType::get({ShapedType::kDynamic, t.getDimSize(3)},
                                 element);
  }

  // The stages and their helpers, each described where it is defined.
  ValueRange buildLoopNest(OpBuilder &b, Location loc) const;
  void buildHead(OpBuilder &b, Location loc, Value batch, Value kvHead,
                 ValueRange grads) const;
  QueryHead groupMember(OpBuilder &b, Location loc, Value batch, Value kvHead,
                        Value member) const;
  Value hiddenAt(OpBuilder &nb, Location l, const Block &block) const;
  Value causalKeyEnd(OpBuilder &b, Location loc, Value t0, Value rows) const;
  Value causalQueryStart(OpBuilder &b, Location loc, Value s0) const;
  RowStats buildStatsPass(OpBuilder &b, Location loc,
                          const QueryHead &qh) const;
  RowStats buildGroupStats(OpBuilder &b, Location loc, Value batch,
                           Value kvHead) const;
  RowStats memberStats(OpBuilder &b, Location loc, const RowStats &stats,
                       Value member) const;
  void buildStatsTile(OpBuilder &b, Location loc, const QueryHead &qh, Value t0,
                      ValueRange stats) const;
  Value rowDelta(OpBuilder &b, Location loc, const QueryHead &qh, Value t0,
                 Value rows) const;
  Value queryLogsumexp(OpBuilder &b, Location loc, const QueryHead &qh,
                       Value t0, Value rows) const;
  void buildLogsumexpKeyTile(OpBuilder &b, Location loc, const Block &block,
                             Value qTile, ValueRange state) const;
  ValueRange buildGradientPass(OpBuilder &b, Location loc, Value batch,
                               Value kvHead, const RowStats &stats,
                               ValueRange grads) const;
  void buildKeyTileGrads(OpBuilder &b, Location loc, Value batch, Value kvHead,
                         Value s0, const RowStats &stats, ValueRange acc) const;
  ValueRange buildQueryTileLoop(OpBuilder &b, Location loc, const QueryHead &qh,
                                Value s0, Value cols, Value kTile, Value vTile,
                                const RowStats &stats, ValueRange inits) const;
  ValueRange buildGroupLoop(OpBuilder &b, Location loc, Value batch,
                            Value kvHead, Value s0, Value cols, Value kTile,
                            Value vTile, const RowStats &stats,
                            ValueRange inits) const;
  void buildBlockGrads(OpBuilder &b, Location loc, const Block &block,
                       Value kTile, Value vTile, const RowStats &stats,
                       ValueRange state) const;
  Value recomputeProbabilities(OpBuilder &b, Location loc, const Block &block,
                               Value qTile, Value kTile, Value lseTile) const;
  Value scoreGradient(OpBuilder &b, Location loc, const Block &block,
                      Value doTile, Value vTile, Value p,
                      Value deltaTile) const;
};

TiledSdpaGrad TiledSdpaGrad::create(OpBuilder &b, Location loc, SdpaGradOp op,
                                    SdpaGradOp::Adaptor adaptor,
                                    AttentionTiles tiles) {
  TiledSdpaGrad s;
  static_cast<AttentionOperands &>(s) =
      AttentionOperands::get(b, loc, op, adaptor);
  s.context = b.getContext();
  s.o = adaptor.getOutput();
  s.dO = adaptor.getGradOutput();
  s.forwardLse = adaptor.getLogsumexp();
  auto qType = cast<RankedTensorType>(s.q.getType());

  s.zero = arith::ConstantIndexOp::create(b, loc, 0);
  s.one = arith::ConstantIndexOp::create(b, loc, 1);
  s.queryTile = arith::ConstantIndexOp::create(b, loc, tiles.query);
  s.keyTile = arith::ConstantIndexOp::create(b, loc, tiles.key);
  s.offset = arith::SubIOp::create(b, loc, s.keys, s.queries);
  double inf = std::numeric_limits<double>::infinity();
  s.negInf = floatConstant(b, loc, s.element, -inf);
  s.zeroF = floatConstant(b, loc, s.element, 0);
  s.rowType = RankedTensorType::get({ShapedType::kDynamic}, s.element);
  s.blockType = RankedTensorType::get(
      {ShapedType::kDynamic, ShapedType::kDynamic}, s.element);
  s.headDim = tensor::getMixedSize(b, loc, s.q, 3);
  s.valueDim = tensor::getMixedSize(b, loc, s.v, 3);

  SmallVector<OpFoldResult> qSizes = tensor::getMixedSizes(b, loc, s.q);
  SmallVector<OpFoldResult> kSizes = tensor::getMixedSizes(b, loc, s.k);
  SmallVector<OpFoldResult> vSizes = tensor::getMixedSizes(b, loc, s.v);
  s.grads = {filledTensor(b, loc, qType, qSizes, b.getFloatAttr(s.element, 0)),
             tensor::EmptyOp::create(b, loc, kSizes, s.element),
             tensor::EmptyOp::create(b, loc, vSizes, s.element)};
  if (s.group > 1) {
    s.kvHeads = dimOf(b, loc, s.k, 1);
    s.groupSize = arith::ConstantIndexOp::create(b, loc, s.group);
    for (Value *x : {&s.q, &s.o, &s.dO, &s.grads[0]})
      *x = groupHeads(b, loc, *x, s.group);
    if (s.forwardLse)
      s.forwardLse = groupHeads(b, loc, s.forwardLse, s.group);
  }
  return s;
}

/// The loops over batches and key/value heads carrying dQ, dK and dV.
/// Returns the final gradients.
ValueRange TiledSdpaGrad::buildLoopNest(OpBuilder &b, Location loc) const {
  auto batchLoop = scf::ForOp::create(
      b, loc, zero, batches, one, grads,
      [&](OpBuilder &b, Location loc, Value batch, ValueRange outer) {
        auto headLoop = scf::ForOp::create(
            b, loc, zero, group == 1 ? heads : kvHeads, one, outer,
            [&](OpBuilder &b, Location loc, Value head, ValueRange headGrads) {
              buildHead(b, loc, batch, head, headGrads);
            });
        scf::YieldOp::create(b, loc, headLoop.getResults());
      });
  return batchLoop.getResults();
}

/// One key/value head: the statistics pass of its query heads, then the
/// gradient pass; yields dQ, dK and dV.
void TiledSdpaGrad::buildHead(OpBuilder &b, Location loc, Value batch,
                              Value kvHead, ValueRange grads) const {
  RowStats stats =
      group == 1
          ? buildStatsPass(b, loc,
                           QueryHead{batch, kvHead, kvHead, {batch, kvHead}})
          : buildGroupStats(b, loc, batch, kvHead);
  scf::YieldOp::create(b, loc,
                       buildGradientPass(b, loc, batch, kvHead, stats, grads));
}

/// Query head `member` of the group of `kvHead`: head kvHead * G + member,
/// at (batch, kvHead, member) of the grouped views.
QueryHead TiledSdpaGrad::groupMember(OpBuilder &b, Location loc, Value batch,
                                     Value kvHead, Value member) const {
  Value head = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, kvHead, groupSize), member);
  return QueryHead{batch, head, kvHead, {batch, kvHead, member}};
}

/// Whether key (s0 + j) is hidden from query (t0 + i), in the body of a
/// generic over the block.
Value TiledSdpaGrad::hiddenAt(OpBuilder &nb, Location l,
                              const Block &block) const {
  Value key =
      arith::AddIOp::create(nb, l, block.s0, linalg::IndexOp::create(nb, l, 1));
  Value hidden = arith::ConstantOp::create(nb, l, nb.getBoolAttr(false));
  if (causal) {
    Value query = arith::AddIOp::create(nb, l, block.t0,
                                        linalg::IndexOp::create(nb, l, 0));
    hidden = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sgt, key,
                                   arith::AddIOp::create(nb, l, query, offset));
  }
  if (keyPadding)
    hidden = arith::OrIOp::create(
        nb, l, hidden,
        tensor::ExtractOp::create(nb, l, keyPadding,
                                  ValueRange{block.qh.batch, key}));
  return hidden;
}

/// The end of the keys a query tile [t0, t0 + rows) sees: all of them, or
/// with a causal mask none past t0 + rows - 1 + (S - T).
Value TiledSdpaGrad::causalKeyEnd(OpBuilder &b, Location loc, Value t0,
                                  Value rows) const {
  if (!causal)
    return keys;
  Value end = arith::AddIOp::create(
      b, loc, arith::AddIOp::create(b, loc, t0, rows), offset);
  end = arith::MaxSIOp::create(b, loc, end, zero);
  return arith::MinSIOp::create(b, loc, end, keys).getResult();
}

/// The first query tile that sees any key of the tile at s0: the first, or
/// with a causal mask the tile holding query s0 - (S - T) (the queries
/// before it see none of the tile).
Value TiledSdpaGrad::causalQueryStart(OpBuilder &b, Location loc,
                                      Value s0) const {
  if (!causal)
    return zero;
  Value first = arith::MaxSIOp::create(
      b, loc, arith::SubIOp::create(b, loc, s0, offset), zero);
  return arith::MulIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, first, queryTile), queryTile);
}

/// Pass 1 of a query head: delta of every query, and its logsumexp unless
/// the op has the forward's.
RowStats TiledSdpaGrad::buildStatsPass(OpBuilder &b, Location loc,
                                       const QueryHead &qh) const {
  SmallVector<Value> stats0 = {tensor::EmptyOp::create(
      b, loc, SmallVector<OpFoldResult>{queries}, element)};
  if (!forwardLse)
    stats0.push_back(tensor::EmptyOp::create(
        b, loc, SmallVector<OpFoldResult>{queries}, element));
  auto statsLoop = scf::ForOp::create(
      b, loc, zero, queries, queryTile, stats0,
      [&](OpBuilder &b, Location loc, Value t0, ValueRange stats) {
        buildStatsTile(b, loc, qh, t0, stats);
      });
  Value delta = statsLoop.getResult(0);
  if (!forwardLse)
    return {delta, statsLoop.getResult(1)};
  // This head's row of the forward's [B, H, T] logsumexp.
  SmallVector<OpFoldResult> offsets(qh.lead.begin(), qh.lead.end());
  offsets.push_back(b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes(qh.lead.size(), b.getIndexAttr(1));
  sizes.push_back(queries);
  Value lse = tensor::ExtractSliceOp::create(
      b, loc, rowType, forwardLse, offsets, sizes,
      SmallVector<OpFoldResult>(offsets.size(), b.getIndexAttr(1)));
  return {delta, lse};
}

/// Pass 1 of the query heads of a group: their statistics as rows of [G, T]
/// tensors, the logsumexp the forward's slice when the op has it.
RowStats TiledSdpaGrad::buildGroupStats(OpBuilder &b, Location loc, Value batch,
                                        Value kvHead) const {
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(group), queries};
  SmallVector<Value> stats0 = {tensor::EmptyOp::create(b, loc, sizes, element)};
  if (!forwardLse)
    stats0.push_back(tensor::EmptyOp::create(b, loc, sizes, element));
  SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
  auto memberLoop = scf::ForOp::create(
      b, loc, zero, groupSize, one, stats0,
      [&](OpBuilder &b, Location loc, Value member, ValueRange stats) {
        RowStats row =
            buildStatsPass(b, loc, groupMember(b, loc, batch, kvHead, member));
        SmallVector<OpFoldResult> offsets = {member, b.getIndexAttr(0)};
        SmallVector<OpFoldResult> rowSizes = {b.getIndexAttr(1), queries};
        SmallVector<Value> next;
        for (auto [i, value] : llvm::enumerate(stats))
          next.push_back(tensor::InsertSliceOp::create(
              b, loc, i == 0 ? row.delta : row.lse, value, offsets, rowSizes,
              strides));
        scf::YieldOp::create(b, loc, next);
      });
  Value delta = memberLoop.getResult(0);
  if (!forwardLse)
    return {delta, memberLoop.getResult(1)};
  // The group's [G, T] block of the forward's [B, H_kv, G, T] logsumexp.
  Value lse = tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({group, ShapedType::kDynamic}, element),
      forwardLse,
      ArrayRef<OpFoldResult>{batch, kvHead, b.getIndexAttr(0),
                             b.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1),
                             b.getIndexAttr(group), queries},
      SmallVector<OpFoldResult>(4, b.getIndexAttr(1)));
  return {delta, lse};
}

/// Row `member` of a group's [G, T] statistics.
RowStats TiledSdpaGrad::memberStats(OpBuilder &b, Location loc,
                                    const RowStats &stats, Value member) const {
  auto row = [&](Value x) -> Value {
    return tensor::ExtractSliceOp::create(
        b, loc, rowType, x, ArrayRef<OpFoldResult>{member, b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), queries},
        SmallVector<OpFoldResult>(2, b.getIndexAttr(1)));
  };
  return {row(stats.delta), row(stats.lse)};
}

/// One query tile of pass 1: writes its delta (and logsumexp) into `stats`.
void TiledSdpaGrad::buildStatsTile(OpBuilder &b, Location loc,
                                   const QueryHead &qh, Value t0,
                                   ValueRange stats) const {
  Value rows = arith::MinSIOp::create(
      b, loc, queryTile, arith::SubIOp::create(b, loc, queries, t0));
  auto insert1D = [&](Value tile, Value into) {
    return tensor::InsertSliceOp::create(
               b, loc, tile, into, ArrayRef<OpFoldResult>{t0},
               ArrayRef<OpFoldResult>{rows},
               ArrayRef<OpFoldResult>{b.getIndexAttr(1)})
        .getResult();
  };
  Value deltaTile = rowDelta(b, loc, qh, t0, rows);
  SmallVector<Value> next = {insert1D(deltaTile, stats[0])};
  if (forwardLse) {
    scf::YieldOp::create(b, loc, next);
    return;
  }
  next.push_back(insert1D(queryLogsumexp(b, loc, qh, t0, rows), stats[1]));
  scf::YieldOp::create(b, loc, next);
}

/// delta = rowsum(dO * O) of a query tile, which equals rowsum(P * dP) also
/// under dropout because O is the dropped-out output.
Value TiledSdpaGrad::rowDelta(OpBuilder &b, Location loc, const QueryHead &qh,
                              Value t0, Value rows) const {
  Value oTile = planeTile(b, loc, o, qh.lead, t0, rows);
  Value doTile = planeTile(b, loc, dO, qh.lead, t0, rows);
  Value deltaInit =
      filledTensor(b, loc, rowType, {rows}, b.getFloatAttr(element, 0));
  return linalg::GenericOp::create(
             b, loc, TypeRange{rowType}, ValueRange{oTile, doTile},
             ValueRange{deltaInit},
             SmallVector<AffineMap>{id2(), id2(), rowMap()},
             SmallVector<utils::IteratorType>{utils::IteratorType::parallel,
                                              utils::IteratorType::reduction},
             [](OpBuilder &nb, Location l, ValueRange a) {
               linalg::YieldOp::create(
                   nb, l,
                   arith::AddFOp::create(
                       nb, l, a[2], arith::MulFOp::create(nb, l, a[0], a[1]))
                       .getResult());
             })
      .getResult(0);
}

/// A query tile's logsumexp by an online pass over the key tiles it sees (0
/// for a query with every key masked, whose weights are then all 0).
Value TiledSdpaGrad::queryLogsumexp(OpBuilder &b, Location loc,
                                    const QueryHead &qh, Value t0,
                                    Value rows) const {
  Value qTile = planeTile(b, loc, q, qh.lead, t0, rows);
  double inf = std::numeric_limits<double>::infinity();
  Value m0 =
      filledTensor(b, loc, rowType, {rows}, b.getFloatAttr(element, -inf));
  Value l0 = filledTensor(b, loc, rowType, {rows}, b.getFloatAttr(element, 0));
  Value keyEnd = causalKeyEnd(b, loc, t0, rows);
  // Full key tiles have a static width (buildTileLoop), so their
  // element-wise ops vectorise without masks.
  ValueRange keyResults = buildTileLoop(
      b, loc, keyEnd, keyTile, ValueRange{m0, l0},
      [&](OpBuilder &b, Location loc, Value s0, Value cols, ValueRange state) {
        buildLogsumexpKeyTile(b, loc, {qh, t0, rows, s0, cols}, qTile, state);
      });
  return rowLogsumexp(b, loc, keyResults[0], keyResults[1]);
}

/// One key tile of the logsumexp pass: the running maximum and sum of
/// exp(score - max) updated with the block's masked scores; yields both.
void TiledSdpaGrad::buildLogsumexpKeyTile(OpBuilder &b, Location loc,
                                          const Block &block, Value qTile,
                                          ValueRange state) const {
  Value rows = block.rows, cols = block.cols;
  Value kTile =
      tileOf(b, loc, k, block.qh.batch, block.qh.kvHead, block.s0, cols);
  Value scores = contract(b, loc, qTile, kTile, map3({dim(0), dim(2)}),
                          map3({dim(1), dim(2)}), blockType, {rows, cols});
  Value masked = blockwise(
      b, loc, element, {rows, cols}, scores, {id2()},
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Value s = arith::MulFOp::create(nb, l, a[0], scale);
        return arith::SelectOp::create(nb, l, hiddenAt(nb, l, block), negInf, s)
            .getResult();
      });
  Value tileMax = reduceMax(b, loc, masked, 1);
  // The new running maximum, and the one to shift by (0 while nothing is
  // visible).
  Value mNew = buildElementwise(
      b, loc, rowType, {state[0], tileMax},
      [](OpBuilder &nb, Location l, ValueRange a) {
        return arith::MaximumFOp::create(nb, l, a[0], a[1]).getResult();
      });
  Value mSafe = buildElementwise(
      b, loc, rowType, mNew, [&](OpBuilder &nb, Location l, ValueRange a) {
        Value isInf = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ,
                                            a[0], negInf);
        return arith::SelectOp::create(nb, l, isInf, zeroF, a[0]).getResult();
      });
  // sum(exp(masked - mSafe)) per row, fused.
  Value sumInit =
      filledTensor(b, loc, rowType, {rows}, b.getFloatAttr(element, 0));
  Value rowSum =
      linalg::GenericOp::create(
          b, loc, TypeRange{rowType}, ValueRange{masked, mSafe},
          ValueRange{sumInit},
          SmallVector<AffineMap>{id2(), rowMap(), rowMap()},
          SmallVector<utils::IteratorType>{utils::IteratorType::parallel,
                                           utils::IteratorType::reduction},
          [](OpBuilder &nb, Location l, ValueRange a) {
            Value e = math::ExpOp::create(
                nb, l, arith::SubFOp::create(nb, l, a[0], a[1]));
            linalg::YieldOp::create(
                nb, l, arith::AddFOp::create(nb, l, a[2], e).getResult());
          })
          .getResult(0);
  Value lNext = buildElementwise(
      b, loc, rowType, {state[0], mSafe, state[1], rowSum},
      [](OpBuilder &nb, Location l, ValueRange a) {
        Value correction = math::ExpOp::create(
            nb, l, arith::SubFOp::create(nb, l, a[0], a[1]));
        return arith::AddFOp::create(
                   nb, l, arith::MulFOp::create(nb, l, a[2], correction), a[3])
            .getResult();
      });
  scf::YieldOp::create(b, loc, ValueRange{mNew, lNext});
}

/// Pass 2 of a head: key tiles outside, query tiles inside, carrying dQ, dK
/// and dV; returns them.
ValueRange TiledSdpaGrad::buildGradientPass(OpBuilder &b, Location loc,
                                            Value batch, Value kvHead,
                                            const RowStats &stats,
                                            ValueRange grads) const {
  auto keyLoop = scf::ForOp::create(
      b, loc, zero, keys, keyTile, grads,
      [&](OpBuilder &b, Location loc, Value s0, ValueRange acc) {
        buildKeyTileGrads(b, loc, batch, kvHead, s0, stats, acc);
      });
  return keyLoop.getResults();
}

/// One key tile of pass 2: its dK and dV accumulated over the query tiles
/// (of each query head of the group) that can see it (causal tiles wholly
/// above the diagonal are skipped), and dQ updated on the way; yields dQ, dK
/// and dV.
void TiledSdpaGrad::buildKeyTileGrads(OpBuilder &b, Location loc, Value batch,
                                      Value kvHead, Value s0,
                                      const RowStats &stats,
                                      ValueRange acc) const {
  Value cols = arith::MinSIOp::create(b, loc, keyTile,
                                      arith::SubIOp::create(b, loc, keys, s0));
  Value kTile = tileOf(b, loc, k, batch, kvHead, s0, cols);
  Value vTile = tileOf(b, loc, v, batch, kvHead, s0, cols);
  Value dkTile0 = filledTensor(b, loc, tileType(k), {cols, headDim},
                               b.getFloatAttr(element, 0));
  Value dvTile0 = filledTensor(b, loc, tileType(v), {cols, valueDim},
                               b.getFloatAttr(element, 0));
  SmallVector<Value> inits = {dkTile0, dvTile0, acc[0]};
  QueryHead single{batch, kvHead, kvHead, {batch, kvHead}};
  ValueRange sums = group == 1 ? buildQueryTileLoop(b, loc, single, s0, cols,
                                                    kTile, vTile, stats, inits)
                               : buildGroupLoop(b, loc, batch, kvHead, s0, cols,
                                                kTile, vTile, stats, inits);
  SmallVector<Value, 2> kvLead = {batch, kvHead};
  Value dkAll = insertTile(b, loc, sums[0], acc[1], kvLead, s0, cols);
  Value dvAll = insertTile(b, loc, sums[1], acc[2], kvLead, s0, cols);
  scf::YieldOp::create(b, loc, ValueRange{sums[2], dkAll, dvAll});
}

/// The query tiles of one query head that see the key tile at s0, carrying
/// the key tile's dK and dV and dQ (`inits`); returns them.
ValueRange TiledSdpaGrad::buildQueryTileLoop(OpBuilder &b, Location loc,
                                             const QueryHead &qh, Value s0,
                                             Value cols, Value kTile,
                                             Value vTile, const RowStats &stats,
                                             ValueRange inits) const {
  Value queryStart = causalQueryStart(b, loc, s0);
  auto queryLoop = scf::ForOp::create(
      b, loc, queryStart, queries, queryTile, inits,
      [&](OpBuilder &b, Location loc, Value t0, ValueRange state) {
        Value rows = arith::MinSIOp::create(
            b, loc, queryTile, arith::SubIOp::create(b, loc, queries, t0));
        buildBlockGrads(b, loc, {qh, t0, rows, s0, cols}, kTile, vTile, stats,
                        state);
      });
  return queryLoop.getResults();
}

/// The query tile loops of every query head of the group of `kvHead`, in
/// turn, carrying `inits` as buildQueryTileLoop does; returns them.
ValueRange TiledSdpaGrad::buildGroupLoop(OpBuilder &b, Location loc,
                                         Value batch, Value kvHead, Value s0,
                                         Value cols, Value kTile, Value vTile,
                                         const RowStats &stats,
                                         ValueRange inits) const {
  auto memberLoop = scf::ForOp::create(
      b, loc, zero, groupSize, one, inits,
      [&](OpBuilder &b, Location loc, Value member, ValueRange state) {
        QueryHead qh = groupMember(b, loc, batch, kvHead, member);
        scf::YieldOp::create(
            b, loc,
            buildQueryTileLoop(b, loc, qh, s0, cols, kTile, vTile,
                               memberStats(b, loc, stats, member), state));
      });
  return memberLoop.getResults();
}

/// One block of pass 2: dV += dropout(P)^T dO, dK += dS^T q and
/// dQ[tile] += dS k; yields dK, dV (the key tile's) and dQ.
void TiledSdpaGrad::buildBlockGrads(OpBuilder &b, Location loc,
                                    const Block &block, Value kTile,
                                    Value vTile, const RowStats &stats,
                                    ValueRange state) const {
  const QueryHead &qh = block.qh;
  Value batch = qh.batch, head = qh.head, t0 = block.t0, rows = block.rows;
  Value qTile = planeTile(b, loc, q, qh.lead, t0, rows);
  Value doTile = planeTile(b, loc, dO, qh.lead, t0, rows);
  Value lseTile = slice1D(b, loc, stats.lse, t0, rows);
  Value deltaTile = slice1D(b, loc, stats.delta, t0, rows);
  Value p = recomputeProbabilities(b, loc, block, qTile, kTile, lseTile);
  Value pDropped = p;
  if (dropoutBase)
    pDropped = applyAttentionDropout(b, loc, p, dropoutBase, rate, batch, head,
                                     heads, queries, keys, t0, block.s0);
  // dV += dropout(P)^T dO
  Value dvNext = contractInto(b, loc, pDropped, doTile, map3({dim(2), dim(0)}),
                              map3({dim(2), dim(1)}), state[1]);
  Value ds = scoreGradient(b, loc, block, doTile, vTile, p, deltaTile);
  // dK += dS^T q
  Value dkNext = contractInto(b, loc, ds, qTile, map3({dim(2), dim(0)}),
                              map3({dim(2), dim(1)}), state[0]);
  // dQ[tile] += dS k
  Value dqTile = planeTile(b, loc, state[2], qh.lead, t0, rows);
  Value dqSum = contractInto(b, loc, ds, kTile, map3({dim(0), dim(2)}),
                             map3({dim(2), dim(1)}), dqTile);
  Value dqNext = insertTile(b, loc, dqSum, state[2], qh.lead, t0, rows);
  scf::YieldOp::create(b, loc, ValueRange{dkNext, dvNext, dqNext});
}

/// The block's softmax weights recomputed from the scores and the queries'
/// logsumexp: P = exp(scale q k^T - L), 0 where masked.
Value TiledSdpaGrad::recomputeProbabilities(OpBuilder &b, Location loc,
                                            const Block &block, Value qTile,
                                            Value kTile, Value lseTile) const {
  Value scores =
      contract(b, loc, qTile, kTile, map3({dim(0), dim(2)}),
               map3({dim(1), dim(2)}), blockType, {block.rows, block.cols});
  return blockwise(
      b, loc, element, {block.rows, block.cols}, ValueRange{scores, lseTile},
      {id2(), rowMap()}, [&](OpBuilder &nb, Location l, ValueRange a) {
        Value s = arith::MulFOp::create(nb, l, a[0], scale);
        Value e =
            math::ExpOp::create(nb, l, arith::SubFOp::create(nb, l, s, a[1]));
        return arith::SelectOp::create(nb, l, hiddenAt(nb, l, block), zeroF, e)
            .getResult();
      });
}

/// The scores' gradient dS = scale P (dP - delta), with dP = dropout'(dO
/// v^T) (the forward's mask and scale).
Value TiledSdpaGrad::scoreGradient(OpBuilder &b, Location loc,
                                   const Block &block, Value doTile,
                                   Value vTile, Value p,
                                   Value deltaTile) const {
  Value dpDropped =
      contract(b, loc, doTile, vTile, map3({dim(0), dim(2)}),
               map3({dim(1), dim(2)}), blockType, {block.rows, block.cols});
  Value dpKept = dpDropped;
  if (dropoutBase)
    dpKept = applyAttentionDropout(b, loc, dpDropped, dropoutBase, rate,
                                   block.qh.batch, block.qh.head, heads,
                                   queries, keys, block.t0, block.s0);
  return blockwise(b, loc, element, {block.rows, block.cols},
                   ValueRange{p, dpKept, deltaTile}, {id2(), id2(), rowMap()},
                   [&](OpBuilder &nb, Location l, ValueRange a) {
                     Value diff = arith::SubFOp::create(nb, l, a[1], a[2]);
                     return arith::MulFOp::create(
                                nb, l, arith::MulFOp::create(nb, l, a[0], diff),
                                scale)
                         .getResult();
                   });
}

struct SdpaGradLowering : OpConversionPattern<SdpaGradOp> {
  SdpaGradLowering(MLIRContext *context, AttentionTiles tiles)
      : OpConversionPattern(context), tiles(tiles) {}

  LogicalResult
  matchAndRewrite(SdpaGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    TiledSdpaGrad grad =
        TiledSdpaGrad::create(rewriter, loc, op, adaptor, tiles);
    SmallVector<Value> results =
        llvm::to_vector(grad.buildLoopNest(rewriter, loc));
    if (grad.group > 1)
      results[0] = ungroupHeads(rewriter, loc, results[0]);
    rewriter.replaceOp(op, castToResults(rewriter, loc, op, results));
    return success();
  }

  AttentionTiles tiles;
};

} // namespace

void populateAttentionBackwardPatterns(RewritePatternSet &patterns,
                                       AttentionTiles tiles) {
  patterns.add<SdpaGradLowering>(patterns.getContext(), tiles);
}

} // namespace attn
