//===- Optimizer.cpp - Lowering the global norm and the Adam update -------===//
//
// `attn.global_norm` is a chain of full reductions into one f64 scalar (the
// sum of squares of every gradient of a model loses digits in f32), and
// `attn.adam_update` one element-wise pass producing the parameter and both
// moments. The hyperparameters arrive as f32 scalars at run time, so the bias
// corrections `1 - beta^t` are computed once per call, outside the loop.
// The results are fresh tensors; `attn-param-writes-in-place` then points
// them at the buffers `attn.set_param` stores them into.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilders.h"

using namespace mlir;

namespace attn {
namespace {

struct GlobalNormLowering : OpConversionPattern<GlobalNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GlobalNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type f64 = rewriter.getF64Type(), f32 = rewriter.getF32Type();
    auto accType = RankedTensorType::get({}, f64);
    Value acc = filledTensor(rewriter, loc, accType, {},
                             rewriter.getF64FloatAttr(0));
    for (Value input : adaptor.getInputs()) {
      auto type = cast<RankedTensorType>(input.getType());
      int64_t rank = type.getRank();
      acc = linalg::GenericOp::create(
                rewriter, loc, TypeRange{accType}, ValueRange{input},
                ValueRange{acc},
                SmallVector<AffineMap>{
                    rewriter.getMultiDimIdentityMap(rank),
                    AffineMap::get(rank, 0, {}, rewriter.getContext())},
                SmallVector<utils::IteratorType>(
                    rank, utils::IteratorType::reduction),
                [&](OpBuilder &b, Location l, ValueRange a) {
                  Value x = a[0];
                  if (x.getType() != f64)
                    x = arith::ExtFOp::create(b, l, f64, x);
                  Value sum = arith::AddFOp::create(
                      b, l, a[1], arith::MulFOp::create(b, l, x, x));
                  linalg::YieldOp::create(b, l, sum);
                })
                .getResult(0);
    }
    Value sum = tensor::ExtractOp::create(rewriter, loc, acc, ValueRange{});
    Value norm = arith::TruncFOp::create(rewriter, loc, f32,
                                         math::SqrtOp::create(rewriter, loc, sum));
    rewriter.replaceOpWithNewOp<tensor::FromElementsOp>(
        op, RankedTensorType::get({}, f32), norm);
    return success();
  }
};

/// Adam / AdamW (abi.h, torch.optim): with g += wd p (Adam) or p -= lr wd p
/// (AdamW), m' = b1 m + (1 - b1) g, v' = b2 v + (1 - b2) g^2, p' = p - (lr /
/// (1 - b1^t)) m' / (sqrt(v') / sqrt(1 - b2^t) + eps).
struct AdamUpdateLowering : OpConversionPattern<AdamUpdateOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AdamUpdateOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    auto scalar = [&](Value t) -> Value {
      return tensor::ExtractOp::create(b, loc, t, ValueRange{});
    };
    Type f32 = b.getF32Type();
    Value lr = scalar(adaptor.getLr()), step = scalar(adaptor.getStep());
    Value beta1 = scalar(adaptor.getBeta1()), beta2 = scalar(adaptor.getBeta2());
    Value eps = scalar(adaptor.getEps());
    Value decay = scalar(adaptor.getWeightDecay());
    bool decoupled = op.getDecoupled();
    Value one = floatConstant(b, loc, f32, 1.0);
    Value c1 = arith::SubFOp::create(b, loc, one,
                                     math::PowFOp::create(b, loc, beta1, step));
    Value c2 = arith::SubFOp::create(b, loc, one,
                                     math::PowFOp::create(b, loc, beta2, step));
    Value stepSize = arith::DivFOp::create(b, loc, lr, c1);
    Value rsqrtC2 = math::RsqrtOp::create(b, loc, c2);
    Value oneMinusB1 = arith::SubFOp::create(b, loc, one, beta1);
    Value oneMinusB2 = arith::SubFOp::create(b, loc, one, beta2);
    // AdamW shrinks the weight by lr * wd first.
    Value shrink = arith::SubFOp::create(b, loc, one,
                                         arith::MulFOp::create(b, loc, lr, decay));

    auto type = cast<RankedTensorType>(adaptor.getParam().getType());
    Type element = type.getElementType();
    auto toElement = [&](OpBuilder &nb, Location l, Value v) -> Value {
      return element == f32 ? v : arith::TruncFOp::create(nb, l, element, v);
    };
    SmallVector<OpFoldResult> sizes =
        tensor::getMixedSizes(b, loc, adaptor.getParam());
    auto fresh = [&](Value like) {
      auto t = cast<RankedTensorType>(like.getType());
      return tensor::EmptyOp::create(b, loc, sizes, t.getElementType())
          .getResult();
    };
    Value inits[] = {fresh(adaptor.getParam()), fresh(adaptor.getFirstMoment()),
                     fresh(adaptor.getSecondMoment())};
    int64_t rank = type.getRank();
    AffineMap id = b.getMultiDimIdentityMap(rank);
    auto generic = linalg::GenericOp::create(
        b, loc,
        TypeRange{inits[0].getType(), inits[1].getType(), inits[2].getType()},
        ValueRange{adaptor.getParam(), adaptor.getGrad(),
                   adaptor.getFirstMoment(), adaptor.getSecondMoment()},
        ValueRange(inits), SmallVector<AffineMap>(7, id),
        SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
        [&](OpBuilder &nb, Location l, ValueRange a) {
          auto el = [&](Value v) { return toElement(nb, l, v); };
          Value p = a[0], g = a[1], m = a[2], v = a[3];
          if (decoupled)
            p = arith::MulFOp::create(nb, l, p, el(shrink));
          else
            g = arith::AddFOp::create(nb, l, g,
                                      arith::MulFOp::create(nb, l, el(decay), p));
          Value m1 = arith::AddFOp::create(
              nb, l, arith::MulFOp::create(nb, l, el(beta1), m),
              arith::MulFOp::create(nb, l, el(oneMinusB1), g));
          Value v1 = arith::AddFOp::create(
              nb, l, arith::MulFOp::create(nb, l, el(beta2), v),
              arith::MulFOp::create(
                  nb, l, el(oneMinusB2), arith::MulFOp::create(nb, l, g, g)));
          Value denom = arith::AddFOp::create(
              nb, l,
              arith::MulFOp::create(nb, l, math::SqrtOp::create(nb, l, v1),
                                    el(rsqrtC2)),
              el(eps));
          Value p1 = arith::SubFOp::create(
              nb, l, p,
              arith::DivFOp::create(
                  nb, l, arith::MulFOp::create(nb, l, el(stepSize), m1), denom));
          linalg::YieldOp::create(nb, l, ValueRange{p1, m1, v1});
        });
    SmallVector<Value> results;
    for (auto [result, expected] :
         llvm::zip(generic.getResults(), op.getResultTypes()))
      results.push_back(result.getType() == expected
                            ? Value(result)
                            : Value(tensor::CastOp::create(b, loc, expected, result)
                                  .getResult()));
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void populateOptimizerPatterns(RewritePatternSet &patterns) {
  patterns.add<GlobalNormLowering, AdamUpdateLowering>(patterns.getContext());
}

} // namespace attn
