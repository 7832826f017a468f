//===- IncrementalDecoding.cpp - prefill and decode_step from forward -----===//
//
// Derives the key/value-cached entry points of a causal decoder: a copy of
// `forward` that appends each attention's keys and values to a cache slot
// and attends over everything the slot holds, numbers positions from the
// cache's length, and returns only the last position's logits. Generating n
// tokens then costs n layer applications instead of n^2.
//
// For an encoder-decoder (`encode` and `decode(tgt, memory, ...)`), the same
// is done to `decode` over `tgt`; the cross-attention keys and values of
// `memory`, and the key padding over `memory`, go to "memory slots" of the
// cache, written once by `decode_prefill` and only read by `decode_step`.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/Transforms/EntryPoints.h"
#include "attn/Dialect/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNINCREMENTALDECODING
#include "attn/Dialect/Transforms/Passes.h.inc"

namespace {

/// Whether `op`, some of whose operands depend on the tokens, computes each
/// position from that position alone (or, for causal attention, from the
/// positions before it), so running it on new tokens with cached keys and
/// values gives the same result.
bool isPositionwise(Operation *op, const llvm::DenseSet<Value> &dependent) {
  auto lastAxis = [&](int64_t axis) {
    return axis == cast<RankedTensorType>(op->getOperand(0).getType())
                           .getRank() -
                       1;
  };
  if (isa<ElementwiseOpInterface, DropoutOp, GatherOp, LinearOp, LayerNormOp,
          RmsNormOp, SplitHeadsOp, MergeHeadsOp, DimOp, ReshapeOp,
          PositionsOp, SinusoidalOp>(op))
    return true;
  if (auto slice = dyn_cast<SliceOp>(op))
    return lastAxis(slice.getAxis());
  if (auto softmax = dyn_cast<SoftmaxOp>(op))
    return lastAxis(softmax.getAxis());
  if (auto logSoftmax = dyn_cast<LogSoftmaxOp>(op))
    return lastAxis(logSoftmax.getAxis());
  if (auto reduce = dyn_cast<ReduceOp>(op))
    return lastAxis(reduce.getAxis()) && !reduce.getMask();
  // A rotation by angles of positions that follow the tokens: those are
  // renumbered from the cache length, as positions(T) is.
  if (auto rope = dyn_cast<RopeOp>(op))
    return dependent.contains(rope.getPositions());
  if (auto matmul = dyn_cast<MatmulOp>(op))
    return !dependent.contains(matmul.getRhs());
  if (auto sdpa = dyn_cast<SdpaOp>(op))
    return sdpa.getMask() == MaskKind::causal && !sdpa.getKeyPadding();
  return false;
}

/// Whether `forward` can be decoded incrementally.
bool qualifies(func::FuncOp forward) {
  FunctionType type = forward.getFunctionType();
  if (type.getNumInputs() != 1 || type.getNumResults() != 1)
    return false;
  auto tokens = dyn_cast<RankedTensorType>(type.getInput(0));
  auto logits = dyn_cast<RankedTensorType>(type.getResult(0));
  if (!tokens || tokens.getRank() != 2 ||
      !tokens.getElementType().isInteger(32) || !logits ||
      logits.getRank() != 3)
    return false;
  llvm::DenseSet<Value> dependent = {forward.getArgument(0)};
  bool hasAttention = false;
  WalkResult result = forward.walk([&](Operation *op) {
    if (isa<func::ReturnOp>(op) ||
        !llvm::any_of(op->getOperands(),
                      [&](Value v) { return dependent.contains(v); }))
      return WalkResult::advance();
    if (!isPositionwise(op, dependent))
      return WalkResult::interrupt();
    hasAttention |= isa<SdpaOp>(op);
    for (Value r : op->getResults())
      dependent.insert(r);
    return WalkResult::advance();
  });
  return !result.wasInterrupted() && hasAttention;
}

/// Re-infers the result types of `func`'s ops after an argument became more
/// static, so every value carries what is known of it (decode_step's one
/// token per sequence) and the lowering sees consistent types.
void refineResultTypes(func::FuncOp func) {
  func.walk([](InferTypeOpInterface op) {
    SmallVector<Type> types;
    Operation *raw = op.getOperation();
    if (failed(op.inferReturnTypes(raw->getContext(), raw->getLoc(),
                                   raw->getOperands(),
                                   raw->getRawDictionaryAttrs(),
                                   raw->getPropertiesStorage(),
                                   raw->getRegions(), types)))
      return;
    for (auto [result, type] : llvm::zip(raw->getResults(), types))
      result.setType(type);
  });
  auto ret = cast<func::ReturnOp>(func.front().getTerminator());
  func.setType(FunctionType::get(func.getContext(), func.getArgumentTypes(),
                                 ret.getOperandTypes()));
}

//===----------------------------------------------------------------------===//
// Encoder-decoder models
//===----------------------------------------------------------------------===//

/// The values of `decode` that depend on its first argument, the target
/// tokens; fails unless each op using one is incremental in the target:
/// position-wise, causal self-attention over the target, or attention from
/// the target to keys, values and key padding that do not depend on it
/// (cross-attention). `hasCross` tells whether there is one of the latter.
FailureOr<llvm::DenseSet<Value>> targetDependent(func::FuncOp decode,
                                                 bool *hasCross = nullptr) {
  llvm::DenseSet<Value> dependent = {decode.getArgument(0)};
  bool cross = false;
  WalkResult result = decode.walk([&](Operation *op) {
    if (isa<func::ReturnOp>(op) ||
        !llvm::any_of(op->getOperands(),
                      [&](Value v) { return dependent.contains(v); }))
      return WalkResult::advance();
    if (auto sdpa = dyn_cast<SdpaOp>(op)) {
      bool key = dependent.contains(sdpa.getKey());
      bool value = dependent.contains(sdpa.getValue());
      bool padding = sdpa.getKeyPadding() &&
                     dependent.contains(sdpa.getKeyPadding());
      bool self = key && value && !padding &&
                  sdpa.getMask() == MaskKind::causal &&
                  !sdpa.getKeyPadding();
      bool fromTarget = !key && !value && !padding &&
                        sdpa.getMask() == MaskKind::none;
      if (!self && !fromTarget)
        return WalkResult::interrupt();
      cross |= fromTarget;
    } else if (!isPositionwise(op, dependent)) {
      return WalkResult::interrupt();
    }
    for (Value r : op->getResults())
      dependent.insert(r);
    return WalkResult::advance();
  });
  if (result.wasInterrupted())
    return failure();
  if (hasCross)
    *hasCross = cross;
  return dependent;
}

/// Whether `decode` is `decode(tgt: i32[B, T], memory..., ...) -> [B, T, V]`
/// with attention from the target to `memory` and only ops incremental in
/// the target.
bool qualifiesDecoder(func::FuncOp decode) {
  FunctionType type = decode.getFunctionType();
  if (type.getNumInputs() < 2 || type.getNumResults() != 1)
    return false;
  auto tokens = dyn_cast<RankedTensorType>(type.getInput(0));
  auto logits = dyn_cast<RankedTensorType>(type.getResult(0));
  if (!tokens || tokens.getRank() != 2 ||
      !tokens.getElementType().isInteger(32) || !logits ||
      logits.getRank() != 3)
    return false;
  bool hasCross = false;
  return succeeded(targetDependent(decode, &hasCross)) && hasCross;
}

/// Erases the ops of `func` whose results are unused and that only compute
/// (dropout included: it is the identity outside training entry points).
void eraseDeadOps(func::FuncOp func) {
  bool changed = true;
  while (changed) {
    changed = false;
    SmallVector<Operation *> dead;
    func.walk([&](Operation *op) {
      if (op->getNumResults() && op->use_empty() &&
          (isOpTriviallyDead(op) || isa<DropoutOp>(op)))
        dead.push_back(op);
    });
    for (Operation *op : llvm::reverse(dead))
      op->erase();
    changed = !dead.empty();
  }
}

/// Rewrites `func`, a copy of `decode`, into `decode_prefill` (`step`
/// false) or `decode_step` (`step` true). Both number the target's
/// positions from the cache length and append the self-attention keys and
/// values to their slots. In `decode_prefill` each cross-attention's keys
/// and values, and each distinct key padding (as 0/1 floats, `[B, 1, S,
/// 1]`), are appended to memory slots; `decode_step` reads them back from
/// the same slots instead. The slots are numbered in program order, the
/// same in both.
void makeIncrementalDecode(func::FuncOp func, bool step) {
  llvm::DenseSet<Value> dependent = *targetDependent(func);
  OpBuilder b(func.getContext());
  b.setInsertionPointToStart(&func.front());
  Value length = KVCacheLengthOp::create(b, func.getLoc(), b.getIndexType());
  func.walk([&](Operation *op) {
    if (!llvm::any_of(op->getResults(),
                      [&](Value v) { return dependent.contains(v); }))
      return;
    if (auto positions = dyn_cast<PositionsOp>(op))
      positions.getStartMutable().assign(length);
    else if (auto table = dyn_cast<SinusoidalOp>(op))
      table.getStartMutable().assign(length);
  });

  SmallVector<SdpaOp> attentions;
  func.walk([&](SdpaOp sdpa) { attentions.push_back(sdpa); });
  auto memory = b.getNamedAttr(entry::kKVMemoryAttr, b.getUnitAttr());
  llvm::DenseMap<Value, Value> cachedPadding;
  int64_t slot = 0;
  for (SdpaOp sdpa : attentions) {
    Location loc = sdpa.getLoc();
    b.setInsertionPoint(sdpa);
    if (dependent.contains(sdpa.getKey())) {
      auto append = KVCacheAppendOp::create(b, loc, sdpa.getKey(),
                                            sdpa.getValue(), slot++);
      sdpa.getKeyMutable().assign(append.getKeys());
      sdpa.getValueMutable().assign(append.getValues());
      continue;
    }
    Type keys = sdpa.getKey().getType(), values = sdpa.getValue().getType();
    if (step) {
      auto read = KVCacheReadOp::create(b, loc, keys, values, slot++);
      read->setAttr(memory.getName(), memory.getValue());
      sdpa.getKeyMutable().assign(read.getKeys());
      sdpa.getValueMutable().assign(read.getValues());
    } else {
      auto append = KVCacheAppendOp::create(b, loc, keys, values, sdpa.getKey(),
                                            sdpa.getValue(), slot++);
      append->setAttr(memory.getName(), memory.getValue());
      sdpa.getKeyMutable().assign(append.getKeys());
      sdpa.getValueMutable().assign(append.getValues());
    }
    Value padding = sdpa.getKeyPadding();
    if (!padding)
      continue;
    auto [it, first] = cachedPadding.try_emplace(padding, Value());
    if (first) {
      // [B, S] booleans as [B, 1, S, 1] floats: a slot of one head of size 1.
      auto mask = cast<RankedTensorType>(padding.getType());
      Type f32 = b.getF32Type();
      auto asFloats = RankedTensorType::get(
          {mask.getDimSize(0), 1, mask.getDimSize(1), 1}, f32);
      if (step) {
        auto read = KVCacheReadOp::create(b, loc, asFloats, asFloats, slot++);
        read->setAttr(memory.getName(), memory.getValue());
        SmallVector<Value> sizes;
        for (int64_t axis : {0, 2})
          if (asFloats.isDynamicDim(axis))
            sizes.push_back(DimOp::create(b, loc, read.getKeys(), axis));
        Value flat = ReshapeOp::create(
            b, loc, RankedTensorType::get(mask.getShape(), f32),
            read.getKeys(), sizes);
        Value half = arith::ConstantOp::create(
            b, loc,
            DenseElementsAttr::get(RankedTensorType::get({}, f32), 0.5f));
        it->second = CompareOp::create(b, loc, mask, CompareKind::gt, flat,
                                       half);
      } else {
        Value floats = CastOp::create(
            b, loc, RankedTensorType::get(mask.getShape(), f32), padding);
        SmallVector<Value> sizes;
        for (int64_t axis : {0, 1})
          if (mask.isDynamicDim(axis))
            sizes.push_back(DimOp::create(b, loc, padding, axis));
        Value reshaped = ReshapeOp::create(b, loc, asFloats, floats, sizes);
        auto append = KVCacheAppendOp::create(b, loc, asFloats, asFloats,
                                              reshaped, reshaped, slot++);
        append->setAttr(memory.getName(), memory.getValue());
        it->second = padding;
      }
    }
    sdpa.getKeyPaddingMutable().assign(it->second);
  }

  // Only the last position's logits: [B, T, V] -> [B, V].
  auto ret = cast<func::ReturnOp>(func.front().getTerminator());
  b.setInsertionPoint(ret);
  Value last = TakeOp::create(b, ret.getLoc(), ret.getOperand(0), 1, -1);
  ret.getOperandsMutable().assign(last);
  func.setType(b.getFunctionType(func.getArgumentTypes(), last.getType()));
}

/// Gives `func`'s first argument (the tokens) one position per sequence.
void takeOneToken(func::FuncOp func) {
  OpBuilder b(func.getContext());
  auto tokens = cast<RankedTensorType>(func.getArgument(0).getType());
  auto oneToken = RankedTensorType::get({tokens.getDimSize(0), 1},
                                        tokens.getElementType());
  func.getArgument(0).setType(oneToken);
  SmallVector<Type> inputs(func.getArgumentTypes());
  inputs[0] = oneToken;
  func.setType(b.getFunctionType(inputs, func.getResultTypes()));
  if (auto dims = func.getArgAttrOfType<ArrayAttr>(0, "attn.dims"))
    func.setArgAttr(0, "attn.dims",
                    b.getArrayAttr({dims[0], b.getStringAttr("")}));
  refineResultTypes(func);
}

/// Adds `decode_prefill` and `decode_step` for an encoder-decoder model;
/// leaves the module unchanged when `decode` does not qualify, or when
/// `decode_step` would read more than the target tokens (something other
/// than the cached keys, values and key padding needs `memory`).
void deriveEncoderDecoder(ModuleOp module) {
  auto encode = module.lookupSymbol<func::FuncOp>(entry::kEncode);
  auto decode = module.lookupSymbol<func::FuncOp>(entry::kDecode);
  if (!encode || !decode || decode.isExternal() ||
      module.lookupSymbol(entry::kDecodePrefill) ||
      module.lookupSymbol(entry::kDecodeStep) || !qualifiesDecoder(decode))
    return;

  func::FuncOp prefill = decode.clone();
  prefill.setName(entry::kDecodePrefill);
  makeIncrementalDecode(prefill, /*step=*/false);

  func::FuncOp step = decode.clone();
  step.setName(entry::kDecodeStep);
  makeIncrementalDecode(step, /*step=*/true);
  takeOneToken(step);
  eraseDeadOps(step);
  llvm::BitVector unused(step.getNumArguments());
  for (unsigned i = 1; i < step.getNumArguments(); ++i)
    unused[i] = step.getArgument(i).use_empty();
  if (unused.count() + 1 != step.getNumArguments()) {
    prefill.erase();
    step.erase();
    return;
  }
  (void)step.eraseArguments(unused);
  module.push_back(prefill);
  module.push_back(step);
}

struct AttnIncrementalDecodingPass
    : impl::AttnIncrementalDecodingBase<AttnIncrementalDecodingPass> {
  void runOnOperation() override {
    deriveDecoderOnly(getOperation());
    deriveEncoderDecoder(getOperation());
  }

  void deriveDecoderOnly(ModuleOp module) {
    auto forward = module.lookupSymbol<func::FuncOp>(entry::kForward);
    if (!forward || forward.isExternal() ||
        module.lookupSymbol(entry::kPrefill) ||
        module.lookupSymbol(entry::kDecodeStep) ||
        !qualifies(forward))
      return;

    OpBuilder b(&getContext());
    func::FuncOp prefill = forward.clone();
    prefill.setName(entry::kPrefill);
    module.push_back(prefill);
    b.setInsertionPointToStart(&prefill.front());
    Value length = KVCacheLengthOp::create(b, prefill.getLoc(), b.getIndexType());

    prefill.walk([&](Operation *op) {
      if (auto positions = dyn_cast<PositionsOp>(op))
        positions.getStartMutable().assign(length);
      else if (auto table = dyn_cast<SinusoidalOp>(op))
        table.getStartMutable().assign(length);
    });
    int64_t slot = 0;
    prefill.walk([&](SdpaOp sdpa) {
      b.setInsertionPoint(sdpa);
      auto append = KVCacheAppendOp::create(b, sdpa.getLoc(), sdpa.getKey(),
                                            sdpa.getValue(), slot++);
      sdpa.getKeyMutable().assign(append.getKeys());
      sdpa.getValueMutable().assign(append.getValues());
    });

    // Only the last position's logits: [B, T, V] -> [B, V].
    auto ret = cast<func::ReturnOp>(prefill.front().getTerminator());
    b.setInsertionPoint(ret);
    Value last = TakeOp::create(b, ret.getLoc(), ret.getOperand(0), 1, -1);
    ret.getOperandsMutable().assign(last);
    prefill.setType(b.getFunctionType(prefill.getArgumentTypes(),
                                      last.getType()));

    // decode_step: the same on one new token per sequence.
    func::FuncOp step = prefill.clone();
    step.setName(entry::kDecodeStep);
    module.push_back(step);
    takeOneToken(step);
  }
};

} // namespace
} // namespace attn
