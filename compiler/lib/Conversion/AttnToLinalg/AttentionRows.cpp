//===- AttentionRows.cpp - attn.sdpa as one online softmax per row --------===//
//
// Scaled dot-product attention and its adjoints as parallel loops over
// rows, each row one sequential loop over the keys (or queries) it meets:
// the lowering of targets that map a parallel loop's iterations to threads
// (the GPU target). A thread keeps its row and its accumulators in scalars,
// i.e. registers, and no [B, H, T, S] matrix exists (FlashAttention's
// online softmax with one query per thread):
//
// - forward: one iteration per query and chunk of keys walks the keys of
//   its chunk that the query sees, keeping the running maximum score, the
//   sum of exp(score - maximum) and the unnormalised output; a second loop
//   per query combines its chunks. A sequence has one chunk per query; a
//   decoding step's few queries split their keys until about
//   kRowsInFlight threads have work (FlashDecoding's split).
// - the adjoint of the queries: one iteration per query walks its keys
//   again, with the forward's logsumexp;
// - the adjoints of keys and values: one iteration per key walks the
//   queries that see it, in every query head of its group; a loop for the
//   keys', then one for the values', so that a thread carries one row of
//   sums, not two.
//
// The function is AttentionMaterialized.cpp's: masked scores are -inf, a
// query with every key masked gets zeros (and logsumexp 0), dropout draws
// the same counter-based mask over the [B, H, T, S] weights (the softmax's
// normaliser sums the undropped weights). Head dimensions must be static,
// a thread holding one scalar per element; with a dynamic one the
// materialised patterns apply.
//
//===----------------------------------------------------------------------===//

#include "AttentionOperands.h"

#include "attn/Codegen/WarpLanes.h"

#include <limits>

using namespace mlir;

namespace attn {
namespace {

/// Threads a forward wants busy before it stops splitting each query's keys
/// into chunks: about 128 on each multiprocessor of a large GPU.
constexpr int64_t kRowsInFlight = 16384;
/// The fewest keys a chunk walks, so that a thread's loads of its query
/// and the combination of the chunks stay a small part of its work.
constexpr int64_t kMinChunkKeys = 32;

/// `a + x * y`, marked contract: one fused multiply-add on the GPU.
Value multiplyAdd(OpBuilder &b, Location loc, Value a, Value x, Value y) {
  auto contract = arith::FastMathFlagsAttr::get(b.getContext(),
                                                arith::FastMathFlags::contract);
  Value product = arith::MulFOp::create(b, loc, x, y, contract);
  return arith::AddFOp::create(b, loc, a, product, contract);
}

Value index(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

/// What one iteration of a row loop writes: for each output, one scalar
/// (an output of the loop's rank) or a row along its last dim (one rank
/// more).
using RowResults = SmallVector<SmallVector<Value>>;
using RowBodyFn =
    function_ref<RowResults(OpBuilder &, Location, ValueRange ivs)>;

/// An `scf.forall` over `sizes` whose iteration `ivs` writes `body`'s
/// results into `outputs` (empty tensors) at `ivs`; returns the outputs.
SmallVector<Value> buildRowLoop(OpBuilder &b, Location loc,
                                ArrayRef<OpFoldResult> sizes,
                                ValueRange outputs, RowBodyFn body) {
  auto loop = scf::ForallOp::create(b, loc, sizes, outputs, std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  scf::InParallelOp terminator = loop.getTerminator();
  b.setInsertionPoint(terminator);
  SmallVector<Value> ivs = loop.getInductionVars();
  RowResults results = body(b, loc, ivs);
  Value zero = index(b, loc, 0);
  for (auto [out, scalars] : llvm::zip_equal(loop.getRegionIterArgs(),
                                             results)) {
    auto type = cast<RankedTensorType>(out.getType());
    bool row = type.getRank() > static_cast<int64_t>(ivs.size());
    SmallVector<OpFoldResult> offsets(ivs.begin(), ivs.end());
    SmallVector<OpFoldResult> ones(type.getRank(), b.getIndexAttr(1));
    SmallVector<OpFoldResult> extents(ivs.size(), b.getIndexAttr(1));
    SmallVector<int64_t> shape(ivs.size(), 1);
    if (row) {
      offsets.push_back(b.getIndexAttr(0));
      extents.push_back(b.getIndexAttr(scalars.size()));
      shape.push_back(scalars.size());
    }
    auto sliceType = RankedTensorType::get(shape, type.getElementType());
    Value slice = tensor::ExtractSliceOp::create(b, loc, sliceType, out,
                                                 offsets, extents, ones);
    for (auto [i, scalar] : llvm::enumerate(scalars)) {
      SmallVector<Value> at(shape.size(), zero);
      if (row)
        at.back() = index(b, loc, i);
      slice = tensor::InsertOp::create(b, loc, scalar, slice, at);
    }
    OpBuilder::InsertionGuard atEnd(b);
    b.setInsertionPointToEnd(terminator.getBody());
    tensor::ParallelInsertSliceOp::create(b, loc, slice, out, offsets,
                                          extents, ones);
  }
  return loop.getResults();
}

/// An `scf.for` from `lb` to `ub` carrying `inits`; `body` gets the
/// induction variable and the carried values and returns the next ones.
ValueRange buildSequentialLoop(
    OpBuilder &b, Location loc, Value lb, Value ub, ValueRange inits,
    function_ref<SmallVector<Value>(OpBuilder &, Location, Value, ValueRange)>
        body) {
  return scf::ForOp::create(
             b, loc, lb, ub, index(b, loc, 1), inits,
             [&](OpBuilder &b, Location loc, Value iv, ValueRange state) {
               scf::YieldOp::create(b, loc, body(b, loc, iv, state));
             })
      .getResults();
}

/// One attention op's operands with the per-row pieces its loops share.
struct RowAttention : AttentionOperands {
  int64_t headDim = 0, valueDim = 0;
  /// Key s is visible to query t when s <= t + offset (offset = S - T).
  Value offset;
  Value negInf, zeroF;

  /// Whether the row loops apply: static head dimensions.
  static bool applies(Value q, Value v) {
    return !cast<RankedTensorType>(q.getType()).isDynamicDim(3) &&
           !cast<RankedTensorType>(v.getType()).isDynamicDim(3);
  }

  template <typename AttentionOp, typename OpAdaptor>
  static RowAttention get(OpBuilder &b, Location loc, AttentionOp op,
                          OpAdaptor adaptor) {
    RowAttention a;
    static_cast<AttentionOperands &>(a) =
        AttentionOperands::get(b, loc, op, adaptor);
    a.headDim = cast<RankedTensorType>(a.q.getType()).getDimSize(3);
    a.valueDim = cast<RankedTensorType>(a.v.getType()).getDimSize(3);
    a.offset = arith::SubIOp::create(b, loc, a.keys, a.queries);
    a.negInf = floatConstant(b, loc, a.element,
                             -std::numeric_limits<double>::infinity());
    a.zeroF = floatConstant(b, loc, a.element, 0);
    return a;
  }

  Value empty(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes) const {
    return tensor::EmptyOp::create(b, loc, sizes, element);
  }

  /// Elements [0, size) of row (batch, head, i) of a [B, H, R, size] tensor.
  SmallVector<Value> loadRow(OpBuilder &b, Location loc, Value tensor,
                             Value batch, Value head, Value i,
                             int64_t size) const {
    SmallVector<Value> row;
    for (int64_t e = 0; e < size; ++e)
      row.push_back(tensor::ExtractOp::create(
          b, loc, tensor, ValueRange{batch, head, i, index(b, loc, e)}));
    return row;
  }

  /// x . y in four interleaved partial sums (four chains of dependent
  /// multiply-adds rather than one).
  Value dot(OpBuilder &b, Location loc, ArrayRef<Value> x,
            ArrayRef<Value> y) const {
    SmallVector<Value> partial;
    for (size_t e = 0; e < x.size(); ++e) {
      if (e < 4)
        partial.push_back(arith::MulFOp::create(b, loc, x[e], y[e]));
      else
        partial[e % 4] = multiplyAdd(b, loc, partial[e % 4], x[e], y[e]);
    }
    // Pairwise: (p0 + p1) + (p2 + p3).
    for (size_t width = 2; width < 2 * partial.size(); width *= 2)
      for (size_t i = 0; i + width / 2 < partial.size(); i += width)
        partial[i] =
            arith::AddFOp::create(b, loc, partial[i], partial[i + width / 2]);
    return partial.empty() ? zeroF : partial[0];
  }

  /// scale * q . k for key s of `batch`, -inf where the key is padded.
  Value score(OpBuilder &b, Location loc, Value batch, ArrayRef<Value> qRow,
              ArrayRef<Value> kRow, Value s) const {
    Value x = arith::MulFOp::create(b, loc, dot(b, loc, qRow, kRow), scale);
    if (!keyPadding)
      return x;
    Value padded =
        tensor::ExtractOp::create(b, loc, keyPadding, ValueRange{batch, s});
    return arith::SelectOp::create(b, loc, padded, negInf, x);
  }

  /// `x` with attention dropout's mask and scale at element ((batch H +
  /// head) T + t) S + s; `x` itself without dropout.
  Value drop(OpBuilder &b, Location loc, Value x, Value batch, Value head,
             Value t, Value s) const {
    if (!dropoutBase)
      return x;
    auto mul = [&](Value l, Value r) {
      return arith::MulIOp::create(b, loc, l, r).getResult();
    };
    auto add = [&](Value l, Value r) {
      return arith::AddIOp::create(b, loc, l, r).getResult();
    };
    Value i = add(mul(add(mul(add(mul(batch, heads), head), queries), t), keys),
                  s);
    Value keep = dropoutKeep(
        b, loc, dropoutBase,
        arith::IndexCastOp::create(b, loc, b.getI64Type(), i), rate);
    Value kept = arith::MulFOp::create(
        b, loc, x, floatConstant(b, loc, element, 1.0 / (1.0 - rate)));
    return arith::SelectOp::create(b, loc, keep, kept, zeroF);
  }

  /// The end of the keys query t sees.
  Value keyEnd(OpBuilder &b, Location loc, Value t) const {
    if (!causal)
      return keys;
    Value last = arith::AddIOp::create(b, loc, t, offset);
    return arith::MinSIOp::create(
        b, loc, keys, arith::AddIOp::create(b, loc, last, index(b, loc, 1)));
  }

  /// Where the queries of key s start: with a causal mask, the first query
  /// that sees the first key of s's warp (keys 32 i to 32 i + 31), so that
  /// the warp's threads walk the same queries, each query one address for
  /// all of them; the queries before a key's own first are hidden from it
  /// (`hideEarlierQuery`).
  Value firstQuery(OpBuilder &b, Location loc, Value s) const {
    if (!causal)
      return index(b, loc, 0);
    Value warp = index(b, loc, kWarpSize);
    Value warpStart = arith::MulIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, s, warp), warp);
    return arith::MaxSIOp::create(
        b, loc, index(b, loc, 0),
        arith::SubIOp::create(b, loc, warpStart, offset));
  }

  /// Score `x` of key s for query t, -inf where the causal mask hides s from
  /// t.
  Value hideEarlierQuery(OpBuilder &b, Location loc, Value x, Value t,
                         Value s) const {
    if (!causal)
      return x;
    Value hidden = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::sgt, s,
        arith::AddIOp::create(b, loc, t, offset));
    return arith::SelectOp::create(b, loc, hidden, negInf, x);
  }

  /// The shift of the online softmax's exp(x - shift): `max`, or 0 while
  /// `max` is -inf (every key so far masked), so that exp gives 0, not NaN.
  Value shiftOf(OpBuilder &b, Location loc, Value max) const {
    Value none = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, max,
                                       negInf);
    return arith::SelectOp::create(b, loc, none, zeroF, max);
  }

  /// exp(x - shift).
  Value expMinus(OpBuilder &b, Location loc, Value x, Value shift) const {
    return math::ExpOp::create(b, loc,
                               arith::SubFOp::create(b, loc, x, shift));
  }

  SmallVector<Value> forward(OpBuilder &b, Location loc,
                             bool withLogsumexp) const;
  Value queryGradient(OpBuilder &b, Location loc, Value dO, Value lse,
                      Value delta) const;
  SmallVector<Value> keyValueGradients(OpBuilder &b, Location loc, Value dO,
                                       Value lse, Value delta) const;

private:
  Value keyOrValueGradient(OpBuilder &b, Location loc, Value dO, Value lse,
                           Value delta, bool forKeys) const;
  SmallVector<Value> forwardChunks(OpBuilder &b, Location loc,
                                   Value chunks) const;
  SmallVector<Value> combineChunks(OpBuilder &b, Location loc,
                                   ValueRange partials,
                                   bool withLogsumexp) const;
  std::pair<Value, SmallVector<Value>> sumOverChunks(
      OpBuilder &b, Location loc, ValueRange partials, ValueRange row,
      unsigned count,
      function_ref<SmallVector<Value>(OpBuilder &, Location, Value)> terms)
      const;
};

/// The output [B, H, T, Dv] and, `withLogsumexp`, each query's logsumexp.
SmallVector<Value> RowAttention::forward(OpBuilder &b, Location loc,
                                         bool withLogsumexp) const {
  Value rows = arith::MulIOp::create(
      b, loc, arith::MulIOp::create(b, loc, batches, heads), queries);
  Value wanted = arith::CeilDivSIOp::create(
      b, loc, index(b, loc, kRowsInFlight),
      arith::MaxSIOp::create(b, loc, rows, index(b, loc, 1)));
  Value most = arith::CeilDivSIOp::create(b, loc, keys,
                                          index(b, loc, kMinChunkKeys));
  Value chunks = arith::MaxSIOp::create(
      b, loc, index(b, loc, 1), arith::MinSIOp::create(b, loc, wanted, most));
  return combineChunks(b, loc, forwardChunks(b, loc, chunks), withLogsumexp);
}

/// For each query and chunk of ceil(S / chunks) keys, the online softmax
/// over the keys of the chunk it sees: the maximum score and the sum of
/// exp(score - maximum) [B, H, T, chunks], and the unnormalised output
/// [B, H, T, chunks, Dv].
SmallVector<Value> RowAttention::forwardChunks(OpBuilder &b, Location loc,
                                               Value chunks) const {
  Value chunkKeys = arith::CeilDivSIOp::create(b, loc, keys, chunks);
  SmallVector<OpFoldResult> sizes = {batches, heads, queries, chunks};
  SmallVector<OpFoldResult> accSizes = sizes;
  accSizes.push_back(b.getIndexAttr(valueDim));
  SmallVector<Value> outputs = {empty(b, loc, sizes), empty(b, loc, sizes),
                                empty(b, loc, accSizes)};
  auto body = [&](OpBuilder &b, Location loc, ValueRange ivs) {
    Value batch = ivs[0], head = ivs[1], t = ivs[2];
    Value kvHead = kvHeadOf(b, loc, head, group);
    SmallVector<Value> qRow = loadRow(b, loc, q, batch, head, t, headDim);
    Value start = arith::MulIOp::create(b, loc, ivs[3], chunkKeys);
    Value end = arith::MinSIOp::create(
        b, loc, arith::AddIOp::create(b, loc, start, chunkKeys),
        keyEnd(b, loc, t));
    SmallVector<Value> inits = {negInf, zeroF};
    inits.append(valueDim, zeroF);
    ValueRange last = buildSequentialLoop(
        b, loc, start, end, inits,
        [&](OpBuilder &b, Location loc, Value s, ValueRange state) {
          SmallVector<Value> kRow =
              loadRow(b, loc, k, batch, kvHead, s, headDim);
          Value x = score(b, loc, batch, qRow, kRow, s);
          Value max = arith::MaximumFOp::create(b, loc, state[0], x);
          Value shift = shiftOf(b, loc, max);
          Value correction = expMinus(b, loc, state[0], shift);
          Value p = expMinus(b, loc, x, shift);
          Value weight = drop(b, loc, p, batch, head, t, s);
          SmallVector<Value> next = {
              max, multiplyAdd(b, loc, p, state[1], correction)};
          SmallVector<Value> vRow =
              loadRow(b, loc, v, batch, kvHead, s, valueDim);
          for (int64_t e = 0; e < valueDim; ++e)
            next.push_back(multiplyAdd(
                b, loc, arith::MulFOp::create(b, loc, state[2 + e], correction),
                weight, vRow[e]));
          return next;
        });
    return RowResults{{last[0]}, {last[1]}, llvm::to_vector(last.drop_front(2))};
  };
  return buildRowLoop(b, loc, sizes, outputs, body);
}

/// Over the chunks of query `row` (batch, head, t) of `partials`: the
/// shift (the chunks' largest maximum, 0 when that is -inf), and the sums
/// over the chunks c of exp(maximum_c - shift) times each of the `count`
/// values `terms(c)`.
std::pair<Value, SmallVector<Value>> RowAttention::sumOverChunks(
    OpBuilder &b, Location loc, ValueRange partials, ValueRange row,
    unsigned count,
    function_ref<SmallVector<Value>(OpBuilder &, Location, Value)> terms)
    const {
  Value maxes = partials[0];
  Value zero = index(b, loc, 0), chunks = dimOf(b, loc, maxes, 3);
  auto chunkMax = [&](OpBuilder &b, Location loc, Value c) -> Value {
    return tensor::ExtractOp::create(
        b, loc, maxes, ValueRange{row[0], row[1], row[2], c});
  };
  Value max = buildSequentialLoop(
      b, loc, zero, chunks, ValueRange{negInf},
      [&](OpBuilder &b, Location loc, Value c, ValueRange state) {
        return SmallVector<Value>{
            arith::MaximumFOp::create(b, loc, state[0], chunkMax(b, loc, c))};
      })[0];
  Value shift = shiftOf(b, loc, max);
  SmallVector<Value> inits(count, zeroF);
  ValueRange sums = buildSequentialLoop(
      b, loc, zero, chunks, inits,
      [&](OpBuilder &b, Location loc, Value c, ValueRange state) {
        Value w = expMinus(b, loc, chunkMax(b, loc, c), shift);
        SmallVector<Value> next;
        for (auto [sum, term] : llvm::zip_equal(state, terms(b, loc, c)))
          next.push_back(multiplyAdd(b, loc, sum, w, term));
        return next;
      });
  return {shift, llvm::to_vector(sums)};
}

/// Each query's chunks combined: the output, one element per iteration
/// (a decoding step's few queries have Dv times the threads), normalised by
/// the weighted sum of the chunks' sums (zeros where that is 0); and
/// `withLogsumexp`, one query per iteration, shift + log(that sum).
SmallVector<Value> RowAttention::combineChunks(OpBuilder &b, Location loc,
                                               ValueRange partials,
                                               bool withLogsumexp) const {
  Value sums = partials[1], accs = partials[2];
  auto chunkSum = [&](OpBuilder &b, Location loc, ValueRange row,
                      Value c) -> Value {
    return tensor::ExtractOp::create(b, loc, sums,
                                     ValueRange{row[0], row[1], row[2], c});
  };
  auto isZero = [&](OpBuilder &b, Location loc, Value x) -> Value {
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, x, zeroF);
  };
  SmallVector<OpFoldResult> outSizes = rowSizes();
  outSizes.push_back(b.getIndexAttr(valueDim));
  auto outputElement = [&](OpBuilder &b, Location loc, ValueRange ivs) {
    ValueRange row = ivs.take_front(3);
    auto [shift, totals] = sumOverChunks(
        b, loc, partials, row, 2, [&](OpBuilder &b, Location loc, Value c) {
          Value acc = tensor::ExtractOp::create(
              b, loc, accs, ValueRange{row[0], row[1], row[2], c, ivs[3]});
          return SmallVector<Value>{chunkSum(b, loc, row, c), acc};
        });
    Value out = arith::DivFOp::create(b, loc, totals[1], totals[0]);
    return RowResults{{arith::SelectOp::create(
        b, loc, isZero(b, loc, totals[0]), zeroF, out)}};
  };
  SmallVector<Value> results = buildRowLoop(
      b, loc, outSizes, {empty(b, loc, outSizes)}, outputElement);
  if (!withLogsumexp)
    return results;
  auto logsumexp = [&](OpBuilder &b, Location loc, ValueRange row) {
    auto [shift, totals] = sumOverChunks(
        b, loc, partials, row, 1, [&](OpBuilder &b, Location loc, Value c) {
          return SmallVector<Value>{chunkSum(b, loc, row, c)};
        });
    Value lse = arith::AddFOp::create(b, loc, shift,
                                      math::LogOp::create(b, loc, totals[0]));
    return RowResults{{arith::SelectOp::create(
        b, loc, isZero(b, loc, totals[0]), zeroF, lse)}};
  };
  results.push_back(buildRowLoop(b, loc, rowSizes(),
                                 {empty(b, loc, rowSizes())}, logsumexp)[0]);
  return results;
}

/// dQ [B, H, T, D]: for each query, sum over its keys s of dS k_s, dS =
/// scale P (dropout'(dO . v_s) - delta).
Value RowAttention::queryGradient(OpBuilder &b, Location loc, Value dO,
                                  Value lse, Value delta) const {
  SmallVector<OpFoldResult> sizes = rowSizes();
  sizes.push_back(b.getIndexAttr(headDim));
  auto body = [&](OpBuilder &b, Location loc, ValueRange ivs) {
    Value batch = ivs[0], head = ivs[1], t = ivs[2];
    Value kvHead = kvHeadOf(b, loc, head, group);
    SmallVector<Value> qRow = loadRow(b, loc, q, batch, head, t, headDim);
    SmallVector<Value> dORow = loadRow(b, loc, dO, batch, head, t, valueDim);
    Value rowLse = tensor::ExtractOp::create(b, loc, lse, ivs);
    Value rowDelta = tensor::ExtractOp::create(b, loc, delta, ivs);
    SmallVector<Value> inits(headDim, zeroF);
    ValueRange dq = buildSequentialLoop(
        b, loc, index(b, loc, 0), keyEnd(b, loc, t), inits,
        [&](OpBuilder &b, Location loc, Value s, ValueRange state) {
          SmallVector<Value> kRow =
              loadRow(b, loc, k, batch, kvHead, s, headDim);
          Value p =
              expMinus(b, loc, score(b, loc, batch, qRow, kRow, s), rowLse);
          Value dp = drop(
              b, loc,
              dot(b, loc, dORow, loadRow(b, loc, v, batch, kvHead, s, valueDim)),
              batch, head, t, s);
          Value ds = arith::MulFOp::create(
              b, loc, arith::MulFOp::create(b, loc, p, scale),
              arith::SubFOp::create(b, loc, dp, rowDelta));
          SmallVector<Value> next;
          for (int64_t d = 0; d < headDim; ++d)
            next.push_back(multiplyAdd(b, loc, state[d], ds, kRow[d]));
          return next;
        });
    return RowResults{llvm::to_vector(dq)};
  };
  return buildRowLoop(b, loc, rowSizes(), {empty(b, loc, sizes)}, body)[0];
}

/// dK and dV [B, H_kv, S, ...]: for each key s, sums over the queries t
/// that see it, in each query head of its group, of dS q_t and
/// dropout(P) dO_t; two loops, each recomputing P, so that a thread
/// carries one row of sums, not two (with both, ptxas spilled at D = 64).
SmallVector<Value> RowAttention::keyValueGradients(OpBuilder &b, Location loc,
                                                   Value dO, Value lse,
                                                   Value delta) const {
  return {keyOrValueGradient(b, loc, dO, lse, delta, /*forKeys=*/true),
          keyOrValueGradient(b, loc, dO, lse, delta, /*forKeys=*/false)};
}

/// dK (`forKeys`) or dV: for each key s, the sum over the queries t that see
/// it, in each query head of its group, of dS q_t or dropout(P) dO_t.
Value RowAttention::keyOrValueGradient(OpBuilder &b, Location loc, Value dO,
                                       Value lse, Value delta,
                                       bool forKeys) const {
  int64_t width = forKeys ? headDim : valueDim;
  SmallVector<OpFoldResult> sizes = {batches, dimOf(b, loc, k, 1), keys};
  SmallVector<OpFoldResult> outSizes = sizes;
  outSizes.push_back(b.getIndexAttr(width));
  auto body = [&](OpBuilder &b, Location loc, ValueRange ivs) {
    Value batch = ivs[0], kvHead = ivs[1], s = ivs[2];
    SmallVector<Value> kRow = loadRow(b, loc, k, batch, kvHead, s, headDim);
    SmallVector<Value> vRow;
    if (forKeys)
      vRow = loadRow(b, loc, v, batch, kvHead, s, valueDim);
    Value first = firstQuery(b, loc, s);
    SmallVector<Value> inits(width, zeroF);
    auto queryStep = [&](OpBuilder &b, Location loc, Value head, Value t,
                         ValueRange state) {
      SmallVector<Value> qRow = loadRow(b, loc, q, batch, head, t, headDim);
      SmallVector<Value> dORow = loadRow(b, loc, dO, batch, head, t, valueDim);
      SmallVector<Value> row = {batch, head, t};
      Value x = hideEarlierQuery(
          b, loc, score(b, loc, batch, qRow, kRow, s), t, s);
      Value p =
          expMinus(b, loc, x, tensor::ExtractOp::create(b, loc, lse, row));
      SmallVector<Value> next;
      if (!forKeys) {
        Value weight = drop(b, loc, p, batch, head, t, s);
        for (int64_t e = 0; e < valueDim; ++e)
          next.push_back(multiplyAdd(b, loc, state[e], weight, dORow[e]));
        return next;
      }
      Value dp = drop(b, loc, dot(b, loc, dORow, vRow), batch, head, t, s);
      Value ds = arith::MulFOp::create(
          b, loc, arith::MulFOp::create(b, loc, p, scale),
          arith::SubFOp::create(b, loc, dp,
                                tensor::ExtractOp::create(b, loc, delta, row)));
      for (int64_t d = 0; d < headDim; ++d)
        next.push_back(multiplyAdd(b, loc, state[d], ds, qRow[d]));
      return next;
    };
    Value firstHead = arith::MulIOp::create(b, loc, kvHead,
                                            index(b, loc, group));
    ValueRange sums = buildSequentialLoop(
        b, loc, firstHead,
        arith::AddIOp::create(b, loc, firstHead, index(b, loc, group)), inits,
        [&](OpBuilder &b, Location loc, Value head, ValueRange outer) {
          return llvm::to_vector(buildSequentialLoop(
              b, loc, first, queries, outer,
              [&](OpBuilder &b, Location loc, Value t, ValueRange state) {
                return queryStep(b, loc, head, t, state);
              }));
        });
    return RowResults{llvm::to_vector(sums)};
  };
  return buildRowLoop(b, loc, sizes, {empty(b, loc, outSizes)}, body)[0];
}

struct RowSdpaLowering : OpConversionPattern<SdpaOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SdpaOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!RowAttention::applies(adaptor.getQuery(), adaptor.getValue()))
      return failure();
    Location loc = op.getLoc();
    RowAttention a = RowAttention::get(rewriter, loc, op, adaptor);
    SmallVector<Value> results =
        a.forward(rewriter, loc, static_cast<bool>(op.getLogsumexp()));
    rewriter.replaceOp(op, castToResults(rewriter, loc, op, results));
    return success();
  }
};

struct RowSdpaGradLowering : OpConversionPattern<SdpaGradOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SdpaGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!RowAttention::applies(adaptor.getQuery(), adaptor.getValue()))
      return failure();
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    RowAttention a = RowAttention::get(b, loc, op, adaptor);
    Value dO = adaptor.getGradOutput();
    Value lse = adaptor.getLogsumexp();
    if (!lse)
      lse = a.forward(b, loc, /*withLogsumexp=*/true)[1];
    Value delta = a.rowDelta(b, loc, adaptor.getOutput(), dO);
    Value dq = a.queryGradient(b, loc, dO, lse, delta);
    SmallVector<Value> dkv = a.keyValueGradients(b, loc, dO, lse, delta);
    rewriter.replaceOp(op,
                       castToResults(b, loc, op, {dq, dkv[0], dkv[1]}));
    return success();
  }
};

} // namespace

void populateRowAttentionPatterns(RewritePatternSet &patterns) {
  // Before the materialised patterns, which take what these leave.
  patterns.add<RowSdpaLowering, RowSdpaGradLowering>(patterns.getContext(),
                                                     /*benefit=*/2);
}

} // namespace attn
