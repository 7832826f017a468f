//===- AttnShapeInference.cpp - Result types of attn ops ------------------===//
//
// The result type of every op whose result follows from its operands, so the
// frontend builds ops without computing shapes by hand, and shape errors are
// reported once, here, naming the shapes involved.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/IR/AttnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace attn;

static constexpr int64_t kDynamic = ShapedType::kDynamic;

namespace {
using InferredTypes = SmallVectorImpl<Type>;
using OptLoc = std::optional<Location>;
} // namespace

/// Prints a type the way diagnostics quote it: 'tensor<?x4xf32>'.
static std::string quote(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "'" << type << "'";
  return text;
}

static RankedTensorType rankedType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// Merges two sizes of one dimension that must be equal: a static size wins
/// over a dynamic one. Fails on two different static sizes.
static FailureOr<int64_t> mergeDim(int64_t a, int64_t b) {
  if (a == kDynamic)
    return b;
  if (b == kDynamic || a == b)
    return a;
  return failure();
}

/// Broadcasts two shapes by NumPy's rules (aligned on the last dimension; a
/// size-1 dimension stretches). Two dynamic sizes are taken to be equal, and
/// a dynamic size against a static one takes the static one: a `?` is never
/// assumed to be 1.
static FailureOr<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> a,
                                                       ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    int64_t &out = result[rank - 1 - i];
    if (da == 1)
      out = db;
    else if (db == 1)
      out = da;
    else if (FailureOr<int64_t> merged = mergeDim(da, db); succeeded(merged))
      out = *merged;
    else
      return failure();
  }
  return result;
}

/// Broadcasts the shapes of `values` together; the diagnostic names every
/// shape.
static FailureOr<SmallVector<int64_t>> broadcastValues(OptLoc loc,
                                                       ValueRange values) {
  SmallVector<int64_t> shape;
  for (Value value : values) {
    FailureOr<SmallVector<int64_t>> next =
        broadcastShapes(shape, rankedType(value).getShape());
    if (succeeded(next)) {
      shape = std::move(*next);
      continue;
    }
    if (loc) {
      InFlightDiagnostic diag = emitError(*loc, "operand shapes ");
      llvm::interleave(
          values, diag, [&](Value v) { diag << quote(v.getType()); }, " and ");
      diag << " cannot be broadcast together";
    }
    return failure();
  }
  return shape;
}

static LogicalResult checkAxis(OptLoc loc, int64_t axis, Type type) {
  int64_t rank = cast<RankedTensorType>(type).getRank();
  if (axis >= 0 && axis < rank)
    return success();
  return emitOptionalError(loc, "axis ", axis, " is out of range for ",
                           quote(type));
}

/// A stated result type is compatible with the inferred one when the element
/// types and ranks agree and every dimension agrees or one side is dynamic.
static bool compatibleResultTypes(TypeRange stated, TypeRange inferred) {
  if (stated.size() != inferred.size())
    return false;
  for (auto [a, b] : llvm::zip(stated, inferred)) {
    auto ta = dyn_cast<RankedTensorType>(a);
    auto tb = dyn_cast<RankedTensorType>(b);
    if (!ta || !tb)
      return a == b;
    if (ta.getElementType() != tb.getElementType() ||
        ta.getRank() != tb.getRank())
      return false;
    for (auto [da, db] : llvm::zip(ta.getShape(), tb.getShape()))
      if (failed(mergeDim(da, db)))
        return false;
  }
  return true;
}

#define ATTN_COMPATIBLE_RESULT_TYPES(OP)                                       \
  bool OP::isCompatibleReturnTypes(TypeRange l, TypeRange r) {                 \
    return compatibleResultTypes(l, r);                                        \
  }
ATTN_COMPATIBLE_RESULT_TYPES(AddOp)
ATTN_COMPATIBLE_RESULT_TYPES(SubOp)
ATTN_COMPATIBLE_RESULT_TYPES(MulOp)
ATTN_COMPATIBLE_RESULT_TYPES(DivOp)
ATTN_COMPATIBLE_RESULT_TYPES(CompareOp)
ATTN_COMPATIBLE_RESULT_TYPES(SelectOp)
ATTN_COMPATIBLE_RESULT_TYPES(TransposeOp)
ATTN_COMPATIBLE_RESULT_TYPES(SplitHeadsOp)
ATTN_COMPATIBLE_RESULT_TYPES(MergeHeadsOp)
ATTN_COMPATIBLE_RESULT_TYPES(ConcatOp)
ATTN_COMPATIBLE_RESULT_TYPES(SliceOp)
ATTN_COMPATIBLE_RESULT_TYPES(TakeOp)
ATTN_COMPATIBLE_RESULT_TYPES(GatherOp)
ATTN_COMPATIBLE_RESULT_TYPES(RopeOp)
ATTN_COMPATIBLE_RESULT_TYPES(MatmulOp)
ATTN_COMPATIBLE_RESULT_TYPES(LinearOp)
ATTN_COMPATIBLE_RESULT_TYPES(ReduceOp)
ATTN_COMPATIBLE_RESULT_TYPES(LayerNormOp)
ATTN_COMPATIBLE_RESULT_TYPES(RmsNormOp)
ATTN_COMPATIBLE_RESULT_TYPES(SdpaOp)
ATTN_COMPATIBLE_RESULT_TYPES(LayerNormGradOp)
ATTN_COMPATIBLE_RESULT_TYPES(RmsNormGradOp)
ATTN_COMPATIBLE_RESULT_TYPES(SdpaGradOp)
ATTN_COMPATIBLE_RESULT_TYPES(CrossEntropyGradOp)
ATTN_COMPATIBLE_RESULT_TYPES(AdamUpdateOp)
ATTN_COMPATIBLE_RESULT_TYPES(KVCacheAppendOp)
#undef ATTN_COMPATIBLE_RESULT_TYPES

//===----------------------------------------------------------------------===//
// Element-wise
//===----------------------------------------------------------------------===//

/// Checks that `values` share one element type.
static LogicalResult checkSameElementType(OptLoc loc, ValueRange values) {
  for (Value value : values.drop_front()) {
    if (rankedType(value).getElementType() !=
        rankedType(values.front()).getElementType())
      return emitOptionalError(loc, "element types of ",
                               quote(values.front().getType()), " and ",
                               quote(value.getType()), " differ");
  }
  return success();
}

/// The result of an element-wise op over `operands`, of `elementType`; the
/// operands in `sameElementType` must agree on their element type.
static LogicalResult inferElementwise(OptLoc loc, ValueRange operands,
                                      ValueRange sameElementType,
                                      Type elementType, InferredTypes &types) {
  if (failed(checkSameElementType(loc, sameElementType)))
    return failure();
  FailureOr<SmallVector<int64_t>> shape = broadcastValues(loc, operands);
  if (failed(shape))
    return failure();
  types.push_back(RankedTensorType::get(*shape, elementType));
  return success();
}

#define ATTN_INFER_BINARY(OP)                                                  \
  LogicalResult OP::inferReturnTypes(MLIRContext *, OptLoc loc,                \
                                     Adaptor adaptor, InferredTypes &types) {  \
    Value operands[] = {adaptor.getLhs(), adaptor.getRhs()};                   \
    return inferElementwise(loc, operands, operands,                           \
                            rankedType(adaptor.getLhs()).getElementType(),     \
                            types);                                            \
  }
ATTN_INFER_BINARY(AddOp)
ATTN_INFER_BINARY(SubOp)
ATTN_INFER_BINARY(MulOp)
ATTN_INFER_BINARY(DivOp)
#undef ATTN_INFER_BINARY

LogicalResult CompareOp::inferReturnTypes(MLIRContext *context, OptLoc loc,
                                          Adaptor adaptor,
                                          InferredTypes &types) {
  Value operands[] = {adaptor.getLhs(), adaptor.getRhs()};
  return inferElementwise(loc, operands, operands,
                          IntegerType::get(context, 1), types);
}

LogicalResult SelectOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                         Adaptor adaptor,
                                         InferredTypes &types) {
  return inferElementwise(
      loc,
      {adaptor.getCondition(), adaptor.getTrueValue(),
       adaptor.getFalseValue()},
      {adaptor.getTrueValue(), adaptor.getFalseValue()},
      rankedType(adaptor.getTrueValue()).getElementType(), types);
}

//===----------------------------------------------------------------------===//
// Shape
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                            Adaptor adaptor,
                                            InferredTypes &types) {
  RankedTensorType input = rankedType(adaptor.getInput());
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  SmallVector<bool> seen(input.getRank(), false);
  bool valid = static_cast<int64_t>(perm.size()) == input.getRank();
  for (int64_t p : perm) {
    if (!valid || p < 0 || p >= input.getRank() || seen[p]) {
      valid = false;
      break;
    }
    seen[p] = true;
  }
  if (!valid) {
    if (loc) {
      InFlightDiagnostic diag = mlir::emitError(*loc, "permutation [");
      llvm::interleaveComma(perm, diag);
      diag << "] is not a permutation of the dimensions of " << quote(input);
    }
    return failure();
  }
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(input.getDimSize(p));
  types.push_back(input.clone(shape));
  return success();
}

LogicalResult SplitHeadsOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                             Adaptor adaptor,
                                             InferredTypes &types) {
  RankedTensorType input = rankedType(adaptor.getInput());
  int64_t heads = adaptor.getHeads();
  if (input.getRank() != 3)
    return emitOptionalError(loc, "expected a [B, T, features] tensor, got ",
                             quote(input));
  int64_t features = input.getDimSize(2);
  if (heads <= 0)
    return emitOptionalError(loc, "the head count ", heads,
                             " is not positive");
  if (features != kDynamic && features % heads != 0)
    return emitOptionalError(loc, "the ", features, " features of ",
                             quote(input), " do not split into ", heads,
                             " heads");
  int64_t headDim = features == kDynamic ? kDynamic : features / heads;
  types.push_back(input.clone(
      {input.getDimSize(0), heads, input.getDimSize(1), headDim}));
  return success();
}

LogicalResult MergeHeadsOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                             Adaptor adaptor,
                                             InferredTypes &types) {
  RankedTensorType input = rankedType(adaptor.getInput());
  if (input.getRank() != 4)
    return emitOptionalError(loc, "expected a [B, heads, T, k] tensor, got ",
                             quote(input));
  int64_t heads = input.getDimSize(1), headDim = input.getDimSize(3);
  int64_t features =
      heads == kDynamic || headDim == kDynamic ? kDynamic : heads * headDim;
  types.push_back(
      input.clone({input.getDimSize(0), input.getDimSize(2), features}));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                         Adaptor adaptor,
                                         InferredTypes &types) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitOptionalError(loc, "expected at least one input");
  RankedTensorType first = rankedType(inputs.front());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, first)))
    return failure();
  SmallVector<int64_t> shape(first.getShape());
  for (Value input : inputs.drop_front()) {
    RankedTensorType type = rankedType(input);
    bool compatible = type.getRank() == first.getRank() &&
                      type.getElementType() == first.getElementType();
    for (int64_t d = 0; compatible && d < first.getRank(); ++d) {
      int64_t size = type.getDimSize(d);
      if (d == axis) {
        shape[d] = shape[d] == kDynamic || size == kDynamic ? kDynamic
                                                            : shape[d] + size;
        continue;
      }
      FailureOr<int64_t> merged = mergeDim(shape[d], size);
      compatible = succeeded(merged);
      if (compatible)
        shape[d] = *merged;
    }
    if (!compatible)
      return emitOptionalError(loc, "cannot concatenate ", quote(first),
                               " and ", quote(type), " along axis ", axis);
  }
  types.push_back(first.clone(shape));
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                        Adaptor adaptor, InferredTypes &types) {
  RankedTensorType input = rankedType(adaptor.getInput());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, input)))
    return failure();
  int64_t start = adaptor.getStart(), end = adaptor.getEnd();
  int64_t size = input.getDimSize(axis);
  if (start < 0 || end <= start || (size != kDynamic && end > size))
    return emitOptionalError(loc, "slice [", start, ", ", end,
                             ") is empty or outside dimension ", axis, " of ",
                             quote(input));
  SmallVector<int64_t> shape(input.getShape());
  shape[axis] = end - start;
  types.push_back(input.clone(shape));
  return success();
}

LogicalResult TakeOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                       Adaptor adaptor, InferredTypes &types) {
  RankedTensorType input = rankedType(adaptor.getInput());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, input)))
    return failure();
  int64_t index = adaptor.getIndex(), size = input.getDimSize(axis);
  if (size != kDynamic && (index >= size || index < -size))
    return emitOptionalError(loc, "index ", index,
                             " is out of range for dimension ", axis, " of ",
                             quote(input));
  SmallVector<int64_t> shape(input.getShape());
  shape.erase(shape.begin() + axis);
  types.push_back(input.clone(shape));
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                         Adaptor adaptor,
                                         InferredTypes &types) {
  RankedTensorType table = rankedType(adaptor.getTable());
  RankedTensorType ids = rankedType(adaptor.getIds());
  if (table.getRank() != 2)
    return emitOptionalError(loc, "expected a [rows, features] table, got ",
                             quote(table));
  SmallVector<int64_t> shape(ids.getShape());
  shape.push_back(table.getDimSize(1));
  types.push_back(table.clone(shape));
  return success();
}

/// Rotary embeddings keep the input's type; the features pair up, so their
/// count is static and even, and the positions number the rows.
LogicalResult RopeOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                       Adaptor adaptor, InferredTypes &types) {
  RankedTensorType input = rankedType(adaptor.getInput());
  RankedTensorType positions = rankedType(adaptor.getPositions());
  if (input.getRank() < 2)
    return emitOptionalError(loc, "expected a [..., T, D] input, got ",
                             quote(input));
  int64_t features = input.getShape().back();
  if (features == kDynamic || features % 2 != 0)
    return emitOptionalError(loc, "the last dimension of ", quote(input),
                             " must be static and even");
  int64_t rows = input.getDimSize(input.getRank() - 2);
  if (failed(mergeDim(rows, positions.getDimSize(0))))
    return emitOptionalError(loc, "positions ", quote(positions),
                             " do not number the rows of ", quote(input));
  types.push_back(input);
  return success();
}

//===----------------------------------------------------------------------===//
// Contractions and reductions
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                         Adaptor adaptor,
                                         InferredTypes &types) {
  RankedTensorType lhs = rankedType(adaptor.getLhs());
  RankedTensorType rhs = rankedType(adaptor.getRhs());
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return emitOptionalError(loc, "operands of a matrix product need rank 2 "
                                  "or more, got ",
                             quote(lhs), " and ", quote(rhs));
  if (lhs.getElementType() != rhs.getElementType())
    return emitOptionalError(loc, "element types of ", quote(lhs), " and ",
                             quote(rhs), " differ");
  ArrayRef<int64_t> a = lhs.getShape(), b = rhs.getShape();
  if (failed(mergeDim(a.back(), b[b.size() - 2])))
    return emitOptionalError(loc, "contracted dimensions differ: ",
                             quote(lhs), " @ ", quote(rhs));
  FailureOr<SmallVector<int64_t>> batch =
      broadcastShapes(a.drop_back(2), b.drop_back(2));
  if (failed(batch))
    return emitOptionalError(loc, "batch dimensions of ", quote(lhs), " and ",
                             quote(rhs), " cannot be broadcast together");
  SmallVector<int64_t> shape = std::move(*batch);
  shape.push_back(a[a.size() - 2]);
  shape.push_back(b.back());
  types.push_back(lhs.clone(shape));
  return success();
}

/// Checks that `value`, when present, has a shape compatible with `shape`.
static LogicalResult checkSameShape(OptLoc loc, StringRef what, Value value,
                                    RankedTensorType expected) {
  if (!value)
    return success();
  if (compatibleResultTypes(value.getType(), expected))
    return success();
  return emitOptionalError(loc, what, " has type ", quote(value.getType()),
                           " but ", quote(expected), " was expected");
}

/// Checks a per-feature vector (a norm's weight, a bias) against `features`.
static LogicalResult checkFeatureVector(OptLoc loc, StringRef what,
                                        Value value, RankedTensorType input,
                                        int64_t features) {
  if (!value)
    return success();
  RankedTensorType type = rankedType(value);
  if (type.getRank() == 1 && type.getElementType() == input.getElementType() &&
      succeeded(mergeDim(type.getDimSize(0), features)))
    return success();
  return emitOptionalError(loc, what, " ", quote(type), " does not match the ",
                           features == kDynamic ? std::string("?")
                                                : std::to_string(features),
                           " features of ", quote(input));
}

LogicalResult LinearOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                         Adaptor adaptor,
                                         InferredTypes &types) {
  RankedTensorType input = rankedType(adaptor.getInput());
  RankedTensorType weight = rankedType(adaptor.getWeight());
  if (input.getRank() < 1 || weight.getRank() != 2)
    return emitOptionalError(loc, "expected an input [..., in] and a weight "
                                  "[out, in], got ",
                             quote(input), " and ", quote(weight));
  if (input.getElementType() != weight.getElementType() ||
      failed(mergeDim(input.getShape().back(), weight.getDimSize(1))))
    return emitOptionalError(loc, "input ", quote(input),
                             " does not match weight ", quote(weight),
                             " (the weight is [out, in])");
  SmallVector<int64_t> shape(input.getShape());
  shape.back() = weight.getDimSize(0);
  RankedTensorType result = input.clone(shape);
  if (failed(checkFeatureVector(loc, "bias", adaptor.getBias(), result,
                                weight.getDimSize(0))) ||
      failed(checkSameShape(loc, "residual", adaptor.getResidual(), result)))
    return failure();
  types.push_back(result);
  return success();
}

LogicalResult ReduceOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                         Adaptor adaptor,
                                         InferredTypes &types) {
  RankedTensorType input = rankedType(adaptor.getInput());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, input)))
    return failure();
  if (Value mask = adaptor.getMask()) {
    if (adaptor.getKind() != ReduceKind::mean)
      return emitOptionalError(loc, "only a mean takes a mask, not a ",
                               stringifyReduceKind(adaptor.getKind()));
    RankedTensorType maskType = rankedType(mask);
    bool compatible =
        maskType.getRank() > axis && maskType.getRank() <= input.getRank();
    for (int64_t d = 0; compatible && d < maskType.getRank(); ++d)
      compatible =
          succeeded(mergeDim(maskType.getDimSize(d), input.getDimSize(d)));
    if (!compatible)
      return emitOptionalError(loc, "mask ", quote(maskType),
                               " must cover the leading dimensions of ",
                               quote(input), " up to axis ", axis);
  }
  SmallVector<int64_t> shape(input.getShape());
  shape.erase(shape.begin() + axis);
  types.push_back(input.clone(shape));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

/// A norm's result is its input's type; its weight and bias are [features].
static LogicalResult inferNorm(OptLoc loc, Value input, Value weight,
                               Value bias, Value residual,
                               InferredTypes &types) {
  RankedTensorType type = rankedType(input);
  if (type.getRank() < 1)
    return emitOptionalError(loc, "cannot normalise the scalar ", quote(type));
  int64_t features = type.getShape().back();
  if (failed(checkFeatureVector(loc, "weight", weight, type, features)) ||
      failed(checkFeatureVector(loc, "bias", bias, type, features)) ||
      failed(checkSameShape(loc, "residual", residual, type)))
    return failure();
  types.push_back(type);
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                            Adaptor adaptor,
                                            InferredTypes &types) {
  return inferNorm(loc, adaptor.getInput(), adaptor.getWeight(),
                   adaptor.getBias(), adaptor.getResidual(), types);
}

LogicalResult RmsNormOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                          Adaptor adaptor,
                                          InferredTypes &types) {
  return inferNorm(loc, adaptor.getInput(), adaptor.getWeight(), Value(),
                   adaptor.getResidual(), types);
}

/// The adjoints of a norm: the input's and the weight's types (the bias has
/// the weight's type), after checking the adjoint of the output.
static LogicalResult inferNormGrad(OptLoc loc, Value input, Value weight,
                                   Value gradOutput, unsigned numWeightGrads,
                                   InferredTypes &types) {
  if (failed(inferNorm(loc, input, weight, Value(), Value(), types)))
    return failure();
  if (failed(checkSameShape(loc, "grad_output", gradOutput,
                            rankedType(input))))
    return failure();
  types.append(numWeightGrads, weight.getType());
  return success();
}

LogicalResult LayerNormGradOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                                Adaptor adaptor,
                                                InferredTypes &types) {
  return inferNormGrad(loc, adaptor.getInput(), adaptor.getWeight(),
                       adaptor.getGradOutput(), 2, types);
}

LogicalResult RmsNormGradOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                              Adaptor adaptor,
                                              InferredTypes &types) {
  return inferNormGrad(loc, adaptor.getInput(), adaptor.getWeight(),
                       adaptor.getGradOutput(), 1, types);
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// The output type of attention over q [B, H, T, D], k [B, H_kv, S, D],
/// v [B, H_kv, S, Dv] (H a multiple of H_kv) and an optional key padding
/// [B, S].
static FailureOr<RankedTensorType> inferAttention(OptLoc loc, Value query,
                                                  Value key, Value value,
                                                  Value keyPadding) {
  RankedTensorType q = rankedType(query), k = rankedType(key),
                   v = rankedType(value);
  if (q.getRank() != 4 || k.getRank() != 4 || v.getRank() != 4) {
    (void)emitOptionalError(loc, "query, key and value must be [B, H, T, D] "
                           "tensors, got ",
                      quote(q), ", ", quote(k), " and ", quote(v));
    return failure();
  }
  if (q.getElementType() != k.getElementType() ||
      q.getElementType() != v.getElementType()) {
    (void)emitOptionalError(loc, "element types of query ", quote(q), ", key ",
                      quote(k), " and value ", quote(v), " differ");
    return failure();
  }
  FailureOr<int64_t> batch = mergeDim(q.getDimSize(0), k.getDimSize(0));
  if (succeeded(batch))
    batch = mergeDim(*batch, v.getDimSize(0));
  FailureOr<int64_t> kvHeads = mergeDim(k.getDimSize(1), v.getDimSize(1));
  if (failed(batch) || failed(kvHeads)) {
    (void)emitOptionalError(loc, "batch and head dimensions of query ",
                            quote(q), ", key ", quote(k), " and value ",
                            quote(v), " differ");
    return failure();
  }
  // Grouped-query attention: static head counts may differ when the key's
  // divides the query's; a dynamic one is the other's.
  int64_t queryHeads = q.getDimSize(1);
  FailureOr<int64_t> heads = mergeDim(queryHeads, *kvHeads);
  if (failed(heads)) {
    if (queryHeads == 0 || *kvHeads == 0 || queryHeads % *kvHeads != 0) {
      (void)emitOptionalError(loc, "query ", quote(q), " has ", queryHeads,
                              " heads, not a multiple of the ", *kvHeads,
                              " heads of key ", quote(k), " and value ",
                              quote(v));
      return failure();
    }
    heads = queryHeads;
  }
  if (failed(mergeDim(q.getDimSize(3), k.getDimSize(3)))) {
    (void)emitOptionalError(loc, "query ", quote(q), " and key ", quote(k),
                      " have different head sizes");
    return failure();
  }
  FailureOr<int64_t> keys = mergeDim(k.getDimSize(2), v.getDimSize(2));
  if (failed(keys)) {
    (void)emitOptionalError(loc, "key ", quote(k), " and value ", quote(v),
                      " have different sequence lengths");
    return failure();
  }
  if (keyPadding) {
    RankedTensorType p = rankedType(keyPadding);
    if (p.getRank() != 2 || failed(mergeDim(p.getDimSize(0), *batch)) ||
        failed(mergeDim(p.getDimSize(1), *keys))) {
      (void)emitOptionalError(loc, "key padding ", quote(p),
                        " must be [B, S] for key ", quote(k));
      return failure();
    }
  }
  return q.clone({*batch, *heads, q.getDimSize(2), v.getDimSize(3)});
}

/// Each query's logsumexp: [B, H, T] of an attention output [B, H, T, Dv].
static RankedTensorType logsumexpType(RankedTensorType output) {
  return RankedTensorType::get(output.getShape().drop_back(),
                               output.getElementType());
}

LogicalResult SdpaOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                       Adaptor adaptor, InferredTypes &types) {
  FailureOr<RankedTensorType> output =
      inferAttention(loc, adaptor.getQuery(), adaptor.getKey(),
                     adaptor.getValue(), adaptor.getKeyPadding());
  if (failed(output))
    return failure();
  types.push_back(*output);
  if (adaptor.getReturnLogsumexp())
    types.push_back(logsumexpType(*output));
  return success();
}

LogicalResult SdpaGradOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                           Adaptor adaptor,
                                           InferredTypes &types) {
  FailureOr<RankedTensorType> output =
      inferAttention(loc, adaptor.getQuery(), adaptor.getKey(),
                     adaptor.getValue(), adaptor.getKeyPadding());
  if (failed(output) ||
      failed(checkSameShape(loc, "output", adaptor.getOutput(), *output)) ||
      failed(checkSameShape(loc, "grad_output", adaptor.getGradOutput(),
                            *output)))
    return failure();
  if (failed(checkSameShape(loc, "logsumexp", adaptor.getLogsumexp(),
                            logsumexpType(*output))))
    return failure();
  types.append({adaptor.getQuery().getType(), adaptor.getKey().getType(),
                adaptor.getValue().getType()});
  return success();
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

/// Checks targets [...] against logits [..., C].
static LogicalResult checkTargets(OptLoc loc, Value logits, Value targets) {
  RankedTensorType l = rankedType(logits), t = rankedType(targets);
  bool compatible = l.getRank() >= 1 && t.getRank() == l.getRank() - 1;
  for (int64_t d = 0; compatible && d < t.getRank(); ++d)
    compatible = succeeded(mergeDim(l.getDimSize(d), t.getDimSize(d)));
  if (compatible)
    return success();
  return emitOptionalError(loc, "targets ", quote(t),
                           " must have the shape of logits ", quote(l),
                           " without its last (class) dimension");
}

LogicalResult CrossEntropyOp::verify() {
  RankedTensorType l = rankedType(getLogits()), t = rankedType(getTargets());
  if (failed(checkTargets(std::nullopt, getLogits(), getTargets())))
    return emitOpError() << "targets " << quote(t)
                         << " must have the shape of logits " << quote(l)
                         << " without its last (class) dimension";
  return success();
}

LogicalResult CrossEntropyGradOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                                   Adaptor adaptor,
                                                   InferredTypes &types) {
  if (failed(checkTargets(loc, adaptor.getLogits(), adaptor.getTargets())))
    return failure();
  types.push_back(adaptor.getLogits().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Optimizer and decoding
//===----------------------------------------------------------------------===//

LogicalResult AdamUpdateOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                             Adaptor adaptor,
                                             InferredTypes &types) {
  RankedTensorType param = rankedType(adaptor.getParam());
  if (failed(checkSameShape(loc, "gradient", adaptor.getGrad(), param)) ||
      failed(checkSameShape(loc, "first moment", adaptor.getFirstMoment(),
                            param)) ||
      failed(checkSameShape(loc, "second moment", adaptor.getSecondMoment(),
                            param)))
    return failure();
  types.append(3, param);
  return success();
}

LogicalResult KVCacheAppendOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                                Adaptor adaptor,
                                                InferredTypes &types) {
  RankedTensorType keys = rankedType(adaptor.getNewKeys());
  RankedTensorType values = rankedType(adaptor.getNewValues());
  if (keys.getRank() != 4 || values.getRank() != 4 ||
      keys.getElementType() != values.getElementType() ||
      failed(mergeDim(keys.getDimSize(0), values.getDimSize(0))) ||
      failed(mergeDim(keys.getDimSize(1), values.getDimSize(1))) ||
      failed(mergeDim(keys.getDimSize(2), values.getDimSize(2))))
    return emitOptionalError(loc, "new keys ", quote(keys), " and values ",
                             quote(values),
                             " must be [B, H, t, D] tensors of one batch, "
                             "head count and length");
  types.push_back(keys.clone(
      {keys.getDimSize(0), keys.getDimSize(1), kDynamic, keys.getDimSize(3)}));
  types.push_back(values.clone({values.getDimSize(0), values.getDimSize(1),
                                kDynamic, values.getDimSize(3)}));
  return success();
}
