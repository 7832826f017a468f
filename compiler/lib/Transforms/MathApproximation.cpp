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

#include "attn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace attn {
namespace {

struct MathApproximationPass
    : PassWrapper<MathApproximationPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MathApproximationPass)

  StringRef getArgument() const override { return "attn-math-approximation"; }
  StringRef getDescription() const override {
    return "Replaces f32 exp, tanh, erf, ... with polynomial approximations";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, math::MathDialect,
                    vector::VectorDialect>();
  }

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

std::unique_ptr<Pass> createMathApproximationPass() {
  return std::make_unique<MathApproximationPass>();
}

void registerMathApproximationPass() {
  PassRegistration<MathApproximationPass>();
}

} // namespace attn
