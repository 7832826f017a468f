//===- GpuFewRowProducts.cpp - Products of few rows on the GPU ------------===//
//
// `attn-gpu-few-row-products` (GPU target, on buffers, before linalg becomes
// loops): a product C[M, N] += A[M, K] * B[N, K] of few rows (a decoding
// step's: M = the batch) as the generic kernels run it has one thread per
// element of C, each walking a row of B: N threads (a few blocks, most
// multiprocessors idle), and the 32 threads of a warp read 32 rows of B at
// once, 4 bytes of each. When M is at most kFewRows at run time (a branch
// on it), the product runs instead as one loop over (m, n, lane) written
// for a warp's lanes (attn/Codegen/WarpLanes.h): a warp per element of C,
//
//   lane c: s_c = sum over k = c, c + 32, ... of A[m, k] * B[n, k],
//   C[m, n] += s_0 + ... + s_31 (a butterfly of shuffles; lane 0 stores),
//
// 32 N M threads, a warp's reading 128 consecutive bytes of one row of B,
// and C's element done in the loop, where attn-gpu-map-loops joins the
// bias, activation or residual that follows (one kernel a linear layer).
// Other products (more rows, B stored [K, N]) are left as they are.
//
//===----------------------------------------------------------------------===//

#include "attn/Codegen/Passes.h"

#include "MatmulMatch.h"
#include "attn/Codegen/WarpLanes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNGPUFEWROWPRODUCTS
#include "attn/Codegen/Passes.h.inc"

namespace {

/// The most rows a product takes the warp loop for: a decoding step's
/// batch. Beyond it each row of B is read again for every row of A, and
/// the generic kernel has threads enough.
constexpr int64_t kFewRows = 16;

/// The product as the loop over (m, n, lane); C[m, n] is stored, not added
/// to, when `cFilledWithZero` (its zero fill then has no use in this way).
void emitWarpProduct(OpBuilder &b, Location loc, const MatmulOperands &p,
                     bool cFilledWithZero) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value rows = memref::DimOp::create(b, loc, p.c, 0);
  Value columns = memref::DimOp::create(b, loc, p.b, 0);
  Value depth = memref::DimOp::create(b, loc, p.a, 1);
  Value lanes = gpu::SubgroupSizeOp::create(b, loc, /*upper_bound=*/nullptr);
  Value zeroF = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  scf::ParallelOp::create(
      b, loc, ValueRange{zero, zero, zero}, ValueRange{rows, columns, lanes},
      ValueRange{one, one, one},
      [&](OpBuilder &b, Location loc, ValueRange ivs) {
        Value m = ivs[0], n = ivs[1], lane = ivs[2];
        auto partial = scf::ForOp::create(
            b, loc, lane, depth, lanes, ValueRange{zeroF},
            [&](OpBuilder &b, Location loc, Value k, ValueRange acc) {
              Value x = memref::LoadOp::create(b, loc, p.a, ValueRange{m, k});
              Value w = memref::LoadOp::create(b, loc, p.b, ValueRange{n, k});
              Value product = arith::MulFOp::create(b, loc, x, w);
              scf::YieldOp::create(
                  b, loc, ValueRange{arith::AddFOp::create(b, loc, acc[0], product)});
            });
        Value total = sumOverLanes(b, loc, partial.getResult(0), lanes);
        Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                            lane, zero);
        scf::IfOp::create(b, loc, first, [&](OpBuilder &b, Location loc) {
          Value result =
              cFilledWithZero
                  ? total
                  : arith::AddFOp::create(
                        b, loc,
                        memref::LoadOp::create(b, loc, p.c, ValueRange{m, n}),
                        total)
                        .getResult();
          memref::StoreOp::create(b, loc, result, p.c, ValueRange{m, n});
          scf::YieldOp::create(b, loc);
        });
      });
}

/// Whether `p` is a product this pass rewrites: B stored [N, K], f32.
bool takesWarpProduct(const MatmulOperands &p) {
  return p.transposedB && !p.transposedA && !p.lowPrecisionB();
}

/// `op` under a branch on its rows: the warp loop for few, `op` as it is
/// for more. A zero fill of C right before `op` moves into the way of
/// more; the warp loop stores C's elements instead.
void rewriteProduct(RewriterBase &rewriter, linalg::LinalgOp op,
                    const MatmulOperands &p) {
  Location loc = op.getLoc();
  linalg::FillOp zeroFill = precedingZeroFill(op, p.c);
  rewriter.setInsertionPoint(op);
  Value rows = memref::DimOp::create(rewriter, loc, p.c, 0);
  Value few = arith::CmpIOp::create(
      rewriter, loc, arith::CmpIPredicate::ule, rows,
      arith::ConstantIndexOp::create(rewriter, loc, kFewRows));
  auto branch = scf::IfOp::create(rewriter, loc, few, /*withElse=*/true);
  OpBuilder thenBuilder = branch.getThenBodyBuilder();
  emitWarpProduct(thenBuilder, loc, p, static_cast<bool>(zeroFill));
  rewriter.moveOpBefore(op, branch.elseBlock()->getTerminator());
  if (zeroFill)
    rewriter.moveOpBefore(zeroFill, op);
}

struct GpuFewRowProductsPass
    : impl::AttnGpuFewRowProductsBase<GpuFewRowProductsPass> {
  void runOnOperation() override {
    SmallVector<std::pair<linalg::LinalgOp, MatmulOperands>> products;
    getOperation().walk([&](linalg::LinalgOp op) {
      std::optional<MatmulOperands> p = matchMatmul(op);
      if (p && takesWarpProduct(*p))
        products.emplace_back(op, *p);
    });
    IRRewriter rewriter(&getContext());
    for (auto &[op, p] : products)
      rewriteProduct(rewriter, op, p);
  }
};

} // namespace

} // namespace attn
