//===- FuseEpilogues.cpp - Activations and residual adds into their ops ---===//
//
// `attn-fuse-epilogues`: the element-wise ops that follow a product or feed
// a norm become that op's epilogue or prologue. `linear` carries an
// activation and a residual and `layer_norm`/`rms_norm` a residual
// (docs/AttnDialectRationale.md), so that the code generator can apply a
// linear's bias, activation and residual to the product's register tiles
// before they are stored, instead of in separate passes over the result.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNFUSEEPILOGUES
#include "attn/Dialect/Transforms/Passes.h.inc"

namespace {

/// The linear defining `v` when `v` is its only use's operand and the linear
/// has no residual (and, with `bare`, no activation either).
LinearOp fusibleLinear(Value v, bool bare) {
  auto linear = v.getDefiningOp<LinearOp>();
  if (!linear || !v.hasOneUse() || linear.getResidual())
    return {};
  if (bare && linear.getActivation() != Activation::none)
    return {};
  return linear;
}

/// act(linear(x, w, b)) -> linear x, w, b activation act.
template <typename ActivationOp, Activation kind>
struct ActivationIntoLinear : OpRewritePattern<ActivationOp> {
  using OpRewritePattern<ActivationOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(ActivationOp op,
                                PatternRewriter &rewriter) const override {
    LinearOp linear = fusibleLinear(op->getOperand(0), /*bare=*/true);
    if (!linear || linear.getType() != op.getType())
      return failure();
    rewriter.replaceOpWithNewOp<LinearOp>(
        op, op.getType(), linear.getInput(), linear.getWeight(),
        linear.getBias(), /*residual=*/Value(), kind);
    rewriter.eraseOp(linear);
    return success();
  }
};

/// add(linear(...), r) or add(r, linear(...)) -> linear ... residual r.
struct AddIntoLinear : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AddOp op,
                                PatternRewriter &rewriter) const override {
    for (auto [product, residual] :
         {std::pair{op.getLhs(), op.getRhs()},
          std::pair{op.getRhs(), op.getLhs()}}) {
      LinearOp linear = fusibleLinear(product, /*bare=*/false);
      if (!linear || linear.getType() != op.getType() ||
          residual.getType() != op.getType())
        continue;
      rewriter.replaceOpWithNewOp<LinearOp>(
          op, op.getType(), linear.getInput(), linear.getWeight(),
          linear.getBias(), residual, linear.getActivation());
      rewriter.eraseOp(linear);
      return success();
    }
    return failure();
  }
};

/// norm(add(a, r)) -> norm a, ... residual r, for layer_norm and rms_norm.
template <typename NormOp>
struct AddIntoNorm : OpRewritePattern<NormOp> {
  using OpRewritePattern<NormOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(NormOp op,
                                PatternRewriter &rewriter) const override {
    Value input = op.getInput();
    auto add = input.template getDefiningOp<AddOp>();
    if (op.getResidual() || !add || !input.hasOneUse() ||
        add.getLhs().getType() != input.getType() ||
        add.getRhs().getType() != input.getType())
      return failure();
    rewriter.modifyOpInPlace(op, [&] {
      op.getInputMutable().assign(add.getLhs());
      op.getResidualMutable().assign(add.getRhs());
    });
    rewriter.eraseOp(add);
    return success();
  }
};

struct AttnFuseEpiloguesPass
    : impl::AttnFuseEpiloguesBase<AttnFuseEpiloguesPass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    patterns.add<ActivationIntoLinear<ReluOp, Activation::relu>,
                 ActivationIntoLinear<GeluOp, Activation::gelu>,
                 ActivationIntoLinear<GeluTanhOp, Activation::gelu_tanh>,
                 ActivationIntoLinear<SiluOp, Activation::silu>,
                 ActivationIntoLinear<TanhOp, Activation::tanh>,
                 ActivationIntoLinear<SigmoidOp, Activation::sigmoid>,
                 AddIntoLinear, AddIntoNorm<LayerNormOp>,
                 AddIntoNorm<RmsNormOp>>(context);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace attn
