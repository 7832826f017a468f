//===- Rotary.cpp - Lowering rotary position embeddings -------------------===//
//
// `attn.rope` as element-wise generics: a [T, D] table of each row's cos and
// one of its signed sin (computed once, not once per batch and head), then
// `x * cos + swapHalves(x) * sin` over the input.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilders.h"

#include <cmath>

using namespace mlir;

namespace attn {
namespace {

/// `concat(x[..., D/2:], x[..., :D/2])`: each feature's partner in its
/// rotation pair; rotate_half is this with the first half negated.
Value swapHalves(OpBuilder &b, Location loc, Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank(), half = type.getShape().back() / 2;
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
  Value result = emptyTensor(b, loc, type, sizes);
  SmallVector<OpFoldResult> halfSizes = sizes;
  halfSizes.back() = b.getIndexAttr(half);
  SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
  for (int64_t from : {half, int64_t(0)}) {
    SmallVector<OpFoldResult> source(rank, b.getIndexAttr(0));
    SmallVector<OpFoldResult> target(rank, b.getIndexAttr(0));
    source.back() = b.getIndexAttr(from);
    target.back() = b.getIndexAttr(half - from);
    Value part =
        tensor::ExtractSliceOp::create(b, loc, x, source, halfSizes, strides);
    result = tensor::InsertSliceOp::create(b, loc, part, result, target,
                                           halfSizes, strides);
  }
  return result;
}

/// Whether a table holds the cos or the signed sin of the angles.
enum class Table { cos, sin };

/// The f32 [T, D] table of `which` function of the angle `positions[t] *
/// base^(-2j/D)`, j = d mod D/2. The sin table carries rotate_half's sign
/// (negative in the first half) and, for the inverse rotation, the opposite
/// one.
Value angleTable(OpBuilder &b, Location loc, RopeOp op, Value positions,
                 int64_t features, Table which) {
  MLIRContext *context = b.getContext();
  Type f32 = b.getF32Type();
  int64_t half = features / 2;
  auto type = RankedTensorType::get({ShapedType::kDynamic, features}, f32);
  Value rows = dimOf(b, loc, positions, 0);
  Value init = emptyTensor(b, loc, type, {rows, b.getIndexAttr(features)});
  AffineMap rowMap = AffineMap::get(2, 0, {b.getAffineDimExpr(0)}, context);
  // base^(-2j/D) as exp(j * (-2 ln(base) / D)), as the sinusoidal table.
  double exponent = -2.0 * std::log(op.getBase().convertToDouble()) /
                    static_cast<double>(features);
  bool negateFirstHalf = !op.getInverse();
  SmallVector<utils::IteratorType> iterators(2, utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{type}, ValueRange{positions}, ValueRange{init},
      SmallVector<AffineMap>{rowMap, b.getMultiDimIdentityMap(2)}, iterators,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value feature = linalg::IndexOp::create(nb, l, 1);
        Value halfIndex = arith::ConstantIndexOp::create(nb, l, half);
        Value j = arith::RemUIOp::create(nb, l, feature, halfIndex);
        Value jf = arith::SIToFPOp::create(
            nb, l, f32, arith::IndexCastOp::create(nb, l, nb.getI64Type(), j));
        Value frequency = math::ExpOp::create(
            nb, l,
            arith::MulFOp::create(nb, l, jf,
                                  floatConstant(nb, l, f32, exponent)));
        Value position = arith::SIToFPOp::create(nb, l, f32, args[0]);
        Value angle = arith::MulFOp::create(nb, l, position, frequency);
        if (which == Table::cos) {
          linalg::YieldOp::create(nb, l,
                                  Value(math::CosOp::create(nb, l, angle)));
          return;
        }
        Value sin = math::SinOp::create(nb, l, angle);
        Value negative =
            arith::CmpIOp::create(nb, l,
                                  negateFirstHalf ? arith::CmpIPredicate::ult
                                                  : arith::CmpIPredicate::uge,
                                  feature, halfIndex);
        Value negated = arith::NegFOp::create(nb, l, sin);
        linalg::YieldOp::create(
            nb, l,
            Value(arith::SelectOp::create(nb, l, negative, negated, sin)));
      });
  return generic.getResult(0);
}

struct RopeLowering : OpConversionPattern<RopeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RopeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto type = cast<RankedTensorType>(x.getType());
    int64_t rank = type.getRank(), features = type.getShape().back();
    Type element = type.getElementType(), f32 = rewriter.getF32Type();
    Value positions = adaptor.getPositions();
    Value cos = angleTable(rewriter, loc, op, positions, features, Table::cos);
    Value sin = angleTable(rewriter, loc, op, positions, features, Table::sin);
    Value partner = swapHalves(rewriter, loc, x);

    AffineMap identity = rewriter.getMultiDimIdentityMap(rank);
    AffineMap tableMap = AffineMap::get(rank, 0,
                                        {rewriter.getAffineDimExpr(rank - 2),
                                         rewriter.getAffineDimExpr(rank - 1)},
                                        getContext());
    Value init = emptyTensor(rewriter, loc, type,
                             tensor::getMixedSizes(rewriter, loc, x));
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type}, ValueRange{x, partner, cos, sin},
        ValueRange{init},
        SmallVector<AffineMap>{identity, identity, tableMap, tableMap,
                               identity},
        iterators, [&](OpBuilder &b, Location l, ValueRange args) {
          Value value = args[0], other = args[1];
          if (element != f32) {
            value = arith::ExtFOp::create(b, l, f32, value);
            other = arith::ExtFOp::create(b, l, f32, other);
          }
          Value result = arith::AddFOp::create(
              b, l, arith::MulFOp::create(b, l, value, args[2]),
              arith::MulFOp::create(b, l, other, args[3]));
          if (element != f32)
            result = arith::TruncFOp::create(b, l, element, result);
          linalg::YieldOp::create(b, l, result);
        });
    rewriter.replaceOp(op, tensor::CastOp::create(rewriter, loc, op.getType(),
                                                  generic.getResult(0)));
    return success();
  }
};

} // namespace

void populateRotaryPatterns(RewritePatternSet &patterns) {
  patterns.add<RopeLowering>(patterns.getContext());
}

} // namespace attn
