//===- IncrementalDecoding.cpp - prefill and decode_step from forward -----===//
//
// Derives the key/value-cached entry points of a causal decoder: a copy of
// `forward` that appends each attention's keys and values to a cache slot
// and attends over everything the slot holds, numbers positions from the
// cache's length, and returns only the last position's logits. Generating n
// tokens then costs n layer applications instead of n^2.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
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
  if (isa<NegOp, ReluOp, GeluOp, GeluTanhOp, SiluOp, TanhOp, SigmoidOp, ExpOp,
          LogOp, SqrtOp, AddOp, SubOp, MulOp, DivOp, CompareOp, SelectOp,
          CastOp, DropoutOp, GatherOp, LinearOp, LayerNormOp, RmsNormOp,
          SplitHeadsOp, MergeHeadsOp, DimOp, ReshapeOp, PositionsOp,
          SinusoidalOp>(op))
    return true;
  if (auto slice = dyn_cast<SliceOp>(op))
    return lastAxis(slice.getAxis());
  if (auto softmax = dyn_cast<SoftmaxOp>(op))
    return lastAxis(softmax.getAxis());
  if (auto logSoftmax = dyn_cast<LogSoftmaxOp>(op))
    return lastAxis(logSoftmax.getAxis());
  if (auto reduce = dyn_cast<ReduceOp>(op))
    return lastAxis(reduce.getAxis()) && !reduce.getMask();
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

struct AttnIncrementalDecodingPass
    : impl::AttnIncrementalDecodingBase<AttnIncrementalDecodingPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward || forward.isExternal() ||
        module.lookupSymbol("prefill") || module.lookupSymbol("decode_step") ||
        !qualifies(forward))
      return;

    OpBuilder b(&getContext());
    func::FuncOp prefill = forward.clone();
    prefill.setName("prefill");
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
    step.setName("decode_step");
    module.push_back(step);
    auto tokens = cast<RankedTensorType>(step.getArgument(0).getType());
    auto oneToken = RankedTensorType::get({tokens.getDimSize(0), 1},
                                          tokens.getElementType());
    step.getArgument(0).setType(oneToken);
    step.setType(b.getFunctionType(oneToken, step.getResultTypes()));
    if (auto dims = step.getArgAttrOfType<ArrayAttr>(0, "attn.dims"))
      step.setArgAttr(0, "attn.dims",
                      b.getArrayAttr({dims[0], b.getStringAttr("")}));
    refineResultTypes(step);
  }
};

} // namespace
} // namespace attn
