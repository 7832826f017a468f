//===- GpuSimtProducts.cpp - f32 products in per-thread tiles -------------===//
//
// `attn-gpu-simt-products` (GPU target, `--precision f32`, on buffers,
// before linalg becomes loops): each f32 matrix product becomes a kernel
// over its whole 64x64 block tiles and generic products for the rest
// (GpuBlockedProducts.h). The generic kernel gives each element of C a
// thread that reads a row of A and a column of B, two loads per
// multiply-add; here each of a block's 16 x 16 threads accumulates a 4 x 4
// tile of C in registers, so that a term of the product is 4 loads of A, 4
// of B and 16 multiply-adds. Thread (x, y) takes rows y + 16 i and columns
// x + 16 j of the block tile: the 16 threads of a half warp read and write
// 16 consecutive columns of C and of B stored [K, N], and share each
// element of A they read.
//
// Each element of C is still one chain over K in order, as in the generic
// kernel; its multiply-adds may contract into fused ones (the GPU's
// fma.rn.f32, where the generic kernel rounds the product and the sum
// apart).
//
//===----------------------------------------------------------------------===//

#include "attn/Codegen/Passes.h"

#include "GpuBlockedProducts.h"
#include "GpuWarpTiles.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNGPUSIMTPRODUCTS
#include "attn/Codegen/Passes.h.inc"

namespace {

/// A block's threads along each side, and each thread's rows and columns.
constexpr int64_t kThreadsPerSide = 16, kPerThread = 4;
constexpr int64_t kBlockSide = kThreadsPerSide * kPerThread;

/// The indices into `memref` of (`first`, `second`) at the batch element.
SmallVector<Value> at(ArrayRef<Value> batch, Value first, Value second) {
  SmallVector<Value> indices(batch);
  indices.append({first, second});
  return indices;
}

/// One thread's 4 x 4 tile of C: read (or zero), the first kEnd terms of
/// A B added, written back.
void emitThreadTile(OpBuilder &b, Location loc, const MatmulOperands &p,
                    const BlockTile &tile) {
  using gpu::Processor;
  AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1);
  auto lines = [&](Value blockIndex, Value thread) {
    SmallVector<Value> indices;
    for (int64_t i = 0; i < kPerThread; ++i)
      indices.push_back(affine::AffineApplyOp::create(
          b, loc, d0 * kBlockSide + d1 + i * kThreadsPerSide,
          ValueRange{blockIndex, thread}));
    return indices;
  };
  SmallVector<Value> rows = lines(tile.blockRow, tile.thread(Processor::ThreadY));
  SmallVector<Value> cols = lines(tile.blockCol, tile.thread(Processor::ThreadX));
  SmallVector<Value> sums;
  Value zeroF = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
  for (Value r : rows)
    for (Value c : cols)
      sums.push_back(tile.zeroStart ? zeroF
                                    : memref::LoadOp::create(
                                          b, loc, p.c, at(tile.batch, r, c)));

  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto terms = scf::ForOp::create(
      b, loc, zero, tile.kEnd, one, sums,
      [&](OpBuilder &nb, Location, Value k, ValueRange partial) {
        SmallVector<Value> as, bs;
        for (Value r : rows)
          as.push_back(memref::LoadOp::create(
              nb, loc, p.a,
              p.transposedA ? at(tile.batch, k, r) : at(tile.batch, r, k)));
        for (Value c : cols)
          bs.push_back(memref::LoadOp::create(
              nb, loc, p.b,
              p.transposedB ? at(tile.batch, c, k) : at(tile.batch, k, c)));
        // Contractible: one fma.rn.f32 each on the GPU; a multiply and an
        // add under cuda-on-host, whose host code has no FMA instruction to
        // call instead of libm's fmaf.
        auto contract = arith::FastMathFlagsAttr::get(
            nb.getContext(), arith::FastMathFlags::contract);
        SmallVector<Value> next;
        for (auto [i, a] : llvm::enumerate(as))
          for (auto [j, bv] : llvm::enumerate(bs)) {
            Value product = arith::MulFOp::create(nb, loc, a, bv, contract);
            next.push_back(arith::AddFOp::create(
                nb, loc, partial[i * bs.size() + j], product, contract));
          }
        scf::YieldOp::create(nb, loc, next);
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
    BlockedKernel kernel{kBlockSide,
                         kBlockSide,
                         /*stepK=*/1,
                         {{Processor::ThreadX, kThreadsPerSide},
                          {Processor::ThreadY, kThreadsPerSide}},
                         kThreadTilesAttr,
                         /*canStartFromZero=*/true,
                         emitThreadTile};
    IRRewriter rewriter(&getContext());
    for (auto &[op, p] : collectBlockableProducts(getOperation()))
      rewriteBlockedProduct(rewriter, op, p, kernel);
  }
};

} // namespace
} // namespace attn
