//===- FuseElementwise.cpp - Fuse element-wise linalg chains --------------===//
//
// `attn-fuse-elementwise`: an element-wise linalg.generic whose only use is
// another generic reading it element for element (through a permutation
// map, no broadcast) is fused into it, on tensors: a linear's epilogue and
// the residual add after it become one loop, and layer norm's centring
// joins its variance reduction. Unlike upstream linalg-fuse-elementwise-ops
// this does not propagate reshapes through ops (which would turn the
// matrix products on collapsed rows back into N-D contractions) and never
// fuses through a broadcast (which would recompute the producer per
// consumer element).
//
//===----------------------------------------------------------------------===//

#include "attn/Transforms/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace attn {
namespace {

struct FuseElementwisePass
    : PassWrapper<FuseElementwisePass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(FuseElementwisePass)

  StringRef getArgument() const override { return "attn-fuse-elementwise"; }
  StringRef getDescription() const override {
    return "Fuses single-use element-wise linalg.generic producers into "
           "their consumers, without broadcasts or reshape propagation";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<affine::AffineDialect, arith::ArithDialect,
                    linalg::LinalgDialect, math::MathDialect>();
  }

  void runOnOperation() override {
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    linalg::ControlFusionFn control = [](OpOperand *fused) {
      Operation *producer = fused->get().getDefiningOp();
      auto consumer = dyn_cast<linalg::LinalgOp>(fused->getOwner());
      return producer && producer->hasOneUse() && consumer &&
             consumer.getMatchingIndexingMap(fused).isPermutation();
    };
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, context);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

std::unique_ptr<Pass> createFuseElementwisePass() {
  return std::make_unique<FuseElementwisePass>();
}

void registerFuseElementwisePass() { PassRegistration<FuseElementwisePass>(); }

} // namespace attn
