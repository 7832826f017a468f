//===- GpuFewRowProducts.cpp - Products of few rows on the GPU ------------===//
//
// `attn-gpu-few-row-products` (GPU target, on buffers, before linalg becomes
// loops): a product C[M, N] += A[M, K] * B[N, K] of few rows (a decoding
// step's: M = the batch) as the generic kernels run it has one thread per
// element of C, each walking a row of B: N threads (a few blocks, most
// multiprocessors idle), and the 32 threads of a warp read 32 rows of B at
// once, 4 bytes of each. When M is at most kFewRows at run time (a branch
// on it), the product runs instead as partial sums over 32 interleaved
// slices of K,
//
//   P[m, n, c] = sum_i A[m, 32 i + c] * B[n, 32 i + c],
//   C[m, n] += sum_c P[m, n, c],
//
// whose first kernel has 32 N M threads and a warp's 32 threads (c the
// fastest) reading 128 consecutive bytes of one row of B. Other products
// (more rows, B stored [K, N], K not a multiple of 32) are left as they are.
//
//===----------------------------------------------------------------------===//

#include "attn/Codegen/Passes.h"

#include "MatmulMatch.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
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

/// The most rows a product takes the partial sums for: a decoding step's
/// batch. Beyond it the partial sums (32 M N floats) outgrow C, and the
/// generic kernel has threads enough.
constexpr int64_t kFewRows = 16;

/// The slices of K: a warp's threads.
constexpr int64_t kSlices = 32;

/// The type of `memref` [R, K] viewed as [R, K / kSlices, kSlices], if K
/// is a static multiple of kSlices and the view has a strided layout.
FailureOr<MemRefType> slicedType(Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  int64_t k = type.getDimSize(1);
  if (ShapedType::isDynamic(k) || k % kSlices != 0)
    return failure();
  SmallVector<ReassociationIndices> groups{{0}, {1, 2}};
  return memref::ExpandShapeOp::computeExpandedType(
      type, {type.getDimSize(0), k / kSlices, kSlices}, groups);
}

Value sliced(OpBuilder &b, Location loc, Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  SmallVector<OpFoldResult> shape{memref::getMixedSize(b, loc, memref, 0),
                                  b.getIndexAttr(type.getDimSize(1) / kSlices),
                                  b.getIndexAttr(kSlices)};
  SmallVector<ReassociationIndices> groups{{0}, {1, 2}};
  return memref::ExpandShapeOp::create(b, loc, *slicedType(memref), memref,
                                       groups, shape);
}

/// The partial sums and their sum, in place of the product; C filled with
/// `zeroFill` (a clone) right before the sum when given, so that the sum's
/// kernel starts C itself (attn-gpu-map-loops, absorbInitialFills).
void emitPartialSums(OpBuilder &b, Location loc, const MatmulOperands &p,
                     linalg::FillOp zeroFill) {
  MLIRContext *context = b.getContext();
  Value a = sliced(b, loc, p.a), w = sliced(b, loc, p.b);
  int64_t n = cast<MemRefType>(p.b.getType()).getDimSize(0);
  Value m = memref::DimOp::create(b, loc, p.c, 0);
  auto partialType =
      MemRefType::get({ShapedType::kDynamic, n, kSlices}, b.getF32Type());
  Value partial = memref::AllocOp::create(b, loc, partialType, ValueRange{m});
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  linalg::FillOp::create(b, loc, zero, partial);

  // Loops (m, n, c, i): m, n, c parallel (c the fastest thread), i the
  // slice's steps.
  auto d = [&](unsigned i) { return getAffineDimExpr(i, context); };
  auto par = utils::IteratorType::parallel;
  auto red = utils::IteratorType::reduction;
  linalg::GenericOp::create(
      b, loc, ValueRange{a, w}, ValueRange{partial},
      ArrayRef<AffineMap>{AffineMap::get(4, 0, {d(0), d(3), d(2)}, context),
                          AffineMap::get(4, 0, {d(1), d(3), d(2)}, context),
                          AffineMap::get(4, 0, {d(0), d(1), d(2)}, context)},
      ArrayRef<utils::IteratorType>{par, par, par, red},
      [](OpBuilder &b, Location loc, ValueRange args) {
        Value product = arith::MulFOp::create(b, loc, args[0], args[1]);
        linalg::YieldOp::create(
            b, loc,
            ValueRange{arith::AddFOp::create(b, loc, args[2], product)});
      });
  if (zeroFill)
    b.clone(*zeroFill);
  linalg::GenericOp::create(
      b, loc, ValueRange{partial}, ValueRange{p.c},
      ArrayRef<AffineMap>{AffineMap::get(3, 0, {d(0), d(1), d(2)}, context),
                          AffineMap::get(3, 0, {d(0), d(1)}, context)},
      ArrayRef<utils::IteratorType>{par, par, red},
      [](OpBuilder &b, Location loc, ValueRange args) {
        linalg::YieldOp::create(
            b, loc,
            ValueRange{arith::AddFOp::create(b, loc, args[1], args[0])});
      });
  memref::DeallocOp::create(b, loc, partial);
}

/// Whether `p` is a product this pass rewrites: B stored [N, K] with N
/// static, K a static multiple of kSlices, A [M, K].
bool takesPartialSums(const MatmulOperands &p) {
  return p.transposedB && !p.transposedA && !p.lowPrecisionB() &&
         !ShapedType::isDynamic(
             cast<MemRefType>(p.b.getType()).getDimSize(0)) &&
         succeeded(slicedType(p.a)) && succeeded(slicedType(p.b));
}

/// `op` under a branch on its rows: the partial sums for few, `op` as it
/// is for more. A zero fill of C right before `op` moves into both ways,
/// right before what accumulates into C.
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
  emitPartialSums(thenBuilder, loc, p, zeroFill);
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
      if (p && takesPartialSums(*p))
        products.emplace_back(op, *p);
    });
    IRRewriter rewriter(&getContext());
    for (auto &[op, p] : products)
      rewriteProduct(rewriter, op, p);
  }
};

} // namespace

} // namespace attn
