//===- MathApproximation.cpp - Polynomial math ----------------------------===//
//
// `attn-math-approximation`: MLIR's polynomial approximations of exp, tanh,
// erf, log, sin, ... on f32 scalars and vectors (populateMath
// PolynomialApproximationPatterns), so that the activations and the
// softmax vectorise instead of calling libm per element. exp is accurate to
// a few ulp, erf and tanh to ~1e-7 absolute, well inside the 1e-4 relative
// error the models are checked to.
//
//===----------------------------------------------------------------------===//

#include "attn/Codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNMATHAPPROXIMATION
#include "attn/Codegen/Passes.h.inc"

namespace {

struct MathApproximationPass
    : impl::AttnMathApproximationBase<MathApproximationPass> {
  using Base::Base;


  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

} // namespace attn
