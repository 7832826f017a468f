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

#include "attn/Codegen/Passes.h"

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
#define GEN_PASS_DEF_ATTNFUSEELEMENTWISE
#include "attn/Codegen/Passes.h.inc"

namespace {

struct FuseElementwisePass
    : impl::AttnFuseElementwiseBase<FuseElementwisePass> {
  using Base::Base;


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

} // namespace attn
