//===- Evaluator.cpp - Executes attn IR directly --------------------------===//
//
// Walks the body of a func.func in order, computing each op's results from
// its operands with the kernels of Kernels.h. Every result is checked against
// its IR type, so a kernel and the IR never disagree silently.
//
//===----------------------------------------------------------------------===//

#include "attn/Reference/Evaluator.h"

#include "attn/Dialect/IR/AttnOps.h"
#include "attn/Reference/Kernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/Twine.h"
#include "llvm/ADT/TypeSwitch.h"

#include <limits>

using namespace mlir;
using namespace attn;
using namespace attn::reference;

/// Deep enough for any model's call chain; it only stops runaway recursion.
static constexpr unsigned kMaxCallDepth = 64;

class Evaluator::Frame {
public:
  const Tensor &get(Value value) const {
    auto it = values.find(value);
    assert(it != values.end() && "operands are evaluated before their users");
    return it->second;
  }
  const Tensor *getOptional(Value value) const {
    return value ? &get(value) : nullptr;
  }
  void set(Value value, Tensor tensor) { values[value] = std::move(tensor); }

  llvm::DenseMap<Value, Tensor> values;
  SmallVector<Tensor> results;
};

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

/// Whether `tensor` is a value of `type`: same element type and rank, and
/// every static size equal.
static bool matchesType(const Tensor &tensor, Type type) {
  std::optional<DType> dtype = getDType(type);
  if (!dtype || *dtype != tensor.getDType())
    return false;
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked)
    return tensor.getRank() == 0 && isa<IndexType>(type);
  if (ranked.getRank() != tensor.getRank())
    return false;
  for (auto [expected, actual] :
       llvm::zip(ranked.getShape(), tensor.getShape()))
    if (!ShapedType::isDynamic(expected) && expected != actual)
      return false;
  return true;
}

static std::string typeString(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "'" << type << "'";
  return text;
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

/// Checks that a symbolic size named in the arguments' attn.dims (`B`, `T`)
/// has one value across all arguments, as the compiled entry points check.
static LogicalResult checkSymbolicDims(func::FuncOp function,
                                       ArrayRef<Tensor> inputs) {
  llvm::StringMap<std::pair<int64_t, unsigned>> sizes;
  for (auto [index, input] : llvm::enumerate(inputs)) {
    auto dims = function.getArgAttrOfType<ArrayAttr>(index, "attn.dims");
    if (!dims || static_cast<int64_t>(dims.size()) != input.getRank())
      continue;
    for (auto [axis, attr] : llvm::enumerate(dims)) {
      auto name = dyn_cast<StringAttr>(attr);
      if (!name || name.getValue().empty())
        continue;
      int64_t size = input.getDimSize(static_cast<int64_t>(axis));
      auto [it, inserted] = sizes.try_emplace(name.getValue(), size,
                                              static_cast<unsigned>(index));
      if (inserted || it->second.first == size)
        continue;
      return emitError(function.getLoc())
             << "size " << name.getValue() << " of '" << function.getSymName()
             << "' is " << it->second.first << " in argument #"
             << it->second.second << " but " << size << " in argument #"
             << index;
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Evaluator
//===----------------------------------------------------------------------===//

Evaluator::Evaluator(ModuleOp module, EvaluatorOptions options)
    : module(module), options(options) {
  for (ParamOp param : module.getOps<ParamOp>()) {
    declared[param.getSymName()] = param.getTensorType();
    declarationOrder.push_back(param.getSymName().str());
  }
}

bool Evaluator::declaresParameter(StringRef name) const {
  return declared.contains(name);
}

/// Checks that `value` fits the declared parameter `name` and gives it the
/// parameter's element type (the values are taken as given: a double value
/// stays exact). `what` names the buffer in the message.
static LogicalResult
adoptParameterValue(ModuleOp module,
                    const llvm::StringMap<RankedTensorType> &declared,
                    StringRef name, StringRef what, Tensor &value) {
  auto it = declared.find(name);
  if (it == declared.end())
    return emitError(module.getLoc())
           << "the model has no parameter '" << name << "'";
  RankedTensorType type = it->second;
  if (!isFloat(value.getDType()) || value.getShape() != type.getShape())
    return emitError(module.getLoc())
           << what << "'" << name << "' is " << typeString(type)
           << ", got a value of type " << value.describe();
  value.setDType(*getDType(type));
  return success();
}

LogicalResult Evaluator::setParameter(StringRef name, Tensor value) {
  if (failed(adoptParameterValue(module, declared, name, "parameter ", value)))
    return failure();
  parameters[name] = std::move(value);
  return success();
}

SmallVector<std::string> Evaluator::getUnsetParameters() const {
  SmallVector<std::string> unset;
  for (const std::string &name : declarationOrder)
    if (!parameters.contains(name))
      unset.push_back(name);
  return unset;
}

static ParamBufferKind toKind(ParamBuffer buffer) {
  switch (buffer) {
  case ParamBuffer::value:
    return ParamBufferKind::Value;
  case ParamBuffer::grad:
    return ParamBufferKind::Grad;
  case ParamBuffer::first_moment:
    return ParamBufferKind::FirstMoment;
  case ParamBuffer::second_moment:
    return ParamBufferKind::SecondMoment;
  }
  llvm_unreachable("unknown parameter buffer");
}

LogicalResult Evaluator::setBuffer(ParamBufferKind buffer, StringRef name,
                                   Tensor value) {
  if (buffer == ParamBufferKind::Value)
    return setParameter(name, std::move(value));
  if (failed(adoptParameterValue(module, declared, name,
                                 "buffer of parameter ", value)))
    return failure();
  buffers[static_cast<int>(buffer) - 1][name] = std::move(value);
  return success();
}

FailureOr<Tensor> Evaluator::getBuffer(ParamBufferKind buffer,
                                       StringRef name) {
  auto type = declared.find(name);
  if (type == declared.end())
    return emitError(module.getLoc())
           << "the model has no parameter '" << name << "'";
  if (buffer == ParamBufferKind::Value) {
    auto it = parameters.find(name);
    if (it == parameters.end())
      return emitError(module.getLoc())
             << "parameter '" << name << "' has no value";
    return it->second;
  }
  llvm::StringMap<Tensor> &held = buffers[static_cast<int>(buffer) - 1];
  auto it = held.find(name);
  if (it != held.end())
    return it->second;
  return Tensor(*getDType(type->second), type->second.getShape());
}

/// The key of `buffer` of parameter `name` in `written`.
static std::string writtenKey(ParamBufferKind buffer, StringRef name) {
  return (Twine(static_cast<int>(buffer)) + ":" + name).str();
}

bool Evaluator::wasWritten(ParamBufferKind buffer, StringRef name) const {
  return written.contains(writtenKey(buffer, name));
}

void Evaluator::storeParam(ParamBufferKind buffer, StringRef name,
                           Tensor value) {
  written.insert(writtenKey(buffer, name));
  if (buffer == ParamBufferKind::Value) {
    wroteValues = true;
    parameters[name] = std::move(value);
    return;
  }
  buffers[static_cast<int>(buffer) - 1][name] = std::move(value);
}

FailureOr<SmallVector<Tensor>> Evaluator::run(StringRef name,
                                              ArrayRef<Tensor> inputs) {
  auto function = module.lookupSymbol<func::FuncOp>(name);
  if (!function || function.isExternal())
    return emitError(module.getLoc())
           << "the module has no function '" << name << "'";
  // attn.kv_cache_length is the length before this call of the entry point:
  // every slot holds the same positions, or the length is undefined.
  entryCacheLength = 0;
  for (auto [slot, held] : llvm::enumerate(kvCache)) {
    int64_t length = held.second.first.getDimSize(2);
    if (slot == 0)
      entryCacheLength = length;
    else if (entryCacheLength != length)
      entryCacheLength = std::nullopt;
  }
  written.clear();
  wroteValues = false;
  return call(function, inputs, 0);
}

FailureOr<Tensor>
Evaluator::gradientByFiniteDifferences(StringRef name, ArrayRef<Tensor> inputs,
                                       StringRef parameter, double step,
                                       const Tensor *mask) {
  auto it = parameters.find(parameter);
  if (it == parameters.end())
    return emitError(module.getLoc())
           << "parameter '" << parameter << "' has no value";
  std::map<int64_t, std::pair<Tensor, Tensor>> savedCache = kvCache;
  // A gradient entry point writes the gradients (set_param): each run
  // starts from the same buffers.
  llvm::StringMap<Tensor> savedBuffers[3] = {buffers[0], buffers[1],
                                             buffers[2]};
  auto loss = [&]() -> FailureOr<double> {
    kvCache = savedCache;
    FailureOr<SmallVector<Tensor>> results = run(name, inputs);
    for (int i = 0; i < 3; ++i)
      buffers[i] = savedBuffers[i];
    if (failed(results))
      return failure();
    if (wroteValues)
      return emitError(module.getLoc())
             << "'" << name << "' writes parameter values: finite "
             << "differences need a function of fixed parameters";
    if (results->size() != 1 || results->front().getRank() != 0 ||
        !isFloat(results->front().getDType()))
      return emitError(module.getLoc())
             << "'" << name
             << "' must return one float scalar to be differentiated";
    return results->front()[0];
  };
  // `it` stays valid: running a function sets no parameter.
  Tensor &value = it->second;
  Tensor gradient(value.getDType(), value.getShape());
  if (mask && mask->getShape() != value.getShape())
    return emitError(module.getLoc())
           << "the mask of parameter '" << parameter << "' is "
           << mask->describe() << ", the parameter " << value.describe();
  for (int64_t i = 0, e = value.getNumElements(); i < e; ++i) {
    if (mask && (*mask)[i] == 0.0) {
      gradient[i] = std::numeric_limits<double>::quiet_NaN();
      continue;
    }
    double saved = value[i];
    value[i] = saved + step;
    FailureOr<double> up = loss();
    FailureOr<double> down = failure();
    if (succeeded(up)) {
      value[i] = saved - step;
      down = loss();
    }
    value[i] = saved;
    if (failed(down)) {
      kvCache = std::move(savedCache);
      return failure();
    }
    gradient[i] = (*up - *down) / (2 * step);
  }
  kvCache = std::move(savedCache);
  return gradient;
}

FailureOr<SmallVector<Tensor>> Evaluator::call(func::FuncOp function,
                                               ArrayRef<Tensor> inputs,
                                               unsigned depth) {
  if (depth > kMaxCallDepth)
    return emitError(function.getLoc())
           << "calls nest deeper than " << kMaxCallDepth;
  ArrayRef<Type> argTypes = function.getArgumentTypes();
  if (inputs.size() != argTypes.size())
    return emitError(function.getLoc())
           << "'" << function.getSymName() << "' takes " << argTypes.size()
           << " arguments, got " << inputs.size();
  Frame frame;
  for (auto [index, pair] : llvm::enumerate(llvm::zip(inputs, argTypes))) {
    auto [input, type] = pair;
    if (!matchesType(input, type))
      return emitError(function.getLoc())
             << "argument #" << index << " of '" << function.getSymName()
             << "' is " << typeString(type) << ", got " << input.describe();
    frame.set(function.getArgument(index), input);
  }
  if (failed(checkSymbolicDims(function, inputs)))
    return failure();
  // Values are dropped after their last use, so that a large model's
  // activations and parameter copies do not all stay alive at once.
  Block &body = function.getBody().front();
  llvm::DenseMap<Operation *, SmallVector<Value>> lastUses;
  llvm::DenseMap<Value, Operation *> lastUser;
  for (Operation &op : body)
    for (Value operand : op.getOperands())
      lastUser[operand] = &op;
  for (auto [value, user] : lastUser)
    lastUses[user].push_back(value);
  for (Operation &op : body) {
    if (failed(evaluate(&op, frame, depth)))
      return failure();
    for (Value value : lastUses.lookup(&op))
      frame.values.erase(value);
  }
  return std::move(frame.results);
}

LogicalResult Evaluator::evaluate(Operation *op, Frame &frame, unsigned depth) {
  auto in = [&](Value value) -> const Tensor & { return frame.get(value); };
  auto result = [&](llvm::Expected<Tensor> tensor) {
    return store(op, frame, op->getResult(0), std::move(tensor));
  };
  // The seed of a dropout: an attn.seed argument is the exact seed of the
  // options when there is one, anything else the integer its tensor holds.
  auto seedValue = [&](Value seed) -> uint64_t {
    if (auto arg = dyn_cast<BlockArgument>(seed); arg && options.seed) {
      auto function = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
      if (function && function.getArgAttr(arg.getArgNumber(), "attn.seed"))
        return *options.seed;
    }
    return static_cast<uint64_t>(static_cast<int64_t>(in(seed)[0]));
  };
  auto setAttentionDropout = [&](AttentionOptions &attention, APFloat rate,
                                 Value seed, std::optional<uint64_t> stream) {
    if (!seed || rate.isZero())
      return;
    attention.dropout = toDouble(rate);
    attention.seed = seedValue(seed);
    attention.stream = stream.value_or(0);
  };

  if (std::optional<UnaryFn> fn = getUnaryFn(op))
    return result(unary(*fn, in(op->getOperand(0))));
  if (std::optional<BinaryFn> fn = getBinaryFn(op)) {
    llvm::Expected<Tensor> value =
        binary(*fn, in(op->getOperand(0)), in(op->getOperand(1)));
    if (value && failed(checkDynamicBroadcast(op, op->getOperands(), frame,
                                              value->getShape(), 0)))
      return failure();
    return result(std::move(value));
  }

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      // Functions, parameters, constants and sizes.
      .Case([&](func::ReturnOp ret) {
        for (Value operand : ret.getOperands())
          frame.results.push_back(in(operand));
        return success();
      })
      .Case([&](func::CallOp callOp) -> LogicalResult {
        auto callee = module.lookupSymbol<func::FuncOp>(callOp.getCalleeAttr());
        if (!callee || callee.isExternal())
          return opError(op)
                 << "calls '" << callOp.getCallee() << "', which has no body";
        SmallVector<Tensor> args;
        for (Value operand : callOp.getOperands())
          args.push_back(in(operand));
        // A called entry point's writes (train_step calls <loss>_grad) are
        // done when the caller reads: the caller's rule is about its own.
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
      })
      .Case([&](GetParamOp getParam) -> LogicalResult {
        if (wasWritten(toKind(getParam.getBuffer()), getParam.getName()))
          return opError(op)
                 << "reads " << stringifyParamBuffer(getParam.getBuffer())
                 << " of '" << getParam.getName()
                 << "' after this call wrote it (a function reads a buffer "
                    "before it writes it)";
        if (getParam.getBuffer() == ParamBuffer::value) {
          auto it = parameters.find(getParam.getName());
          if (it == parameters.end())
            return opError(op)
                   << "parameter '" << getParam.getName() << "' has no value";
          return result(it->second);
        }
        FailureOr<Tensor> value =
            getBuffer(toKind(getParam.getBuffer()), getParam.getName());
        if (failed(value))
          return failure();
        return result(std::move(*value));
      })
      // The whole-buffer forms: every parameter at its offset in the
      // parameter layout, zeros between.
      .Case([&](GetParamBufferOp getBuffer) -> LogicalResult {
        int64_t size;
        SmallVector<ParamSlot> slots = computeParamLayout(module, size);
        Tensor flat(DType::F32, {size});
        for (ParamSlot slot : slots) {
          StringRef name = slot.param.getSymName();
          if (wasWritten(toKind(getBuffer.getBuffer()), name))
            return opError(op)
                   << "reads " << stringifyParamBuffer(getBuffer.getBuffer())
                   << " after this call wrote it (a function reads a buffer "
                      "before it writes it)";
          FailureOr<Tensor> value =
              this->getBuffer(toKind(getBuffer.getBuffer()), name);
          if (failed(value))
            return failure();
          llvm::copy(value->getData(), flat.getData().begin() + slot.offset);
        }
        return result(std::move(flat));
      })
      .Case([&](SetParamBufferOp setBuffer) -> LogicalResult {
        const Tensor &flat = in(setBuffer.getValue());
        int64_t size;
        SmallVector<ParamSlot> slots = computeParamLayout(module, size);
        if (flat.getRank() != 1 || flat.getNumElements() != size)
          return opError(op) << "writes " << flat.describe()
                             << " as the parameter buffer of " << size
                             << " elements";
        for (ParamSlot slot : slots) {
          RankedTensorType type = slot.param.getTensorType();
          auto begin = flat.getData().begin() + slot.offset;
          storeParam(toKind(setBuffer.getBuffer()), slot.param.getSymName(),
                     Tensor(*getDType(type), type.getShape(),
                            std::vector<double>(
                                begin, begin + type.getNumElements())));
        }
        return success();
      })
      .Case([&](SetParamOp setParam) -> LogicalResult {
        const Tensor &value = in(setParam.getValue());
        auto type = declared.find(setParam.getName());
        if (type == declared.end() ||
            !matchesType(value, type->second))
          return opError(op) << "writes " << value.describe()
                             << " to parameter '" << setParam.getName()
                             << "'";
        storeParam(toKind(setParam.getBuffer()), setParam.getName(), value);
        return success();
      })
      .Case([&](arith::ConstantOp constant) -> LogicalResult {
        std::optional<Tensor> value = constantTensor(constant.getValue());
        if (!value)
          return opError(op) << "has a constant the reference cannot read: "
                             << constant.getValue();
        return result(std::move(*value));
      })
      .Case<arith::AddIOp, arith::SubIOp, arith::MulIOp>(
          [&](auto arithOp) -> LogicalResult {
            if (!isa<IndexType>(arithOp.getType()))
              return opError(op) << "is supported on index values only";
            double lhs = in(arithOp.getLhs())[0], rhs = in(arithOp.getRhs())[0];
            double value = isa<arith::AddIOp>(op)   ? lhs + rhs
                           : isa<arith::SubIOp>(op) ? lhs - rhs
                                                    : lhs * rhs;
            return result(Tensor::scalar(DType::Index, value));
          })
      .Case([&](DimOp dim) {
        const Tensor &input = in(dim.getInput());
        return result(Tensor::scalar(
            DType::Index, static_cast<double>(input.getDimSize(
                              static_cast<int64_t>(dim.getAxis())))));
      })
      // Element-wise.
      .Case([&](CompareOp compareOp) -> LogicalResult {
        llvm::Expected<Tensor> value =
            compare(getCompareFn(compareOp.getPredicate()),
                    in(compareOp.getLhs()), in(compareOp.getRhs()));
        if (value && failed(checkDynamicBroadcast(op, op->getOperands(), frame,
                                                  value->getShape(), 0)))
          return failure();
        return result(std::move(value));
      })
      .Case([&](SelectOp selectOp) -> LogicalResult {
        llvm::Expected<Tensor> value =
            select(in(selectOp.getCondition()), in(selectOp.getTrueValue()),
                   in(selectOp.getFalseValue()));
        if (value && failed(checkDynamicBroadcast(op, op->getOperands(), frame,
                                                  value->getShape(), 0)))
          return failure();
        return result(std::move(value));
      })
      .Case([&](CastOp castOp) {
        return result(
            castTensor(in(castOp.getInput()), *getDType(castOp.getType())));
      })
      .Case([&](DropoutOp dropout) -> LogicalResult {
        if (dropout.getSeed() && !dropout.getRate().isZero())
          return result(reference::dropout(
              in(dropout.getInput()), toDouble(dropout.getRate()),
              seedValue(dropout.getSeed()),
              static_cast<uint64_t>(dropout.getStream().value_or(0))));
        if (options.training && !dropout.getRate().isZero())
          return opError(op) << "draws a random mask in training mode "
                                "without a seed";
        return result(in(dropout.getInput()));
      })
      // Shape.
      .Case([&](ReshapeOp reshapeOp) {
        return result(
            reshape(in(reshapeOp.getInput()),
                    resolveShape(cast<RankedTensorType>(reshapeOp.getType()),
                                 reshapeOp.getDynamicSizes(), frame)));
      })
      .Case([&](TransposeOp transposeOp) {
        return result(transpose(in(transposeOp.getInput()),
                                transposeOp.getPermutation()));
      })
      .Case([&](SplitHeadsOp split) {
        return result(splitHeads(in(split.getInput()),
                                 static_cast<int64_t>(split.getHeads())));
      })
      .Case([&](MergeHeadsOp merge) {
        return result(mergeHeads(in(merge.getInput())));
      })
      .Case([&](ConcatOp concatOp) {
        SmallVector<Tensor> inputs;
        for (Value input : concatOp.getInputs())
          inputs.push_back(in(input));
        return result(concat(inputs, static_cast<int64_t>(concatOp.getAxis())));
      })
      .Case([&](SliceOp sliceOp) {
        return result(slice(in(sliceOp.getInput()),
                            static_cast<int64_t>(sliceOp.getAxis()),
                            static_cast<int64_t>(sliceOp.getStart()),
                            static_cast<int64_t>(sliceOp.getEnd())));
      })
      .Case([&](TakeOp takeOp) {
        return result(take(in(takeOp.getInput()),
                           static_cast<int64_t>(takeOp.getAxis()),
                           static_cast<int64_t>(takeOp.getIndex())));
      })
      .Case([&](BroadcastOp broadcast) {
        return result(broadcastTo(
            in(broadcast.getInput()),
            resolveShape(cast<RankedTensorType>(broadcast.getType()),
                         broadcast.getDynamicSizes(), frame)));
      })
      .Case([&](GatherOp gatherOp) {
        return result(gather(in(gatherOp.getTable()), in(gatherOp.getIds())));
      })
      .Case([&](PositionsOp positionsOp) -> LogicalResult {
        auto length = static_cast<int64_t>(in(positionsOp.getLength())[0]);
        if (length < 0)
          return opError(op) << "length " << length << " is negative";
        Value start = positionsOp.getStart();
        return result(
            positions(length, start ? static_cast<int64_t>(in(start)[0]) : 0));
      })
      .Case([&](SinusoidalOp sinusoidalOp) -> LogicalResult {
        auto type = cast<RankedTensorType>(sinusoidalOp.getType());
        auto length = static_cast<int64_t>(in(sinusoidalOp.getLength())[0]);
        if (length < 0)
          return opError(op) << "length " << length << " is negative";
        Value start = sinusoidalOp.getStart();
        return result(
            sinusoidal(length, type.getDimSize(1), *getDType(type),
                       start ? static_cast<int64_t>(in(start)[0]) : 0));
      })
      // Contractions and reductions.
      .Case([&](MatmulOp matmulOp) -> LogicalResult {
        llvm::Expected<Tensor> value =
            matmul(in(matmulOp.getLhs()), in(matmulOp.getRhs()));
        if (value && failed(checkDynamicBroadcast(op, op->getOperands(), frame,
                                                  value->getShape(), 2)))
          return failure();
        return result(std::move(value));
      })
      .Case([&](LinearOp linearOp) {
        return result(linear(in(linearOp.getInput()), in(linearOp.getWeight()),
                             frame.getOptional(linearOp.getBias()),
                             frame.getOptional(linearOp.getResidual()),
                             *getActivation(linearOp.getActivation())));
      })
      .Case([&](ReduceOp reduceOp) {
        return result(reduce(getReduceFn(reduceOp.getKind()),
                             in(reduceOp.getInput()),
                             static_cast<int64_t>(reduceOp.getAxis()),
                             frame.getOptional(reduceOp.getMask())));
      })
      .Case([&](SoftmaxOp softmaxOp) {
        return result(softmax(in(softmaxOp.getInput()),
                              static_cast<int64_t>(softmaxOp.getAxis())));
      })
      .Case([&](LogSoftmaxOp logSoftmaxOp) {
        return result(logSoftmax(in(logSoftmaxOp.getInput()),
                                 static_cast<int64_t>(logSoftmaxOp.getAxis())));
      })
      // Normalisation.
      .Case([&](LayerNormOp norm) {
        return result(layerNorm(
            in(norm.getInput()), in(norm.getWeight()), in(norm.getBias()),
            frame.getOptional(norm.getResidual()), toDouble(norm.getEps())));
      })
      .Case([&](RmsNormOp norm) {
        return result(rmsNorm(in(norm.getInput()), in(norm.getWeight()),
                              frame.getOptional(norm.getResidual()),
                              toDouble(norm.getEps())));
      })
      // Attention.
      .Case([&](SdpaOp sdpaOp) -> LogicalResult {
        if (options.training && !sdpaOp.getSeed() &&
            !sdpaOp.getDropout().isZero())
          return opError(op) << "draws a random dropout mask in training "
                                "mode without a seed";
        AttentionOptions attention =
            attentionOptions(sdpaOp.getMask(), sdpaOp.getScale(),
                             frame.getOptional(sdpaOp.getKeyPadding()));
        setAttentionDropout(attention, sdpaOp.getDropout(), sdpaOp.getSeed(),
                            sdpaOp.getStream());
        const Tensor &q = in(sdpaOp.getQuery()), &k = in(sdpaOp.getKey()),
                     &v = in(sdpaOp.getValue());
        if (Value logsumexp = sdpaOp.getLogsumexp())
          if (failed(store(op, frame, logsumexp,
                           sdpaLogsumexp(q, k, v, attention))))
            return failure();
        return store(op, frame, sdpaOp.getResult(), sdpa(q, k, v, attention));
      })
      // Loss.
      .Case([&](CrossEntropyOp loss) {
        return result(
            crossEntropy(in(loss.getLogits()), in(loss.getTargets()),
                         crossEntropyOptions(loss.getIgnoreIndex(),
                                             loss.getLabelSmoothing())));
      })
      // Training.
      .Case([&](ActivationGradOp grad) {
        return result(activationGrad(*getActivation(grad.getActivation()),
                                     in(grad.getInput()),
                                     in(grad.getGradOutput())));
      })
      .Case([&](SoftmaxGradOp grad) {
        return result(softmaxGrad(in(grad.getOutput()),
                                  in(grad.getGradOutput()),
                                  static_cast<int64_t>(grad.getAxis())));
      })
      .Case([&](LogSoftmaxGradOp grad) {
        return result(logSoftmaxGrad(in(grad.getOutput()),
                                     in(grad.getGradOutput()),
                                     static_cast<int64_t>(grad.getAxis())));
      })
      .Case([&](LayerNormGradOp grad) -> LogicalResult {
        llvm::Expected<NormGradients> grads =
            layerNormGrad(in(grad.getInput()), in(grad.getWeight()),
                          in(grad.getGradOutput()), toDouble(grad.getEps()));
        if (!grads)
          return result(grads.takeError());
        if (failed(store(op, frame, grad.getGradInput(), grads->input)) ||
            failed(store(op, frame, grad.getGradWeight(), grads->weight)))
          return failure();
        return store(op, frame, grad.getGradBias(), grads->bias);
      })
      .Case([&](RmsNormGradOp grad) -> LogicalResult {
        llvm::Expected<NormGradients> grads =
            rmsNormGrad(in(grad.getInput()), in(grad.getWeight()),
                        in(grad.getGradOutput()), toDouble(grad.getEps()));
        if (!grads)
          return result(grads.takeError());
        if (failed(store(op, frame, grad.getGradInput(), grads->input)))
          return failure();
        return store(op, frame, grad.getGradWeight(), grads->weight);
      })
      .Case([&](SdpaGradOp grad) -> LogicalResult {
        if (options.training && !grad.getSeed() &&
            !grad.getDropout().isZero())
          return opError(op) << "draws a random dropout mask in training "
                                "mode without a seed";
        AttentionOptions attention =
            attentionOptions(grad.getMask(), grad.getScale(),
                             frame.getOptional(grad.getKeyPadding()));
        setAttentionDropout(attention, grad.getDropout(), grad.getSeed(),
                            grad.getStream());
        // A `logsumexp` operand is not read: the reference recomputes each
        // query's probabilities, so that compiled code given a wrong one
        // differs from it.
        llvm::Expected<SdpaGradients> grads =
            sdpaGrad(in(grad.getQuery()), in(grad.getKey()),
                     in(grad.getValue()), in(grad.getGradOutput()), attention);
        if (!grads)
          return result(grads.takeError());
        if (failed(store(op, frame, grad.getGradQuery(), grads->query)) ||
            failed(store(op, frame, grad.getGradKey(), grads->key)))
          return failure();
        return store(op, frame, grad.getGradValue(), grads->value);
      })
      .Case([&](CrossEntropyGradOp grad) {
        return result(
            crossEntropyGrad(in(grad.getLogits()), in(grad.getTargets()),
                             in(grad.getGradLoss())[0],
                             crossEntropyOptions(grad.getIgnoreIndex(),
                                                 grad.getLabelSmoothing())));
      })
      .Case([&](GatherGradOp grad) -> LogicalResult {
        auto type = cast<RankedTensorType>(grad.getType());
        if (type.isDynamicDim(0))
          return opError(op) << "needs a static row count in its result "
                             << typeString(type);
        return result(gatherGrad(in(grad.getIds()), in(grad.getGradOutput()),
                                 type.getDimSize(0)));
      })
      .Case([&](GlobalNormOp norm) {
        SmallVector<Tensor> inputs;
        for (Value input : norm.getInputs())
          inputs.push_back(in(input));
        return result(globalNorm(inputs));
      })
      .Case([&](AdamUpdateOp update) -> LogicalResult {
        AdamOptions adam;
        adam.beta1 = in(update.getBeta1())[0];
        adam.beta2 = in(update.getBeta2())[0];
        adam.eps = in(update.getEps())[0];
        adam.weightDecay = in(update.getWeightDecay())[0];
        adam.decoupled = update.getDecoupled();
        llvm::Expected<AdamState> state =
            adamUpdate(in(update.getParam()), in(update.getGrad()),
                       in(update.getFirstMoment()),
                       in(update.getSecondMoment()), in(update.getLr())[0],
                       static_cast<int64_t>(in(update.getStep())[0]), adam);
        if (!state)
          return result(state.takeError());
        if (failed(store(op, frame, update.getNewParam(), state->param)) ||
            failed(store(op, frame, update.getNewFirstMoment(),
                         state->firstMoment)))
          return failure();
        return store(op, frame, update.getNewSecondMoment(),
                     state->secondMoment);
      })
      // Decoding.
      .Case([&](KVCacheAppendOp append) -> LogicalResult {
        const Tensor &keys = in(append.getNewKeys());
        const Tensor &values = in(append.getNewValues());
        auto slot = static_cast<int64_t>(append.getSlot());
        auto it = kvCache.find(slot);
        std::pair<Tensor, Tensor> held{keys, values};
        if (it != kvCache.end()) {
          llvm::Expected<Tensor> allKeys = concat({it->second.first, keys}, 2);
          if (!allKeys)
            return result(allKeys.takeError());
          llvm::Expected<Tensor> allValues =
              concat({it->second.second, values}, 2);
          if (!allValues)
            return result(allValues.takeError());
          held = {std::move(*allKeys), std::move(*allValues)};
        }
        kvCache[slot] = held;
        if (failed(store(op, frame, append.getKeys(), held.first)))
          return failure();
        return store(op, frame, append.getValues(), held.second);
      })
      .Case([&](KVCacheLengthOp) -> LogicalResult {
        if (!entryCacheLength)
          return opError(op) << "finds cache slots of different lengths";
        return result(Tensor::scalar(DType::Index,
                                     static_cast<double>(*entryCacheLength)));
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
      .Default([&](Operation *) {
        return emitError(op->getLoc())
               << "unsupported op '" << op->getName()
               << "': the reference evaluator does not implement it";
      });
}
