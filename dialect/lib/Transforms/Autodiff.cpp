//===- Autodiff.cpp - Gradient and training-step entry points -------------===//
//
// Reverse-mode differentiation of the loss function named by `attn.train`:
// the loss is inlined into a new function with dropout made active, then the
// adjoints are propagated from the loss back to the parameter reads op by op
// through GradientOpInterface, summing the adjoints of values used more than
// once. `<loss>_grad` stores the gradients; the optimizer step that calls it
// is attn-build-train-step's (compiler/lib/EntryPoints). See
// docs/Autodiff.md.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/Transforms/EntryPoints.h"
#include "attn/Dialect/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNAUTODIFF
#define GEN_PASS_DEF_ATTNAUTODIFFPRIMAL
#include "attn/Dialect/Transforms/Passes.h.inc"

namespace {

/// Calls nest at most this deep when the loss is inlined.
constexpr unsigned kMaxInlineDepth = 64;

RankedTensorType scalarF32(MLIRContext *context) {
  return RankedTensorType::get({}, Float32Type::get(context));
}

/// The function attribute that marks `<loss>_grad` while it holds only the
/// forward half (attn-autodiff-primal's output, attn-autodiff's input).
constexpr StringLiteral kPrimalAttr = "attn.autodiff_primal";

/// Inlines a function body (and the bodies of the functions it calls) at the
/// builder's insertion point.
class Inliner {
public:
  explicit Inliner(ModuleOp module) : module(module) {}

  LogicalResult inlineBody(OpBuilder &b, func::FuncOp callee, ValueRange args,
                           SmallVectorImpl<Value> &results, unsigned depth);

  /// The ops cloned, in order.
  SmallVector<Operation *> cloned;

private:
  ModuleOp module;
};

LogicalResult Inliner::inlineBody(OpBuilder &b, func::FuncOp callee,
                                  ValueRange args,
                                  SmallVectorImpl<Value> &results,
                                  unsigned depth) {
  if (depth > kMaxInlineDepth)
    return callee.emitError()
           << "calls nest deeper than " << kMaxInlineDepth << " in the loss";
  if (!callee.getBody().hasOneBlock())
    return callee.emitError() << "cannot be differentiated: it has "
                              << "control flow";
  IRMapping mapping;
  mapping.map(callee.getArguments(), args);
  for (Operation &op : callee.getBody().front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (Value operand : ret.getOperands())
        results.push_back(mapping.lookup(operand));
      return success();
    }
    if (auto call = dyn_cast<func::CallOp>(op)) {
      auto target = module.lookupSymbol<func::FuncOp>(call.getCalleeAttr());
      if (!target || target.isExternal())
        return call.emitError() << "calls '" << call.getCallee()
                                << "', which has no body to differentiate";
      SmallVector<Value> callArgs, callResults;
      for (Value operand : call.getOperands())
        callArgs.push_back(mapping.lookup(operand));
      if (failed(inlineBody(b, target, callArgs, callResults, depth + 1)))
        return failure();
      mapping.map(call.getResults(), callResults);
      continue;
    }
    if (op.getNumRegions() != 0)
      return op.emitError() << "cannot be differentiated: '" << op.getName()
                            << "' has regions";
    cloned.push_back(b.clone(op, mapping));
  }
  return callee.emitError() << "has no return";
}

/// Gives every dropout and attention dropout of nonzero rate among `ops` the
/// entry point's seed and a stream of its own, numbered in program order.
void seedDropout(OpBuilder &b, ArrayRef<Operation *> ops, Value seed) {
  int64_t stream = 0;
  for (Operation *op : ops) {
    if (auto dropout = dyn_cast<DropoutOp>(op)) {
      if (dropout.getSeed() || dropout.getRate().isZero())
        continue;
      b.setInsertionPoint(dropout);
      auto seeded = DropoutOp::create(
          b, dropout.getLoc(), dropout.getType(), dropout.getInput(), seed,
          dropout.getRateAttr(), b.getI64IntegerAttr(stream++));
      dropout.replaceAllUsesWith(seeded.getResult());
      dropout.erase();
      continue;
    }
    if (auto sdpa = dyn_cast<SdpaOp>(op)) {
      if (sdpa.getSeed() || sdpa.getDropout().isZero())
        continue;
      b.setInsertionPoint(sdpa);
      auto seeded = SdpaOp::create(
          b, sdpa.getLoc(), sdpa->getResultTypes(), sdpa.getQuery(),
          sdpa.getKey(), sdpa.getValue(), sdpa.getKeyPadding(), seed,
          sdpa.getMaskAttr(), sdpa.getScaleAttr(), sdpa.getDropoutAttr(),
          b.getI64IntegerAttr(stream++), sdpa.getReturnLogsumexpAttr());
      sdpa->replaceAllUsesWith(seeded);
      sdpa.erase();
    }
  }
}

/// Splits every `linear` with an activation in `block` into the product and
/// the activation op (and the residual add): the reverse pass then reads the
/// pre-activation `z` the forward computed instead of recomputing the
/// product (LinearOp's rule, which has only the fused result, does that:
/// one more product per feed-forward layer, about a tenth of a GPT's
/// training FLOPs). The code generated for the forward is the same, the
/// element-wise ops fusing again after the product.
void splitActivations(OpBuilder &b, Block &block) {
  for (Operation &op : llvm::make_early_inc_range(block)) {
    auto linear = dyn_cast<LinearOp>(op);
    if (!linear || linear.getActivation() == Activation::none)
      continue;
    b.setInsertionPoint(linear);
    Location loc = linear.getLoc();
    Value z = LinearOp::create(b, loc, linear.getInput(), linear.getWeight(),
                               linear.getBias(), Value(), Activation::none);
    Value y = createActivation(b, loc, linear.getActivation(), z);
    if (Value residual = linear.getResidual())
      y = AddOp::create(b, loc, y, residual);
    linear.replaceAllUsesWith(y);
    linear.erase();
  }
}

RankedTensorType seedType(MLIRContext *context) {
  return RankedTensorType::get({}, IntegerType::get(context, 64));
}

/// Without `attn.train`, the fn `loss` when it is a public function with a
/// body returning one tensor<f32>: gradients need no optimizer, as
/// `loss.backward()` needs none. Null otherwise.
func::FuncOp defaultLoss(ModuleOp module) {
  auto loss = module.lookupSymbol<func::FuncOp>(entry::kLoss);
  if (!loss || loss.isExternal() || !loss.isPublic())
    return func::FuncOp();
  FunctionType type = loss.getFunctionType();
  if (type.getNumResults() != 1 ||
      type.getResult(0) != scalarF32(module.getContext()))
    return func::FuncOp();
  return loss;
}

/// The loss function of the module's `attn.train`, checked; without one,
/// `defaultLoss`; null (and success) when there is none.
FailureOr<func::FuncOp> getLoss(ModuleOp module, TrainOp &train) {
  auto trains = llvm::to_vector(module.getOps<TrainOp>());
  if (trains.empty())
    return defaultLoss(module);
  train = trains.front();
  auto loss = module.lookupSymbol<func::FuncOp>(train.getLossAttr());
  if (!loss || loss.isExternal())
    return train.emitError() << "the loss '" << train.getLoss()
                             << "' is not a function with a body";
  FunctionType type = loss.getFunctionType();
  if (type.getNumResults() != 1 ||
      type.getResult(0) != scalarF32(module.getContext()))
    return loss.emitError() << "the loss '" << loss.getSymName()
                            << "' must return one tensor<f32> to be "
                               "differentiated";
  return loss;
}

/// The fns to differentiate: the loss (getLoss), then each of `names`
/// (attnc --entry <fn>_grad), checked to be a public fn with a body
/// returning one f32 scalar.
FailureOr<SmallVector<func::FuncOp>>
lossesToDifferentiate(ModuleOp module, ArrayRef<std::string> names) {
  TrainOp train;
  FailureOr<func::FuncOp> loss = getLoss(module, train);
  if (failed(loss))
    return failure();
  SmallVector<func::FuncOp> losses;
  if (*loss)
    losses.push_back(*loss);
  for (const std::string &name : names) {
    auto fn = module.lookupSymbol<func::FuncOp>(name);
    if (!fn || fn.isExternal() || !fn.isPublic())
      return module.emitError() << "cannot derive '" << entry::gradName(name)
                                << "': the model has no fn '" << name << "'";
    FunctionType type = fn.getFunctionType();
    if (type.getNumResults() != 1 ||
        type.getResult(0) != scalarF32(module.getContext()))
      return fn.emitError() << "cannot derive '" << entry::gradName(name)
                            << "': fn '" << name
                            << "' must return one f32 scalar to be "
                               "differentiated";
    if (!llvm::is_contained(losses, fn))
      losses.push_back(fn);
  }
  return losses;
}

/// `@<loss>_grad(<loss's arguments>, %seed {attn.seed}, %row
/// {attn.dropout_row}) -> tensor<f32>` holding the loss inlined with every
/// dropout seeded (the row, entry::kDropoutRowAttr, is read where dropout is
/// lowered), marked as a primal:
/// what attn-autodiff differentiates. An existing primal is returned as it
/// is; null when the module defines both training entry points itself
/// (hand-written attn IR keeps its own).
FailureOr<func::FuncOp> getOrCreatePrimal(ModuleOp module,
                                          func::FuncOp loss) {
  std::string name = entry::gradName(loss.getSymName());
  if (auto existing = module.lookupSymbol<func::FuncOp>(name)) {
    if (existing->hasAttr(kPrimalAttr))
      return existing;
    if (module.lookupSymbol<func::FuncOp>(entry::kTrainStep))
      return func::FuncOp();
    return module.emitError() << "the module already defines '" << name
                              << "', which the autodiff pass derives";
  }
  MLIRContext *context = module.getContext();
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  unsigned numArgs = loss.getNumArguments();
  func::FuncOp primal =
      entry::create(b, loss, numArgs, name,
                    {{seedType(context), "attn.seed"},
                     {seedType(context), entry::kDropoutRowAttr}},
                    {scalarF32(context)});
  primal->setAttr(kPrimalAttr, b.getUnitAttr());
  Block &block = primal.getBody().front();
  b.setInsertionPointToEnd(&block);
  Inliner inliner(module);
  SmallVector<Value> results;
  if (failed(inliner.inlineBody(
          b, loss, block.getArguments().take_front(numArgs), results, 0))) {
    primal.erase();
    return failure();
  }
  seedDropout(b, inliner.cloned, block.getArgument(numArgs));
  b.setInsertionPointToEnd(&block);
  func::ReturnOp::create(b, loss.getLoc(), results);
  splitActivations(b, block);
  return primal;
}

/// Appends the reverse pass of a function body: the body's ops are the
/// forward pass and `loss` its scalar result.
class Differentiator {
public:
  explicit Differentiator(ArrayRef<ParamOp> params) : params(params) {}

  /// Builds, at the end of `block`, the adjoints of every parameter read by
  /// the ops of `block`; returns them in declaration order (zeros for one
  /// the loss does not read).
  FailureOr<SmallVector<Value>> run(Block &block, Value loss);

private:
  void accumulate(OpBuilder &b, Location loc, Value value, Value grad);

  ArrayRef<ParamOp> params;
  llvm::DenseMap<Value, Value> adjoints;
};

/// `sum + grad` with the type `type` (the inferred type of the sum may be
/// less static than the value's).
Value accumulateInto(OpBuilder &b, Location loc, Value sum, Value grad,
                     Type type) {
  if (!sum)
    return grad;
  Value added = AddOp::create(b, loc, sum, grad);
  if (added.getType() == type)
    return added;
  SmallVector<Value> sizes;
  auto ranked = cast<RankedTensorType>(type);
  for (int64_t d = 0; d < ranked.getRank(); ++d)
    if (ranked.isDynamicDim(d))
      sizes.push_back(DimOp::create(b, loc, sum, d));
  return ReshapeOp::create(b, loc, type, added, sizes);
}

void Differentiator::accumulate(OpBuilder &b, Location loc, Value value,
                                Value grad) {
  Value &slot = adjoints[value];
  slot = accumulateInto(b, loc, slot, grad, value.getType());
}

FailureOr<SmallVector<Value>> Differentiator::run(Block &block, Value loss) {
  SmallVector<Operation *> forward;
  for (Operation &op : block)
    forward.push_back(&op);
  OpBuilder b = OpBuilder::atBlockEnd(&block);

  // Only values that depend on a parameter get adjoints: the rest (ids,
  // masks, position tables) would only build dead code.
  llvm::DenseSet<Value> active;
  for (Operation *op : forward) {
    bool isActive = false;
    if (auto read = dyn_cast<GetParamOp>(op))
      isActive = read.getBuffer() == ParamBuffer::value;
    else
      isActive = llvm::any_of(op->getOperands(),
                              [&](Value v) { return active.contains(v); });
    if (!isActive)
      continue;
    for (Value result : op->getResults())
      if (isFloatTensor(result))
        active.insert(result);
  }

  llvm::StringMap<Value> paramGrads;
  if (active.contains(loss))
    adjoints[loss] =
        createSplat(b, loss.getLoc(), scalarF32(b.getContext()), 1.0);
  for (Operation *op : llvm::reverse(forward)) {
    SmallVector<Value> resultGrads;
    bool any = false;
    for (Value result : op->getResults()) {
      Value grad = active.contains(result) ? adjoints.lookup(result) : Value();
      any |= static_cast<bool>(grad);
      resultGrads.push_back(grad);
    }
    if (!any)
      continue;
    if (auto read = dyn_cast<GetParamOp>(op)) {
      Value &slot = paramGrads[read.getName()];
      slot =
          accumulateInto(b, op->getLoc(), slot, resultGrads[0], read.getType());
      continue;
    }
    auto rule = dyn_cast<GradientOpInterface>(op);
    if (!rule)
      return op->emitError()
             << "'" << op->getName() << "' has no gradient rule";
    SmallVector<Value> operandGrads;
    if (failed(rule.buildGradient(b, resultGrads, operandGrads)))
      return failure();
    assert(operandGrads.size() == op->getNumOperands() &&
           "a rule returns one adjoint (or null) per operand");
    for (auto [operand, grad] : llvm::zip(op->getOperands(), operandGrads)) {
      if (!grad || !active.contains(operand))
        continue;
      assert(grad.getType() == operand.getType() &&
             "an adjoint has the type of its value");
      accumulate(b, op->getLoc(), operand, grad);
    }
  }

  SmallVector<Value> grads;
  for (ParamOp param : params) {
    Value grad = paramGrads.lookup(param.getSymName());
    grads.push_back(
        grad ? grad
             : createSplat(b, param.getLoc(), param.getTensorType(), 0.0));
  }
  return grads;
}

/// Removes the return of `function` and gives its operands.
SmallVector<Value> takeReturn(func::FuncOp function) {
  Operation *terminator = function.getBody().front().getTerminator();
  SmallVector<Value> results(terminator->getOperands());
  terminator->erase();
  return results;
}

/// Turns the primal into the gradient entry point: its reverse pass and
/// `set_param @p grad` for every parameter.
LogicalResult buildGradEntry(func::FuncOp primal, ArrayRef<ParamOp> params) {
  Value loss = takeReturn(primal).front();
  Block &block = primal.getBody().front();
  FailureOr<SmallVector<Value>> grads = Differentiator(params).run(block, loss);
  if (failed(grads))
    return failure();
  OpBuilder b = OpBuilder::atBlockEnd(&block);
  for (auto [index, grad] : llvm::enumerate(*grads)) {
    ParamOp param = params[index];
    SetParamOp::create(b, param.getLoc(), param.getSymName(), ParamBuffer::grad,
                       grad);
  }
  func::ReturnOp::create(b, primal.getLoc(), loss);
  primal->removeAttr(kPrimalAttr);
  entry::eraseDeadOps(primal);
  return success();
}

struct AttnAutodiffPrimalPass
    : impl::AttnAutodiffPrimalBase<AttnAutodiffPrimalPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<SmallVector<func::FuncOp>> losses =
        lossesToDifferentiate(module, fns);
    if (failed(losses))
      return signalPassFailure();
    for (func::FuncOp loss : *losses)
      if (failed(getOrCreatePrimal(module, loss)))
        return signalPassFailure();
  }
};

struct AttnAutodiffPass : impl::AttnAutodiffBase<AttnAutodiffPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<SmallVector<func::FuncOp>> losses =
        lossesToDifferentiate(module, fns);
    if (failed(losses))
      return signalPassFailure();
    auto params = llvm::to_vector(module.getOps<ParamOp>());
    for (func::FuncOp loss : *losses) {
      FailureOr<func::FuncOp> primal = getOrCreatePrimal(module, loss);
      if (failed(primal))
        return signalPassFailure();
      if (!*primal)
        continue;
      // attn-build-train-step derives train_step from the gradient entry
      // point; one defined beside a derived gradient would not match it.
      if (module.lookupSymbol(entry::kTrainStep)) {
        module.emitError() << "the module already defines '"
                           << entry::kTrainStep
                           << "', which the autodiff pass derives";
        return signalPassFailure();
      }
      if (failed(buildGradEntry(*primal, params)))
        return signalPassFailure();
    }
  }
};

} // namespace
} // namespace attn
