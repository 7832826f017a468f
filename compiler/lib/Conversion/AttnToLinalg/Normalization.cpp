//===- Normalization.cpp - Lowering softmax and norms ---------------------===//
//
// Softmax, log-softmax, layer norm and RMS norm: reductions over one axis
// followed by an element-wise pass that reads the reduced statistics.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilders.h"

#include <limits>

using namespace mlir;

namespace attn {

/// An element-wise generic over `full`'s shape reading `full`, then each of
/// `reduced` (reduced over `axis`), then each of `perFeature` (indexed by the
/// last dim only).
Value buildWithStatistics(OpBuilder &b, Location loc, Value full,
                          ValueRange reduced, int64_t axis,
                          ValueRange perFeature, ScalarFn fn) {
  MLIRContext *context = b.getContext();
  auto type = cast<RankedTensorType>(full.getType());
  int64_t rank = type.getRank();
  SmallVector<Value> inputs = {full};
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(rank)};
  SmallVector<AffineExpr> droppedExprs;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      droppedExprs.push_back(getAffineDimExpr(d, context));
  for (Value r : reduced) {
    inputs.push_back(r);
    maps.push_back(AffineMap::get(rank, 0, droppedExprs, context));
  }
  for (Value p : perFeature) {
    inputs.push_back(p);
    maps.push_back(
        AffineMap::get(rank, 0, getAffineDimExpr(rank - 1, context), context));
  }
  maps.push_back(b.getMultiDimIdentityMap(rank));
  Value init = tensor::EmptyOp::create(b, loc, tensor::getMixedSizes(b, loc, full),
                                       type.getElementType());
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, inputs, ValueRange{init}, maps, iterators,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(nb, l, fn(nb, l, args.drop_back()));
             })
      .getResult(0);
}

Value reduceMax(OpBuilder &b, Location loc, Value x, int64_t axis) {
  Type element = cast<RankedTensorType>(x.getType()).getElementType();
  return buildReduction(
      b, loc, x, axis,
      b.getFloatAttr(element, -std::numeric_limits<double>::infinity()),
      [](OpBuilder &nb, Location l, Value v, Value acc) -> Value {
        return arith::MaximumFOp::create(nb, l, v, acc);
      });
}

Value reduceSum(OpBuilder &b, Location loc, Value x, int64_t axis) {
  Type element = cast<RankedTensorType>(x.getType()).getElementType();
  return buildReduction(b, loc, x, axis, b.getFloatAttr(element, 0),
                        [](OpBuilder &nb, Location l, Value v, Value acc) -> Value {
                          return arith::AddFOp::create(nb, l, v, acc);
                        });
}

/// exp(x - max) with the row maximum `max`.
Value shiftedExp(OpBuilder &b, Location loc, Value x, Value max, int64_t axis) {
  return buildWithStatistics(
      b, loc, x, max, axis, {}, [](OpBuilder &nb, Location l, ValueRange a) {
        return math::ExpOp::create(nb, l, arith::SubFOp::create(nb, l, a[0], a[1]))
            .getResult();
      });
}

namespace {

struct SoftmaxLowering : OpConversionPattern<SoftmaxOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SoftmaxOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t axis = op.getAxis();
    Value x = adaptor.getInput();
    Value e = shiftedExp(rewriter, loc, x, reduceMax(rewriter, loc, x, axis), axis);
    Value sum = reduceSum(rewriter, loc, e, axis);
    rewriter.replaceOp(
        op, buildWithStatistics(rewriter, loc, e, sum, axis, {},
                                [](OpBuilder &b, Location l, ValueRange a) {
                                  return arith::DivFOp::create(b, l, a[0], a[1])
                                      .getResult();
                                }));
    return success();
  }
};

struct LogSoftmaxLowering : OpConversionPattern<LogSoftmaxOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LogSoftmaxOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t axis = op.getAxis();
    Value x = adaptor.getInput();
    Value max = reduceMax(rewriter, loc, x, axis);
    Value sum = reduceSum(rewriter, loc, shiftedExp(rewriter, loc, x, max, axis),
                          axis);
    rewriter.replaceOp(
        op, buildWithStatistics(
                rewriter, loc, x, {max, sum}, axis, {},
                [](OpBuilder &b, Location l, ValueRange a) {
                  Value shifted = arith::SubFOp::create(b, l, a[0], a[1]);
                  return arith::SubFOp::create(b, l, shifted,
                                               math::LogOp::create(b, l, a[2]))
                      .getResult();
                }));
    return success();
  }
};

/// `input + residual` when there is a residual.
Value addResidual(OpBuilder &b, Location loc, Value input, Value residual) {
  if (!residual)
    return input;
  return buildElementwise(b, loc, cast<RankedTensorType>(input.getType()),
                          {input, residual},
                          [](OpBuilder &nb, Location l, ValueRange a) {
                            return arith::AddFOp::create(nb, l, a[0], a[1])
                                .getResult();
                          });
}

/// Divides each element of `sums` by the size of `x`'s last dim.
Value meanOfLastDim(OpBuilder &b, Location loc, Value sums, Value x) {
  auto type = cast<RankedTensorType>(sums.getType());
  int64_t axis = cast<RankedTensorType>(x.getType()).getRank() - 1;
  Value count = arith::SIToFPOp::create(
      b, loc, type.getElementType(),
      arith::IndexCastOp::create(b, loc, b.getI64Type(), dimOf(b, loc, x, axis)));
  return buildElementwise(b, loc, type, sums,
                          [&](OpBuilder &nb, Location l, ValueRange a) {
                            return arith::DivFOp::create(nb, l, a[0], count)
                                .getResult();
                          });
}

struct LayerNormLowering : OpConversionPattern<LayerNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LayerNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value y = addResidual(rewriter, loc, adaptor.getInput(), adaptor.getResidual());
    int64_t axis = cast<RankedTensorType>(y.getType()).getRank() - 1;
    Type element = cast<RankedTensorType>(y.getType()).getElementType();
    Value mean = meanOfLastDim(rewriter, loc, reduceSum(rewriter, loc, y, axis), y);
    Value squares = buildWithStatistics(
        rewriter, loc, y, mean, axis, {},
        [](OpBuilder &b, Location l, ValueRange a) {
          Value c = arith::SubFOp::create(b, l, a[0], a[1]);
          return arith::MulFOp::create(b, l, c, c).getResult();
        });
    Value var =
        meanOfLastDim(rewriter, loc, reduceSum(rewriter, loc, squares, axis), y);
    double eps = op.getEps().convertToDouble();
    rewriter.replaceOp(
        op, buildWithStatistics(
                rewriter, loc, y, {mean, var}, axis,
                {adaptor.getWeight(), adaptor.getBias()},
                [&](OpBuilder &b, Location l, ValueRange a) {
                  Value centered = arith::SubFOp::create(b, l, a[0], a[1]);
                  Value inv = math::RsqrtOp::create(
                      b, l,
                      arith::AddFOp::create(b, l, a[2],
                                            floatConstant(b, l, element, eps)));
                  Value normalized = arith::MulFOp::create(b, l, centered, inv);
                  return arith::AddFOp::create(
                             b, l, arith::MulFOp::create(b, l, normalized, a[3]),
                             a[4])
                      .getResult();
                }));
    return success();
  }
};

struct RmsNormLowering : OpConversionPattern<RmsNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RmsNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value y = addResidual(rewriter, loc, adaptor.getInput(), adaptor.getResidual());
    auto type = cast<RankedTensorType>(y.getType());
    int64_t axis = type.getRank() - 1;
    Value squares = buildElementwise(
        rewriter, loc, type, y, [](OpBuilder &b, Location l, ValueRange a) {
          return arith::MulFOp::create(b, l, a[0], a[0]).getResult();
        });
    Value ms =
        meanOfLastDim(rewriter, loc, reduceSum(rewriter, loc, squares, axis), y);
    double eps = op.getEps().convertToDouble();
    rewriter.replaceOp(
        op, buildWithStatistics(
                rewriter, loc, y, ms, axis, adaptor.getWeight(),
                [&](OpBuilder &b, Location l, ValueRange a) {
                  Value inv = math::RsqrtOp::create(
                      b, l,
                      arith::AddFOp::create(
                          b, l, a[1],
                          floatConstant(b, l, type.getElementType(), eps)));
                  return arith::MulFOp::create(
                             b, l, arith::MulFOp::create(b, l, a[0], inv), a[2])
                      .getResult();
                }));
    return success();
  }
};

} // namespace

void populateNormalizationPatterns(RewritePatternSet &patterns) {
  patterns.add<SoftmaxLowering, LogSoftmaxLowering, LayerNormLowering,
               RmsNormLowering>(patterns.getContext());
}

} // namespace attn
