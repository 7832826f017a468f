//===- Contraction.cpp - Lowering products and reductions -----------------===//
//
// Matrix products and linear layers as `linalg.matmul` on 2-D operands
// (leading dims collapsed into rows; a linear's W[out, in], a transposed
// right-hand side or a transposed 2-D left-hand side read through the
// matmul's indexing maps, never copied),
// with the linear's epilogue element-wise after it; batched and broadcast
// products as contractions in `linalg.generic` form; sum/mean/max reductions
// including the masked mean.
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

/// `x` [d0, ..., dn-2, k] as a matrix [d0 * ... * dn-2, k]; a vector [k] as
/// the row [1, k].
Value asMatrix(OpBuilder &b, Location loc, Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  if (rank == 2)
    return x;
  if (rank == 1) {
    auto rowType = RankedTensorType::get({1, type.getDimSize(0)},
                                         type.getElementType());
    return tensor::ExpandShapeOp::create(
        b, loc, rowType, x, {ReassociationIndices{0, 1}},
        {b.getIndexAttr(1), tensor::getMixedSize(b, loc, x, 0)});
  }
  ReassociationIndices rows;
  for (int64_t d = 0; d + 1 < rank; ++d)
    rows.push_back(d);
  return tensor::CollapseShapeOp::create(
      b, loc, x, {rows, ReassociationIndices{rank - 1}});
}

/// The matrix `y` [M, n] in `type` [d0, ..., n] of sizes `sizes` (the inverse
/// of asMatrix).
Value fromMatrix(OpBuilder &b, Location loc, Value y, RankedTensorType type,
                 ArrayRef<OpFoldResult> sizes) {
  int64_t rank = type.getRank();
  if (rank == 2)
    return y;
  if (rank == 1)
    return tensor::CollapseShapeOp::create(b, loc, type, y,
                                           {ReassociationIndices{0, 1}});
  ReassociationIndices rows;
  for (int64_t d = 0; d + 1 < rank; ++d)
    rows.push_back(d);
  return tensor::ExpandShapeOp::create(
      b, loc, type, y, {rows, ReassociationIndices{rank - 1}}, sizes);
}

/// `a` [M, K] times `rhs` [K, N] into zeros, as a `linalg.matmul`. Either
/// operand may be given as the matrix it is the transpose of: `a` as [K, M]
/// (`transposedA`: a weight gradient dY^T X), `rhs` as [N, K]
/// (`transposedB`: a linear's W[out, in]); the transposition is then in the
/// matmul's indexing maps, never a copy.
Value matmul2D(OpBuilder &b, Location loc, Value a, Value rhs, bool transposedA,
               bool transposedB) {
  MLIRContext *context = b.getContext();
  auto aType = cast<RankedTensorType>(a.getType());
  auto rType = cast<RankedTensorType>(rhs.getType());
  int64_t mDim = transposedA ? 1 : 0, nDim = transposedB ? 0 : 1;
  auto type = RankedTensorType::get(
      {aType.getDimSize(mDim), rType.getDimSize(nDim)}, aType.getElementType());
  Value init = filledTensor(
      b, loc, type,
      {tensor::getMixedSize(b, loc, a, mDim),
       tensor::getMixedSize(b, loc, rhs, nDim)},
      b.getFloatAttr(type.getElementType(), 0));
  auto matmul = linalg::MatmulOp::create(b, loc, TypeRange{type},
                                         ValueRange{a, rhs}, ValueRange{init});
  if (transposedA || transposedB) {
    AffineExpr m = getAffineDimExpr(0, context), n = getAffineDimExpr(1, context),
               k = getAffineDimExpr(2, context);
    matmul.setIndexingMapsAttr(b.getAffineMapArrayAttr(
        {AffineMap::get(3, 0,
                        transposedA ? ArrayRef<AffineExpr>{k, m}
                                    : ArrayRef<AffineExpr>{m, k},
                        context),
         AffineMap::get(3, 0,
                        transposedB ? ArrayRef<AffineExpr>{n, k}
                                    : ArrayRef<AffineExpr>{k, n},
                        context),
         AffineMap::get(3, 0, {m, n}, context)}));
  }
  return matmul.getResult(0);
}

/// The 2-D matrix whose transpose `rhs` is, when `rhs` is a [1, 0]
/// transposition (attn's, or linalg's once lowered, under tensor.cast).
Value transposedSource(Value rhs, ConversionPatternRewriter &rewriter) {
  while (auto cast = rhs.getDefiningOp<tensor::CastOp>())
    rhs = cast.getSource();
  if (auto t = rhs.getDefiningOp<linalg::TransposeOp>()) {
    if (t.getPermutation() == ArrayRef<int64_t>{1, 0})
      return t.getInput();
    return nullptr;
  }
  if (auto t = rhs.getDefiningOp<TransposeOp>()) {
    if (t.getPermutation() == ArrayRef<int64_t>{1, 0})
      return rewriter.getRemappedValue(t.getInput());
  }
  return nullptr;
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
    // [..., m, k] x [k, n]: one 2-D product over all rows.
    if (rType.getRank() == 2 && lType.getRank() >= 2) {
      SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rewriter, loc, lhs);
      Value rhsSource = transposedSource(rhs, rewriter);
      // A 2-D left operand that is a transposition (dY^T X) is read in
      // place too.
      Value lhsSource =
          lType.getRank() == 2 ? transposedSource(lhs, rewriter) : Value();
      Value product = matmul2D(
          rewriter, loc, lhsSource ? lhsSource : asMatrix(rewriter, loc, lhs),
          rhsSource ? rhsSource : rhs, /*transposedA=*/bool(lhsSource),
          /*transposedB=*/bool(rhsSource));
      sizes.back() = tensor::getMixedSize(rewriter, loc, rhs, 1);
      auto productType = RankedTensorType::get(
          lType.getShape().drop_back(), type.getElementType());
      SmallVector<int64_t> shape(productType.getShape());
      shape.push_back(cast<RankedTensorType>(product.getType()).getDimSize(1));
      productType = RankedTensorType::get(shape, type.getElementType());
      Value result = fromMatrix(rewriter, loc, product, productType, sizes);
      rewriter.replaceOp(op, tensor::CastOp::create(rewriter, loc, type, result));
      return success();
    }
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
    Value x = adaptor.getInput(), weight = adaptor.getWeight();
    auto type = cast<RankedTensorType>(op.getType());
    // y[lead, o] = sum_i x[lead, i] * W[o, i]: rows of x times W^T, W read
    // in place through the matmul's indexing maps.
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rewriter, loc, x);
    sizes.back() = tensor::getMixedSize(rewriter, loc, weight, 0);
    Value product;
    if (auto dequantize = op.getWeight().getDefiningOp<DequantizeOp>())
      product = lowPrecisionMatmul2D(
          rewriter, loc, asMatrix(rewriter, loc, x),
          rewriter.getRemappedValue(dequantize.getValues()),
          dequantize.getScales()
              ? rewriter.getRemappedValue(dequantize.getScales())
              : Value());
    else
      product = matmul2D(rewriter, loc, asMatrix(rewriter, loc, x), weight,
                         /*transposedA=*/false, /*transposedB=*/true);
    // Epilogue: activation(y + bias) + residual, on the product's 2-D rows
    // (the residual seen as a matrix too), where the matrix-product kernel
    // can apply it to its register tiles (attn-group-matmul-epilogues).
    Value bias = adaptor.getBias(), residual = adaptor.getResidual();
    Activation activation = op.getActivation();
    if (bias || residual || activation != Activation::none) {
      SmallVector<Value> operands = {product};
      if (bias)
        operands.push_back(bias);
      if (residual)
        operands.push_back(asMatrix(rewriter, loc, residual));
      product = buildElementwise(
          rewriter, loc, cast<RankedTensorType>(product.getType()), operands,
          [&](OpBuilder &b, Location l, ValueRange args) {
            Value y = args[0];
            unsigned next = 1;
            if (bias)
              y = arith::AddFOp::create(b, l, y, args[next++]);
            y = applyActivation(b, l, activation, y);
            if (residual)
              y = arith::AddFOp::create(b, l, y, args[next]);
            return y;
          });
    }
    rewriter.replaceOp(op, fromMatrix(rewriter, loc, product, type, sizes));
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
