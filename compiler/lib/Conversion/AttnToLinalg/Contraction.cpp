//===- Contraction.cpp - Lowering products and reductions -----------------===//
//
// Matrix products (batched, broadcast), linear layers with their epilogue,
// and sum/mean/max reductions including the masked mean, as contractions
// and reductions in `linalg.generic` form.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilders.h"

#include <limits>

using namespace mlir;

namespace attn {
namespace {

/// `acc + a * b` in the element type of `acc`.
Value multiplyAdd(OpBuilder &b, Location loc, Value x, Value y, Value acc) {
  return arith::AddFOp::create(b, loc, acc, arith::MulFOp::create(b, loc, x, y));
}

struct MatmulLowering : OpConversionPattern<MatmulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MatmulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    Value lhs = adaptor.getLhs(), rhs = adaptor.getRhs();
    auto lType = cast<RankedTensorType>(lhs.getType());
    auto rType = cast<RankedTensorType>(rhs.getType());
    auto type = cast<RankedTensorType>(op.getType());
    // Loops: (batch..., m, n, k).
    int64_t batch = type.getRank() - 2, loops = batch + 3;
    auto batchExprs = [&](RankedTensorType t) {
      SmallVector<AffineExpr> exprs;
      int64_t tBatch = t.getRank() - 2, offset = batch - tBatch;
      for (int64_t d = 0; d < tBatch; ++d)
        exprs.push_back(t.getDimSize(d) == 1 && type.getDimSize(d + offset) != 1
                            ? getAffineConstantExpr(0, context)
                            : getAffineDimExpr(d + offset, context));
      return exprs;
    };
    AffineExpr m = getAffineDimExpr(batch, context),
               n = getAffineDimExpr(batch + 1, context),
               k = getAffineDimExpr(batch + 2, context);
    SmallVector<AffineExpr> lExprs = batchExprs(lType), rExprs = batchExprs(rType),
                            oExprs;
    lExprs.append({m, k});
    rExprs.append({k, n});
    for (int64_t d = 0; d < batch; ++d)
      oExprs.push_back(getAffineDimExpr(d, context));
    oExprs.append({m, n});

    // Result sizes: batch dims broadcast from the operands' batch dims.
    SmallVector<OpFoldResult> sizes;
    for (int64_t d = 0; d < batch; ++d) {
      if (!type.isDynamicDim(d)) {
        sizes.push_back(rewriter.getIndexAttr(type.getDimSize(d)));
        continue;
      }
      Value size;
      for (auto [v, t] : {std::pair{lhs, lType}, std::pair{rhs, rType}}) {
        int64_t td = d - (batch - (t.getRank() - 2));
        if (!size && td >= 0 && t.getDimSize(td) != 1)
          size = dimOf(rewriter, loc, v, td);
      }
      sizes.push_back(size);
    }
    sizes.push_back(tensor::getMixedSize(rewriter, loc, lhs, lType.getRank() - 2));
    sizes.push_back(tensor::getMixedSize(rewriter, loc, rhs, rType.getRank() - 1));
    Value init = filledTensor(rewriter, loc, type, sizes,
                              rewriter.getFloatAttr(type.getElementType(), 0));
    SmallVector<utils::IteratorType> iterators(loops,
                                               utils::IteratorType::parallel);
    iterators.back() = utils::IteratorType::reduction;
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type}, ValueRange{lhs, rhs}, ValueRange{init},
        SmallVector<AffineMap>{AffineMap::get(loops, 0, lExprs, context),
                               AffineMap::get(loops, 0, rExprs, context),
                               AffineMap::get(loops, 0, oExprs, context)},
        iterators, [](OpBuilder &b, Location l, ValueRange args) {
          linalg::YieldOp::create(b, l,
                                  multiplyAdd(b, l, args[0], args[1], args[2]));
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

struct LinearLowering : OpConversionPattern<LinearOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    Value x = adaptor.getInput(), weight = adaptor.getWeight();
    auto type = cast<RankedTensorType>(op.getType());
    // Loops: (lead..., o, i); y[lead, o] += x[lead, i] * W[o, i].
    int64_t lead = type.getRank() - 1, loops = lead + 2;
    AffineExpr o = getAffineDimExpr(lead, context),
               i = getAffineDimExpr(lead + 1, context);
    SmallVector<AffineExpr> xExprs, outExprs;
    for (int64_t d = 0; d < lead; ++d) {
      xExprs.push_back(getAffineDimExpr(d, context));
      outExprs.push_back(getAffineDimExpr(d, context));
    }
    xExprs.push_back(i);
    outExprs.push_back(o);
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rewriter, loc, x);
    sizes.back() = tensor::getMixedSize(rewriter, loc, weight, 0);
    Value init = filledTensor(rewriter, loc, type, sizes,
                              rewriter.getFloatAttr(type.getElementType(), 0));
    SmallVector<utils::IteratorType> iterators(loops,
                                               utils::IteratorType::parallel);
    iterators.back() = utils::IteratorType::reduction;
    Value product =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{type}, ValueRange{x, weight},
            ValueRange{init},
            SmallVector<AffineMap>{AffineMap::get(loops, 0, xExprs, context),
                                   AffineMap::get(loops, 0, {o, i}, context),
                                   AffineMap::get(loops, 0, outExprs, context)},
            iterators,
            [](OpBuilder &b, Location l, ValueRange args) {
              linalg::YieldOp::create(
                  b, l, multiplyAdd(b, l, args[0], args[1], args[2]));
            })
            .getResult(0);
    // Epilogue: activation(y + bias) + residual.
    Value bias = adaptor.getBias(), residual = adaptor.getResidual();
    Activation activation = op.getActivation();
    if (!bias && !residual && activation == Activation::none) {
      rewriter.replaceOp(op, product);
      return success();
    }
    SmallVector<Value> operands = {product};
    if (bias)
      operands.push_back(bias);
    if (residual)
      operands.push_back(residual);
    rewriter.replaceOp(
        op, buildElementwise(rewriter, loc, type, operands,
                             [&](OpBuilder &b, Location l, ValueRange args) {
                               Value y = args[0];
                               unsigned next = 1;
                               if (bias)
                                 y = arith::AddFOp::create(b, l, y, args[next++]);
                               y = applyActivation(b, l, activation, y);
                               if (residual)
                                 y = arith::AddFOp::create(b, l, y, args[next]);
                               return y;
                             }));
    return success();
  }
};

/// The map reading a tensor reduced over `axis` inside loops over the
/// unreduced rank.
AffineMap droppedAxisMap(MLIRContext *context, int64_t rank, int64_t axis) {
  SmallVector<AffineExpr> exprs;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      exprs.push_back(getAffineDimExpr(d, context));
  return AffineMap::get(rank, 0, exprs, context);
}

struct ReduceLowering : OpConversionPattern<ReduceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReduceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto inType = cast<RankedTensorType>(input.getType());
    auto type = cast<RankedTensorType>(op.getType());
    Type element = type.getElementType();
    int64_t axis = op.getAxis();
    if (op.getKind() == ReduceKind::max) {
      Value result = buildReduction(
          rewriter, loc, input, axis,
          rewriter.getFloatAttr(element,
                                -std::numeric_limits<double>::infinity()),
          [](OpBuilder &b, Location l, Value x, Value acc) -> Value {
            return arith::MaximumFOp::create(b, l, x, acc);
          });
      rewriter.replaceOp(op, tensor::CastOp::create(rewriter, loc, type, result));
      return success();
    }
    if (!adaptor.getMask()) {
      Value sum = buildReduction(
          rewriter, loc, input, axis, rewriter.getFloatAttr(element, 0),
          [](OpBuilder &b, Location l, Value x, Value acc) -> Value {
            return arith::AddFOp::create(b, l, x, acc);
          });
      if (op.getKind() == ReduceKind::mean) {
        Value count = arith::IndexCastOp::create(
            rewriter, loc, rewriter.getI64Type(), dimOf(rewriter, loc, input, axis));
        Value countF = arith::SIToFPOp::create(rewriter, loc, element, count);
        auto sumType = cast<RankedTensorType>(sum.getType());
        sum = buildElementwise(rewriter, loc, sumType, sum,
                               [&](OpBuilder &b, Location l, ValueRange args) {
                                 return arith::DivFOp::create(b, l, args[0],
                                                              countF);
                               });
      }
      rewriter.replaceOp(op, tensor::CastOp::create(rewriter, loc, type, sum));
      return success();
    }

    // Masked mean: one pass accumulating the sum and the count of the
    // elements whose mask is false, then sum / count (0 when none).
    Value mask = adaptor.getMask();
    auto maskType = cast<RankedTensorType>(mask.getType());
    MLIRContext *context = rewriter.getContext();
    int64_t rank = inType.getRank();
    SmallVector<AffineExpr> maskExprs;
    for (int64_t d = 0; d < maskType.getRank(); ++d)
      maskExprs.push_back(getAffineDimExpr(d, context));
    SmallVector<OpFoldResult> sizes;
    SmallVector<int64_t> shape;
    for (int64_t d = 0; d < rank; ++d) {
      if (d == axis)
        continue;
      sizes.push_back(tensor::getMixedSize(rewriter, loc, input, d));
      shape.push_back(inType.getDimSize(d));
    }
    auto accType = RankedTensorType::get(shape, element);
    Value zero = filledTensor(rewriter, loc, accType, sizes,
                              rewriter.getFloatAttr(element, 0));
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    iterators[axis] = utils::IteratorType::reduction;
    AffineMap outMap = droppedAxisMap(context, rank, axis);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{accType, accType}, ValueRange{input, mask},
        ValueRange{zero, zero},
        SmallVector<AffineMap>{rewriter.getMultiDimIdentityMap(rank),
                               AffineMap::get(rank, 0, maskExprs, context),
                               outMap, outMap},
        iterators, [&](OpBuilder &b, Location l, ValueRange args) {
          Value zeroF = floatConstant(b, l, element, 0);
          Value oneF = floatConstant(b, l, element, 1);
          Value x = arith::SelectOp::create(b, l, args[1], zeroF, args[0]);
          Value w = arith::SelectOp::create(b, l, args[1], zeroF, oneF);
          linalg::YieldOp::create(
              b, l,
              ValueRange{arith::AddFOp::create(b, l, args[2], x),
                         arith::AddFOp::create(b, l, args[3], w)});
        });
    Value mean = buildElementwise(
        rewriter, loc, accType, generic.getResults(),
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value zeroF = floatConstant(b, l, element, 0);
          Value none = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ,
                                             args[1], zeroF);
          Value quotient = arith::DivFOp::create(b, l, args[0], args[1]);
          return arith::SelectOp::create(b, l, none, zeroF, quotient);
        });
    rewriter.replaceOp(op, tensor::CastOp::create(rewriter, loc, type, mean));
    return success();
  }
};

} // namespace

void populateContractionPatterns(RewritePatternSet &patterns) {
  patterns.add<MatmulLowering, LinearLowering, ReduceLowering>(
      patterns.getContext());
}

} // namespace attn
