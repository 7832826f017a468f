//===- OpEvaluation.cpp - The reference value of each op ------------------===//
//
// Computes one op's results from its operands with the kernels of Kernels.h,
// one function per family of ops. Every result is checked against its IR
// type, so a kernel and the IR never disagree silently.
//
//===----------------------------------------------------------------------===//

#include "attn/Reference/Evaluator.h"

#include "EvaluatorInternals.h"

#include "attn/Dialect/IR/AttnOps.h"
#include "attn/Dialect/Transforms/EntryPoints.h"
#include "attn/Reference/Kernels.h"
#include "attn/abi.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace attn;
using namespace attn::reference;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// A diagnostic at `op` that names it.
static InFlightDiagnostic opError(Operation *op) {
  return emitError(op->getLoc()) << "'" << op->getName() << "' ";
}

static double toDouble(APFloat value) {
  bool losesInfo = false;
  value.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven,
                &losesInfo);
  return value.convertToDouble();
}

/// Stores `result` as the value of `value`, or reports the kernel's error.
static LogicalResult store(Operation *op, Evaluator::Frame &frame, Value value,
                           llvm::Expected<Tensor> result) {
  if (!result) {
    opError(op) << llvm::toString(result.takeError());
    return failure();
  }
  if (!matchesType(*result, value.getType())) {
    opError(op) << "computed " << result->describe() << " for a result of type "
                << typeString(value.getType());
    return failure();
  }
  frame.set(value, std::move(*result));
  return success();
}

/// Checks what NumPy would allow but the dialect does not: a dynamic size
/// that is 1 at run time stretching to another operand's size. The dialect
/// takes two dynamic sizes to be equal, so the compiled code never
/// broadcasts them. Only the dimensions before the last `skipTrailing` are
/// broadcast (the batch dimensions of a matmul).
static LogicalResult checkDynamicBroadcast(Operation *op, ValueRange operands,
                                           const Evaluator::Frame &frame,
                                           ArrayRef<int64_t> resultShape,
                                           unsigned skipTrailing) {
  ArrayRef<int64_t> result = resultShape.drop_back(skipTrailing);
  for (auto [index, operand] : llvm::enumerate(operands)) {
    auto type = cast<RankedTensorType>(operand.getType());
    ArrayRef<int64_t> staticShape = type.getShape().drop_back(skipTrailing);
    ArrayRef<int64_t> shape =
        frame.get(operand).getShape().drop_back(skipTrailing);
    for (size_t i = 1; i <= shape.size(); ++i) {
      int64_t size = shape[shape.size() - i];
      int64_t target = result[result.size() - i];
      if (!ShapedType::isDynamic(staticShape[staticShape.size() - i]) ||
          size == target)
        continue;
      opError(op) << "operand #" << index << " " << typeString(type)
                  << " has a dynamic size of " << size
                  << " where the other operands have " << target
                  << ": dynamic sizes are taken to be equal, not broadcast";
      return failure();
    }
  }
  return success();
}

static std::optional<UnaryFn> getActivation(Activation activation) {
  switch (activation) {
  case Activation::none:
    return UnaryFn::None;
  case Activation::relu:
    return UnaryFn::Relu;
  case Activation::gelu:
    return UnaryFn::Gelu;
  case Activation::gelu_tanh:
    return UnaryFn::GeluTanh;
  case Activation::silu:
    return UnaryFn::Silu;
  case Activation::tanh:
    return UnaryFn::Tanh;
  case Activation::sigmoid:
    return UnaryFn::Sigmoid;
  }
  return std::nullopt;
}

static std::optional<UnaryFn> getUnaryFn(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<UnaryFn>>(op)
      .Case([](NegOp) { return UnaryFn::Neg; })
      .Case([](ReluOp) { return UnaryFn::Relu; })
      .Case([](GeluOp) { return UnaryFn::Gelu; })
      .Case([](GeluTanhOp) { return UnaryFn::GeluTanh; })
      .Case([](SiluOp) { return UnaryFn::Silu; })
      .Case([](TanhOp) { return UnaryFn::Tanh; })
      .Case([](SigmoidOp) { return UnaryFn::Sigmoid; })
      .Case([](ExpOp) { return UnaryFn::Exp; })
      .Case([](LogOp) { return UnaryFn::Log; })
      .Case([](SqrtOp) { return UnaryFn::Sqrt; })
      .Default([](Operation *) { return std::nullopt; });
}

static std::optional<BinaryFn> getBinaryFn(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<BinaryFn>>(op)
      .Case([](AddOp) { return BinaryFn::Add; })
      .Case([](SubOp) { return BinaryFn::Sub; })
      .Case([](MulOp) { return BinaryFn::Mul; })
      .Case([](DivOp) { return BinaryFn::Div; })
      .Default([](Operation *) { return std::nullopt; });
}

static CompareFn getCompareFn(CompareKind kind) {
  switch (kind) {
  case CompareKind::eq:
    return CompareFn::Eq;
  case CompareKind::ne:
    return CompareFn::Ne;
  case CompareKind::lt:
    return CompareFn::Lt;
  case CompareKind::le:
    return CompareFn::Le;
  case CompareKind::gt:
    return CompareFn::Gt;
  case CompareKind::ge:
    return CompareFn::Ge;
  }
  llvm_unreachable("unknown comparison");
}

static ReduceFn getReduceFn(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::sum:
    return ReduceFn::Sum;
  case ReduceKind::mean:
    return ReduceFn::Mean;
  case ReduceKind::max:
    return ReduceFn::Max;
  }
  llvm_unreachable("unknown reduction");
}

/// The result shape of an op whose dynamic sizes are index operands, one per
/// dynamic dimension in order.
static SmallVector<int64_t> resolveShape(RankedTensorType type,
                                         ValueRange sizes,
                                         const Evaluator::Frame &frame) {
  SmallVector<int64_t> shape(type.getShape());
  auto next = sizes.begin();
  for (int64_t &size : shape)
    if (ShapedType::isDynamic(size) && next != sizes.end())
      size = static_cast<int64_t>(frame.get(*next++)[0]);
  return shape;
}

/// The tensor of an arith.constant, or nothing for an attribute the
/// reference does not read.
static std::optional<Tensor> constantTensor(Attribute value) {
  if (auto integer = dyn_cast<IntegerAttr>(value);
      integer && isa<IndexType>(integer.getType()))
    return Tensor::scalar(DType::Index, static_cast<double>(integer.getInt()));
  auto dense = dyn_cast<DenseElementsAttr>(value);
  if (!dense)
    return std::nullopt;
  std::optional<DType> dtype = getDType(dense.getType());
  if (!dtype)
    return std::nullopt;
  std::vector<double> data;
  data.reserve(dense.getNumElements());
  if (isFloat(*dtype)) {
    for (const APFloat &element : dense.getValues<APFloat>())
      data.push_back(toDouble(element));
  } else {
    for (const APInt &element : dense.getValues<APInt>())
      data.push_back(*dtype == DType::Bool
                         ? (element.getBoolValue() ? 1.0 : 0.0)
                         : static_cast<double>(element.getSExtValue()));
  }
  return Tensor(*dtype, dense.getType().getShape(), std::move(data));
}

static AttentionOptions attentionOptions(MaskKind mask,
                                         std::optional<APFloat> scale,
                                         const Tensor *keyPadding) {
  AttentionOptions options;
  options.causal = mask == MaskKind::causal;
  if (scale)
    options.scale = toDouble(*scale);
  options.keyPadding = keyPadding;
  return options;
}

static CrossEntropyOptions crossEntropyOptions(std::optional<uint64_t> ignore,
                                               APFloat smoothing) {
  CrossEntropyOptions options;
  if (ignore)
    options.ignoreIndex = static_cast<int64_t>(*ignore);
  options.labelSmoothing = toDouble(smoothing);
  return options;
}

//===----------------------------------------------------------------------===//
// Evaluating one op
//===----------------------------------------------------------------------===//

namespace {
/// The op being evaluated and the frame its operands are read from and its
/// results stored in.
struct OpEval {
  Operation *op;
  Evaluator::Frame &frame;

  const Tensor &in(Value value) const { return frame.get(value); }
  const Tensor *optional(Value value) const {
    return frame.getOptional(value);
  }
  /// Stores the value of the op's first result.
  LogicalResult result(llvm::Expected<Tensor> tensor) {
    return store(op->getResult(0), std::move(tensor));
  }
  LogicalResult store(Value value, llvm::Expected<Tensor> tensor) {
    return ::store(op, frame, value, std::move(tensor));
  }
  /// As result, for an op that broadcasts its operands: all but the last
  /// `skipTrailing` dimensions (checkDynamicBroadcast).
  LogicalResult broadcastResult(llvm::Expected<Tensor> tensor,
                                unsigned skipTrailing = 0) {
    if (tensor && failed(checkDynamicBroadcast(op, op->getOperands(), frame,
                                               tensor->getShape(),
                                               skipTrailing)))
      return failure();
    return result(std::move(tensor));
  }
};
} // namespace

/// The index values: constants, index arithmetic and dims.
static std::optional<LogicalResult> evaluateScalarOp(OpEval &e) {
  Operation *op = e.op;
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](arith::ConstantOp constant) -> LogicalResult {
        std::optional<Tensor> value = constantTensor(constant.getValue());
        if (!value)
          return opError(op) << "has a constant the reference cannot read: "
                             << constant.getValue();
        return e.result(std::move(*value));
      })
      .Case<arith::AddIOp, arith::SubIOp, arith::MulIOp>(
          [&](auto arithOp) -> LogicalResult {
            if (!isa<IndexType>(arithOp.getType()))
              return opError(op) << "is supported on index values only";
            double lhs = e.in(arithOp.getLhs())[0],
                   rhs = e.in(arithOp.getRhs())[0];
            double value = isa<arith::AddIOp>(op)   ? lhs + rhs
                           : isa<arith::SubIOp>(op) ? lhs - rhs
                                                    : lhs * rhs;
            return e.result(Tensor::scalar(DType::Index, value));
          })
      .Case([&](DimOp dim) {
        const Tensor &input = e.in(dim.getInput());
        return e.result(Tensor::scalar(
            DType::Index, static_cast<double>(input.getDimSize(
                              static_cast<int64_t>(dim.getAxis())))));
      })
      .Default([](Operation *) { return std::nullopt; });
}

/// The element-wise ops but dropout (evaluateRandomOp).
static std::optional<LogicalResult> evaluateElementwiseOp(OpEval &e) {
  Operation *op = e.op;
  if (std::optional<UnaryFn> fn = getUnaryFn(op))
    return e.result(unary(*fn, e.in(op->getOperand(0))));
  if (std::optional<BinaryFn> fn = getBinaryFn(op))
    return e.broadcastResult(
        binary(*fn, e.in(op->getOperand(0)), e.in(op->getOperand(1))));
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](CompareOp compareOp) {
        return e.broadcastResult(compare(getCompareFn(compareOp.getPredicate()),
                                         e.in(compareOp.getLhs()),
                                         e.in(compareOp.getRhs())));
      })
      .Case([&](SelectOp selectOp) {
        return e.broadcastResult(select(e.in(selectOp.getCondition()),
                                        e.in(selectOp.getTrueValue()),
                                        e.in(selectOp.getFalseValue())));
      })
      .Case([&](CastOp castOp) {
        return e.result(
            castTensor(e.in(castOp.getInput()), *getDType(castOp.getType())));
      })
      .Default([](Operation *) { return std::nullopt; });
}

/// The ops that move elements: reshapes, slices, gathers, positions.
static std::optional<LogicalResult> evaluateShapeOp(OpEval &e) {
  Operation *op = e.op;
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](ReshapeOp reshapeOp) {
        return e.result(reshape(
            e.in(reshapeOp.getInput()),
            resolveShape(cast<RankedTensorType>(reshapeOp.getType()),
                         reshapeOp.getDynamicSizes(), e.frame)));
      })
      .Case([&](TransposeOp transposeOp) {
        return e.result(transpose(e.in(transposeOp.getInput()),
                                  transposeOp.getPermutation()));
      })
      .Case([&](SplitHeadsOp split) {
        return e.result(splitHeads(e.in(split.getInput()),
                                   static_cast<int64_t>(split.getHeads())));
      })
      .Case([&](MergeHeadsOp merge) {
        return e.result(mergeHeads(e.in(merge.getInput())));
      })
      .Case([&](ConcatOp concatOp) {
        SmallVector<Tensor> inputs;
        for (Value input : concatOp.getInputs())
          inputs.push_back(e.in(input));
        return e.result(
            concat(inputs, static_cast<int64_t>(concatOp.getAxis())));
      })
      .Case([&](SliceOp sliceOp) {
        return e.result(slice(e.in(sliceOp.getInput()),
                              static_cast<int64_t>(sliceOp.getAxis()),
                              static_cast<int64_t>(sliceOp.getStart()),
                              static_cast<int64_t>(sliceOp.getEnd())));
      })
      .Case([&](TakeOp takeOp) {
        return e.result(take(e.in(takeOp.getInput()),
                             static_cast<int64_t>(takeOp.getAxis()),
                             static_cast<int64_t>(takeOp.getIndex())));
      })
      .Case([&](BroadcastOp broadcast) {
        return e.result(broadcastTo(
            e.in(broadcast.getInput()),
            resolveShape(cast<RankedTensorType>(broadcast.getType()),
                         broadcast.getDynamicSizes(), e.frame)));
      })
      .Case([&](GatherOp gatherOp) {
        return e.result(
            gather(e.in(gatherOp.getTable()), e.in(gatherOp.getIds())));
      })
      .Case([&](PositionsOp positionsOp) -> LogicalResult {
        auto length = static_cast<int64_t>(e.in(positionsOp.getLength())[0]);
        if (length < 0)
          return opError(op) << "length " << length << " is negative";
        Value start = positionsOp.getStart();
        return e.result(positions(
            length, start ? static_cast<int64_t>(e.in(start)[0]) : 0));
      })
      .Case([&](RopeOp ropeOp) {
        return e.result(
            rope(e.in(ropeOp.getInput()), e.in(ropeOp.getPositions()),
                 ropeOp.getBase().convertToDouble(), ropeOp.getInverse()));
      })
      .Case([&](SinusoidalOp sinusoidalOp) -> LogicalResult {
        auto type = cast<RankedTensorType>(sinusoidalOp.getType());
        auto length =
            static_cast<int64_t>(e.in(sinusoidalOp.getLength())[0]);
        if (length < 0)
          return opError(op) << "length " << length << " is negative";
        Value start = sinusoidalOp.getStart();
        return e.result(
            sinusoidal(length, type.getDimSize(1), *getDType(type),
                       start ? static_cast<int64_t>(e.in(start)[0]) : 0));
      })
      .Default([](Operation *) { return std::nullopt; });
}

/// Contractions, reductions, normalisations and the loss.
static std::optional<LogicalResult> evaluateReductionOp(OpEval &e) {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(e.op)
      .Case([&](MatmulOp matmulOp) {
        return e.broadcastResult(
            matmul(e.in(matmulOp.getLhs()), e.in(matmulOp.getRhs())),
            /*skipTrailing=*/2);
      })
      .Case([&](LinearOp linearOp) {
        return e.result(linear(e.in(linearOp.getInput()),
                               e.in(linearOp.getWeight()),
                               e.optional(linearOp.getBias()),
                               e.optional(linearOp.getResidual()),
                               *getActivation(linearOp.getActivation())));
      })
      .Case([&](ReduceOp reduceOp) {
        return e.result(reduce(getReduceFn(reduceOp.getKind()),
                               e.in(reduceOp.getInput()),
                               static_cast<int64_t>(reduceOp.getAxis()),
                               e.optional(reduceOp.getMask())));
      })
      .Case([&](SoftmaxOp softmaxOp) {
        return e.result(softmax(e.in(softmaxOp.getInput()),
                                static_cast<int64_t>(softmaxOp.getAxis())));
      })
      .Case([&](LogSoftmaxOp logSoftmaxOp) {
        return e.result(
            logSoftmax(e.in(logSoftmaxOp.getInput()),
                       static_cast<int64_t>(logSoftmaxOp.getAxis())));
      })
      .Case([&](LayerNormOp norm) {
        return e.result(layerNorm(e.in(norm.getInput()),
                                  e.in(norm.getWeight()), e.in(norm.getBias()),
                                  e.optional(norm.getResidual()),
                                  toDouble(norm.getEps())));
      })
      .Case([&](RmsNormOp norm) {
        return e.result(rmsNorm(e.in(norm.getInput()), e.in(norm.getWeight()),
                                e.optional(norm.getResidual()),
                                toDouble(norm.getEps())));
      })
      .Case([&](CrossEntropyOp loss) {
        return e.result(
            crossEntropy(e.in(loss.getLogits()), e.in(loss.getTargets()),
                         crossEntropyOptions(loss.getIgnoreIndex(),
                                             loss.getLabelSmoothing())));
      })
      .Default([](Operation *) { return std::nullopt; });
}

/// The gradients of layer_norm and rms_norm.
static std::optional<LogicalResult> evaluateNormGradOp(OpEval &e) {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(e.op)
      .Case([&](LayerNormGradOp grad) -> LogicalResult {
        llvm::Expected<NormGradients> grads = layerNormGrad(
            e.in(grad.getInput()), e.in(grad.getWeight()),
            e.in(grad.getGradOutput()), toDouble(grad.getEps()));
        if (!grads)
          return e.result(grads.takeError());
        if (failed(e.store(grad.getGradInput(), grads->input)) ||
            failed(e.store(grad.getGradWeight(), grads->weight)))
          return failure();
        return e.store(grad.getGradBias(), grads->bias);
      })
      .Case([&](RmsNormGradOp grad) -> LogicalResult {
        llvm::Expected<NormGradients> grads = rmsNormGrad(
            e.in(grad.getInput()), e.in(grad.getWeight()),
            e.in(grad.getGradOutput()), toDouble(grad.getEps()));
        if (!grads)
          return e.result(grads.takeError());
        if (failed(e.store(grad.getGradInput(), grads->input)))
          return failure();
        return e.store(grad.getGradWeight(), grads->weight);
      })
      .Default([](Operation *) { return std::nullopt; });
}

/// attn.adam_update: one optimizer step of one parameter.
static LogicalResult evaluateAdamUpdate(OpEval &e, AdamUpdateOp update) {
  AdamOptions adam;
  adam.beta1 = e.in(update.getBeta1())[0];
  adam.beta2 = e.in(update.getBeta2())[0];
  adam.eps = e.in(update.getEps())[0];
  adam.weightDecay = e.in(update.getWeightDecay())[0];
  adam.decoupled = update.getDecoupled();
  llvm::Expected<AdamState> state =
      adamUpdate(e.in(update.getParam()), e.in(update.getGrad()),
                 e.in(update.getFirstMoment()), e.in(update.getSecondMoment()),
                 e.in(update.getLr())[0],
                 static_cast<int64_t>(e.in(update.getStep())[0]), adam);
  if (!state)
    return e.result(state.takeError());
  if (failed(e.store(update.getNewParam(), state->param)) ||
      failed(e.store(update.getNewFirstMoment(), state->firstMoment)))
    return failure();
  return e.store(update.getNewSecondMoment(), state->secondMoment);
}

/// The gradient ops of training but those of norms and attention, and the
/// optimizer's.
static std::optional<LogicalResult> evaluateTrainingOp(OpEval &e) {
  if (std::optional<LogicalResult> done = evaluateNormGradOp(e))
    return done;
  Operation *op = e.op;
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](ActivationGradOp grad) {
        return e.result(activationGrad(*getActivation(grad.getActivation()),
                                       e.in(grad.getInput()),
                                       e.in(grad.getGradOutput())));
      })
      .Case([&](SoftmaxGradOp grad) {
        return e.result(softmaxGrad(e.in(grad.getOutput()),
                                    e.in(grad.getGradOutput()),
                                    static_cast<int64_t>(grad.getAxis())));
      })
      .Case([&](LogSoftmaxGradOp grad) {
        return e.result(logSoftmaxGrad(e.in(grad.getOutput()),
                                       e.in(grad.getGradOutput()),
                                       static_cast<int64_t>(grad.getAxis())));
      })
      .Case([&](CrossEntropyGradOp grad) {
        return e.result(
            crossEntropyGrad(e.in(grad.getLogits()), e.in(grad.getTargets()),
                             e.in(grad.getGradLoss())[0],
                             crossEntropyOptions(grad.getIgnoreIndex(),
                                                 grad.getLabelSmoothing())));
      })
      .Case([&](GatherGradOp grad) -> LogicalResult {
        auto type = cast<RankedTensorType>(grad.getType());
        if (type.isDynamicDim(0))
          return opError(op) << "needs a static row count in its result "
                             << typeString(type);
        return e.result(gatherGrad(e.in(grad.getIds()),
                                   e.in(grad.getGradOutput()),
                                   type.getDimSize(0)));
      })
      .Case([&](GlobalNormOp norm) {
        SmallVector<Tensor> inputs;
        for (Value input : norm.getInputs())
          inputs.push_back(e.in(input));
        return e.result(globalNorm(inputs));
      })
      .Case([&](AdamUpdateOp update) { return evaluateAdamUpdate(e, update); })
      .Default([](Operation *) { return std::nullopt; });
}

/// The probabilities of one batch row of attention: H * T * S.
static int64_t attentionRowElements(const Tensor &q, const Tensor &k) {
  if (q.getShape().size() != 4 || k.getShape().size() != 4)
    return 0;
  return q.getShape()[1] * q.getShape()[2] * k.getShape()[2];
}

uint64_t Evaluator::seedOf(Value seed, const Frame &frame) const {
  // An attn.seed argument is the exact seed of the options when there is
  // one; anything else is the integer its tensor holds.
  if (auto arg = dyn_cast<BlockArgument>(seed); arg && options.seed) {
    auto function = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    if (function && function.getArgAttr(arg.getArgNumber(), "attn.seed"))
      return *options.seed;
  }
  return static_cast<uint64_t>(static_cast<int64_t>(frame.get(seed)[0]));
}

uint64_t Evaluator::dropoutSeedOf(Operation *op, Value seed,
                                  int64_t rowElements,
                                  const Frame &frame) const {
  uint64_t value = seedOf(seed, frame);
  BlockArgument row =
      entry::dropoutRowArgument(op->getParentOfType<func::FuncOp>());
  if (!row)
    return value;
  auto first = static_cast<uint64_t>(static_cast<int64_t>(frame.get(row)[0]));
  return value + ATTN_DROPOUT_INDEX_STEP * first *
                     static_cast<uint64_t>(rowElements);
}

void Evaluator::setAttentionDropout(AttentionOptions &attention,
                                    Operation *op, int64_t rowElements,
                                    APFloat rate, Value seed,
                                    std::optional<uint64_t> stream,
                                    const Frame &frame) const {
  if (!seed || rate.isZero())
    return;
  attention.dropout = toDouble(rate);
  attention.seed = dropoutSeedOf(op, seed, rowElements, frame);
  attention.stream = stream.value_or(0);
}

std::optional<LogicalResult> Evaluator::evaluateRandomOp(Operation *op,
                                                         Frame &frame) {
  OpEval e{op, frame};
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](DropoutOp dropout) -> LogicalResult {
        if (dropout.getSeed() && !dropout.getRate().isZero()) {
          const Tensor &input = e.in(dropout.getInput());
          // A batch row is everything after the first dim.
          int64_t rowElements =
              getNumElements(input.getShape().drop_front(
                  input.getShape().empty() ? 0 : 1));
          return e.result(reference::dropout(
              input, toDouble(dropout.getRate()),
              dropoutSeedOf(op, dropout.getSeed(), rowElements, frame),
              static_cast<uint64_t>(dropout.getStream().value_or(0))));
        }
        if (options.training && !dropout.getRate().isZero())
          return opError(op) << "draws a random mask in training mode "
                                "without a seed";
        return e.result(e.in(dropout.getInput()));
      })
      .Case([&](SdpaOp sdpaOp) -> LogicalResult {
        if (options.training && !sdpaOp.getSeed() &&
            !sdpaOp.getDropout().isZero())
          return opError(op) << "draws a random dropout mask in training "
                                "mode without a seed";
        AttentionOptions attention =
            attentionOptions(sdpaOp.getMask(), sdpaOp.getScale(),
                             e.optional(sdpaOp.getKeyPadding()));
        const Tensor &q = e.in(sdpaOp.getQuery()), &k = e.in(sdpaOp.getKey()),
                     &v = e.in(sdpaOp.getValue());
        setAttentionDropout(attention, op, attentionRowElements(q, k),
                            sdpaOp.getDropout(), sdpaOp.getSeed(),
                            sdpaOp.getStream(), frame);
        // The output before a result is stored: storing one may move the
        // frame's values, q, k and v included.
        llvm::Expected<Tensor> output = sdpa(q, k, v, attention);
        if (!output)
          return e.store(sdpaOp.getResult(), std::move(output));
        if (Value logsumexp = sdpaOp.getLogsumexp())
          if (failed(e.store(logsumexp, sdpaLogsumexp(q, k, v, attention))))
            return failure();
        return e.store(sdpaOp.getResult(), std::move(output));
      })
      .Case([&](SdpaGradOp grad) -> LogicalResult {
        if (options.training && !grad.getSeed() &&
            !grad.getDropout().isZero())
          return opError(op) << "draws a random dropout mask in training "
                                "mode without a seed";
        AttentionOptions attention =
            attentionOptions(grad.getMask(), grad.getScale(),
                             e.optional(grad.getKeyPadding()));
        setAttentionDropout(
            attention, op,
            attentionRowElements(e.in(grad.getQuery()), e.in(grad.getKey())),
            grad.getDropout(), grad.getSeed(), grad.getStream(), frame);
        // A `logsumexp` operand is not read: the reference recomputes each
        // query's probabilities, so that compiled code given a wrong one
        // differs from it.
        llvm::Expected<SdpaGradients> grads = sdpaGrad(
            e.in(grad.getQuery()), e.in(grad.getKey()), e.in(grad.getValue()),
            e.in(grad.getGradOutput()), attention);
        if (!grads)
          return e.result(grads.takeError());
        if (failed(e.store(grad.getGradQuery(), grads->query)) ||
            failed(e.store(grad.getGradKey(), grads->key)))
          return failure();
        return e.store(grad.getGradValue(), grads->value);
      })
      .Default([](Operation *) { return std::nullopt; });
}

LogicalResult Evaluator::evaluateCall(func::CallOp callOp, Frame &frame,
                                      unsigned depth) {
  Operation *op = callOp;
  auto callee = module.lookupSymbol<func::FuncOp>(callOp.getCalleeAttr());
  if (!callee || callee.isExternal())
    return opError(op) << "calls '" << callOp.getCallee()
                       << "', which has no body";
  SmallVector<Tensor> args;
  for (Value operand : callOp.getOperands())
    args.push_back(frame.get(operand));
  // A called entry point's writes (train_step calls <loss>_grad) are done
  // when the caller reads: the caller's rule is about its own.
  llvm::StringSet<> callerWritten;
  bool entry = callee.isPublic();
  if (entry)
    std::swap(written, callerWritten);
  FailureOr<SmallVector<Tensor>> results = call(callee, args, depth + 1);
  if (entry)
    written = std::move(callerWritten);
  if (failed(results))
    return failure();
  for (auto [value, tensor] : llvm::zip(op->getResults(), *results))
    if (failed(store(op, frame, value, std::move(tensor))))
      return failure();
  return success();
}

LogicalResult Evaluator::readParam(GetParamOp getParam, Frame &frame) {
  Operation *op = getParam;
  OpEval e{op, frame};
  if (wasWritten(getParam.getBuffer(), getParam.getName()))
    return opError(op) << "reads " << stringifyParamBuffer(getParam.getBuffer())
                       << " of '" << getParam.getName()
                       << "' after this call wrote it (a function reads a "
                          "buffer before it writes it)";
  if (getParam.getBuffer() == ParamBuffer::value) {
    auto it = parameters.find(getParam.getName());
    if (it == parameters.end())
      return opError(op) << "parameter '" << getParam.getName()
                         << "' has no value";
    return e.result(it->second);
  }
  FailureOr<Tensor> value =
      getBuffer(getParam.getBuffer(), getParam.getName());
  if (failed(value))
    return failure();
  return e.result(std::move(*value));
}

// The whole-buffer forms: every parameter at its offset in the parameter
// layout, zeros between.

LogicalResult Evaluator::readParamBuffer(GetParamBufferOp getParamBuffer,
                                         Frame &frame) {
  Operation *op = getParamBuffer;
  ParamBuffer kind = getParamBuffer.getBuffer();
  int64_t size;
  SmallVector<ParamSlot> slots = computeParamLayout(module, size);
  Tensor flat(DType::F32, {size});
  for (ParamSlot slot : slots) {
    StringRef name = slot.param.getSymName();
    if (wasWritten(kind, name))
      return opError(op) << "reads "
                         << stringifyParamBuffer(getParamBuffer.getBuffer())
                         << " after this call wrote it (a function reads a "
                            "buffer before it writes it)";
    FailureOr<Tensor> value = getBuffer(kind, name);
    if (failed(value))
      return failure();
    llvm::copy(value->getData(), flat.getData().begin() + slot.offset);
  }
  return OpEval{op, frame}.result(std::move(flat));
}

LogicalResult Evaluator::writeParamBuffer(SetParamBufferOp setParamBuffer,
                                          Frame &frame) {
  Operation *op = setParamBuffer;
  const Tensor &flat = frame.get(setParamBuffer.getValue());
  int64_t size;
  SmallVector<ParamSlot> slots = computeParamLayout(module, size);
  if (flat.getRank() != 1 || flat.getNumElements() != size)
    return opError(op) << "writes " << flat.describe()
                       << " as the parameter buffer of " << size
                       << " elements";
  for (ParamSlot slot : slots) {
    RankedTensorType type = slot.param.getTensorType();
    auto begin = flat.getData().begin() + slot.offset;
    storeParam(setParamBuffer.getBuffer(), slot.param.getSymName(),
               Tensor(*getDType(type), type.getShape(),
                      std::vector<double>(begin,
                                          begin + type.getNumElements())));
  }
  return success();
}

std::optional<LogicalResult> Evaluator::evaluateStateOp(Operation *op,
                                                        Frame &frame,
                                                        unsigned depth) {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](func::ReturnOp ret) {
        for (Value operand : ret.getOperands())
          frame.results.push_back(frame.get(operand));
        return success();
      })
      .Case([&](func::CallOp callOp) {
        return evaluateCall(callOp, frame, depth);
      })
      .Case([&](GetParamOp getParam) { return readParam(getParam, frame); })
      .Case([&](GetParamBufferOp getParamBuffer) {
        return readParamBuffer(getParamBuffer, frame);
      })
      .Case([&](SetParamBufferOp setParamBuffer) {
        return writeParamBuffer(setParamBuffer, frame);
      })
      .Case([&](SetParamOp setParam) -> LogicalResult {
        const Tensor &value = frame.get(setParam.getValue());
        auto type = declared.find(setParam.getName());
        if (type == declared.end() || !matchesType(value, type->second))
          return opError(op) << "writes " << value.describe()
                             << " to parameter '" << setParam.getName()
                             << "'";
        storeParam(setParam.getBuffer(), setParam.getName(), value);
        return success();
      })
      .Case([&](KVCacheAppendOp append) {
        return appendToCache(append, frame);
      })
      .Case([&](KVCacheLengthOp) -> LogicalResult {
        if (!entryCacheLength)
          return opError(op) << "finds cache slots of different lengths";
        return OpEval{op, frame}.result(Tensor::scalar(
            DType::Index, static_cast<double>(*entryCacheLength)));
      })
      .Case([&](KVCacheReadOp read) -> LogicalResult {
        auto it = kvCache.find(static_cast<int64_t>(read.getSlot()));
        if (it == kvCache.end())
          return opError(op) << "reads slot " << read.getSlot()
                             << " of the key/value cache, which is empty";
        if (failed(store(op, frame, read.getKeys(), it->second.first)))
          return failure();
        return store(op, frame, read.getValues(), it->second.second);
      })
      .Default([](Operation *) { return std::nullopt; });
}

LogicalResult Evaluator::appendToCache(KVCacheAppendOp append, Frame &frame) {
  OpEval e{append, frame};
  const Tensor &keys = e.in(append.getNewKeys());
  const Tensor &values = e.in(append.getNewValues());
  auto slot = static_cast<int64_t>(append.getSlot());
  auto it = kvCache.find(slot);
  std::pair<Tensor, Tensor> held{keys, values};
  if (it != kvCache.end()) {
    llvm::Expected<Tensor> allKeys = concat({it->second.first, keys}, 2);
    if (!allKeys)
      return e.result(allKeys.takeError());
    llvm::Expected<Tensor> allValues = concat({it->second.second, values}, 2);
    if (!allValues)
      return e.result(allValues.takeError());
    held = {std::move(*allKeys), std::move(*allValues)};
  }
  kvCache[slot] = held;
  if (failed(e.store(append.getKeys(), held.first)))
    return failure();
  return e.store(append.getValues(), held.second);
}

LogicalResult Evaluator::evaluate(Operation *op, Frame &frame, unsigned depth) {
  // The ops that read or write the evaluator's state: calls, parameters and
  // the key/value cache; those that draw random masks; then the pure ops,
  // one family at a time.
  if (std::optional<LogicalResult> done = evaluateStateOp(op, frame, depth))
    return *done;
  if (std::optional<LogicalResult> done = evaluateRandomOp(op, frame))
    return *done;
  using EvaluateFamily = std::optional<LogicalResult> (*)(OpEval &);
  static constexpr EvaluateFamily kPureFamilies[] = {
      evaluateScalarOp, evaluateElementwiseOp, evaluateShapeOp,
      evaluateReductionOp, evaluateTrainingOp};
  OpEval e{op, frame};
  for (EvaluateFamily evaluateFamily : kPureFamilies)
    if (std::optional<LogicalResult> done = evaluateFamily(e))
      return *done;
  return emitError(op->getLoc())
         << "unsupported op '" << op->getName()
         << "': the reference evaluator does not implement it";
}
