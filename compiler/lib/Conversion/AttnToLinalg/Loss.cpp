//===- Loss.cpp - Lowering cross-entropy ----------------------------------===//
//
// Cross-entropy as PyTorch computes it: per row, logsumexp minus the target
// logit (mixed with the mean logit under label smoothing), averaged over the
// rows whose target is not ignore_index, 0 when all are ignored.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilders.h"

using namespace mlir;

namespace attn {
namespace {

struct CrossEntropyLowering : OpConversionPattern<CrossEntropyOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CrossEntropyOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value logits = adaptor.getLogits(), targets = adaptor.getTargets();
    auto lType = cast<RankedTensorType>(logits.getType());
    Type element = lType.getElementType();
    Type f32 = rewriter.getF32Type();
    int64_t classAxis = lType.getRank() - 1;
    int64_t rows = lType.getRank() - 1;
    double smoothing = op.getLabelSmoothing().convertToDouble();
    std::optional<int64_t> ignore;
    if (op.getIgnoreIndex())
      ignore = static_cast<int64_t>(*op.getIgnoreIndex());

    // Per row: the logsumexp and, under smoothing, the mean logit.
    Value max = reduceMax(rewriter, loc, logits, classAxis);
    Value sumExp = reduceSum(
        rewriter, loc, shiftedExp(rewriter, loc, logits, max, classAxis),
        classAxis);
    auto rowType = cast<RankedTensorType>(max.getType());
    Value lse = buildElementwise(
        rewriter, loc, rowType, {max, sumExp},
        [](OpBuilder &b, Location l, ValueRange a) {
          return arith::AddFOp::create(b, l, a[0], math::LogOp::create(b, l, a[1]))
              .getResult();
        });
    Value classes = dimOf(rewriter, loc, logits, classAxis);
    Value rowMean = lse;
    if (smoothing > 0) {
      Value count = arith::SIToFPOp::create(
          rewriter, loc, element,
          arith::IndexCastOp::create(rewriter, loc, rewriter.getI64Type(),
                                     classes));
      rowMean = buildElementwise(
          rewriter, loc, rowType, reduceSum(rewriter, loc, logits, classAxis),
          [&](OpBuilder &b, Location l, ValueRange a) {
            return arith::DivFOp::create(b, l, a[0], count).getResult();
          });
    }

    // Sum of row losses and count of rows counted, over every row.
    auto scalarType = RankedTensorType::get({}, f32);
    Value zero = filledTensor(rewriter, loc, scalarType, {},
                              rewriter.getF32FloatAttr(0));
    MLIRContext *context = rewriter.getContext();
    AffineMap identity = rewriter.getMultiDimIdentityMap(rows);
    AffineMap toScalar = AffineMap::get(rows, 0, {}, context);
    SmallVector<utils::IteratorType> iterators(rows,
                                               utils::IteratorType::reduction);
    auto totals = linalg::GenericOp::create(
        rewriter, loc, TypeRange{scalarType, scalarType},
        ValueRange{lse, targets, rowMean}, ValueRange{zero, zero},
        SmallVector<AffineMap>{identity, identity, identity, toScalar, toScalar},
        iterators, [&](OpBuilder &b, Location l, ValueRange a) {
          Value target = arith::IndexCastOp::create(b, l, b.getIndexType(), a[1]);
          Value valid = arith::ConstantOp::create(b, l, b.getBoolAttr(true));
          if (ignore) {
            Value ignored = arith::ConstantIndexOp::create(b, l, *ignore);
            valid = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ne,
                                          target, ignored);
          }
          // The runtime validates targets; the clamp keeps any bad one from
          // reading outside the row.
          Value zeroIdx = arith::ConstantIndexOp::create(b, l, 0);
          Value last = arith::SubIOp::create(
              b, l, classes, arith::ConstantIndexOp::create(b, l, 1));
          target = arith::MinSIOp::create(
              b, l, arith::MaxSIOp::create(b, l, target, zeroIdx), last);
          SmallVector<Value> index;
          for (int64_t d = 0; d < rows; ++d)
            index.push_back(linalg::IndexOp::create(b, l, d));
          index.push_back(target);
          Value logit = tensor::ExtractOp::create(b, l, logits, index);
          // loss = lse - (1 - e) x_t - e mean_c x_c
          Value loss = arith::SubFOp::create(
              b, l, a[0],
              arith::MulFOp::create(b, l,
                                    floatConstant(b, l, element, 1 - smoothing),
                                    logit));
          if (smoothing > 0)
            loss = arith::SubFOp::create(
                b, l, loss,
                arith::MulFOp::create(
                    b, l, floatConstant(b, l, element, smoothing), a[2]));
          if (element != f32)
            loss = arith::ExtFOp::create(b, l, f32, loss);
          Value zeroF = floatConstant(b, l, f32, 0);
          Value oneF = floatConstant(b, l, f32, 1);
          Value counted = arith::SelectOp::create(b, l, valid, loss, zeroF);
          Value weight = arith::SelectOp::create(b, l, valid, oneF, zeroF);
          linalg::YieldOp::create(
              b, l,
              ValueRange{arith::AddFOp::create(b, l, a[3], counted),
                         arith::AddFOp::create(b, l, a[4], weight)});
        });
    Value sum = tensor::ExtractOp::create(rewriter, loc, totals.getResult(0),
                                          ValueRange{});
    Value count = tensor::ExtractOp::create(rewriter, loc, totals.getResult(1),
                                            ValueRange{});
    Value zeroF = floatConstant(rewriter, loc, f32, 0);
    Value none = arith::CmpFOp::create(rewriter, loc, arith::CmpFPredicate::OEQ,
                                       count, zeroF);
    Value mean = arith::SelectOp::create(
        rewriter, loc, none, zeroF,
        arith::DivFOp::create(rewriter, loc, sum, count));
    rewriter.replaceOpWithNewOp<tensor::FromElementsOp>(op, scalarType, mean);
    return success();
  }
};

} // namespace

void populateLossPatterns(RewritePatternSet &patterns) {
  patterns.add<CrossEntropyLowering>(patterns.getContext());
}

} // namespace attn
