//===- Elementwise.cpp - Lowering element-wise attn ops -------------------===//
//
// Unary functions, broadcasting arithmetic, comparisons, selects and casts,
// each as one element-wise `linalg.generic` (dropout is in Dropout.cpp).
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilders.h"

using namespace mlir;

namespace attn {
namespace {

/// Lowers a unary op through `scalar` applied to each element.
template <typename OpTy>
struct UnaryLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using Adaptor = typename OpTy::Adaptor;

  static Value scalar(OpBuilder &b, Location loc, Value x);

  LogicalResult
  matchAndRewrite(OpTy op, Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    rewriter.replaceOp(op, buildElementwise(rewriter, op.getLoc(), type,
                                            adaptor.getOperands(),
                                            [](OpBuilder &b, Location loc,
                                               ValueRange args) {
                                              return scalar(b, loc, args[0]);
                                            }));
    return success();
  }
};

template <>
Value UnaryLowering<NegOp>::scalar(OpBuilder &b, Location loc, Value x) {
  return arith::NegFOp::create(b, loc, x);
}
template <>
Value UnaryLowering<ReluOp>::scalar(OpBuilder &b, Location loc, Value x) {
  return applyActivation(b, loc, Activation::relu, x);
}
template <>
Value UnaryLowering<GeluOp>::scalar(OpBuilder &b, Location loc, Value x) {
  return applyActivation(b, loc, Activation::gelu, x);
}
template <>
Value UnaryLowering<GeluTanhOp>::scalar(OpBuilder &b, Location loc, Value x) {
  return applyActivation(b, loc, Activation::gelu_tanh, x);
}
template <>
Value UnaryLowering<SiluOp>::scalar(OpBuilder &b, Location loc, Value x) {
  return applyActivation(b, loc, Activation::silu, x);
}
template <>
Value UnaryLowering<TanhOp>::scalar(OpBuilder &b, Location loc, Value x) {
  return applyActivation(b, loc, Activation::tanh, x);
}
template <>
Value UnaryLowering<SigmoidOp>::scalar(OpBuilder &b, Location loc, Value x) {
  return applyActivation(b, loc, Activation::sigmoid, x);
}
template <>
Value UnaryLowering<ExpOp>::scalar(OpBuilder &b, Location loc, Value x) {
  return math::ExpOp::create(b, loc, x);
}
template <>
Value UnaryLowering<LogOp>::scalar(OpBuilder &b, Location loc, Value x) {
  return math::LogOp::create(b, loc, x);
}
template <>
Value UnaryLowering<SqrtOp>::scalar(OpBuilder &b, Location loc, Value x) {
  return math::SqrtOp::create(b, loc, x);
}

/// Lowers a broadcasting binary op to `ArithOp` on each element pair.
template <typename OpTy, typename ArithOp>
struct BinaryLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    rewriter.replaceOp(
        op, buildElementwise(rewriter, op.getLoc(), type,
                             {adaptor.getLhs(), adaptor.getRhs()},
                             [](OpBuilder &b, Location loc, ValueRange args) {
                               return ArithOp::create(b, loc, args[0], args[1]);
                             }));
    return success();
  }
};

struct CompareLowering : OpConversionPattern<CompareOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(CompareOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    CompareKind kind = op.getPredicate();
    bool isFloat = isa<FloatType>(
        cast<RankedTensorType>(adaptor.getLhs().getType()).getElementType());
    auto type = cast<RankedTensorType>(op.getType());
    rewriter.replaceOp(
        op, buildElementwise(
                rewriter, op.getLoc(), type, {adaptor.getLhs(), adaptor.getRhs()},
                [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
                  if (isFloat) {
                    static const arith::CmpFPredicate preds[] = {
                        arith::CmpFPredicate::OEQ, arith::CmpFPredicate::UNE,
                        arith::CmpFPredicate::OLT, arith::CmpFPredicate::OLE,
                        arith::CmpFPredicate::OGT, arith::CmpFPredicate::OGE};
                    return arith::CmpFOp::create(
                        b, loc, preds[static_cast<int>(kind)], args[0], args[1]);
                  }
                  static const arith::CmpIPredicate preds[] = {
                      arith::CmpIPredicate::eq,  arith::CmpIPredicate::ne,
                      arith::CmpIPredicate::slt, arith::CmpIPredicate::sle,
                      arith::CmpIPredicate::sgt, arith::CmpIPredicate::sge};
                  return arith::CmpIOp::create(
                      b, loc, preds[static_cast<int>(kind)], args[0], args[1]);
                }));
    return success();
  }
};

struct SelectLowering : OpConversionPattern<SelectOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SelectOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    rewriter.replaceOp(
        op, buildElementwise(
                rewriter, op.getLoc(), type, adaptor.getOperands(),
                [](OpBuilder &b, Location loc, ValueRange args) -> Value {
                  return arith::SelectOp::create(b, loc, args[0], args[1],
                                                 args[2]);
                }));
    return success();
  }
};

/// Converts one scalar between the element types attn tensors use.
static Value castScalar(OpBuilder &b, Location loc, Value x, Type to) {
  Type from = x.getType();
  if (from == to)
    return x;
  auto fromFloat = dyn_cast<FloatType>(from);
  auto toFloat = dyn_cast<FloatType>(to);
  if (fromFloat && toFloat) {
    if (fromFloat.getWidth() < toFloat.getWidth())
      return arith::ExtFOp::create(b, loc, to, x);
    return arith::TruncFOp::create(b, loc, to, x);
  }
  if (fromFloat)
    return arith::FPToSIOp::create(b, loc, to, x);
  // Booleans are 0 and 1, not -1: extend them unsigned.
  bool isBool = from.isInteger(1);
  if (toFloat)
    return isBool ? Value(arith::UIToFPOp::create(b, loc, to, x))
                  : Value(arith::SIToFPOp::create(b, loc, to, x));
  if (to.isInteger(1))
    return arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ne, x,
        arith::ConstantOp::create(b, loc, b.getIntegerAttr(from, 0)));
  unsigned fromWidth = from.getIntOrFloatBitWidth();
  unsigned toWidth = to.getIntOrFloatBitWidth();
  if (fromWidth < toWidth)
    return isBool ? Value(arith::ExtUIOp::create(b, loc, to, x))
                  : Value(arith::ExtSIOp::create(b, loc, to, x));
  return arith::TruncIOp::create(b, loc, to, x);
}

struct CastLowering : OpConversionPattern<CastOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(CastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    Type to = type.getElementType();
    rewriter.replaceOp(op, buildElementwise(
                               rewriter, op.getLoc(), type, adaptor.getInput(),
                               [&](OpBuilder &b, Location loc, ValueRange args) {
                                 return castScalar(b, loc, args[0], to);
                               }));
    return success();
  }
};

} // namespace

void populateElementwisePatterns(RewritePatternSet &patterns) {
  MLIRContext *context = patterns.getContext();
  patterns.add<UnaryLowering<NegOp>, UnaryLowering<ReluOp>,
               UnaryLowering<GeluOp>, UnaryLowering<GeluTanhOp>,
               UnaryLowering<SiluOp>, UnaryLowering<TanhOp>,
               UnaryLowering<SigmoidOp>, UnaryLowering<ExpOp>,
               UnaryLowering<LogOp>, UnaryLowering<SqrtOp>,
               BinaryLowering<AddOp, arith::AddFOp>,
               BinaryLowering<SubOp, arith::SubFOp>,
               BinaryLowering<MulOp, arith::MulFOp>,
               BinaryLowering<DivOp, arith::DivFOp>, CompareLowering,
               SelectLowering, CastLowering>(context);
}

} // namespace attn
