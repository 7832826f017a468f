//===- Dequantize.cpp - Low-precision weights to f32 ----------------------===//
//
// `attn.dequantize` (the weights of `attnc --weights`) as a linalg.generic,
// and the product of a matrix with a dequantized weight as one
// linalg.generic whose body converts each weight element where it is read:
// the f32 matrix is never stored, and attn-matmul-to-vector recognises the
// product (MatmulMatch.h) to read the low-precision copy in its kernels.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilders.h"

using namespace mlir;

namespace attn {

Value dequantizeElement(OpBuilder &b, Location loc, Value value, Value scale) {
  Type f32 = b.getF32Type();
  if (!scale)
    return arith::ExtFOp::create(b, loc, f32, value);
  return arith::MulFOp::create(
      b, loc, arith::SIToFPOp::create(b, loc, f32, value), scale);
}

/// The map reading the scales [N, K / block] of a weight [N, K] at (n, k)
/// from loops whose dims `n` and `k` are given.
static AffineMap scalesMap(MLIRContext *context, unsigned numLoops,
                           AffineExpr n, AffineExpr k, int64_t block) {
  return AffineMap::get(numLoops, 0, {n, k.floorDiv(block)}, context);
}

/// The elements of the weight [N, K] per scale.
static int64_t blockOf(Value values, Value scales) {
  return cast<RankedTensorType>(values.getType()).getDimSize(1) /
         cast<RankedTensorType>(scales.getType()).getDimSize(1);
}

Value lowPrecisionMatmul2D(OpBuilder &b, Location loc, Value a, Value values,
                           Value scales) {
  MLIRContext *context = b.getContext();
  auto aType = cast<RankedTensorType>(a.getType());
  auto wType = cast<RankedTensorType>(values.getType());
  auto type = RankedTensorType::get({aType.getDimSize(0), wType.getDimSize(0)},
                                    b.getF32Type());
  Value init = filledTensor(b, loc, type,
                            {tensor::getMixedSize(b, loc, a, 0),
                             b.getIndexAttr(wType.getDimSize(0))},
                            b.getF32FloatAttr(0));
  AffineExpr m = b.getAffineDimExpr(0), n = b.getAffineDimExpr(1),
             k = b.getAffineDimExpr(2);
  SmallVector<Value> inputs = {a, values};
  SmallVector<AffineMap> maps = {AffineMap::get(3, 0, {m, k}, context),
                                 AffineMap::get(3, 0, {n, k}, context)};
  if (scales) {
    inputs.push_back(scales);
    maps.push_back(scalesMap(context, 3, n, k, blockOf(values, scales)));
  }
  maps.push_back(AffineMap::get(3, 0, {m, n}, context));
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{type}, inputs, ValueRange{init}, maps,
      {utils::IteratorType::parallel, utils::IteratorType::parallel,
       utils::IteratorType::reduction},
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value w = dequantizeElement(nb, l, args[1], scales ? args[2] : Value());
        Value product = arith::MulFOp::create(nb, l, args[0], w);
        linalg::YieldOp::create(
            nb, l, arith::AddFOp::create(nb, l, args.back(), product)
                       .getResult());
      });
  return generic.getResult(0);
}

namespace {

struct DequantizeLowering : OpConversionPattern<DequantizeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DequantizeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    auto type = cast<RankedTensorType>(op.getType());
    Value values = adaptor.getValues(), scales = adaptor.getScales();
    AffineExpr n = rewriter.getAffineDimExpr(0),
               k = rewriter.getAffineDimExpr(1);
    SmallVector<Value> inputs = {values};
    SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(2, context)};
    if (scales) {
      inputs.push_back(scales);
      maps.push_back(scalesMap(context, 2, n, k, blockOf(values, scales)));
    }
    maps.push_back(AffineMap::getMultiDimIdentityMap(2, context));
    Value init = emptyTensor(rewriter, loc, type,
                             {rewriter.getIndexAttr(type.getDimSize(0)),
                              rewriter.getIndexAttr(type.getDimSize(1))});
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type}, inputs, ValueRange{init}, maps,
        {utils::IteratorType::parallel, utils::IteratorType::parallel},
        [&](OpBuilder &nb, Location l, ValueRange args) {
          linalg::YieldOp::create(
              nb, l,
              dequantizeElement(nb, l, args[0], scales ? args[1] : Value()));
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

} // namespace

void populateDequantizePatterns(RewritePatternSet &patterns) {
  patterns.add<DequantizeLowering>(patterns.getContext());
}

} // namespace attn
