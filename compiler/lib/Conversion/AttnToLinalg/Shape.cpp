//===- Shape.cpp - Lowering attn shape ops --------------------------------===//
//
// Reshapes, transposes, head splitting, concatenation, slicing, broadcasting,
// embedding lookups and the position tables, as tensor ops and generics.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilders.h"

#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"

#include <cmath>

using namespace mlir;

namespace attn {
namespace {

/// The sizes of `value` as fold results.
SmallVector<OpFoldResult> sizesOf(OpBuilder &b, Location loc, Value value) {
  return tensor::getMixedSizes(b, loc, value);
}

/// The sizes of `type`, taking its dynamic sizes from `dynamicSizes`.
SmallVector<OpFoldResult> sizesFrom(OpBuilder &b, RankedTensorType type,
                                    ValueRange dynamicSizes) {
  SmallVector<OpFoldResult> sizes;
  unsigned next = 0;
  for (int64_t d : type.getShape())
    sizes.push_back(ShapedType::isDynamic(d) ? OpFoldResult(dynamicSizes[next++])
                                             : OpFoldResult(b.getIndexAttr(d)));
  return sizes;
}

struct DimLowering : OpConversionPattern<DimOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DimOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, dimOf(rewriter, op.getLoc(), adaptor.getInput(),
                                 op.getAxis()));
    return success();
  }
};

struct ReshapeLowering : OpConversionPattern<ReshapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReshapeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    SmallVector<Value> shape;
    for (OpFoldResult size :
         sizesFrom(rewriter, type, adaptor.getDynamicSizes()))
      shape.push_back(getValueOrCreateConstantIndexOp(rewriter, loc, size));
    // A static shape is a collapse or an expansion into all or from no
    // dims (the only reassociation with a rank-0 side).
    auto inputType = cast<RankedTensorType>(adaptor.getInput().getType());
    if (inputType.hasStaticShape() && type.hasStaticShape() &&
        (type.getRank() == 0 || inputType.getRank() == 0)) {
      if (type.getRank() == 0)
        rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(
            op, type, adaptor.getInput(), ArrayRef<ReassociationIndices>{});
      else
        rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(
            op, type, adaptor.getInput(), ArrayRef<ReassociationIndices>{});
      return success();
    }
    Value shapeTensor = tensor::FromElementsOp::create(
        rewriter, loc, RankedTensorType::get({type.getRank()}, rewriter.getIndexType()),
        shape);
    rewriter.replaceOpWithNewOp<tensor::ReshapeOp>(op, type, adaptor.getInput(),
                                                   shapeTensor);
    return success();
  }
};

/// `linalg.transpose` of `input` by `perm`.
Value transpose(OpBuilder &b, Location loc, Value input,
                ArrayRef<int64_t> perm) {
  SmallVector<OpFoldResult> inSizes = sizesOf(b, loc, input);
  SmallVector<OpFoldResult> outSizes;
  for (int64_t p : perm)
    outSizes.push_back(inSizes[p]);
  auto inType = cast<RankedTensorType>(input.getType());
  Value init = tensor::EmptyOp::create(b, loc, outSizes, inType.getElementType());
  return linalg::TransposeOp::create(b, loc, input, init, perm).getResult()[0];
}

struct TransposeLowering : OpConversionPattern<TransposeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TransposeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value result = transpose(rewriter, op.getLoc(), adaptor.getInput(),
                             op.getPermutation());
    rewriter.replaceOp(op, tensor::CastOp::create(rewriter, op.getLoc(),
                                                  op.getType(), result));
    return success();
  }
};

struct SplitHeadsLowering : OpConversionPattern<SplitHeadsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SplitHeadsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto inType = cast<RankedTensorType>(x.getType());
    auto outType = cast<RankedTensorType>(op.getType());
    int64_t heads = op.getHeads();
    // [B, T, h*k] -> [B, T, h, k] -> [B, h, T, k].
    SmallVector<OpFoldResult> in = sizesOf(rewriter, loc, x);
    OpFoldResult headDim =
        outType.isDynamicDim(3)
            ? OpFoldResult(arith::DivUIOp::create(
                  rewriter, loc, getValueOrCreateConstantIndexOp(rewriter, loc, in[2]),
                  arith::ConstantIndexOp::create(rewriter, loc, heads)))
            : OpFoldResult(rewriter.getIndexAttr(outType.getDimSize(3)));
    auto expandedType = RankedTensorType::get(
        {inType.getDimSize(0), inType.getDimSize(1), heads,
         outType.getDimSize(3)},
        inType.getElementType());
    Value expanded = tensor::ExpandShapeOp::create(
        rewriter, loc, expandedType, x,
        SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}},
        SmallVector<OpFoldResult>{in[0], in[1], rewriter.getIndexAttr(heads),
                                  headDim});
    Value result = transpose(rewriter, loc, expanded, {0, 2, 1, 3});
    rewriter.replaceOp(op,
                       tensor::CastOp::create(rewriter, loc, outType, result));
    return success();
  }
};

struct MergeHeadsLowering : OpConversionPattern<MergeHeadsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MergeHeadsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    // [B, h, T, k] -> [B, T, h, k] -> [B, T, h*k].
    Value transposed = transpose(rewriter, loc, adaptor.getInput(), {0, 2, 1, 3});
    auto tType = cast<RankedTensorType>(transposed.getType());
    auto outType = cast<RankedTensorType>(op.getType());
    auto collapsedType = RankedTensorType::get(
        {tType.getDimSize(0), tType.getDimSize(1),
         tType.isDynamicDim(2) || tType.isDynamicDim(3)
             ? ShapedType::kDynamic
             : tType.getDimSize(2) * tType.getDimSize(3)},
        tType.getElementType());
    Value collapsed = tensor::CollapseShapeOp::create(
        rewriter, loc, collapsedType, transposed,
        SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
    rewriter.replaceOp(op,
                       tensor::CastOp::create(rewriter, loc, outType, collapsed));
    return success();
  }
};

struct ConcatLowering : OpConversionPattern<ConcatOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConcatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t axis = op.getAxis();
    auto type = cast<RankedTensorType>(op.getType());
    ValueRange inputs = adaptor.getInputs();
    // The result's size along the axis is the sum of the inputs'; the others
    // are the first input's.
    SmallVector<OpFoldResult> sizes = sizesOf(rewriter, loc, inputs.front());
    Value total = arith::ConstantIndexOp::create(rewriter, loc, 0);
    for (Value input : inputs)
      total = arith::AddIOp::create(rewriter, loc, total,
                                    dimOf(rewriter, loc, input, axis));
    sizes[axis] = type.isDynamicDim(axis)
                      ? OpFoldResult(total)
                      : OpFoldResult(rewriter.getIndexAttr(type.getDimSize(axis)));
    Value result = tensor::EmptyOp::create(rewriter, loc, sizes,
                                           type.getElementType());
    Value offset = arith::ConstantIndexOp::create(rewriter, loc, 0);
    for (Value input : inputs) {
      SmallVector<OpFoldResult> offsets(type.getRank(), rewriter.getIndexAttr(0));
      offsets[axis] = offset;
      SmallVector<OpFoldResult> strides(type.getRank(), rewriter.getIndexAttr(1));
      result = tensor::InsertSliceOp::create(rewriter, loc, input, result,
                                             offsets,
                                             sizesOf(rewriter, loc, input),
                                             strides);
      offset = arith::AddIOp::create(rewriter, loc, offset,
                                     dimOf(rewriter, loc, input, axis));
    }
    rewriter.replaceOp(op, tensor::CastOp::create(rewriter, loc, type, result));
    return success();
  }
};

struct SliceLowering : OpConversionPattern<SliceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    int64_t axis = op.getAxis(), start = op.getStart(), end = op.getEnd();
    SmallVector<OpFoldResult> offsets(type.getRank(), rewriter.getIndexAttr(0));
    offsets[axis] = rewriter.getIndexAttr(start);
    SmallVector<OpFoldResult> sizes = sizesOf(rewriter, loc, adaptor.getInput());
    sizes[axis] = rewriter.getIndexAttr(end - start);
    SmallVector<OpFoldResult> strides(type.getRank(), rewriter.getIndexAttr(1));
    Value slice = tensor::ExtractSliceOp::create(
        rewriter, loc, adaptor.getInput(), offsets, sizes, strides);
    rewriter.replaceOp(op, tensor::CastOp::create(rewriter, loc, type, slice));
    return success();
  }
};

struct TakeLowering : OpConversionPattern<TakeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TakeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto inType = cast<RankedTensorType>(input.getType());
    int64_t axis = op.getAxis(), index = op.getIndex();
    // A negative index counts from the end of the dim.
    OpFoldResult offset = rewriter.getIndexAttr(index);
    if (index < 0)
      offset = arith::AddIOp::create(
                   rewriter, loc, dimOf(rewriter, loc, input, axis),
                   arith::ConstantIndexOp::create(rewriter, loc, index))
                   .getResult();
    SmallVector<OpFoldResult> offsets(inType.getRank(), rewriter.getIndexAttr(0));
    offsets[axis] = offset;
    SmallVector<OpFoldResult> sizes = sizesOf(rewriter, loc, input);
    sizes[axis] = rewriter.getIndexAttr(1);
    SmallVector<OpFoldResult> strides(inType.getRank(), rewriter.getIndexAttr(1));
    auto type = cast<RankedTensorType>(op.getType());
    // A rank-reducing slice drops the axis.
    Value slice = tensor::ExtractSliceOp::create(rewriter, loc, type, input,
                                                 offsets, sizes, strides);
    rewriter.replaceOp(op, slice);
    return success();
  }
};

struct BroadcastLowering : OpConversionPattern<BroadcastOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(BroadcastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    Value input = adaptor.getInput();
    Value init = tensor::EmptyOp::create(
        rewriter, loc, sizesFrom(rewriter, type, adaptor.getDynamicSizes()),
        type.getElementType());
    SmallVector<AffineMap> maps = {
        broadcastMap(rewriter.getContext(),
                     cast<RankedTensorType>(input.getType()), type),
        rewriter.getMultiDimIdentityMap(type.getRank())};
    SmallVector<utils::IteratorType> iterators(type.getRank(),
                                               utils::IteratorType::parallel);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type}, ValueRange{input}, ValueRange{init},
        maps, iterators, [](OpBuilder &b, Location l, ValueRange args) {
          linalg::YieldOp::create(b, l, args[0]);
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

struct GatherLowering : OpConversionPattern<GatherOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value table = adaptor.getTable(), ids = adaptor.getIds();
    auto type = cast<RankedTensorType>(op.getType());
    int64_t rank = type.getRank();
    SmallVector<OpFoldResult> sizes = sizesOf(rewriter, loc, ids);
    sizes.push_back(tensor::getMixedSize(rewriter, loc, table, 1));
    Value init = tensor::EmptyOp::create(rewriter, loc, sizes,
                                         type.getElementType());
    auto initType = cast<RankedTensorType>(init.getType());
    Value rows = dimOf(rewriter, loc, table, 0);
    SmallVector<AffineExpr> idExprs;
    for (int64_t d = 0; d + 1 < rank; ++d)
      idExprs.push_back(rewriter.getAffineDimExpr(d));
    SmallVector<AffineMap> maps = {
        AffineMap::get(rank, 0, idExprs, rewriter.getContext()),
        rewriter.getMultiDimIdentityMap(rank)};
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{initType}, ValueRange{ids}, ValueRange{init},
        maps,
        iterators, [&](OpBuilder &b, Location l, ValueRange args) {
          // The runtime checks ids against the table; the clamp keeps a
          // bad id from reading outside the table in any case.
          Value row = arith::IndexCastOp::create(b, l, b.getIndexType(), args[0]);
          Value zero = arith::ConstantIndexOp::create(b, l, 0);
          Value last = arith::SubIOp::create(
              b, l, rows, arith::ConstantIndexOp::create(b, l, 1));
          row = arith::MaxSIOp::create(b, l, row, zero);
          row = arith::MinSIOp::create(b, l, row, last);
          Value col = linalg::IndexOp::create(b, l, rank - 1);
          Value element =
              tensor::ExtractOp::create(b, l, table, ValueRange{row, col});
          linalg::YieldOp::create(b, l, element);
        });
    rewriter.replaceOp(op, tensor::CastOp::create(rewriter, loc, type,
                                                  generic.getResult(0)));
    return success();
  }
};

/// A generic over a fresh tensor of `type` whose element is `fn(indices)`.
Value buildIndexed(OpBuilder &b, Location loc, RankedTensorType type,
                   ArrayRef<OpFoldResult> sizes,
                   function_ref<Value(OpBuilder &, Location, ValueRange)> fn) {
  Value init = tensor::EmptyOp::create(b, loc, sizes, type.getElementType());
  int64_t rank = type.getRank();
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{type}, ValueRange{}, ValueRange{init},
      SmallVector<AffineMap>{b.getMultiDimIdentityMap(rank)}, iterators,
      [&](OpBuilder &nb, Location l, ValueRange) {
        SmallVector<Value> indices;
        for (int64_t d = 0; d < rank; ++d)
          indices.push_back(linalg::IndexOp::create(nb, l, d));
        linalg::YieldOp::create(nb, l, fn(nb, l, indices));
      });
  return generic.getResult(0);
}

struct PositionsLowering : OpConversionPattern<PositionsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(PositionsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    Value result = buildIndexed(
        rewriter, op.getLoc(), type, {OpFoldResult(adaptor.getLength())},
        [&](OpBuilder &b, Location l, ValueRange idx) -> Value {
          Value position = idx[0];
          if (Value start = adaptor.getStart())
            position = arith::AddIOp::create(b, l, position, start);
          return arith::IndexCastOp::create(b, l, type.getElementType(),
                                            position);
        });
    rewriter.replaceOp(
        op, tensor::CastOp::create(rewriter, op.getLoc(), type, result));
    return success();
  }
};

struct SinusoidalLowering : OpConversionPattern<SinusoidalOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SinusoidalOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    int64_t d = type.getDimSize(1);
    Type f32 = rewriter.getF32Type();
    Type element = type.getElementType();
    auto dynType = RankedTensorType::get({ShapedType::kDynamic, d}, element);
    Value result = buildIndexed(
        rewriter, op.getLoc(), dynType,
        {OpFoldResult(adaptor.getLength()), rewriter.getIndexAttr(d)},
        [&](OpBuilder &b, Location l, ValueRange idx) -> Value {
          // PE[i, 2j] = sin(i / 10000^(2j/d)), PE[i, 2j+1] = cos(...), with
          // the frequency computed as exp(-2j ln(10000) / d).
          Value two = arith::ConstantIndexOp::create(b, l, 2);
          Value parity = arith::RemUIOp::create(b, l, idx[1], two);
          Value even = arith::SubIOp::create(b, l, idx[1], parity);
          auto toF32 = [&](Value index) -> Value {
            Value i64 = arith::IndexCastOp::create(b, l, b.getI64Type(), index);
            return arith::SIToFPOp::create(b, l, f32, i64);
          };
          Value freq = math::ExpOp::create(
              b, l,
              arith::MulFOp::create(
                  b, l, toF32(even),
                  floatConstant(b, l, f32, -std::log(10000.0) / d)));
          Value position = idx[0];
          if (Value start = adaptor.getStart())
            position = arith::AddIOp::create(b, l, position, start);
          Value angle = arith::MulFOp::create(b, l, toF32(position), freq);
          Value isEven = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::eq, parity,
              arith::ConstantIndexOp::create(b, l, 0));
          Value value = arith::SelectOp::create(
              b, l, isEven, math::SinOp::create(b, l, angle),
              math::CosOp::create(b, l, angle));
          if (element != f32)
            value = arith::TruncFOp::create(b, l, element, value);
          return value;
        });
    rewriter.replaceOp(
        op, tensor::CastOp::create(rewriter, op.getLoc(), type, result));
    return success();
  }
};

} // namespace

void populateShapePatterns(RewritePatternSet &patterns) {
  patterns.add<DimLowering, ReshapeLowering, TransposeLowering,
               SplitHeadsLowering, MergeHeadsLowering, ConcatLowering,
               SliceLowering, TakeLowering, BroadcastLowering, GatherLowering,
               PositionsLowering, SinusoidalLowering>(patterns.getContext());
}

} // namespace attn
