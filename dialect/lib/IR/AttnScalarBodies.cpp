//===- AttnScalarBodies.cpp - One element of each element-wise op ---------===//
//
// ElementwiseOpInterface: what each element-wise op computes for one
// element, in arith and math. `convert-attn-to-linalg` wraps it in an
// element-wise linalg.generic; activations are shared with the epilogue of
// `attn.linear`.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/IR/AttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;
using namespace attn;

static Value floatConstant(OpBuilder &b, Location loc, Type type,
                           double value) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
}

Value attn::applyActivation(OpBuilder &b, Location loc, Activation activation,
                            Value x) {
  Type type = x.getType();
  auto half = [&] { return floatConstant(b, loc, type, 0.5); };
  auto one = [&] { return floatConstant(b, loc, type, 1.0); };
  switch (activation) {
  case Activation::none:
    return x;
  case Activation::relu:
    return arith::MaximumFOp::create(b, loc, x,
                                     floatConstant(b, loc, type, 0.0));
  case Activation::gelu: {
    // x * Phi(x) = 0.5 x (1 + erf(x / sqrt(2))).
    Value scaled = arith::MulFOp::create(
        b, loc, x, floatConstant(b, loc, type, M_SQRT1_2));
    Value erf = math::ErfOp::create(b, loc, scaled);
    Value sum = arith::AddFOp::create(b, loc, one(), erf);
    return arith::MulFOp::create(
        b, loc, arith::MulFOp::create(b, loc, half(), x), sum);
  }
  case Activation::gelu_tanh: {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
    Value x3 = arith::MulFOp::create(
        b, loc, arith::MulFOp::create(b, loc, x, x), x);
    Value inner = arith::AddFOp::create(
        b, loc, x,
        arith::MulFOp::create(b, loc, floatConstant(b, loc, type, 0.044715),
                              x3));
    Value scaled = arith::MulFOp::create(
        b, loc, floatConstant(b, loc, type, 0.7978845608028654), inner);
    Value tanh = math::TanhOp::create(b, loc, scaled);
    return arith::MulFOp::create(
        b, loc, arith::MulFOp::create(b, loc, half(), x),
        arith::AddFOp::create(b, loc, one(), tanh));
  }
  case Activation::silu:
  case Activation::sigmoid: {
    Value negExp =
        math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
    Value sigmoid = arith::DivFOp::create(
        b, loc, one(), arith::AddFOp::create(b, loc, one(), negExp));
    if (activation == Activation::sigmoid)
      return sigmoid;
    return arith::MulFOp::create(b, loc, x, sigmoid);
  }
  case Activation::tanh:
    return math::TanhOp::create(b, loc, x);
  }
  llvm_unreachable("unknown activation");
}

//===----------------------------------------------------------------------===//
// Unary functions
//===----------------------------------------------------------------------===//

Value NegOp::buildScalar(OpBuilder &b, Location loc, ValueRange operands,
                         Type) {
  return arith::NegFOp::create(b, loc, operands[0]);
}

Value ReluOp::buildScalar(OpBuilder &b, Location loc, ValueRange operands,
                          Type) {
  return applyActivation(b, loc, Activation::relu, operands[0]);
}

Value GeluOp::buildScalar(OpBuilder &b, Location loc, ValueRange operands,
                          Type) {
  return applyActivation(b, loc, Activation::gelu, operands[0]);
}

Value GeluTanhOp::buildScalar(OpBuilder &b, Location loc, ValueRange operands,
                              Type) {
  return applyActivation(b, loc, Activation::gelu_tanh, operands[0]);
}

Value SiluOp::buildScalar(OpBuilder &b, Location loc, ValueRange operands,
                          Type) {
  return applyActivation(b, loc, Activation::silu, operands[0]);
}

Value TanhOp::buildScalar(OpBuilder &b, Location loc, ValueRange operands,
                          Type) {
  return applyActivation(b, loc, Activation::tanh, operands[0]);
}

Value SigmoidOp::buildScalar(OpBuilder &b, Location loc, ValueRange operands,
                             Type) {
  return applyActivation(b, loc, Activation::sigmoid, operands[0]);
}

Value ExpOp::buildScalar(OpBuilder &b, Location loc, ValueRange operands,
                         Type) {
  return math::ExpOp::create(b, loc, operands[0]);
}

Value LogOp::buildScalar(OpBuilder &b, Location loc, ValueRange operands,
                         Type) {
  return math::LogOp::create(b, loc, operands[0]);
}

Value SqrtOp::buildScalar(OpBuilder &b, Location loc, ValueRange operands,
                          Type) {
  return math::SqrtOp::create(b, loc, operands[0]);
}

//===----------------------------------------------------------------------===//
// Arithmetic, comparison, choice
//===----------------------------------------------------------------------===//

Value AddOp::buildScalar(OpBuilder &b, Location loc, ValueRange operands,
                         Type) {
  return arith::AddFOp::create(b, loc, operands[0], operands[1]);
}

Value SubOp::buildScalar(OpBuilder &b, Location loc, ValueRange operands,
                         Type) {
  return arith::SubFOp::create(b, loc, operands[0], operands[1]);
}

Value MulOp::buildScalar(OpBuilder &b, Location loc, ValueRange operands,
                         Type) {
  return arith::MulFOp::create(b, loc, operands[0], operands[1]);
}

Value DivOp::buildScalar(OpBuilder &b, Location loc, ValueRange operands,
                         Type) {
  return arith::DivFOp::create(b, loc, operands[0], operands[1]);
}

Value CompareOp::buildScalar(OpBuilder &b, Location loc, ValueRange operands,
                             Type) {
  auto index = static_cast<int>(getPredicate());
  if (isa<FloatType>(operands[0].getType())) {
    static const arith::CmpFPredicate preds[] = {
        arith::CmpFPredicate::OEQ, arith::CmpFPredicate::UNE,
        arith::CmpFPredicate::OLT, arith::CmpFPredicate::OLE,
        arith::CmpFPredicate::OGT, arith::CmpFPredicate::OGE};
    return arith::CmpFOp::create(b, loc, preds[index], operands[0],
                                 operands[1]);
  }
  static const arith::CmpIPredicate preds[] = {
      arith::CmpIPredicate::eq,  arith::CmpIPredicate::ne,
      arith::CmpIPredicate::slt, arith::CmpIPredicate::sle,
      arith::CmpIPredicate::sgt, arith::CmpIPredicate::sge};
  return arith::CmpIOp::create(b, loc, preds[index], operands[0], operands[1]);
}

Value SelectOp::buildScalar(OpBuilder &b, Location loc, ValueRange operands,
                            Type) {
  return arith::SelectOp::create(b, loc, operands[0], operands[1],
                                 operands[2]);
}

//===----------------------------------------------------------------------===//
// Conversion
//===----------------------------------------------------------------------===//

Value CastOp::buildScalar(OpBuilder &b, Location loc, ValueRange operands,
                          Type to) {
  Value x = operands[0];
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
