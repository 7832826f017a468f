//===- AxpyKernels.cpp - Few rows times B stored [K, N] -------------------===//
//
// C[m, :] += sum_k A[m, k] B[k, :] with B stored [K, N] and few rows (below the
// cost model's fewRowsBelow; attention's P V while decoding: one query's
// probabilities times a tile of values): each step broadcasts one element of A
// and adds it times a row of B to vector accumulators, reading B in place. The
// packed kernel would first copy B into a pack, reading and writing all of it
// for a product that reads it once, and its one-row tiles keep too few
// accumulators in flight to hide an FMA's latency; here a single row keeps
// several columns of vectors along several chains of K. Like the dot-product
// kernels these stay f32 under `--precision bf16`.
//
//===----------------------------------------------------------------------===//

#include "MatmulKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace attn {

/// The rows of A in groups of the cost model's dot rows (B read once per
/// group; the register tile's columns wide), then one at a time; each group
/// over the columns in tiles of whole vectors, then the last columns one
/// vector at a time.
void MatmulEmitter::emitAxpyRows(Value nBegin, Value nEnd) {
  Value m = memref::DimOp::create(b, ops.a, 0);
  Value k = memref::DimOp::create(b, ops.a, 1);
  Value mFull = arith::SubIOp::create(
      b, m, arith::RemSIOp::create(b, m, index(model.dotRows)));
  Value span = arith::SubIOp::create(b, nEnd, nBegin);
  auto rowGroup = [&](ImplicitLocOpBuilder &ib, Value m0, int64_t mr) {
    bool single = mr == 1;
    int64_t vectors = single ? model.axpyRowVectors : cols / lanes;
    int64_t chains = single ? model.axpyChains : 1;
    int64_t width = vectors * lanes;
    Value nFull = arith::SubIOp::create(
        ib, nEnd, arith::RemSIOp::create(ib, span, index(ib, width)));
    forLoop(ib, nBegin, nFull, index(ib, width),
            [&](ImplicitLocOpBuilder &jb, Value n0) {
              emitAxpyTile(jb, m0, mr, n0, k, vectors, chains,
                           /*inBounds=*/true);
            });
    // Past nFull: whole vectors up to nEnd, which is N or a multiple of
    // the split columns (the dispatcher's unit), so a vector masked at N
    // never writes another thread's columns.
    forLoop(ib, nFull, nEnd, index(ib, lanes),
            [&](ImplicitLocOpBuilder &jb, Value n0) {
              emitAxpyTile(jb, m0, mr, n0, k, 1, chains, /*inBounds=*/false);
            });
  };
  forLoop(b, index(0), mFull, index(model.dotRows),
          [&](ImplicitLocOpBuilder &ib, Value m0) {
            rowGroup(ib, m0, model.dotRows);
          });
  forLoop(b, mFull, m, index(1),
          [&](ImplicitLocOpBuilder &ib, Value m0) { rowGroup(ib, m0, 1); });
  if (epilogue)
    emitEpilogueOverRows(nBegin, nEnd);
}

/// C[m0 .. m0 + mr, n0 .. n0 + vectors * lanes] (+)= A's rows times B over
/// [0, k):
/// `chains` sets of accumulators over alternate elements of K, summed at
/// the end; `inBounds` false masks the columns past N.
void MatmulEmitter::emitAxpyTile(ImplicitLocOpBuilder &ib, Value m0,
                                 int64_t mr, Value n0, Value k,
                                 int64_t vectors, int64_t chains,
                                 bool inBounds) {
  SmallVector<Value> rowIdx, colIdx;
  for (int64_t i = 0; i < mr; ++i)
    rowIdx.push_back(i ? arith::AddIOp::create(ib, m0, index(ib, i)) : m0);
  for (int64_t j = 0; j < vectors; ++j)
    colIdx.push_back(j ? arith::AddIOp::create(ib, n0, index(ib, j * lanes))
                       : n0);
  int64_t perChain = mr * vectors;
  // acc[i * vectors + j] += A[m0 + i, kk] * B[kk, n0 + j * lanes ..].
  auto step = [&](ImplicitLocOpBuilder &lb, Value kk, ValueRange acc) {
    SmallVector<Value> rowOfB, next;
    for (int64_t j = 0; j < vectors; ++j)
      rowOfB.push_back(vector::TransferReadOp::create(
          lb, vecType, ops.b, ValueRange{kk, colIdx[j]}, zeroF,
          ArrayRef<bool>{inBounds}));
    for (int64_t i = 0; i < mr; ++i) {
      Value a = vector::BroadcastOp::create(
          lb, vecType,
          memref::LoadOp::create(lb, ops.a, ValueRange{rowIdx[i], kk}));
      for (int64_t j = 0; j < vectors; ++j)
        next.push_back(
            vector::FMAOp::create(lb, a, rowOfB[j], acc[i * vectors + j]));
    }
    return next;
  };
  Value kChained = arith::SubIOp::create(
      ib, k, arith::RemSIOp::create(ib, k, index(ib, chains)));
  auto chained = scf::ForOp::create(
      ib, index(ib, 0), kChained, index(ib, chains),
      SmallVector<Value>(chains * perChain, zeroV),
      [&](OpBuilder &kb, Location loc, Value kk, ValueRange acc) {
        ImplicitLocOpBuilder lb(loc, kb);
        SmallVector<Value> next;
        for (int64_t c = 0; c < chains; ++c) {
          Value kc = c ? arith::AddIOp::create(lb, kk, index(lb, c)) : kk;
          llvm::append_range(
              next, step(lb, kc, acc.slice(c * perChain, perChain)));
        }
        scf::YieldOp::create(lb, next);
      });
  SmallVector<Value> sums(chained.getResults().take_front(perChain));
  for (int64_t c = 1; c < chains; ++c)
    for (int64_t e = 0; e < perChain; ++e)
      sums[e] = arith::AddFOp::create(
          ib, sums[e], chained.getResult(c * perChain + e));
  // The last K % chains elements.
  auto rest = scf::ForOp::create(
      ib, kChained, k, index(ib, 1), sums,
      [&](OpBuilder &kb, Location loc, Value kk, ValueRange acc) {
        ImplicitLocOpBuilder lb(loc, kb);
        scf::YieldOp::create(lb, step(lb, kk, acc));
      });
  for (int64_t i = 0; i < mr; ++i)
    for (int64_t j = 0; j < vectors; ++j) {
      Value acc = rest.getResult(i * vectors + j);
      SmallVector<Value, 2> at = {rowIdx[i], colIdx[j]};
      if (!zeroInit)
        acc = arith::AddFOp::create(
            ib, acc,
            vector::TransferReadOp::create(ib, vecType, ops.c, at, zeroF,
                                           ArrayRef<bool>{inBounds}));
      vector::TransferWriteOp::create(ib, acc, ops.c, at,
                                      ArrayRef<bool>{inBounds});
    }
}

} // namespace attn
