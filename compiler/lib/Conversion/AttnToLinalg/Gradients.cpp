//===- Gradients.cpp - Lowering the adjoints of the composite ops ---------===//
//
// The gradient ops the autodiff pass emits, other than attention's:
// activations, softmax and log-softmax (from their outputs), layer and RMS
// norm (statistics recomputed from the input), cross-entropy (fused with the
// softmax it differentiates: only the logits-shaped result is materialised)
// and the embedding's scatter-add. Each is a few reductions over one axis and
// one element-wise pass reading them, as the forward ops are.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilders.h"

#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace attn {

Value applyActivationDerivative(OpBuilder &b, Location loc,
                                Activation activation, Value x) {
  Type type = x.getType();
  auto c = [&](double v) { return floatConstant(b, loc, type, v); };
  auto mul = [&](Value l, Value r) -> Value {
    return arith::MulFOp::create(b, loc, l, r);
  };
  auto add = [&](Value l, Value r) -> Value {
    return arith::AddFOp::create(b, loc, l, r);
  };
  auto sub = [&](Value l, Value r) -> Value {
    return arith::SubFOp::create(b, loc, l, r);
  };
  switch (activation) {
  case Activation::none:
    return c(1.0);
  case Activation::relu: {
    // PyTorch's threshold_backward: the subgradient at 0 is 0.
    Value positive =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, c(0.0));
    return arith::SelectOp::create(b, loc, positive, c(1.0), c(0.0));
  }
  case Activation::gelu: {
    // Phi(x) + x phi(x).
    Value cdf = mul(c(0.5),
                    add(c(1.0), math::ErfOp::create(b, loc, mul(x, c(M_SQRT1_2)))));
    Value pdf = mul(c(0.3989422804014327),
                    math::ExpOp::create(b, loc, mul(c(-0.5), mul(x, x))));
    return add(cdf, mul(x, pdf));
  }
  case Activation::gelu_tanh: {
    // 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 a x^2), t = tanh(k (x + a x^3)).
    constexpr double k = 0.7978845608028654, a = 0.044715;
    Value x2 = mul(x, x);
    Value t = math::TanhOp::create(
        b, loc, mul(c(k), add(x, mul(c(a), mul(x2, x)))));
    Value inner = mul(c(k), add(c(1.0), mul(c(3 * a), x2)));
    return add(mul(c(0.5), add(c(1.0), t)),
               mul(mul(c(0.5), x), mul(sub(c(1.0), mul(t, t)), inner)));
  }
  case Activation::silu:
  case Activation::sigmoid: {
    Value s = applyActivation(b, loc, Activation::sigmoid, x);
    Value oneMinus = sub(c(1.0), s);
    if (activation == Activation::sigmoid)
      return mul(s, oneMinus);
    return mul(s, add(c(1.0), mul(x, oneMinus)));
  }
  case Activation::tanh: {
    Value t = math::TanhOp::create(b, loc, x);
    return sub(c(1.0), mul(t, t));
  }
  }
  llvm_unreachable("unknown activation");
}

namespace {

/// Computes several values from the operands' elements.
using ScalarFn1N = std::function<SmallVector<Value>(OpBuilder &, Location,
                                                    ValueRange)>;

/// The maps of a loop nest over `rank` dims reading a full tensor (identity)
/// and a tensor reduced over `axis`.
AffineMap reducedMap(MLIRContext *context, int64_t rank, int64_t axis) {
  SmallVector<AffineExpr> exprs;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      exprs.push_back(getAffineDimExpr(d, context));
  return AffineMap::get(rank, 0, exprs, context);
}

/// The sizes of `x` without dim `axis`.
SmallVector<OpFoldResult> sizesWithout(OpBuilder &b, Location loc, Value x,
                                       int64_t axis) {
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
  sizes.erase(sizes.begin() + axis);
  return sizes;
}

/// Reductions over `axis` of several per-element quantities computed from
/// `full` (read element-wise) and `reduced` (statistics already reduced over
/// `axis`), in one pass: `fn` returns one addend per result. Results start at
/// 0 and have the shape of `full[0]` without `axis`.
SmallVector<Value> reduceSums(OpBuilder &b, Location loc, ValueRange full,
                              ValueRange reduced, int64_t axis,
                              unsigned numResults, ScalarFn1N fn);

/// An element-wise pass over the shape of `full[0]` reading `full`
/// element-wise, `reduced` reduced over `axis` and `perFeature` indexed by the
/// last dim.
Value rowwise(OpBuilder &b, Location loc, ValueRange full, ValueRange reduced,
              int64_t axis, ValueRange perFeature, ScalarFn fn) {
  MLIRContext *context = b.getContext();
  auto type = cast<RankedTensorType>(full[0].getType());
  int64_t rank = type.getRank();
  SmallVector<Value> inputs(full.begin(), full.end());
  SmallVector<AffineMap> maps(full.size(), b.getMultiDimIdentityMap(rank));
  for (Value r : reduced) {
    inputs.push_back(r);
    maps.push_back(reducedMap(context, rank, axis));
  }
  for (Value p : perFeature) {
    inputs.push_back(p);
    maps.push_back(
        AffineMap::get(rank, 0, getAffineDimExpr(rank - 1, context), context));
  }
  maps.push_back(b.getMultiDimIdentityMap(rank));
  Value init = tensor::EmptyOp::create(
      b, loc, tensor::getMixedSizes(b, loc, full[0]), type.getElementType());
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, inputs, ValueRange{init}, maps, iterators,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(nb, l, fn(nb, l, args.drop_back()));
             })
      .getResult(0);
}

/// A generic adding, per iteration, the addends `fn` computes from `inputs`
/// to its outputs (`inits`, one per result): the body of the reductions
/// below.
SmallVector<Value> accumulate(OpBuilder &b, Location loc, TypeRange types,
                              ValueRange inputs, ValueRange inits,
                              ArrayRef<AffineMap> maps,
                              ArrayRef<utils::IteratorType> iterators,
                              ScalarFn1N fn) {
  auto generic = linalg::GenericOp::create(
      b, loc, types, inputs, inits, maps, iterators,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        SmallVector<Value> addends = fn(nb, l, args.take_front(inputs.size()));
        SmallVector<Value> sums;
        for (auto [sum, addend] :
             llvm::zip(args.drop_front(inputs.size()), addends))
          sums.push_back(arith::AddFOp::create(nb, l, sum, addend));
        linalg::YieldOp::create(nb, l, sums);
      });
  return SmallVector<Value>(generic.getResults());
}

SmallVector<Value> reduceSums(OpBuilder &b, Location loc, ValueRange full,
                              ValueRange reduced, int64_t axis,
                              unsigned numResults, ScalarFn1N fn) {
  MLIRContext *context = b.getContext();
  auto type = cast<RankedTensorType>(full[0].getType());
  int64_t rank = type.getRank();
  Type element = type.getElementType();
  SmallVector<int64_t> shape(type.getShape());
  shape.erase(shape.begin() + axis);
  auto resultType = RankedTensorType::get(shape, element);
  Value zero = filledTensor(b, loc, resultType, sizesWithout(b, loc, full[0], axis),
                            b.getFloatAttr(element, 0));
  SmallVector<Value> inputs(full.begin(), full.end());
  SmallVector<AffineMap> maps(full.size(), b.getMultiDimIdentityMap(rank));
  for (Value r : reduced) {
    inputs.push_back(r);
    maps.push_back(reducedMap(context, rank, axis));
  }
  for (unsigned i = 0; i < numResults; ++i)
    maps.push_back(reducedMap(context, rank, axis));
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  iterators[axis] = utils::IteratorType::reduction;
  SmallVector<Value> inits(numResults, zero);
  SmallVector<Type> types(numResults, resultType);
  return accumulate(b, loc, types, inputs, inits, maps, iterators, fn);
}

/// Sums over every dim but the last (the feature dim) of `fn`'s addends,
/// computed from `full` (element-wise) and `reduced` (per row, reduced over
/// the last dim): the weight and bias gradients of the norms.
SmallVector<Value> reducePerFeature(OpBuilder &b, Location loc, ValueRange full,
                                    ValueRange reduced, unsigned numResults,
                                    RankedTensorType featureType,
                                    ScalarFn1N fn) {
  MLIRContext *context = b.getContext();
  auto type = cast<RankedTensorType>(full[0].getType());
  int64_t rank = type.getRank();
  Type element = featureType.getElementType();
  Value zero = filledTensor(
      b, loc, featureType,
      {tensor::getMixedSize(b, loc, full[0], rank - 1)},
      b.getFloatAttr(element, 0));
  SmallVector<Value> inputs(full.begin(), full.end());
  SmallVector<AffineMap> maps(full.size(), b.getMultiDimIdentityMap(rank));
  for (Value r : reduced) {
    inputs.push_back(r);
    maps.push_back(reducedMap(context, rank, rank - 1));
  }
  AffineMap featureMap =
      AffineMap::get(rank, 0, getAffineDimExpr(rank - 1, context), context);
  for (unsigned i = 0; i < numResults; ++i)
    maps.push_back(featureMap);
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::reduction);
  iterators[rank - 1] = utils::IteratorType::parallel;
  SmallVector<Value> inits(numResults, zero);
  SmallVector<Type> types(numResults, featureType);
  return accumulate(b, loc, types, inputs, inits, maps, iterators, fn);
}

/// An element-wise map over a tensor of per-row statistics.
Value mapRows(OpBuilder &b, Location loc, ValueRange rows, ScalarFn fn) {
  return buildElementwise(b, loc, cast<RankedTensorType>(rows[0].getType()),
                          rows, fn);
}

/// The size of `x`'s dim `axis` as a float of `type`.
Value sizeAsFloat(OpBuilder &b, Location loc, Value x, int64_t axis, Type type) {
  return arith::SIToFPOp::create(
      b, loc, type,
      arith::IndexCastOp::create(b, loc, b.getI64Type(), dimOf(b, loc, x, axis)));
}

struct ActivationGradLowering : OpConversionPattern<ActivationGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ActivationGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Activation activation = op.getActivation();
    auto type = cast<RankedTensorType>(op.getType());
    rewriter.replaceOp(
        op, buildElementwise(
                rewriter, op.getLoc(), type,
                {adaptor.getInput(), adaptor.getGradOutput()},
                [&](OpBuilder &b, Location l, ValueRange a) {
                  return arith::MulFOp::create(
                             b, l, a[1],
                             applyActivationDerivative(b, l, activation, a[0]))
                      .getResult();
                }));
    return success();
  }
};

/// softmax: y (dy - sum(dy y)); log-softmax: dy - exp(y) sum(dy).
template <typename OpTy, bool Logarithm>
struct SoftmaxGradLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t axis = op.getAxis();
    Value y = adaptor.getOutput(), dy = adaptor.getGradOutput();
    Value sum = reduceSums(rewriter, loc, {y, dy}, {}, axis, 1,
                           [](OpBuilder &b, Location l, ValueRange a) {
                             if (Logarithm)
                               return SmallVector<Value>{a[1]};
                             return SmallVector<Value>{
                                 arith::MulFOp::create(b, l, a[0], a[1])};
                           })[0];
    rewriter.replaceOp(
        op, rowwise(rewriter, loc, {y, dy}, sum, axis, {},
                    [](OpBuilder &b, Location l, ValueRange a) -> Value {
                      if (Logarithm)
                        return arith::SubFOp::create(
                            b, l, a[1],
                            arith::MulFOp::create(
                                b, l, math::ExpOp::create(b, l, a[0]), a[2]));
                      return arith::MulFOp::create(
                          b, l, a[0], arith::SubFOp::create(b, l, a[1], a[2]));
                    }));
    return success();
  }
};

/// Per row of the last axis: the mean and 1/sqrt(var + eps) of layer norm,
/// or 1/sqrt(mean(x^2) + eps) of RMS norm.
struct RowStatistics {
  Value mean; // null for RMS norm
  Value rstd;
};

RowStatistics rowStatistics(OpBuilder &b, Location loc, Value x, double eps,
                            bool centred) {
  auto type = cast<RankedTensorType>(x.getType());
  Type element = type.getElementType();
  int64_t axis = type.getRank() - 1;
  Value count = sizeAsFloat(b, loc, x, axis, element);
  Value epsilon = floatConstant(b, loc, element, eps);
  RowStatistics stats;
  if (centred) {
    Value sum = reduceSums(b, loc, x, {}, axis, 1,
                           [](OpBuilder &, Location, ValueRange a) {
                             return SmallVector<Value>{a[0]};
                           })[0];
    stats.mean = mapRows(b, loc, sum, [&](OpBuilder &nb, Location l, ValueRange a) {
      return arith::DivFOp::create(nb, l, a[0], count).getResult();
    });
  }
  Value squares = reduceSums(
      b, loc, x, stats.mean ? ValueRange{stats.mean} : ValueRange{}, axis, 1,
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Value c = centred ? arith::SubFOp::create(nb, l, a[0], a[1]).getResult()
                          : a[0];
        return SmallVector<Value>{arith::MulFOp::create(nb, l, c, c)};
      })[0];
  stats.rstd = mapRows(b, loc, squares, [&](OpBuilder &nb, Location l, ValueRange a) {
    Value var = arith::DivFOp::create(nb, l, a[0], count);
    return math::RsqrtOp::create(nb, l, arith::AddFOp::create(nb, l, var, epsilon))
        .getResult();
  });
  return stats;
}

} // namespace

SmallVector<Value> layerNormGradResults(OpBuilder &b, Location loc,
                                        LayerNormGradOp op, Value dx, Value x,
                                        Value dy, Value mean, Value rstd) {
  // dw = sum over rows of dy xhat, db = sum over rows of dy, xhat = (x -
  // mean) rstd.
  auto featureType = cast<RankedTensorType>(op.getGradWeight().getType());
  SmallVector<Value> dwdb = reducePerFeature(
      b, loc, {x, dy}, {mean, rstd}, 2, featureType,
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Value xhat = arith::MulFOp::create(
            nb, l, arith::SubFOp::create(nb, l, a[0], a[2]), a[3]);
        return SmallVector<Value>{arith::MulFOp::create(nb, l, a[1], xhat),
                                  a[1]};
      });
  return {tensor::CastOp::create(b, loc, op.getGradInput().getType(), dx),
          dwdb[0],
          tensor::CastOp::create(b, loc, op.getGradBias().getType(), dwdb[1])};
}

SmallVector<Value> rmsNormGradResults(OpBuilder &b, Location loc,
                                      RmsNormGradOp op, Value dx, Value x,
                                      Value dy, Value rstd) {
  // dw = sum over rows of dy x rstd.
  auto featureType = cast<RankedTensorType>(op.getGradWeight().getType());
  Value dw = reducePerFeature(
      b, loc, {x, dy}, rstd, 1, featureType,
      [](OpBuilder &nb, Location l, ValueRange a) {
        return SmallVector<Value>{arith::MulFOp::create(
            nb, l, arith::MulFOp::create(nb, l, a[1], a[0]), a[2])};
      })[0];
  return {tensor::CastOp::create(b, loc, op.getGradInput().getType(), dx), dw};
}

namespace {

struct LayerNormGradLowering : OpConversionPattern<LayerNormGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LayerNormGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput(), w = adaptor.getWeight(),
          dy = adaptor.getGradOutput();
    auto type = cast<RankedTensorType>(x.getType());
    Type element = type.getElementType();
    int64_t axis = type.getRank() - 1;
    RowStatistics stats =
        rowStatistics(rewriter, loc, x, op.getEps().convertToDouble(), true);
    Value count = sizeAsFloat(rewriter, loc, x, axis, element);
    // xhat = (x - mean) rstd, dxhat = dy w; per row sum(dxhat) and
    // sum(dxhat xhat).
    auto xhatOf = [](OpBuilder &b, Location l, Value xv, Value mean,
                     Value rstd) -> Value {
      return arith::MulFOp::create(b, l, arith::SubFOp::create(b, l, xv, mean),
                                   rstd);
    };
    MLIRContext *context = rewriter.getContext();
    int64_t rank = type.getRank();
    // Row sums need the weight per feature: a generic of its own.
    SmallVector<Value> rowSums;
    {
      auto rowType = cast<RankedTensorType>(stats.rstd.getType());
      Value zero = filledTensor(rewriter, loc, rowType,
                                sizesWithout(rewriter, loc, x, axis),
                                rewriter.getFloatAttr(element, 0));
      AffineMap full = rewriter.getMultiDimIdentityMap(rank);
      AffineMap row = reducedMap(context, rank, axis);
      AffineMap feature =
          AffineMap::get(rank, 0, getAffineDimExpr(rank - 1, context), context);
      SmallVector<utils::IteratorType> iterators(rank,
                                                 utils::IteratorType::parallel);
      iterators[axis] = utils::IteratorType::reduction;
      auto generic = linalg::GenericOp::create(
          rewriter, loc, TypeRange{rowType, rowType},
          ValueRange{x, dy, stats.mean, stats.rstd, w}, ValueRange{zero, zero},
          SmallVector<AffineMap>{full, full, row, row, feature, row, row},
          iterators, [&](OpBuilder &b, Location l, ValueRange a) {
            Value dxhat = arith::MulFOp::create(b, l, a[1], a[4]);
            Value xhat = xhatOf(b, l, a[0], a[2], a[3]);
            linalg::YieldOp::create(
                b, l,
                ValueRange{arith::AddFOp::create(b, l, a[5], dxhat),
                           arith::AddFOp::create(
                               b, l, a[6],
                               arith::MulFOp::create(b, l, dxhat, xhat))});
          });
      rowSums.assign(generic.getResults().begin(), generic.getResults().end());
    }
    // dx = rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)).
    Value dx = rowwise(
        rewriter, loc, {x, dy}, {stats.mean, stats.rstd, rowSums[0], rowSums[1]},
        axis, w, [&](OpBuilder &b, Location l, ValueRange a) {
          Value xhat = xhatOf(b, l, a[0], a[2], a[3]);
          Value dxhat = arith::MulFOp::create(b, l, a[1], a[6]);
          Value meanDxhat = arith::DivFOp::create(b, l, a[4], count);
          Value meanDxhatXhat = arith::DivFOp::create(b, l, a[5], count);
          Value inner = arith::SubFOp::create(
              b, l, arith::SubFOp::create(b, l, dxhat, meanDxhat),
              arith::MulFOp::create(b, l, xhat, meanDxhatXhat));
          return arith::MulFOp::create(b, l, a[3], inner).getResult();
        });
    rewriter.replaceOp(op, layerNormGradResults(rewriter, loc, op, dx, x, dy,
                                                stats.mean, stats.rstd));
    return success();
  }
};

struct RmsNormGradLowering : OpConversionPattern<RmsNormGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RmsNormGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput(), w = adaptor.getWeight(),
          dy = adaptor.getGradOutput();
    auto type = cast<RankedTensorType>(x.getType());
    Type element = type.getElementType();
    int64_t axis = type.getRank() - 1;
    int64_t rank = type.getRank();
    MLIRContext *context = rewriter.getContext();
    RowStatistics stats =
        rowStatistics(rewriter, loc, x, op.getEps().convertToDouble(), false);
    Value count = sizeAsFloat(rewriter, loc, x, axis, element);
    // Per row: sum(dy w x).
    auto rowType = cast<RankedTensorType>(stats.rstd.getType());
    Value zero = filledTensor(rewriter, loc, rowType,
                              sizesWithout(rewriter, loc, x, axis),
                              rewriter.getFloatAttr(element, 0));
    AffineMap full = rewriter.getMultiDimIdentityMap(rank);
    AffineMap row = reducedMap(context, rank, axis);
    AffineMap feature =
        AffineMap::get(rank, 0, getAffineDimExpr(rank - 1, context), context);
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    iterators[axis] = utils::IteratorType::reduction;
    Value sumGx =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{rowType}, ValueRange{x, dy, w},
            ValueRange{zero}, SmallVector<AffineMap>{full, full, feature, row},
            iterators,
            [&](OpBuilder &b, Location l, ValueRange a) {
              Value gx = arith::MulFOp::create(
                  b, l, arith::MulFOp::create(b, l, a[1], a[2]), a[0]);
              linalg::YieldOp::create(
                  b, l, arith::AddFOp::create(b, l, a[3], gx).getResult());
            })
            .getResult(0);
    // dx = r dy w - r^3 x mean(dy w x).
    Value dx = rowwise(rewriter, loc, {x, dy}, {stats.rstd, sumGx}, axis, w,
                       [&](OpBuilder &b, Location l, ValueRange a) {
                         Value r = a[2];
                         Value meanGx = arith::DivFOp::create(b, l, a[3], count);
                         Value first = arith::MulFOp::create(
                             b, l, r, arith::MulFOp::create(b, l, a[1], a[4]));
                         Value r3 = arith::MulFOp::create(
                             b, l, arith::MulFOp::create(b, l, r, r), r);
                         Value second = arith::MulFOp::create(
                             b, l, r3, arith::MulFOp::create(b, l, a[0], meanGx));
                         return arith::SubFOp::create(b, l, first, second)
                             .getResult();
                       });
    rewriter.replaceOp(op,
                       rmsNormGradResults(rewriter, loc, op, dx, x, dy, stats.rstd));
    return success();
  }
};

/// `grad_loss / count * (softmax(logits) - smoothed one-hot(target))` per
/// counted row: two row reductions (max, then the sum of exponentials, fused
/// with the subtraction so nothing logits-shaped is stored) and the result.
struct CrossEntropyGradLowering : OpConversionPattern<CrossEntropyGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CrossEntropyGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value logits = adaptor.getLogits(), targets = adaptor.getTargets();
    auto type = cast<RankedTensorType>(logits.getType());
    Type element = type.getElementType();
    Type f32 = rewriter.getF32Type();
    int64_t rank = type.getRank(), axis = rank - 1;
    double smoothing = op.getLabelSmoothing().convertToDouble();
    std::optional<int64_t> ignore;
    if (op.getIgnoreIndex())
      ignore = static_cast<int64_t>(*op.getIgnoreIndex());
    MLIRContext *context = rewriter.getContext();

    Value max = reduceMax(rewriter, loc, logits, axis);
    Value sumExp = reduceSums(rewriter, loc, logits, max, axis, 1,
                              [](OpBuilder &b, Location l, ValueRange a) {
                                return SmallVector<Value>{math::ExpOp::create(
                                    b, l, arith::SubFOp::create(b, l, a[0], a[1]))};
                              })[0];
    Value inverse = mapRows(rewriter, loc, sumExp,
                            [&](OpBuilder &b, Location l, ValueRange a) {
                              return arith::DivFOp::create(
                                         b, l, floatConstant(b, l, element, 1.0),
                                         a[0])
                                  .getResult();
                            });
    auto isCounted = [&](OpBuilder &b, Location l, Value target) -> Value {
      if (!ignore)
        return arith::ConstantOp::create(b, l, b.getBoolAttr(true));
      Value ignored = arith::ConstantOp::create(
          b, l, b.getIntegerAttr(target.getType(), *ignore));
      return arith::CmpIOp::create(b, l, arith::CmpIPredicate::ne, target,
                                   ignored);
    };
    // The number of counted targets.
    auto scalarType = RankedTensorType::get({}, f32);
    Value zero = filledTensor(rewriter, loc, scalarType, {},
                              rewriter.getF32FloatAttr(0));
    auto targetType = cast<RankedTensorType>(targets.getType());
    int64_t rows = targetType.getRank();
    Value count;
    if (!ignore) {
      // Every target counts (a reduction whose body read nothing would lose
      // its loop bounds to canonicalisation).
      Value n = arith::ConstantIndexOp::create(rewriter, loc, 1);
      for (int64_t d = 0; d < rows; ++d)
        n = arith::MulIOp::create(rewriter, loc, n, dimOf(rewriter, loc, targets, d));
      count = arith::SIToFPOp::create(
          rewriter, loc, f32,
          arith::IndexCastOp::create(rewriter, loc, rewriter.getI64Type(), n));
    } else {
      Value countTensor =
          linalg::GenericOp::create(
              rewriter, loc, TypeRange{scalarType}, ValueRange{targets},
              ValueRange{zero},
              SmallVector<AffineMap>{rewriter.getMultiDimIdentityMap(rows),
                                     AffineMap::get(rows, 0, {}, context)},
              SmallVector<utils::IteratorType>(rows,
                                               utils::IteratorType::reduction),
              [&](OpBuilder &b, Location l, ValueRange a) {
                Value one = arith::SelectOp::create(
                    b, l, isCounted(b, l, a[0]), floatConstant(b, l, f32, 1.0),
                    floatConstant(b, l, f32, 0.0));
                linalg::YieldOp::create(
                    b, l, arith::AddFOp::create(b, l, a[1], one).getResult());
              })
              .getResult(0);
      count = tensor::ExtractOp::create(rewriter, loc, countTensor, ValueRange{});
    }
    Value gradLoss = tensor::ExtractOp::create(rewriter, loc, adaptor.getGradLoss(),
                                               ValueRange{});
    Value zeroF = floatConstant(rewriter, loc, f32, 0.0);
    Value none = arith::CmpFOp::create(rewriter, loc, arith::CmpFPredicate::OEQ,
                                       count, zeroF);
    Value factor = arith::SelectOp::create(
        rewriter, loc, none, zeroF,
        arith::DivFOp::create(rewriter, loc, gradLoss, count));
    if (element != f32)
      factor = arith::TruncFOp::create(rewriter, loc, element, factor);
    Value classes = dimOf(rewriter, loc, logits, axis);
    Value uniform = arith::DivFOp::create(
        rewriter, loc, floatConstant(rewriter, loc, element, smoothing),
        sizeAsFloat(rewriter, loc, logits, axis, element));
    (void)classes;
    Value result = rowwise(
        rewriter, loc, logits, {max, inverse, targets}, axis, {},
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value p = arith::MulFOp::create(
              b, l,
              math::ExpOp::create(b, l, arith::SubFOp::create(b, l, a[0], a[1])),
              a[2]);
          Value target = a[3];
          Value c = arith::IndexCastOp::create(
              b, l, target.getType(), linalg::IndexOp::create(b, l, axis));
          Value hit =
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, c, target);
          Value smoothed = arith::SelectOp::create(
              b, l, hit,
              arith::AddFOp::create(b, l, uniform,
                                    floatConstant(b, l, element, 1 - smoothing)),
              uniform);
          Value g = arith::MulFOp::create(
              b, l, factor, arith::SubFOp::create(b, l, p, smoothed));
          return arith::SelectOp::create(b, l, isCounted(b, l, target), g,
                                         floatConstant(b, l, element, 0.0))
              .getResult();
        });
    rewriter.replaceOp(op, tensor::CastOp::create(rewriter, loc, op.getType(),
                                                  result));
    return success();
  }
};

/// The scatter-add as a sequential loop over the ids into a zero table: rows
/// gathered several times accumulate in id order, deterministically. Each
/// iteration adds one row of `d` elements (a vectorised generic) in place.
struct GatherGradLowering : OpConversionPattern<GatherGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GatherGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    auto resultType = cast<RankedTensorType>(op.getType());
    if (resultType.isDynamicDim(0))
      return rewriter.notifyMatchFailure(op, "the table's row count is dynamic");
    Value ids = adaptor.getIds(), grad = adaptor.getGradOutput();
    auto idsType = cast<RankedTensorType>(ids.getType());
    auto gradType = cast<RankedTensorType>(grad.getType());
    Type element = gradType.getElementType();
    int64_t idRank = idsType.getRank();
    // ids as [N], the gradient as [N, d].
    if (idRank == 0) {
      ids = tensor::ExpandShapeOp::create(
          b, loc, RankedTensorType::get({1}, idsType.getElementType()), ids,
          ArrayRef<ReassociationIndices>{});
      grad = tensor::ExpandShapeOp::create(
          b, loc, RankedTensorType::get({1, gradType.getDimSize(0)}, element),
          grad, ArrayRef<ReassociationIndices>{{0, 1}});
    } else if (idRank > 1) {
      ReassociationIndices all = llvm::to_vector(llvm::seq<int64_t>(0, idRank));
      ids = tensor::CollapseShapeOp::create(b, loc, ids,
                                            ArrayRef<ReassociationIndices>{all});
      grad = tensor::CollapseShapeOp::create(
          b, loc, grad, ArrayRef<ReassociationIndices>{all, {idRank}});
    }
    Value n = dimOf(b, loc, ids, 0);
    OpFoldResult d = tensor::getMixedSize(b, loc, grad, 1);
    int64_t rowsStatic = resultType.getDimSize(0);
    SmallVector<OpFoldResult> tableSizes = {b.getIndexAttr(rowsStatic)};
    tableSizes.push_back(resultType.isDynamicDim(1)
                             ? d
                             : b.getIndexAttr(resultType.getDimSize(1)));
    Value table = filledTensor(b, loc, resultType, tableSizes,
                               b.getFloatAttr(element, 0));
    Value zeroIdx = arith::ConstantIndexOp::create(b, loc, 0);
    Value oneIdx = arith::ConstantIndexOp::create(b, loc, 1);
    Value lastRow = arith::ConstantIndexOp::create(b, loc, rowsStatic - 1);
    auto rowType = RankedTensorType::get({1, resultType.getDimSize(1)}, element);
    AffineMap id2 = b.getMultiDimIdentityMap(2);
    auto loop = scf::ForOp::create(
        b, loc, zeroIdx, n, oneIdx, ValueRange{table},
        [&](OpBuilder &nb, Location l, Value i, ValueRange args) {
          Value id = tensor::ExtractOp::create(nb, l, ids, ValueRange{i});
          Value row = arith::IndexCastOp::create(nb, l, nb.getIndexType(), id);
          // The runtime checks ids against the table; the clamp keeps a bad
          // one from writing outside it.
          row = arith::MinSIOp::create(
              nb, l, arith::MaxSIOp::create(nb, l, row, zeroIdx), lastRow);
          SmallVector<OpFoldResult> unit = {nb.getIndexAttr(1), nb.getIndexAttr(1)};
          SmallVector<OpFoldResult> sizes = {nb.getIndexAttr(1), d};
          Value dest = tensor::ExtractSliceOp::create(
              nb, l, rowType, args[0],
              SmallVector<OpFoldResult>{row, nb.getIndexAttr(0)}, sizes, unit);
          Value src = tensor::ExtractSliceOp::create(
              nb, l, rowType, grad,
              SmallVector<OpFoldResult>{i, nb.getIndexAttr(0)}, sizes, unit);
          Value sum =
              linalg::GenericOp::create(
                  nb, l, TypeRange{rowType}, ValueRange{src}, ValueRange{dest},
                  SmallVector<AffineMap>{id2, id2},
                  SmallVector<utils::IteratorType>(2,
                                                   utils::IteratorType::parallel),
                  [](OpBuilder &bb, Location ll, ValueRange a) {
                    linalg::YieldOp::create(
                        bb, ll, arith::AddFOp::create(bb, ll, a[1], a[0]).getResult());
                  })
                  .getResult(0);
          Value updated = tensor::InsertSliceOp::create(
              nb, l, sum, args[0],
              SmallVector<OpFoldResult>{row, nb.getIndexAttr(0)}, sizes, unit);
          scf::YieldOp::create(nb, l, updated);
        });
    rewriter.replaceOp(op, loop.getResult(0));
    return success();
  }
};

} // namespace

void populateGradientPatterns(RewritePatternSet &patterns) {
  patterns.add<ActivationGradLowering,
               SoftmaxGradLowering<SoftmaxGradOp, false>,
               SoftmaxGradLowering<LogSoftmaxGradOp, true>,
               LayerNormGradLowering, RmsNormGradLowering,
               CrossEntropyGradLowering, GatherGradLowering>(
      patterns.getContext());
}

} // namespace attn
