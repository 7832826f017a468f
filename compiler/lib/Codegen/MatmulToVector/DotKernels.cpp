//===- DotKernels.cpp - Dot products along K for few rows -----------------===//
//
// C[m, n] += A[m, :] . W[n, :] with B stored as W[N, K] and few rows (below the
// cost model's fewRowsBelow: a decoding step's B tokens): packing W would cost
// as much as the product, so the kernel takes dot products along K, groups of
// rows x columns of vector accumulators (W read once per group of rows), and
// one horizontal reduction per element of C. A single row reads W at memory
// speed: while W stays in cache it takes twice the columns, which keeps more
// rows of W in flight; a larger W streams from memory, and each element of C is
// then one dot product reading its row of W front to back, so that the loop
// over columns reads W as one sequential stream.
//
//===----------------------------------------------------------------------===//

#include "MatmulKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace attn {

/// C[m, n] += A[m, :] . W[n, :] for W stored [N, K]: groups of the cost
/// model's dot rows x dot columns of vector accumulators along K (for a
/// single row its single-row columns, or one column at a time when W
/// streams from memory, below), one horizontal reduction per element of C.
/// W is read once per group of rows, not packed.
void MatmulEmitter::emitDots(Value nBegin, Value nEnd) {
  Value m = memref::DimOp::create(b, ops.a, 0);
  Value k = memref::DimOp::create(b, ops.a, 1);
  Value kFull =
      arith::SubIOp::create(b, k, arith::RemSIOp::create(b, k, index(lanes)));
  Value mFull = arith::SubIOp::create(
      b, m, arith::RemSIOp::create(b, m, index(model.dotRows)));
  Value span = arith::SubIOp::create(b, nEnd, nBegin);
  auto loop = [&](ImplicitLocOpBuilder &ib, Value from, Value to, int64_t step,
                  function_ref<void(ImplicitLocOpBuilder &, Value)> body) {
    forLoop(ib, from, to, index(ib, step), body);
  };
  // Rows m0..m0+mr times the columns in tiles of nr, then one by one.
  auto columnTiles = [&](ImplicitLocOpBuilder &ib, Value m0, int64_t mr,
                         int64_t nr) {
    Value nFull = arith::SubIOp::create(
        ib, nEnd, arith::RemSIOp::create(ib, span, index(ib, nr)));
    loop(ib, nBegin, nFull, nr, [&](ImplicitLocOpBuilder &jb, Value n0) {
      emitDotTile(jb, m0, mr, n0, nr, k, kFull);
    });
    loop(ib, nFull, nEnd, 1, [&](ImplicitLocOpBuilder &jb, Value n0) {
      emitDotTile(jb, m0, mr, n0, 1, k, kFull);
    });
  };
  // int8 weights on AVX512-VNNI: a single row rounded to int16 once, then
  // one dot product per column on integer products (RowDotInt16.cpp).
  Value rowQ;
  if (usesInt16Rows(ops, model))
    rowQ = memref::AllocaOp::create(
        b, MemRefType::get({ShapedType::kDynamic}, b.getI16Type()),
        ValueRange{k});
  // One row (a decoding step of one sequence) reads W at memory speed.
  // While W stays in cache, wider tiles than the row groups'; a larger W
  // streams from memory, read as one sequential stream (emitRowDot).
  auto rowGroup = [&](ImplicitLocOpBuilder &ib, Value m0, int64_t mr) {
    if (mr != 1)
      return columnTiles(ib, m0, mr, model.dotCols);
    if (rowQ) {
      Value dx = roundRowToInt16(ib, m0, k, rowQ);
      return loop(ib, nBegin, nEnd, 1, [&](ImplicitLocOpBuilder &jb, Value n0) {
        emitRowDotInt16(jb, rowQ, dx, m0, n0, k);
      });
    }
    Value wElements =
        arith::MulIOp::create(ib, k, memref::DimOp::create(ib, ops.b, 0));
    Value streamed =
        arith::CmpIOp::create(ib, arith::CmpIPredicate::uge, wElements,
                              index(ib, model.streamedWeightElements));
    auto branch = scf::IfOp::create(ib, streamed, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(ib);
    ib.setInsertionPointToStart(branch.thenBlock());
    loop(ib, nBegin, nEnd, 1, [&](ImplicitLocOpBuilder &jb, Value n0) {
      emitRowDot(jb, m0, n0, k, kFull);
    });
    ib.setInsertionPointToStart(branch.elseBlock());
    columnTiles(ib, m0, mr, model.singleRowDotCols);
  };
  loop(b, index(0), mFull, model.dotRows,
       [&](ImplicitLocOpBuilder &ib, Value m0) {
         rowGroup(ib, m0, model.dotRows);
       });
  loop(b, mFull, m, 1,
       [&](ImplicitLocOpBuilder &ib, Value m0) { rowGroup(ib, m0, 1); });
  if (epilogue)
    emitEpilogueOverRows(nBegin, nEnd);
}

/// C[m, n] (+)= A[m, :] . W[n, :] for one row and one column, reading W's
/// row n front to back with the cost model's row-dot accumulators (as many
/// lanes-wide steps per
/// iteration), so that a loop over n reads W as one sequential stream.
void MatmulEmitter::emitRowDot(ImplicitLocOpBuilder &ib, Value m, Value n,
                               Value k, Value kFull) {
  int64_t kUnroll = model.rowDotUnroll;
  Value kUnrolled = arith::SubIOp::create(
      ib, k, arith::RemSIOp::create(ib, k, index(ib, kUnroll * lanes)));
  auto fma = [&](ImplicitLocOpBuilder &lb, Value kk, Value acc,
                 bool inBounds) -> Value {
    Value w = readWeights(lb, n, kk, inBounds);
    Value a = vector::TransferReadOp::create(
        lb, vecType, ops.a, ValueRange{m, kk}, zeroF, ArrayRef<bool>{inBounds});
    return vector::FMAOp::create(lb, a, w, acc);
  };
  auto unrolled = scf::ForOp::create(
      ib, index(ib, 0), kUnrolled, index(ib, kUnroll * lanes),
      SmallVector<Value>(kUnroll, zeroV),
      [&](OpBuilder &kb, Location loc, Value kk, ValueRange acc) {
        ImplicitLocOpBuilder lb(loc, kb);
        SmallVector<Value> next;
        auto at = [&](int64_t offset) {
          return arith::AddIOp::create(lb, kk, index(lb, offset));
        };
        if (blockwiseRowDot()) {
          // int8: each block's products unscaled, then one FMA by its scale.
          next.assign(acc.begin(), acc.end());
          for (int64_t b = 0; b * ops.scaleBlock < kUnroll * lanes; ++b)
            next[b] = rowDotBlock(lb, m, n, at(b * ops.scaleBlock), acc[b]);
        } else {
          for (int64_t u = 0; u < kUnroll; ++u)
            next.push_back(fma(lb, at(u * lanes), acc[u], /*inBounds=*/true));
        }
        scf::YieldOp::create(lb, next);
      });
  SmallVector<Value> acc(unrolled.getResults());
  auto rest = scf::ForOp::create(
      ib, kUnrolled, kFull, index(ib, lanes), ValueRange{acc[0]},
      [&](OpBuilder &kb, Location loc, Value kk, ValueRange acc0) {
        ImplicitLocOpBuilder lb(loc, kb);
        scf::YieldOp::create(lb, fma(lb, kk, acc0[0], /*inBounds=*/true));
      });
  acc[0] = fma(ib, kFull, rest.getResult(0), /*inBounds=*/false);
  storeDot(ib, sumTree(ib, acc), m, n);
}

/// The sum of `acc` as a tree of adds: ((acc0 + acc1) + (acc2 + acc3)) for
/// 4.
Value MatmulEmitter::sumTree(ImplicitLocOpBuilder &ib,
                             SmallVector<Value> acc) {
  while (acc.size() > 1) {
    SmallVector<Value> sums;
    for (size_t i = 0; i + 1 < acc.size(); i += 2)
      sums.push_back(arith::AddFOp::create(ib, acc[i], acc[i + 1]));
    if (acc.size() % 2)
      sums.push_back(acc.back());
    acc = std::move(sums);
  }
  return acc[0];
}

bool MatmulEmitter::blockwiseRowDot() const {
  int64_t step = model.rowDotUnroll * lanes;
  return ops.scales && ops.scaleBlock % lanes == 0 &&
         step % ops.scaleBlock == 0;
}

/// acc + scale * (A[m, k0 .. k0 + block] * W[n, ...] unscaled), the block's
/// products summed in two chains (a dependent FMA's latency is several of
/// its issue slots).
Value MatmulEmitter::rowDotBlock(ImplicitLocOpBuilder &ib, Value m, Value n,
                                 Value k0, Value acc) {
  Value chains[2] = {};
  for (int64_t u = 0; u < ops.scaleBlock / lanes; ++u) {
    Value k = arith::AddIOp::create(ib, k0, index(ib, u * lanes));
    Value w = readWeights(ib, n, k, /*inBounds=*/true, /*scaled=*/false);
    Value a = vector::TransferReadOp::create(
        ib, vecType, ops.a, ValueRange{m, k}, zeroF, ArrayRef<bool>{true});
    Value &chain = chains[u % 2];
    chain = chain ? vector::FMAOp::create(ib, a, w, chain).getResult()
                  : arith::MulFOp::create(ib, a, w).getResult();
  }
  Value sum = chains[1] ? arith::AddFOp::create(ib, chains[0], chains[1])
                              .getResult()
                        : chains[0];
  Value scale = memref::LoadOp::create(
      ib, ops.scales,
      ValueRange{n, arith::DivUIOp::create(ib, k0, index(ib, ops.scaleBlock))});
  return vector::FMAOp::create(
      ib, sum, vector::BroadcastOp::create(ib, vecType, scale), acc);
}

Value MatmulEmitter::readWeights(ImplicitLocOpBuilder &ib, Value n, Value k,
                                 bool inBounds, bool scaled) {
  auto type = cast<MemRefType>(ops.b.getType());
  Type element = type.getElementType();
  if (element.isF32())
    return vector::TransferReadOp::create(ib, vecType, ops.b, ValueRange{n, k},
                                          zeroF, ArrayRef<bool>{inBounds});
  // A low-precision W's rows are whole blocks of 32 (attn-quantize-weights),
  // so the only masked read, the one at K % lanes = 0 past the last vector,
  // reads nothing: no masked loads of bf16 or i8, which AVX2 lacks.
  if (!inBounds)
    return zeroV;
  Value padding = arith::ConstantOp::create(ib, ib.getZeroAttr(element));
  Value raw = vector::TransferReadOp::create(
      ib, VectorType::get({lanes}, element), ops.b, ValueRange{n, k}, padding,
      ArrayRef<bool>{true});
  if (!ops.scales)
    return widenBf16(ib, raw);
  Value values = arith::SIToFPOp::create(ib, vecType, raw);
  if (!scaled)
    return values;
  // The scale of the block holding k..k+lanes (lanes divide the block).
  Value scale = memref::LoadOp::create(
      ib, ops.scales,
      ValueRange{n, arith::DivUIOp::create(ib, k, index(ib, ops.scaleBlock))});
  return arith::MulFOp::create(
      ib, values, vector::BroadcastOp::create(ib, vecType, scale));
}

/// C[row, col] (+)= the sum of the lanes of `acc`: added to C's value, or
/// stored alone with zeroInit.
void MatmulEmitter::storeDot(ImplicitLocOpBuilder &ib, Value acc, Value row,
                             Value col) {
  Value sum = vector::ReductionOp::create(ib, vector::CombiningKind::ADD, acc);
  if (!zeroInit)
    sum = arith::AddFOp::create(
        ib, memref::LoadOp::create(ib, ops.c, ValueRange{row, col}), sum);
  memref::StoreOp::create(ib, sum, ops.c, ValueRange{row, col});
}

void MatmulEmitter::emitDotTile(ImplicitLocOpBuilder &ib, Value m0, int64_t mr,
                                Value n0, int64_t nr, Value k, Value kFull) {
  SmallVector<Value> rowIdx, colIdx;
  for (int64_t i = 0; i < mr; ++i)
    rowIdx.push_back(i ? arith::AddIOp::create(ib, m0, index(ib, i)) : m0);
  for (int64_t j = 0; j < nr; ++j)
    colIdx.push_back(j ? arith::AddIOp::create(ib, n0, index(ib, j)) : n0);
  SmallVector<Value> init(mr * nr, zeroV);
  // One step of the dot products at kk; `inBounds` false masks past K.
  auto step = [&](ImplicitLocOpBuilder &lb, Value kk, ValueRange acc,
                  bool inBounds) {
    SmallVector<Value> w, a, next;
    for (int64_t j = 0; j < nr; ++j)
      w.push_back(readWeights(lb, colIdx[j], kk, inBounds));
    for (int64_t i = 0; i < mr; ++i)
      a.push_back(vector::TransferReadOp::create(
          lb, vecType, ops.a, ValueRange{rowIdx[i], kk}, zeroF,
          ArrayRef<bool>{inBounds}));
    for (int64_t i = 0; i < mr; ++i)
      for (int64_t j = 0; j < nr; ++j)
        next.push_back(vector::FMAOp::create(lb, a[i], w[j], acc[i * nr + j]));
    return next;
  };
  auto loop = scf::ForOp::create(
      ib, index(ib, 0), kFull, index(ib, lanes), init,
      [&](OpBuilder &kb, Location loc, Value kk, ValueRange acc) {
        ImplicitLocOpBuilder lb(loc, kb);
        scf::YieldOp::create(lb, step(lb, kk, acc, /*inBounds=*/true));
      });
  // The last K % lanes elements, masked (nothing when K is a multiple).
  SmallVector<Value> acc = step(ib, kFull, loop.getResults(), false);
  for (int64_t i = 0; i < mr; ++i)
    for (int64_t j = 0; j < nr; ++j)
      storeDot(ib, acc[i * nr + j], rowIdx[i], colIdx[j]);
}

} // namespace attn
