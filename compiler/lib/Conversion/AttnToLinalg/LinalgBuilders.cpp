//===- LinalgBuilders.cpp - Building blocks of the attn lowering ----------===//
//
// Shared helpers of the AttnToLinalg patterns: result sizes under NumPy
// broadcasting, element-wise generics, single-axis reductions, activations.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilders.h"

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"

using namespace mlir;

namespace attn {

Value dimOf(OpBuilder &b, Location loc, Value value, int64_t axis) {
  auto type = cast<RankedTensorType>(value.getType());
  if (!type.isDynamicDim(axis))
    return arith::ConstantIndexOp::create(b, loc, type.getDimSize(axis));
  return tensor::DimOp::create(b, loc, value, axis);
}

SmallVector<OpFoldResult> broadcastResultSizes(OpBuilder &b, Location loc,
                                               RankedTensorType resultType,
                                               ValueRange operands) {
  SmallVector<OpFoldResult> sizes;
  int64_t rank = resultType.getRank();
  for (int64_t d = 0; d < rank; ++d) {
    if (!resultType.isDynamicDim(d)) {
      sizes.push_back(b.getIndexAttr(resultType.getDimSize(d)));
      continue;
    }
    Value size;
    for (Value operand : operands) {
      auto type = cast<RankedTensorType>(operand.getType());
      int64_t od = d - (rank - type.getRank());
      if (od < 0 || type.getDimSize(od) == 1)
        continue;
      size = dimOf(b, loc, operand, od);
      break;
    }
    assert(size && "a dynamic result dim has a source operand");
    sizes.push_back(size);
  }
  return sizes;
}

AffineMap broadcastMap(MLIRContext *context, RankedTensorType operand,
                       RankedTensorType result) {
  int64_t rank = result.getRank(), offset = rank - operand.getRank();
  SmallVector<AffineExpr> exprs;
  for (int64_t d = 0; d < operand.getRank(); ++d) {
    bool broadcast = operand.getDimSize(d) == 1 &&
                     result.getDimSize(d + offset) != 1;
    exprs.push_back(broadcast ? getAffineConstantExpr(0, context)
                              : getAffineDimExpr(d + offset, context));
  }
  return AffineMap::get(rank, 0, exprs, context);
}

Value emptyTensor(OpBuilder &b, Location loc, RankedTensorType type,
                  ArrayRef<OpFoldResult> sizes) {
  return tensor::EmptyOp::create(b, loc, sizes, type.getElementType());
}

Value filledTensor(OpBuilder &b, Location loc, RankedTensorType type,
                   ArrayRef<OpFoldResult> sizes, TypedAttr value) {
  Value empty = emptyTensor(b, loc, type, sizes);
  Value scalar = arith::ConstantOp::create(b, loc, value);
  return linalg::FillOp::create(b, loc, scalar, empty).getResult(0);
}

Value buildElementwise(OpBuilder &b, Location loc, RankedTensorType resultType,
                       ValueRange operands, ScalarFn fn) {
  SmallVector<OpFoldResult> sizes =
      broadcastResultSizes(b, loc, resultType, operands);
  Value init = emptyTensor(b, loc, resultType, sizes);
  SmallVector<AffineMap> maps;
  for (Value operand : operands)
    maps.push_back(broadcastMap(
        b.getContext(), cast<RankedTensorType>(operand.getType()), resultType));
  maps.push_back(b.getMultiDimIdentityMap(resultType.getRank()));
  SmallVector<utils::IteratorType> iterators(resultType.getRank(),
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, operands, ValueRange{init}, maps,
      iterators, [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value out = fn(nb, nloc, args.drop_back());
        linalg::YieldOp::create(nb, nloc, out);
      });
  return generic.getResult(0);
}

Value buildReduction(OpBuilder &b, Location loc, Value input, int64_t axis,
                     TypedAttr init, CombineFn combine) {
  auto inputType = cast<RankedTensorType>(input.getType());
  int64_t rank = inputType.getRank();
  SmallVector<int64_t> shape;
  SmallVector<OpFoldResult> sizes;
  SmallVector<AffineExpr> outExprs;
  for (int64_t d = 0; d < rank; ++d) {
    if (d == axis)
      continue;
    shape.push_back(inputType.getDimSize(d));
    sizes.push_back(inputType.isDynamicDim(d)
                        ? OpFoldResult(dimOf(b, loc, input, d))
                        : OpFoldResult(b.getIndexAttr(inputType.getDimSize(d))));
    outExprs.push_back(b.getAffineDimExpr(d));
  }
  auto resultType = RankedTensorType::get(shape, inputType.getElementType());
  Value acc = filledTensor(b, loc, resultType, sizes, init);
  SmallVector<AffineMap> maps = {
      b.getMultiDimIdentityMap(rank),
      AffineMap::get(rank, 0, outExprs, b.getContext())};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  iterators[axis] = utils::IteratorType::reduction;
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, ValueRange{input}, ValueRange{acc}, maps,
      iterators, [&](OpBuilder &nb, Location nloc, ValueRange args) {
        linalg::YieldOp::create(nb, nloc, combine(nb, nloc, args[0], args[1]));
      });
  return generic.getResult(0);
}

Value floatConstant(OpBuilder &b, Location loc, Type type, double value) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
}

Value attentionScale(OpBuilder &b, Location loc, Type element,
                     std::optional<APFloat> given, Value headDim) {
  if (given)
    return floatConstant(b, loc, element, given->convertToDouble());
  Value d = arith::SIToFPOp::create(
      b, loc, element,
      arith::IndexCastOp::create(b, loc, b.getI64Type(), headDim));
  return math::RsqrtOp::create(b, loc, d);
}

int64_t attentionGroupSize(Value query, Value key) {
  int64_t heads = cast<RankedTensorType>(query.getType()).getDimSize(1);
  int64_t kvHeads = cast<RankedTensorType>(key.getType()).getDimSize(1);
  if (ShapedType::isDynamic(heads) || ShapedType::isDynamic(kvHeads))
    return 1;
  return heads / kvHeads;
}

Value kvHeadOf(OpBuilder &b, Location loc, Value head, int64_t group) {
  if (group == 1)
    return head;
  return arith::DivUIOp::create(b, loc, head,
                                arith::ConstantIndexOp::create(b, loc, group));
}

Value groupHeads(OpBuilder &b, Location loc, Value x, int64_t group) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t heads = type.getDimSize(1);
  OpFoldResult kvHeads =
      ShapedType::isDynamic(heads)
          ? OpFoldResult(arith::DivUIOp::create(
                b, loc, dimOf(b, loc, x, 1),
                arith::ConstantIndexOp::create(b, loc, group)))
          : OpFoldResult(b.getIndexAttr(heads / group));
  SmallVector<int64_t> shape = {
      type.getDimSize(0),
      ShapedType::isDynamic(heads) ? ShapedType::kDynamic : heads / group,
      group};
  llvm::append_range(shape, type.getShape().drop_front(2));
  SmallVector<OpFoldResult> sizes = {tensor::getMixedSize(b, loc, x, 0),
                                     kvHeads, b.getIndexAttr(group)};
  SmallVector<ReassociationIndices> reassociation = {{0}, {1, 2}};
  for (int64_t d = 2; d < type.getRank(); ++d) {
    sizes.push_back(tensor::getMixedSize(b, loc, x, d));
    reassociation.push_back({d + 1});
  }
  return tensor::ExpandShapeOp::create(b, loc, type.clone(shape), x,
                                       reassociation, sizes);
}

ValueRange buildTileLoop(OpBuilder &b, Location loc, Value end, Value tile,
                         ValueRange inits, TileBodyFn body) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value fullEnd = arith::SubIOp::create(
      b, loc, end, arith::RemSIOp::create(b, loc, end, tile));
  auto full = scf::ForOp::create(
      b, loc, zero, fullEnd, tile, inits,
      [&](OpBuilder &b, Location loc, Value start, ValueRange state) {
        body(b, loc, start, tile, state);
      });
  auto partial = scf::ForOp::create(
      b, loc, fullEnd, end, tile, full.getResults(),
      [&](OpBuilder &b, Location loc, Value start, ValueRange state) {
        body(b, loc, start, arith::SubIOp::create(b, loc, end, start), state);
      });
  return partial.getResults();
}

SmallVector<Value> castToResults(OpBuilder &b, Location loc, Operation *op,
                                 ValueRange values) {
  SmallVector<Value> cast;
  for (auto [value, type] : llvm::zip(values, op->getResultTypes()))
    cast.push_back(tensor::CastOp::create(b, loc, type, value));
  return cast;
}

} // namespace attn
