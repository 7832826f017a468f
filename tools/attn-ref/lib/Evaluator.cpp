//===- Evaluator.cpp - Executes attn IR directly --------------------------===//
//
// The evaluator's state and its calls: the parameters and their buffers, the
// key/value cache, running a function (its arguments checked against its
// types) and differentiating one by finite differences. Each op of a body is
// evaluated by OpEvaluation.cpp.
//
//===----------------------------------------------------------------------===//

#include "attn/Reference/Evaluator.h"

#include "EvaluatorInternals.h"

#include "attn/Dialect/IR/AttnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/Twine.h"

#include <limits>

using namespace mlir;
using namespace attn;
using namespace attn::reference;

/// Deep enough for any model's call chain; it only stops runaway recursion.
static constexpr unsigned kMaxCallDepth = 64;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

bool reference::matchesType(const Tensor &tensor, Type type) {
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

std::string reference::typeString(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "'" << type << "'";
  return text;
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

LogicalResult Evaluator::setBuffer(ParamBuffer buffer, StringRef name,
                                   Tensor value) {
  if (buffer == ParamBuffer::value)
    return setParameter(name, std::move(value));
  if (failed(adoptParameterValue(module, declared, name,
                                 "buffer of parameter ", value)))
    return failure();
  buffers[static_cast<int>(buffer) - 1][name] = std::move(value);
  return success();
}

FailureOr<Tensor> Evaluator::getBuffer(ParamBuffer buffer,
                                       StringRef name) {
  auto type = declared.find(name);
  if (type == declared.end())
    return emitError(module.getLoc())
           << "the model has no parameter '" << name << "'";
  if (buffer == ParamBuffer::value) {
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
static std::string writtenKey(ParamBuffer buffer, StringRef name) {
  return (Twine(static_cast<int>(buffer)) + ":" + name).str();
}

bool Evaluator::wasWritten(ParamBuffer buffer, StringRef name) const {
  return written.contains(writtenKey(buffer, name));
}

void Evaluator::storeParam(ParamBuffer buffer, StringRef name,
                           Tensor value) {
  written.insert(writtenKey(buffer, name));
  if (buffer == ParamBuffer::value) {
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
