//===- AttnGradients.cpp - Reverse-mode rules of the attn ops -------------===//
//
// The GradientOpInterface of every differentiable op: given the adjoint of
// the op's result, the adjoints of its operands, built from attn ops (and
// arith constants and index arithmetic for sizes). The autodiff pass
// (dialect/lib/Transforms/Autodiff.cpp) calls these op by op in reverse and
// sums the adjoints of values used more than once. docs/Autodiff.md lists
// the rules.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/IR/AttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace attn;

namespace {

RankedTensorType typeOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// The pieces the rules are made of, built at the builder's insertion point
/// with the location of the op being differentiated.
class GradBuilder {
public:
  GradBuilder(OpBuilder &builder, Location loc) : b(builder), loc(loc) {}

  /// The size of dimension `axis` of `value` as an index.
  Value size(Value value, int64_t axis) {
    RankedTensorType type = typeOf(value);
    if (!type.isDynamicDim(axis))
      return arith::ConstantIndexOp::create(b, loc, type.getDimSize(axis));
    return DimOp::create(b, loc, value, axis);
  }

  /// One index per dynamic dimension of `value`, in order: the size operands
  /// of a reshape or broadcast to `value`'s type.
  SmallVector<Value> dynamicSizes(Value value) {
    SmallVector<Value> sizes;
    RankedTensorType type = typeOf(value);
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.isDynamicDim(d))
        sizes.push_back(DimOp::create(b, loc, value, d));
    return sizes;
  }

  /// A rank-0 constant.
  Value scalar(Type elementType, double value) {
    return createSplat(b, loc, RankedTensorType::get({}, elementType), value);
  }

  /// A tensor of `type` filled with `value`; `sizes` gives its dynamic
  /// dimensions.
  Value filled(RankedTensorType type, ValueRange sizes, double value) {
    if (type.hasStaticShape())
      return createSplat(b, loc, type, value);
    return BroadcastOp::create(b, loc, type,
                               scalar(type.getElementType(), value), sizes);
  }

  Value zerosLike(Value like) {
    return filled(typeOf(like), dynamicSizes(like), 0.0);
  }

  /// `value` with the type of `like` (same shape at run time, possibly more
  /// or less static): adjoints have exactly the type of their value.
  Value coerce(Value value, Value like) {
    if (value.getType() == like.getType())
      return value;
    return ReshapeOp::create(b, loc, like.getType(), value, dynamicSizes(like));
  }

  /// `value` with a dimension of size 1 inserted before dimension `axis`.
  Value insertUnitDim(Value value, int64_t axis) {
    RankedTensorType type = typeOf(value);
    SmallVector<int64_t> shape(type.getShape());
    shape.insert(shape.begin() + axis, 1);
    return ReshapeOp::create(b, loc, type.clone(shape), value,
                             dynamicSizes(value));
  }

  /// `value` with `count` trailing dimensions of size 1 appended.
  Value appendUnitDims(Value value, int64_t count) {
    if (count == 0)
      return value;
    RankedTensorType type = typeOf(value);
    SmallVector<int64_t> shape(type.getShape());
    shape.append(count, 1);
    return ReshapeOp::create(b, loc, type.clone(shape), value,
                             dynamicSizes(value));
  }

  /// `value` broadcast to the shape of `like`.
  Value broadcastLike(Value value, Value like) {
    RankedTensorType type = typeOf(like).clone(typeOf(value).getElementType());
    return BroadcastOp::create(b, loc, type, value, dynamicSizes(like));
  }

  Value reduce(ReduceKind kind, Value value, int64_t axis) {
    return ReduceOp::create(b, loc, kind, value, axis, Value());
  }

  /// The adjoint of a broadcast operand: `grad`, of the broadcast shape,
  /// summed over the dimensions the operand was stretched along.
  Value sumToShape(Value grad, Value operand) {
    RankedTensorType target = typeOf(operand);
    int64_t extra = typeOf(grad).getRank() - target.getRank();
    assert(extra >= 0 && "an operand has at most the rank of the result");
    for (int64_t i = 0; i < extra; ++i)
      grad = reduce(ReduceKind::sum, grad, 0);
    for (int64_t d = 0; d < target.getRank(); ++d)
      if (target.getDimSize(d) == 1 && typeOf(grad).getDimSize(d) != 1)
        grad = insertUnitDim(reduce(ReduceKind::sum, grad, d), d);
    return coerce(grad, operand);
  }

  /// Swaps the last two dimensions.
  Value transposeLast(Value value) {
    int64_t rank = typeOf(value).getRank();
    auto permutation = llvm::to_vector(llvm::seq<int64_t>(0, rank));
    std::swap(permutation[rank - 1], permutation[rank - 2]);
    return TransposeOp::create(b, loc, value, permutation);
  }

  /// `[d0, ..., dn-2, dn-1]` as the matrix `[d0 * ... * dn-2, dn-1]` (a
  /// vector becomes one row).
  Value flatten(Value value) {
    RankedTensorType type = typeOf(value);
    int64_t rank = type.getRank();
    int64_t rows = 1;
    bool dynamic = false;
    for (int64_t d = 0; d + 1 < rank; ++d) {
      dynamic |= type.isDynamicDim(d);
      if (!type.isDynamicDim(d))
        rows *= type.getDimSize(d);
    }
    SmallVector<int64_t> shape{dynamic ? ShapedType::kDynamic : rows,
                               type.getDimSize(rank - 1)};
    if (rank == 2 && type.getShape() == ArrayRef<int64_t>(shape))
      return value;
    SmallVector<Value> sizes;
    if (dynamic) {
      Value product = size(value, 0);
      for (int64_t d = 1; d + 1 < rank; ++d)
        product = arith::MulIOp::create(b, loc, product, size(value, d));
      sizes.push_back(product);
    }
    if (type.isDynamicDim(rank - 1))
      sizes.push_back(size(value, rank - 1));
    return ReshapeOp::create(b, loc, type.clone(shape), value, sizes);
  }

  /// `grad` with zeros on both sides along `axis`: `before` and `after`
  /// elements (a static count, or an index value when `beforeValue` /
  /// `afterValue` is set). The adjoint of a slice or take.
  Value pad(Value grad, int64_t axis, int64_t before, Value beforeValue,
            int64_t after, Value afterValue) {
    SmallVector<Value> parts;
    auto zeros = [&](int64_t count, Value countValue) {
      RankedTensorType type = typeOf(grad);
      SmallVector<int64_t> shape(type.getShape());
      shape[axis] = countValue ? ShapedType::kDynamic : count;
      SmallVector<Value> sizes;
      for (int64_t d = 0; d < type.getRank(); ++d) {
        if (d == axis) {
          if (countValue)
            sizes.push_back(countValue);
        } else if (type.isDynamicDim(d)) {
          sizes.push_back(DimOp::create(b, loc, grad, d));
        }
      }
      return filled(type.clone(shape), sizes, 0.0);
    };
    if (beforeValue || before > 0)
      parts.push_back(zeros(before, beforeValue));
    parts.push_back(grad);
    if (afterValue || after > 0)
      parts.push_back(zeros(after, afterValue));
    if (parts.size() == 1)
      return grad;
    return ConcatOp::create(b, loc, parts, axis);
  }

  OpBuilder &b;
  Location loc;
};

/// Starts the operand adjoints of `op`: one null per operand.
void resetGrads(Operation *op, SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign(op->getNumOperands(), Value());
}

/// The rule of an element-wise activation: activation_grad of the input.
LogicalResult activationRule(Operation *op, Activation activation, OpBuilder &b,
                             ValueRange resultGrads,
                             SmallVectorImpl<Value> &operandGrads) {
  resetGrads(op, operandGrads);
  operandGrads[0] = ActivationGradOp::create(b, op->getLoc(), activation,
                                             op->getOperand(0), resultGrads[0]);
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Element-wise
//===----------------------------------------------------------------------===//

LogicalResult NegOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  resetGrads(*this, operandGrads);
  operandGrads[0] = NegOp::create(b, getLoc(), resultGrads[0]);
  return success();
}

#define ATTN_ACTIVATION_RULE(OP, ACTIVATION)                                   \
  LogicalResult OP::buildGradient(OpBuilder &b, ValueRange resultGrads,        \
                                  SmallVectorImpl<Value> &operandGrads) {      \
    return activationRule(*this, Activation::ACTIVATION, b, resultGrads,       \
                          operandGrads);                                       \
  }
ATTN_ACTIVATION_RULE(ReluOp, relu)
ATTN_ACTIVATION_RULE(GeluOp, gelu)
ATTN_ACTIVATION_RULE(GeluTanhOp, gelu_tanh)
ATTN_ACTIVATION_RULE(SiluOp, silu)
ATTN_ACTIVATION_RULE(TanhOp, tanh)
ATTN_ACTIVATION_RULE(SigmoidOp, sigmoid)
#undef ATTN_ACTIVATION_RULE

LogicalResult ExpOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  // d exp(x) = exp(x) dx: the forward result is reused.
  resetGrads(*this, operandGrads);
  operandGrads[0] = MulOp::create(b, getLoc(), resultGrads[0], getResult());
  return success();
}

LogicalResult LogOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  resetGrads(*this, operandGrads);
  operandGrads[0] = DivOp::create(b, getLoc(), resultGrads[0], getInput());
  return success();
}

LogicalResult SqrtOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  // d sqrt(x) = dx / (2 sqrt(x)).
  GradBuilder g(b, getLoc());
  resetGrads(*this, operandGrads);
  Value half = g.scalar(typeOf(getInput()).getElementType(), 0.5);
  Value scaled = MulOp::create(b, getLoc(), resultGrads[0], half);
  operandGrads[0] =
      g.coerce(DivOp::create(b, getLoc(), scaled, getResult()), getInput());
  return success();
}

LogicalResult AddOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(b, getLoc());
  resetGrads(*this, operandGrads);
  operandGrads[0] = g.sumToShape(resultGrads[0], getLhs());
  operandGrads[1] = g.sumToShape(resultGrads[0], getRhs());
  return success();
}

LogicalResult SubOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(b, getLoc());
  resetGrads(*this, operandGrads);
  operandGrads[0] = g.sumToShape(resultGrads[0], getLhs());
  operandGrads[1] = g.sumToShape(
      NegOp::create(b, getLoc(), resultGrads[0]).getResult(), getRhs());
  return success();
}

LogicalResult MulOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(b, getLoc());
  resetGrads(*this, operandGrads);
  operandGrads[0] = g.sumToShape(
      MulOp::create(b, getLoc(), resultGrads[0], getRhs()), getLhs());
  operandGrads[1] = g.sumToShape(
      MulOp::create(b, getLoc(), resultGrads[0], getLhs()), getRhs());
  return success();
}

LogicalResult DivOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  // d(a / b) = da / b - (a / b) db / b: the quotient is reused.
  GradBuilder g(b, getLoc());
  resetGrads(*this, operandGrads);
  Value scaled = DivOp::create(b, getLoc(), resultGrads[0], getRhs());
  operandGrads[0] = g.sumToShape(scaled, getLhs());
  Value product = MulOp::create(b, getLoc(), scaled, getResult());
  operandGrads[1] =
      g.sumToShape(NegOp::create(b, getLoc(), product).getResult(), getRhs());
  return success();
}

LogicalResult CompareOp::buildGradient(OpBuilder &, ValueRange,
                                       SmallVectorImpl<Value> &operandGrads) {
  // A boolean result carries no adjoint.
  resetGrads(*this, operandGrads);
  return success();
}

LogicalResult SelectOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  // The adjoint goes to the chosen operand; none to the condition.
  GradBuilder g(b, getLoc());
  resetGrads(*this, operandGrads);
  if (!isFloatTensor(getResult()))
    return success();
  Value dy = resultGrads[0];
  Value zero = g.scalar(typeOf(dy).getElementType(), 0.0);
  operandGrads[1] = g.sumToShape(
      SelectOp::create(b, getLoc(), getCondition(), dy, zero), getTrueValue());
  operandGrads[2] = g.sumToShape(
      SelectOp::create(b, getLoc(), getCondition(), zero, dy), getFalseValue());
  return success();
}

LogicalResult CastOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  // Between float types the adjoint is cast back; integers and booleans
  // are not differentiable.
  resetGrads(*this, operandGrads);
  if (isFloatTensor(getInput()) && isFloatTensor(getResult()))
    operandGrads[0] =
        CastOp::create(b, getLoc(), getInput().getType(), resultGrads[0]);
  return success();
}

LogicalResult DropoutOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  // The same mask (same seed and stream) and scale on the adjoint; without
  // a seed, dropout is the identity.
  resetGrads(*this, operandGrads);
  if (!getSeed() || getRate().isZero()) {
    operandGrads[0] = resultGrads[0];
    return success();
  }
  operandGrads[0] =
      DropoutOp::create(b, getLoc(), resultGrads[0].getType(), resultGrads[0],
                        getSeed(), getRateAttr(), getStreamAttr());
  return success();
}

//===----------------------------------------------------------------------===//
// Shape
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(b, getLoc());
  resetGrads(*this, operandGrads);
  if (isFloatTensor(getInput()))
    operandGrads[0] =
        ReshapeOp::create(b, getLoc(), getInput().getType(), resultGrads[0],
                          g.dynamicSizes(getInput()));
  return success();
}

LogicalResult TransposeOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(b, getLoc());
  resetGrads(*this, operandGrads);
  if (!isFloatTensor(getInput()))
    return success();
  ArrayRef<int64_t> permutation = getPermutation();
  SmallVector<int64_t> inverse(permutation.size());
  for (auto [i, p] : llvm::enumerate(permutation))
    inverse[p] = static_cast<int64_t>(i);
  operandGrads[0] = g.coerce(
      TransposeOp::create(b, getLoc(), resultGrads[0], inverse), getInput());
  return success();
}

LogicalResult
SplitHeadsOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(b, getLoc());
  resetGrads(*this, operandGrads);
  operandGrads[0] =
      g.coerce(MergeHeadsOp::create(b, getLoc(), resultGrads[0]), getInput());
  return success();
}

LogicalResult
MergeHeadsOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(b, getLoc());
  resetGrads(*this, operandGrads);
  int64_t heads = typeOf(getInput()).getDimSize(1);
  if (ShapedType::isDynamic(heads))
    return emitOpError() << "cannot be differentiated with a dynamic number "
                            "of heads";
  operandGrads[0] = g.coerce(
      SplitHeadsOp::create(b, getLoc(), resultGrads[0], heads), getInput());
  return success();
}

LogicalResult ConcatOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  // Each input's adjoint is its slice of the output's adjoint.
  GradBuilder g(b, getLoc());
  resetGrads(*this, operandGrads);
  if (!isFloatTensor(getResult()))
    return success();
  int64_t axis = static_cast<int64_t>(getAxis());
  int64_t offset = 0;
  for (auto [index, input] : llvm::enumerate(getInputs())) {
    int64_t length = typeOf(input).getDimSize(axis);
    if (ShapedType::isDynamic(length))
      return emitOpError() << "cannot be differentiated: input #" << index
                           << " has a dynamic size along axis " << axis;
    operandGrads[index] =
        g.coerce(SliceOp::create(b, getLoc(), resultGrads[0], axis, offset,
                                 offset + length),
                 input);
    offset += length;
  }
  return success();
}

LogicalResult SliceOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  // The adjoint, with zeros for the elements the slice left out.
  GradBuilder g(b, getLoc());
  resetGrads(*this, operandGrads);
  if (!isFloatTensor(getInput()))
    return success();
  int64_t axis = static_cast<int64_t>(getAxis());
  auto start = static_cast<int64_t>(getStart());
  auto end = static_cast<int64_t>(getEnd());
  int64_t length = typeOf(getInput()).getDimSize(axis);
  Value afterValue;
  int64_t after = 0;
  if (ShapedType::isDynamic(length)) {
    afterValue =
        arith::SubIOp::create(b, getLoc(), g.size(getInput(), axis),
                              arith::ConstantIndexOp::create(b, getLoc(), end));
  } else {
    after = length - end;
  }
  operandGrads[0] =
      g.coerce(g.pad(resultGrads[0], axis, start, Value(), after, afterValue),
               getInput());
  return success();
}

LogicalResult TakeOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(b, getLoc());
  resetGrads(*this, operandGrads);
  if (!isFloatTensor(getInput()))
    return success();
  int64_t axis = static_cast<int64_t>(getAxis());
  int64_t index = getIndex();
  int64_t length = typeOf(getInput()).getDimSize(axis);
  Value slot = g.insertUnitDim(resultGrads[0], axis);
  Value padded;
  if (!ShapedType::isDynamic(length)) {
    int64_t position = index < 0 ? index + length : index;
    padded =
        g.pad(slot, axis, position, Value(), length - position - 1, Value());
  } else if (index < 0) {
    // Counted from the end: the zeros after it are static.
    Value before = arith::SubIOp::create(
        b, getLoc(), g.size(getInput(), axis),
        arith::ConstantIndexOp::create(b, getLoc(), -index));
    padded = g.pad(slot, axis, 0, before, -index - 1, Value());
  } else {
    Value after = arith::SubIOp::create(
        b, getLoc(), g.size(getInput(), axis),
        arith::ConstantIndexOp::create(b, getLoc(), index + 1));
    padded = g.pad(slot, axis, index, Value(), 0, after);
  }
  operandGrads[0] = g.coerce(padded, getInput());
  return success();
}

LogicalResult BroadcastOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(b, getLoc());
  resetGrads(*this, operandGrads);
  if (isFloatTensor(getInput()))
    operandGrads[0] = g.sumToShape(resultGrads[0], getInput());
  return success();
}

LogicalResult GatherOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  // Scatter-add into the table: rows gathered several times accumulate.
  resetGrads(*this, operandGrads);
  operandGrads[0] = GatherGradOp::create(b, getLoc(), getTable().getType(),
                                         getIds(), resultGrads[0]);
  return success();
}

LogicalResult PositionsOp::buildGradient(OpBuilder &, ValueRange,
                                         SmallVectorImpl<Value> &operandGrads) {
  resetGrads(*this, operandGrads);
  return success();
}

LogicalResult
SinusoidalOp::buildGradient(OpBuilder &, ValueRange,
                            SmallVectorImpl<Value> &operandGrads) {
  // A constant table of the sizes: nothing to differentiate.
  resetGrads(*this, operandGrads);
  return success();
}

LogicalResult RopeOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  // A rotation's adjoint is its transpose, the rotation by the opposite
  // angle; the positions are integers.
  GradBuilder g(b, getLoc());
  resetGrads(*this, operandGrads);
  operandGrads[0] = RopeOp::create(
      b, getLoc(), g.coerce(resultGrads[0], getInput()), getPositions(),
      getBaseAttr(), getInverse() ? UnitAttr() : b.getUnitAttr());
  return success();
}

//===----------------------------------------------------------------------===//
// Contractions and reductions
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  // dA = dC B^T and dB = A^T dC, summed over broadcast batch dimensions. A
  // matrix B against a batched A (x @ W) takes one product over the
  // flattened rows instead of a batched product and a sum.
  GradBuilder g(b, getLoc());
  resetGrads(*this, operandGrads);
  Value lhs = getLhs(), rhs = getRhs(), dy = resultGrads[0];
  operandGrads[0] = g.sumToShape(
      MatmulOp::create(b, getLoc(), dy, g.transposeLast(rhs)), lhs);
  if (typeOf(rhs).getRank() == 2 && typeOf(lhs).getRank() > 2) {
    Value product = MatmulOp::create(
        b, getLoc(), g.transposeLast(g.flatten(lhs)), g.flatten(dy));
    operandGrads[1] = g.coerce(product, rhs);
    return success();
  }
  operandGrads[1] = g.sumToShape(
      MatmulOp::create(b, getLoc(), g.transposeLast(lhs), dy), rhs);
  return success();
}

LogicalResult LinearOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  // y = act(z) + r with z = x W^T + b: dz = act'(z) dy (z recomputed),
  // dx = dz W, dW = dz^T x over the flattened rows, db = the column sums of
  // dz, dr = dy.
  GradBuilder g(b, getLoc());
  resetGrads(*this, operandGrads);
  Value dy = resultGrads[0];
  Value dz = dy;
  if (getActivation() != Activation::none) {
    Value z = LinearOp::create(b, getLoc(), getInput(), getWeight(), getBias(),
                               Value(), Activation::none);
    dz = ActivationGradOp::create(b, getLoc(), getActivation(), z,
                                  g.coerce(dy, z));
  }
  operandGrads[0] =
      g.coerce(MatmulOp::create(b, getLoc(), dz, getWeight()), getInput());
  Value rows = g.flatten(dz);
  operandGrads[1] =
      g.coerce(MatmulOp::create(b, getLoc(), g.transposeLast(rows),
                                g.flatten(getInput())),
               getWeight());
  unsigned next = 2;
  if (Value bias = getBias())
    operandGrads[next++] = g.coerce(g.reduce(ReduceKind::sum, rows, 0), bias);
  if (Value residual = getResidual())
    operandGrads[next] = g.sumToShape(dy, residual);
  return success();
}

LogicalResult ReduceOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(b, getLoc());
  resetGrads(*this, operandGrads);
  Value input = getInput(), dy = resultGrads[0];
  auto axis = static_cast<int64_t>(getAxis());
  Type elementType = typeOf(input).getElementType();
  switch (getKind()) {
  case ReduceKind::sum:
    operandGrads[0] = g.broadcastLike(g.insertUnitDim(dy, axis), input);
    return success();
  case ReduceKind::max: {
    // To every element equal to the maximum (ties share the adjoint, as the
    // finite differences of the definition do only for single maxima).
    Value isMax = CompareOp::create(b, getLoc(), CompareKind::eq, input,
                                    g.insertUnitDim(getResult(), axis));
    Value chosen =
        SelectOp::create(b, getLoc(), isMax, g.insertUnitDim(dy, axis),
                         g.scalar(elementType, 0.0));
    operandGrads[0] = g.coerce(chosen, input);
    return success();
  }
  case ReduceKind::mean:
    break;
  }
  Value mask = getMask();
  if (!mask) {
    // dy / n to every element; a dynamic n is counted as a sum of ones.
    int64_t length = typeOf(input).getDimSize(axis);
    Value count;
    if (ShapedType::isDynamic(length)) {
      Value ones = g.filled(RankedTensorType::get({length}, elementType),
                            {g.size(input, axis)}, 1.0);
      count = g.reduce(ReduceKind::sum, ones, 0);
    } else {
      count = g.scalar(elementType, static_cast<double>(length));
    }
    Value scaled = DivOp::create(b, getLoc(), dy, count);
    operandGrads[0] = g.broadcastLike(g.insertUnitDim(scaled, axis), input);
    return success();
  }
  // Masked mean: dy / count to the elements kept (mask false), zero to the
  // others; a row with nothing kept has mean 0 and no adjoint.
  int64_t inputRank = typeOf(input).getRank();
  int64_t maskRank = typeOf(mask).getRank();
  Value keep = SelectOp::create(b, getLoc(), mask, g.scalar(elementType, 0.0),
                                g.scalar(elementType, 1.0));
  Value count = g.appendUnitDims(g.reduce(ReduceKind::sum, keep, axis),
                                 inputRank - maskRank);
  Value zero = g.scalar(elementType, 0.0);
  Value empty = CompareOp::create(b, getLoc(), CompareKind::eq, count, zero);
  Value safeCount =
      SelectOp::create(b, getLoc(), empty, g.scalar(elementType, 1.0), count);
  Value scaled = DivOp::create(b, getLoc(), dy, safeCount);
  Value spread = g.broadcastLike(g.insertUnitDim(scaled, axis), input);
  Value kept = MulOp::create(b, getLoc(), spread,
                             g.appendUnitDims(keep, inputRank - maskRank));
  operandGrads[0] = g.coerce(kept, input);
  return success();
}

LogicalResult SoftmaxOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  resetGrads(*this, operandGrads);
  operandGrads[0] = SoftmaxGradOp::create(b, getLoc(), getResult(),
                                          resultGrads[0], getAxis());
  return success();
}

LogicalResult
LogSoftmaxOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  resetGrads(*this, operandGrads);
  operandGrads[0] = LogSoftmaxGradOp::create(b, getLoc(), getResult(),
                                             resultGrads[0], getAxis());
  return success();
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

/// The normalised input: the input plus the residual when there is one.
static Value normInput(OpBuilder &b, Location loc, Value input,
                       Value residual) {
  if (!residual)
    return input;
  return AddOp::create(b, loc, input, residual);
}

LogicalResult LayerNormOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(b, getLoc());
  resetGrads(*this, operandGrads);
  Value input = normInput(b, getLoc(), getInput(), getResidual());
  auto grad =
      LayerNormGradOp::create(b, getLoc(), input, getWeight(),
                              g.coerce(resultGrads[0], input), getEpsAttr());
  operandGrads[0] = g.sumToShape(grad.getGradInput(), getInput());
  operandGrads[1] = g.coerce(grad.getGradWeight(), getWeight());
  operandGrads[2] = g.coerce(grad.getGradBias(), getBias());
  if (Value residual = getResidual())
    operandGrads[3] = g.sumToShape(grad.getGradInput(), residual);
  return success();
}

LogicalResult RmsNormOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(b, getLoc());
  resetGrads(*this, operandGrads);
  Value input = normInput(b, getLoc(), getInput(), getResidual());
  auto grad =
      RmsNormGradOp::create(b, getLoc(), input, getWeight(),
                            g.coerce(resultGrads[0], input), getEpsAttr());
  operandGrads[0] = g.sumToShape(grad.getGradInput(), getInput());
  operandGrads[1] = g.coerce(grad.getGradWeight(), getWeight());
  if (Value residual = getResidual())
    operandGrads[2] = g.sumToShape(grad.getGradInput(), residual);
  return success();
}

//===----------------------------------------------------------------------===//
// Attention and loss
//===----------------------------------------------------------------------===//

LogicalResult SdpaOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  // One sdpa_grad with the same masks, scale and dropout (seed and stream:
  // the same attention-dropout mask is redrawn), and the forward's
  // logsumexp when it has one (attn-share-attention-stats adds it later).
  if (getLogsumexp() && resultGrads[1])
    return emitOpError() << "cannot be differentiated through its logsumexp "
                            "result";
  GradBuilder g(b, getLoc());
  resetGrads(*this, operandGrads);
  auto grad = SdpaGradOp::create(
      b, getLoc(), getQuery(), getKey(), getValue(), getResult(),
      resultGrads[0], getLogsumexp(), getKeyPadding(), getSeed(),
      getMaskAttr(), getScaleAttr(), getDropoutAttr(), getStreamAttr());
  operandGrads[0] = g.coerce(grad.getGradQuery(), getQuery());
  operandGrads[1] = g.coerce(grad.getGradKey(), getKey());
  operandGrads[2] = g.coerce(grad.getGradValue(), getValue());
  return success();
}

LogicalResult
CrossEntropyOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(b, getLoc());
  resetGrads(*this, operandGrads);
  Value grad = CrossEntropyGradOp::create(
      b, getLoc(), getLogits(), getTargets(), resultGrads[0],
      getIgnoreIndexAttr(), getLabelSmoothingAttr());
  operandGrads[0] = g.coerce(grad, getLogits());
  return success();
}
