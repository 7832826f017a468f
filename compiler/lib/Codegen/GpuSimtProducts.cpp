//===- GpuSimtProducts.cpp - f32 products in per-thread tiles -------------===//
//
// `attn-gpu-simt-products` (GPU target, `--precision f32`, on buffers,
// before linalg becomes loops): each f32 matrix product becomes kernels
// over its whole block tiles and generic products for the rest
// (GpuBlockedProducts.h), in two passes: blocks of 128 x 128 first, then
// blocks of 64 x 64 for the products on views they leave (the rows and
// columns past the last whole block of 128) and the products too small for
// them. The generic kernel gives each element of C a thread that reads a
// row of A and a column of B, two loads per multiply-add; here each of a
// block's 16 x 16 threads accumulates 8 x 8 (or 4 x 4) elements of C in
// registers. Over K in steps of 32, the block's threads copy its rows of A
// and columns of B into shared tiles held term by term (GpuSharedTiles.h),
// and thread (x, y) then reads its rows and columns of each term as
// vectors of 4: four shared loads per 64 multiply-adds (two per 16).
//
// Each element of C is still one chain over K in order, as in the generic
// kernel; its multiply-adds may contract into fused ones (the GPU's
// fma.rn.f32, where the generic kernel rounds the product and the sum
// apart).
//
//===----------------------------------------------------------------------===//

#include "attn/Codegen/Passes.h"

#include "GpuBlockedProducts.h"
#include "GpuSharedTiles.h"
#include "GpuWarpTiles.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNGPUSIMTPRODUCTS
#include "attn/Codegen/Passes.h.inc"

namespace {

/// A kernel's shape: a block of 16 x 16 threads, each keeping `perThread`
/// x `perThread` elements of C.
struct ThreadTiles {
  static constexpr int64_t threadsPerSide = 16;
  static constexpr int64_t threads = threadsPerSide * threadsPerSide;
  /// The terms a block stages in shared memory at a time.
  static constexpr int64_t stepK = 32;
  int64_t perThread;

  int64_t blockSide() const { return threadsPerSide * perThread; }
  /// A shared tile's row: the block's rows of A or columns of B for one
  /// term, and 4 more, so that rows start 16-byte aligned (a thread reads
  /// its elements as vectors of 4).
  int64_t tileRow() const { return blockSide() + kVectorWidth; }
};

/// Blocks of 128 x 128 first (8 x 8 per thread: 4 vector reads from
/// shared memory per 64 multiply-adds), then blocks of 64 x 64 (4 x 4)
/// for what whole blocks of 128 leave.
constexpr ThreadTiles kShapes[] = {{8}, {4}};

/// The indices into `memref` of (`first`, `second`) at the batch element.
SmallVector<Value> at(ArrayRef<Value> batch, Value first, Value second) {
  SmallVector<Value> indices(batch);
  indices.append({first, second});
  return indices;
}

/// A thread's `count` elements of term `k` of a shared tile from `first`,
/// read as vectors of 4.
SmallVector<Value> readRun(OpBuilder &b, Location loc, Value tile, Value k,
                           Value first, int64_t count) {
  auto type = VectorType::get({kVectorWidth}, b.getF32Type());
  SmallVector<Value> elements;
  for (int64_t v = 0; v < count; v += kVectorWidth) {
    Value at = affine::AffineApplyOp::create(
        b, loc, b.getAffineDimExpr(0) + v, ValueRange{first});
    Value four = vector::LoadOp::create(b, loc, type, tile, ValueRange{k, at},
                                        false, llvm::MaybeAlign(kVectorBytes));
    for (int64_t i = 0; i < kVectorWidth; ++i)
      elements.push_back(vector::ExtractOp::create(b, loc, four, i));
  }
  return elements;
}

/// The terms from `k` of a thread's sums: the multiply-adds of its rows of
/// A and columns of B, read from the shared tiles as vectors.
SmallVector<Value> addTerm(OpBuilder &b, Location loc, const ThreadTiles &t,
                           Value aTile, Value bTile, Value k, Value firstRow,
                           Value firstCol, ValueRange partial) {
  SmallVector<Value> as = readRun(b, loc, aTile, k, firstRow, t.perThread);
  SmallVector<Value> bs = readRun(b, loc, bTile, k, firstCol, t.perThread);
  // Contractible: one fma.rn.f32 each on the GPU; a multiply and an add
  // under cuda-on-host, whose host code has no FMA instruction to call
  // instead of libm's fmaf.
  auto contract = arith::FastMathFlagsAttr::get(b.getContext(),
                                                arith::FastMathFlags::contract);
  SmallVector<Value> next;
  for (auto [i, a] : llvm::enumerate(as))
    for (auto [j, bv] : llvm::enumerate(bs)) {
      Value product = arith::MulFOp::create(b, loc, a, bv, contract);
      next.push_back(arith::AddFOp::create(b, loc, partial[i * bs.size() + j],
                                           product, contract));
    }
  return next;
}

/// One thread's tile of C: read (or zero), the first kEnd terms of A B
/// added, written back. The block stages stepK terms of its rows of A and
/// columns of B at a time in shared tiles held term by term (element (k,
/// i): term k of row or column i), so that thread (x, y) reads its rows
/// and columns of a term (perThread from perThread y and perThread x) as
/// vectors.
void emitThreadTile(OpBuilder &b, Location loc, const ThreadTiles &t,
                    const MatmulOperands &p, const BlockTile &tile) {
  using gpu::Processor;
  using T = ThreadTiles;
  AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1);
  auto apply = [&](AffineExpr e, ValueRange operands) -> Value {
    return affine::AffineApplyOp::create(b, loc, e, operands);
  };
  int64_t side = t.blockSide();
  Value x = tile.thread(Processor::ThreadX), y = tile.thread(Processor::ThreadY);
  Value firstRow = apply(d0 * t.perThread, y);
  Value firstCol = apply(d0 * t.perThread, x);
  Value blockRow = apply(d0 * side, tile.blockRow);
  Value blockCol = apply(d0 * side, tile.blockCol);
  SmallVector<Value> rows, cols;
  for (int64_t i = 0; i < t.perThread; ++i) {
    rows.push_back(apply(d0 + d1 + i, {blockRow, firstRow}));
    cols.push_back(apply(d0 + d1 + i, {blockCol, firstCol}));
  }
  Value thread = apply(d0 + d1 * T::threadsPerSide, {x, y});
  Value aTile = allocateSharedTile(b, loc, T::stepK, t.tileRow());
  Value bTile = allocateSharedTile(b, loc, T::stepK, t.tileRow());

  SmallVector<Value> sums;
  Value zeroF = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
  for (Value r : rows)
    for (Value c : cols)
      sums.push_back(tile.zeroStart ? zeroF
                                    : memref::LoadOp::create(
                                          b, loc, p.c, at(tile.batch, r, c)));

  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value step = arith::ConstantIndexOp::create(b, loc, T::stepK);
  auto terms = scf::ForOp::create(
      b, loc, zero, tile.kEnd, step, sums,
      [&](OpBuilder &nb, Location, Value k0, ValueRange partial) {
        // The tiles hold a term per row: A [M, K] and B [N, K] are
        // transposed on the way, A stored [K, M] and B [K, N] already are.
        auto termByTerm = [&](Value operand, Value first) {
          TileSource from = stagedTerms(p, operand, tile.batch, first, side,
                                        k0, T::stepK);
          from.transposed = !holdsTermsDown(p, operand);
          return from;
        };
        emitBlockCopy(nb, loc, termByTerm(p.a, blockRow), aTile, thread,
                      T::threads);
        emitBlockCopy(nb, loc, termByTerm(p.b, blockCol), bTile, thread,
                      T::threads);
        gpu::BarrierOp::create(nb, loc);
        auto stepTerms = scf::ForOp::create(
            nb, loc, zero, step, one, partial,
            [&](OpBuilder &ib, Location, Value k, ValueRange inner) {
              scf::YieldOp::create(ib, loc,
                                   addTerm(ib, loc, t, aTile, bTile, k,
                                           firstRow, firstCol, inner));
            });
        // No thread copies the next terms over these before every thread
        // has read them.
        gpu::BarrierOp::create(nb, loc);
        scf::YieldOp::create(nb, loc, stepTerms.getResults());
      });
  for (auto [i, r] : llvm::enumerate(rows))
    for (auto [j, c] : llvm::enumerate(cols))
      memref::StoreOp::create(b, loc, terms.getResult(i * cols.size() + j),
                              p.c, at(tile.batch, r, c));
}

struct GpuSimtProductsPass
    : impl::AttnGpuSimtProductsBase<GpuSimtProductsPass> {
  void runOnOperation() override {
    using gpu::Processor;
    using T = ThreadTiles;
    IRRewriter rewriter(&getContext());
    // The second shape takes the products on views the first leaves (and
    // the products too small for it).
    for (const ThreadTiles &shape : kShapes) {
      BlockedKernel kernel{
          shape.blockSide(),
          shape.blockSide(),
          T::stepK,
          {{Processor::ThreadX, T::threadsPerSide},
           {Processor::ThreadY, T::threadsPerSide}},
          kThreadTilesAttr,
          /*canStartFromZero=*/true,
          [shape](OpBuilder &b, Location loc, const MatmulOperands &p,
                  const BlockTile &tile) {
            emitThreadTile(b, loc, shape, p, tile);
          }};
      for (auto &[op, p] : collectBlockableProducts(getOperation()))
        rewriteBlockedProduct(rewriter, op, p, kernel);
    }
  }
};

} // namespace
} // namespace attn
