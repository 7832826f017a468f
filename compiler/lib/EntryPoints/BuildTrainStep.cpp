//===- BuildTrainStep.cpp - The optimizer step entry point ----------------===//
//
// `train_step`: a call of the gradient entry point attn-autodiff derived,
// then clipping by the global norm of the gradients and the Adam update,
// with the run-time hyperparameters laid out as abi.h's attn_hyper_index.
//
//===----------------------------------------------------------------------===//

#include "attn/EntryPoints/Passes.h"

#include "attn/Dialect/Transforms/EntryPoints.h"

#include "attn/abi.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNBUILDTRAINSTEP
#include "attn/EntryPoints/Passes.h.inc"

namespace {

RankedTensorType scalarF32(MLIRContext *context) {
  return RankedTensorType::get({}, Float32Type::get(context));
}

/// What one Adam update of train_step covers: one parameter, or (no name)
/// the whole flat buffers of every parameter.
struct UpdateTarget {
  StringRef name;
  RankedTensorType type;
  Location loc;

  Value read(OpBuilder &b, ParamBuffer buffer) const {
    if (name.empty())
      return GetParamBufferOp::create(b, loc, type, buffer);
    return GetParamOp::create(b, loc, type, name, buffer);
  }
  void write(OpBuilder &b, ParamBuffer buffer, Value value) const {
    if (name.empty())
      SetParamBufferOp::create(b, loc, buffer, value);
    else
      SetParamOp::create(b, loc, name, buffer, value);
  }
};

/// The updates of train_step: one over the flat buffers when every
/// parameter is f32 (the buffers are f32, the elements between parameters
/// zeros, which the norm and Adam leave zero), else one per parameter: a
/// loop and a norm per parameter would grow the object code with the
/// number of parameters.
SmallVector<UpdateTarget>
updateTargets(ModuleOp module, ArrayRef<ParamOp> params, Location loc) {
  SmallVector<UpdateTarget> targets;
  bool allF32 = llvm::all_of(params, [](ParamOp param) {
    return param.getTensorType().getElementType().isF32();
  });
  if (allF32 && !params.empty()) {
    int64_t size;
    computeParamLayout(module, size);
    targets.push_back(
        {"",
         RankedTensorType::get({size}, Float32Type::get(module.getContext())),
         loc});
    return targets;
  }
  for (ParamOp param : params)
    targets.push_back(
        {param.getSymName(), param.getTensorType(), param.getLoc()});
  return targets;
}

/// The factor the gradients are scaled by, as
/// torch.nn.utils.clip_grad_norm_: min(1, clip / (norm + 1e-6)), and 1 when
/// clipping is off (clip = 0).
Value clipScale(OpBuilder &b, Location loc, Value norm, Value clip) {
  RankedTensorType f32 = scalarF32(b.getContext());
  Value zero = createSplat(b, loc, f32, 0.0);
  Value one = createSplat(b, loc, f32, 1.0);
  Value ratio = DivOp::create(
      b, loc, clip,
      AddOp::create(b, loc, norm, createSplat(b, loc, f32, 1e-6)));
  Value below = CompareOp::create(b, loc, CompareKind::lt, ratio, one);
  Value clamped = SelectOp::create(b, loc, below, ratio, one);
  Value clipping = CompareOp::create(b, loc, CompareKind::gt, clip, zero);
  return SelectOp::create(b, loc, clipping, clamped, one);
}

/// `train_step`: a call of `grad` (which stores the gradients), then
/// clipping by the global norm of the stored gradients and the Adam step.
/// Calling rather than copying the gradient entry keeps one copy of the
/// forward and reverse passes in the object (half of the compile time of a
/// training model); attn-bind-params and attn-compose-entry-calls carry the
/// call through to the C interfaces.
void buildTrainStep(ModuleOp module, TrainOp train, func::FuncOp grad,
                    ArrayRef<ParamOp> params) {
  MLIRContext *context = module.getContext();
  RankedTensorType f32 = scalarF32(context);
  auto hyperType =
      RankedTensorType::get({ATTN_HYPER_COUNT}, Float32Type::get(context));
  auto seedType = RankedTensorType::get({}, IntegerType::get(context, 64));
  // The gradient's arguments: the loss's, the seed, and (attn-autodiff's)
  // the dropout row, which train_step takes and passes on (entry points
  // call each other with their own arguments only).
  bool hasRow = static_cast<bool>(entry::dropoutRowArgument(grad));
  unsigned numArgs = grad.getNumArguments() - (hasRow ? 2 : 1);
  SmallVector<std::pair<Type, StringRef>> extra = {{hyperType, "attn.hyper"},
                                                  {seedType, "attn.seed"}};
  if (hasRow)
    extra.push_back({seedType, entry::kDropoutRowAttr});
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  func::FuncOp step =
      entry::create(b, grad, numArgs, entry::kTrainStep, extra, {f32, f32});
  Block &block = step.getBody().front();
  b.setInsertionPointToEnd(&block);
  SmallVector<Value> callArgs(block.getArguments().take_front(numArgs));
  callArgs.push_back(block.getArgument(numArgs + 1));
  if (hasRow)
    callArgs.push_back(block.getArgument(numArgs + 2));
  Value loss =
      func::CallOp::create(b, grad.getLoc(), grad, callArgs).getResult(0);
  Location loc = train.getLoc();
  SmallVector<UpdateTarget> targets = updateTargets(module, params, loc);
  SmallVector<Value> grads;
  for (const UpdateTarget &target : targets)
    grads.push_back(target.read(b, ParamBuffer::grad));

  Value hyperArg = block.getArgument(numArgs);
  auto hyper = [&](attn_hyper_index index) -> Value {
    return TakeOp::create(b, loc, hyperArg, 0, static_cast<int64_t>(index));
  };
  Value norm = GlobalNormOp::create(b, loc, grads);
  Value scale = clipScale(b, loc, norm, hyper(ATTN_HYPER_CLIP_NORM));

  Value lr = hyper(ATTN_HYPER_LR), t = hyper(ATTN_HYPER_STEP);
  Value beta1 = hyper(ATTN_HYPER_BETA1), beta2 = hyper(ATTN_HYPER_BETA2);
  Value eps = hyper(ATTN_HYPER_EPS);
  Value weightDecay = hyper(ATTN_HYPER_WEIGHT_DECAY);
  bool decoupled = train.getOptimizer() == OptimizerKind::adamw;
  for (auto [target, gradient] : llvm::zip(targets, grads)) {
    Value targetScale = scale;
    Type element = target.type.getElementType();
    if (element != f32.getElementType())
      targetScale = CastOp::create(b, target.loc,
                                   RankedTensorType::get({}, element), scale);
    Value clipped = MulOp::create(b, target.loc, gradient, targetScale);
    // Every read of a buffer precedes the write of that buffer.
    Value value = target.read(b, ParamBuffer::value);
    Value firstMoment = target.read(b, ParamBuffer::first_moment);
    Value secondMoment = target.read(b, ParamBuffer::second_moment);
    auto update = AdamUpdateOp::create(b, target.loc, value, clipped,
                                       firstMoment, secondMoment, lr, t, beta1,
                                       beta2, eps, weightDecay, decoupled);
    target.write(b, ParamBuffer::value, update.getNewParam());
    target.write(b, ParamBuffer::first_moment, update.getNewFirstMoment());
    target.write(b, ParamBuffer::second_moment, update.getNewSecondMoment());
  }
  func::ReturnOp::create(b, grad.getLoc(), ValueRange{loss, norm});
  entry::eraseDeadOps(step);
}

struct AttnBuildTrainStepPass
    : impl::AttnBuildTrainStepBase<AttnBuildTrainStepPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto trains = llvm::to_vector(module.getOps<TrainOp>());
    if (trains.empty() || module.lookupSymbol(entry::kTrainStep))
      return;
    TrainOp train = trains.front();
    auto grad =
        module.lookupSymbol<func::FuncOp>(entry::gradName(train.getLoss()));
    if (!grad || grad.isExternal())
      return;
    buildTrainStep(module, train, grad,
                   llvm::to_vector(module.getOps<ParamOp>()));
  }
};

} // namespace
} // namespace attn
