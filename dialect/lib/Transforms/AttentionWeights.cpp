//===- AttentionWeights.cpp - attention_weights from forward --------------===//
//
// Derives the entry point that shows what a model attends to: a copy of
// `forward` in which each `attn.sdpa` (in program order, which is layer
// order, `repeat` being unrolled) also yields its probabilities
// softmax(q k^T * scale + mask), built from plain attn ops, and which returns
// them stacked as [L, B, H, T, S] instead of the logits. The weights are
// thus those of the compiled model itself, at inference (no dropout).
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/Transforms/EntryPoints.h"
#include "attn/Dialect/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNATTENTIONWEIGHTS
#include "attn/Dialect/Transforms/Passes.h.inc"

namespace {

RankedTensorType typeOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// The [B, H, T, S] type of `sdpa`'s probabilities, H being the query's
/// heads; failure when they cannot be built: a dynamic head count or head
/// size, or key heads that do not divide the query heads.
FailureOr<RankedTensorType> weightsType(SdpaOp sdpa) {
  RankedTensorType q = typeOf(sdpa.getQuery()), k = typeOf(sdpa.getKey());
  int64_t heads = q.getDimSize(1), keyHeads = k.getDimSize(1);
  if (ShapedType::isDynamic(heads) || ShapedType::isDynamic(keyHeads) ||
      ShapedType::isDynamic(q.getDimSize(3)) || heads % keyHeads != 0)
    return failure();
  return RankedTensorType::get(
      {q.getDimSize(0), heads, q.getDimSize(2), k.getDimSize(2)},
      q.getElementType());
}

/// Whether `forward` has attention whose weights stack into one tensor:
/// one token argument `i32[B, T]`, so that every attention is over
/// positions of that sequence, and the same [B, H, T, S] type everywhere.
bool qualifies(func::FuncOp forward) {
  FunctionType type = forward.getFunctionType();
  if (type.getNumInputs() != 1 || type.getNumResults() != 1)
    return false;
  auto tokens = dyn_cast<RankedTensorType>(type.getInput(0));
  if (!tokens || tokens.getRank() != 2 ||
      !tokens.getElementType().isInteger(32))
    return false;
  std::optional<RankedTensorType> common;
  WalkResult result = forward.walk([&](SdpaOp sdpa) {
    FailureOr<RankedTensorType> weights = weightsType(sdpa);
    if (failed(weights) || (common && *common != *weights))
      return WalkResult::interrupt();
    common = *weights;
    return WalkResult::advance();
  });
  return !result.wasInterrupted() && common.has_value();
}

/// Builds the probabilities of one attention before it.
class WeightsBuilder {
public:
  WeightsBuilder(SdpaOp sdpa) : b(sdpa), loc(sdpa.getLoc()), sdpa(sdpa) {}

  Value build() {
    Value scores = scale(product());
    Value causal, padding;
    if (sdpa.getMask() == MaskKind::causal)
      causal = causalMask(scores);
    if (sdpa.getKeyPadding())
      padding = paddingMask(sdpa.getKeyPadding());
    // A masked score is very negative rather than -inf, so that a query
    // whose keys are all masked gets a finite softmax; selecting zeros
    // afterwards gives it the zeros sdpa gives it.
    for (Value mask : {causal, padding})
      if (mask)
        scores = SelectOp::create(b, loc, mask, constant(-1e30), scores);
    Value weights = SoftmaxOp::create(b, loc, scores, 3);
    for (Value mask : {causal, padding})
      if (mask)
        weights = SelectOp::create(b, loc, mask, constant(0.0), weights);
    return weights;
  }

private:
  Type elementType() { return typeOf(sdpa.getQuery()).getElementType(); }

  Value constant(double value) {
    auto type = RankedTensorType::get({}, elementType());
    return arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(type, b.getFloatAttr(elementType(), value)));
  }

  Value dim(Value value, int64_t axis) {
    return DimOp::create(b, loc, value, axis);
  }

  /// `value` reshaped to `shape`, whose dynamic dims are `sizes` in order.
  Value reshape(Value value, ArrayRef<int64_t> shape, ArrayRef<Value> sizes) {
    auto type = RankedTensorType::get(shape, typeOf(value).getElementType());
    SmallVector<Value> dynamic;
    for (auto [extent, size] : llvm::zip(shape, sizes))
      if (ShapedType::isDynamic(extent))
        dynamic.push_back(size);
    return ReshapeOp::create(b, loc, type, value, dynamic);
  }

  /// q k^T: [B, H, T, S]. With fewer key heads than query heads (grouped
  /// query attention), query head h reads key head h / (H / H_kv): the
  /// queries are grouped as [B, H_kv, H / H_kv, T, D] against keys
  /// [B, H_kv, 1, D, S].
  Value product() {
    Value q = sdpa.getQuery(), k = sdpa.getKey();
    Value kt = TransposeOp::create(b, loc, k, ArrayRef<int64_t>{0, 1, 3, 2});
    RankedTensorType qt = typeOf(q), ktt = typeOf(kt);
    int64_t heads = qt.getDimSize(1), keyHeads = ktt.getDimSize(1);
    if (heads == keyHeads)
      return MatmulOp::create(b, loc, q, kt);
    int64_t group = heads / keyHeads;
    Value batch = dim(q, 0), queries = dim(q, 2), keys = dim(k, 2);
    Value grouped = reshape(
        q,
        {qt.getDimSize(0), keyHeads, group, qt.getDimSize(2), qt.getDimSize(3)},
        {batch, Value(), Value(), queries, Value()});
    Value keysT = reshape(
        kt,
        {ktt.getDimSize(0), keyHeads, 1, ktt.getDimSize(2), ktt.getDimSize(3)},
        {dim(k, 0), Value(), Value(), Value(), keys});
    Value scores = MatmulOp::create(b, loc, grouped, keysT);
    return reshape(
        scores, {qt.getDimSize(0), heads, qt.getDimSize(2), ktt.getDimSize(3)},
        {batch, Value(), queries, keys});
  }

  Value scale(Value scores) {
    double factor =
        sdpa.getScale()
            ? sdpa.getScale()->convertToDouble()
            : 1.0 / std::sqrt(double(typeOf(sdpa.getQuery()).getDimSize(3)));
    return MulOp::create(b, loc, scores, constant(factor));
  }

  /// [T, S], true where key s comes after query t: s > t + S - T, the
  /// queries aligned to the last key as sdpa aligns them.
  Value causalMask(Value scores) {
    RankedTensorType type = typeOf(scores);
    Value queries = dim(scores, 2), keys = dim(scores, 3);
    Value offset = arith::SubIOp::create(b, loc, keys, queries);
    auto positionsType = [&](int64_t n) {
      return RankedTensorType::get({n}, b.getI32Type());
    };
    Value t = PositionsOp::create(b, loc, positionsType(type.getDimSize(2)),
                                  queries, offset);
    Value s = PositionsOp::create(b, loc, positionsType(type.getDimSize(3)),
                                  keys, Value());
    Value column = reshape(t, {type.getDimSize(2), 1}, {queries, Value()});
    Value row = reshape(s, {1, type.getDimSize(3)}, {Value(), keys});
    return CompareOp::create(b, loc, CompareKind::gt, row, column);
  }

  /// The key padding [B, S] as [B, 1, 1, S].
  Value paddingMask(Value padding) {
    RankedTensorType type = typeOf(padding);
    return reshape(padding, {type.getDimSize(0), 1, 1, type.getDimSize(1)},
                   {dim(padding, 0), Value(), Value(), dim(padding, 1)});
  }

  OpBuilder b;
  Location loc;
  SdpaOp sdpa;
};

/// The weights [B, H, T, S] of each layer as one [L, B, H, T, S] tensor.
Value stack(OpBuilder &b, Location loc, ArrayRef<Value> layers) {
  SmallVector<Value> parts;
  for (Value weights : layers) {
    RankedTensorType type = typeOf(weights);
    SmallVector<int64_t> shape{1};
    llvm::append_range(shape, type.getShape());
    SmallVector<Value> sizes;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.isDynamicDim(d))
        sizes.push_back(DimOp::create(b, loc, weights, d));
    parts.push_back(
        ReshapeOp::create(b, loc, type.clone(shape), weights, sizes));
  }
  if (parts.size() == 1)
    return parts.front();
  return ConcatOp::create(b, loc, parts, 0);
}

struct AttnAttentionWeightsPass
    : impl::AttnAttentionWeightsBase<AttnAttentionWeightsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>(entry::kForward);
    if (!forward || forward.isExternal() ||
        module.lookupSymbol(entry::kAttentionWeights) || !qualifies(forward))
      return;
    func::FuncOp derived = forward.clone();
    derived.setName(entry::kAttentionWeights);
    module.push_back(derived);

    // Dropout is the identity at inference; without it, what only fed the
    // logits is dead.
    derived.walk([](DropoutOp dropout) {
      if (!dropout.getSeed()) {
        dropout.replaceAllUsesWith(dropout.getInput());
        dropout.erase();
      }
    });
    SmallVector<Value> layers;
    derived.walk(
        [&](SdpaOp sdpa) { layers.push_back(WeightsBuilder(sdpa).build()); });
    auto ret = cast<func::ReturnOp>(derived.front().getTerminator());
    OpBuilder b(ret);
    Value stacked = stack(b, ret.getLoc(), layers);
    ret.getOperandsMutable().assign(stacked);
    derived.setType(
        b.getFunctionType(derived.getArgumentTypes(), stacked.getType()));
    entry::eraseDeadOps(derived);
  }
};

} // namespace
} // namespace attn
