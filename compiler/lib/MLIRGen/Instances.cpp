//===- Instances.cpp - Instantiating the model's layers -------------------===//
//
// Builds the tree of layer instances of a model: block arguments and `let`s
// evaluated, sub-layers and stacks instantiated (each block once per
// instance, with its own constants), and every parameter declared as an
// `attn.param` named by its dotted path, exactly as PyTorch's `state_dict`
// names it. Builtin layers get PyTorch's default initialisers.
//
//===----------------------------------------------------------------------===//

#include "Elaborator.h"

#include "attn/Frontend/Suggestions.h"

#include <cmath>

using namespace mlir;
using namespace attn;
using namespace attn::mlirgen;

/// The largest `repeat` count and parameter size accepted: beyond these a
/// model cannot be compiled in reasonable memory anyway.
static constexpr int64_t kMaxRepeat = 4096;
static constexpr int64_t kMaxParamElements = int64_t(1) << 36;
/// The most layer instances a model may have (stacks of stacks multiply);
/// real models have hundreds, and reaching it takes 0.2 s (2 s under
/// sanitizers).
static constexpr uint64_t kMaxInstances = uint64_t(1) << 16;
/// Blocks nested in blocks beyond which instantiation stops: deeper than any
/// real model, and a guard for the native stack.
static constexpr size_t kMaxBlockNesting = 200;

std::string Instance::qualify(llvm::StringRef name) const {
  if (path.empty())
    return name.str();
  return path + "." + name.str();
}

void Elaborator::declareParam(Instance &instance, llvm::StringRef localName,
                              llvm::ArrayRef<int64_t> shape, InitKind init,
                              llvm::ArrayRef<double> initArgs, Location loc) {
  auto type = RankedTensorType::get(shape, builder.getF32Type());
  std::string symbol = instance.qualify(localName);
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(module.getBody(), module.getBody()->end());
  ParamOp::create(builder, loc, symbol, type, init, initArgs);
  instance.params[localName] = ParamRef{symbol, type};
}

std::unique_ptr<Instance>
Elaborator::instantiateModel(const ast::ModelDecl &model) {
  auto instance =
      std::make_unique<Instance>(LayerKind::Model, "", model.getLoc());
  instance->decl = &model;
  instance->typeName = "model " + model.getName().str();
  populateMembers(*instance, model);
  return instance;
}

/// Checks that `name` is not already a member of `instance`.
static bool isDuplicateMember(Instance &instance, llvm::StringRef name) {
  return instance.constants.count(name) || instance.layers.count(name) ||
         instance.params.count(name) || instance.buffers.count(name) ||
         instance.fns.count(name);
}

LogicalResult Elaborator::evalInitializer(const ast::CallExpr *init,
                                          Frame &frame, InitKind &kind,
                                          llvm::SmallVectorImpl<double> &args) {
  if (!init) {
    // No `init`: zeros, as `nn.Parameter(torch.zeros(...))`.
    kind = InitKind::zeros;
    return success();
  }
  CallArgs callArgs = evalArgs(*init, frame);
  llvm::StringRef name = init->getCalleeName();
  if (callArgs.hasPoison())
    return failure();
  auto number = [&](const std::optional<Arg> &arg, llvm::StringRef what,
                    double fallback) -> std::optional<double> {
    if (!arg)
      return fallback;
    return expectNumber(*arg, what);
  };
  // The initialisers a model names are the cases of InitKind.
  std::optional<InitKind> initKind = symbolizeInitKind(name);
  if (!initKind) {
    SmallVector<StringRef> initialisers =
        enumKeywords<InitKind>(getMaxEnumValForInitKind());
    error(init->getLoc()) << "unknown initialiser '" << name
                          << "'; expected normal, uniform, zeros, ones or "
                             "xavier_uniform"
                          << didYouMean(name, initialisers);
    return failure();
  }
  kind = *initKind;
  switch (kind) {
  case InitKind::zeros:
  case InitKind::ones:
    return success(bindArgs(callArgs, {}).has_value());
  case InitKind::normal: {
    auto bound = bindArgs(callArgs, {{"std", true}, {"mean", false}});
    if (!bound)
      return failure();
    std::optional<double> std = number((*bound)[0], "the standard deviation", 0);
    std::optional<double> mean = number((*bound)[1], "the mean", 0);
    if (!std || !mean)
      return failure();
    if (*std < 0) {
      error((*bound)[0]->loc) << "the standard deviation must not be negative";
      return failure();
    }
    args.append({*mean, *std});
    return success();
  }
  case InitKind::uniform: {
    auto bound = bindArgs(callArgs, {{"lo", true}, {"hi", true}});
    if (!bound)
      return failure();
    std::optional<double> lo = number((*bound)[0], "the lower bound", 0);
    std::optional<double> hi = number((*bound)[1], "the upper bound", 0);
    if (!lo || !hi)
      return failure();
    if (*lo > *hi) {
      error(callArgs.loc) << "uniform(" << formatNumber(*lo) << ", "
                          << formatNumber(*hi)
                          << ") has its lower bound above its upper bound";
      return failure();
    }
    args.append({*lo, *hi});
    return success();
  }
  case InitKind::xavier_uniform: {
    auto bound = bindArgs(callArgs, {{"gain", false}});
    if (!bound)
      return failure();
    std::optional<double> gain = number((*bound)[0], "the gain", 1.0);
    if (!gain)
      return failure();
    args.push_back(*gain);
    return success();
  }
  }
  llvm_unreachable("unknown initialiser");
}

/// Evaluates the shape of a `param` or `buffer` declaration: every dim must
/// be a positive integer constant.
static std::optional<SmallVector<int64_t>>
evalStaticShape(Elaborator &elab, const ast::TypeExpr &type, Instance &instance,
                llvm::StringRef what) {
  SmallVector<int64_t> shape;
  int64_t elements = 1;
  for (const ast::ExprPtr &dim : type.getDims()) {
    Arg arg{elab.evalConstant(*dim, instance), dim->getLoc()};
    std::optional<int64_t> size = elab.expectInt(arg, what);
    if (!size)
      return std::nullopt;
    if (*size <= 0) {
      elab.error(dim->getLoc()) << what << " must be positive, got " << *size;
      return std::nullopt;
    }
    if (*size > kMaxParamElements / elements) {
      elab.error(dim->getLoc())
          << "size " << *size << " makes the tensor too large; at most "
          << kMaxParamElements << " elements are supported";
      return std::nullopt;
    }
    elements *= *size;
    shape.push_back(*size);
  }
  return shape;
}

void Elaborator::populateMembers(Instance &instance,
                                 const ast::TopLevelDecl &decl) {
  for (const ast::MemberPtr &member : decl.getMembers()) {
    llvm::StringRef name;
    // A member that fails is poison, so that its uses are not reported as
    // undefined names on top of the error itself.
    auto fail = [&] { instance.constants[name] = EvalValue::poison(); };
    if (auto *let = dyn_cast<ast::LetDecl>(member.get()))
      name = let->getName();
    else if (auto *layer = dyn_cast<ast::LayerDecl>(member.get()))
      name = layer->getName();
    else if (auto *repeat = dyn_cast<ast::RepeatDecl>(member.get()))
      name = repeat->getName();
    else if (auto *param = dyn_cast<ast::ParamDecl>(member.get()))
      name = param->getName();
    else if (auto *buffer = dyn_cast<ast::BufferDecl>(member.get()))
      name = buffer->getName();
    else if (auto *fn = dyn_cast<ast::FnDecl>(member.get()))
      name = fn->getName();
    if (!name.empty() && isDuplicateMember(instance, name)) {
      error(member->getLoc()) << "'" << name << "' is already a member of "
                              << instance.typeName;
      continue;
    }

    if (auto *let = dyn_cast<ast::LetDecl>(member.get())) {
      EvalValue value = evalConstant(let->getValue(), instance);
      instance.constants[name] = value;
      continue;
    }
    if (auto *layer = dyn_cast<ast::LayerDecl>(member.get())) {
      std::unique_ptr<Instance> child = instantiateLayer(
          layer->getCall(), instance.qualify(name), instance);
      if (child)
        instance.layers[name] = std::move(child);
      else
        fail();
      continue;
    }
    if (auto *repeat = dyn_cast<ast::RepeatDecl>(member.get())) {
      Arg countArg{evalConstant(repeat->getCount(), instance),
                   repeat->getCount().getLoc()};
      std::optional<int64_t> count = expectInt(countArg, "a repeat count");
      if (!count) {
        fail();
        continue;
      }
      if (*count <= 0 || *count > kMaxRepeat) {
        error(countArg.loc) << "repeat count " << *count
                            << " must be a positive constant of at most "
                            << kMaxRepeat;
        fail();
        continue;
      }
      auto stack = std::make_unique<Instance>(
          LayerKind::Repeat, instance.qualify(name), repeat->getLoc());
      stack->typeName = "repeat";
      bool ok = true;
      for (int64_t i = 0; i < *count && ok; ++i) {
        std::unique_ptr<Instance> child = instantiateLayer(
            repeat->getCall(), stack->qualify(std::to_string(i)), instance);
        ok = child != nullptr;
        if (ok) {
          stack->stack.push_back(child.get());
          stack->layers[std::to_string(i)] = std::move(child);
        }
      }
      if (ok)
        instance.layers[name] = std::move(stack);
      else
        fail();
      continue;
    }
    if (auto *param = dyn_cast<ast::ParamDecl>(member.get())) {
      std::optional<SmallVector<int64_t>> shape = evalStaticShape(
          *this, param->getType(), instance, "a parameter's size");
      if (!shape) {
        fail();
        continue;
      }
      if (param->getType().getElementType() != ast::ElementType::F32) {
        error(param->getType().getLoc())
            << "parameters are f32; '"
            << ast::getElementTypeName(param->getType().getElementType())
            << "' parameters are not supported";
        fail();
        continue;
      }
      Frame frame{&instance, {}, {}, /*constantOnly=*/true};
      InitKind init;
      SmallVector<double> initArgs;
      if (failed(evalInitializer(param->getInit(), frame, init, initArgs))) {
        fail();
        continue;
      }
      if (init == InitKind::xavier_uniform && shape->size() < 2) {
        error(param->getInit()->getLoc())
            << "xavier_uniform needs a parameter of rank 2 or more";
        fail();
        continue;
      }
      declareParam(instance, name, *shape, init, initArgs, param->getLoc());
      continue;
    }
    if (auto *buffer = dyn_cast<ast::BufferDecl>(member.get())) {
      std::optional<SmallVector<int64_t>> shape = evalStaticShape(
          *this, buffer->getType(), instance, "a buffer's size");
      if (!shape) {
        fail();
        continue;
      }
      Type elementType =
          getElementType(builder, buffer->getType().getElementType());
      instance.buffers[name] =
          BufferRef{buffer, RankedTensorType::get(*shape, elementType)};
      continue;
    }
    if (auto *fn = dyn_cast<ast::FnDecl>(member.get())) {
      instance.fns[name] = fn;
      continue;
    }
    // `train` is handled with the model's fns.
  }
}

/// The names of the builtin layers, in the order LANGUAGE.md lists them.
static SmallVector<StringRef> builtinLayerNames();

std::unique_ptr<Instance>
Elaborator::instantiateLayer(const ast::CallExpr &call, std::string path,
                             Instance &scope) {
  llvm::StringRef name = call.getCalleeName();
  if (++numInstances > kMaxInstances) {
    // Reported once; every later instance fails the same way.
    if (numInstances == kMaxInstances + 1)
      error(call.getLoc()) << "more than " << kMaxInstances
                           << " layer instances; the model is too large to "
                              "compile";
    return nullptr;
  }
  Frame frame{&scope, {}, {}, /*constantOnly=*/true};
  CallArgs args = evalArgs(call, frame);
  if (args.hasPoison())
    return nullptr;
  if (isBuiltinLayer(name))
    return instantiateBuiltinLayer(name, args, std::move(path));
  auto block = blocks.find(name);
  if (block == blocks.end()) {
    InFlightDiagnostic diag = error(call.getLoc());
    diag << "unknown layer '" << name << "'; expected a block or one of ";
    SmallVector<StringRef> layerNames = builtinLayerNames();
    llvm::interleaveComma(layerNames, diag);
    appendKeys(layerNames, blocks);
    diag << didYouMean(name, layerNames);
    return nullptr;
  }
  if (llvm::is_contained(instantiating, block->second)) {
    error(call.getLoc()) << "block '" << name
                         << "' contains itself (a recursive block)";
    return nullptr;
  }
  if (instantiating.size() >= kMaxBlockNesting) {
    error(call.getLoc()) << "blocks are nested more than " << kMaxBlockNesting
                         << " deep";
    return nullptr;
  }
  return instantiateBlock(*block->second, args, std::move(path));
}

std::unique_ptr<Instance>
Elaborator::instantiateBlock(const ast::BlockDecl &block, CallArgs &args,
                             std::string path) {
  SmallVector<Formal> formals;
  for (const ast::BlockParam &param : block.getParams())
    formals.push_back({param.getName(), param.getDefault() == nullptr});
  auto bound = bindArgs(args, formals);
  if (!bound)
    return nullptr;
  auto instance =
      std::make_unique<Instance>(LayerKind::Block, std::move(path), args.loc);
  instance->decl = &block;
  instance->typeName = "block " + block.getName().str();
  for (auto [param, arg] : llvm::zip(block.getParams(), *bound)) {
    // Defaults are evaluated in the block's own scope, after the arguments
    // before them, as in Python.
    EvalValue value = arg ? arg->value
                          : evalConstant(*param.getDefault(), *instance);
    instance->constants[param.getName()] = value;
  }
  instantiating.push_back(&block);
  populateMembers(*instance, block);
  instantiating.pop_back();
  return instance;
}

/// The bound of PyTorch's default `nn.Linear` initialisation,
/// kaiming_uniform(a=sqrt(5)): 1/sqrt(fan_in), for weight and bias alike.
static double linearInitBound(int64_t fanIn) {
  return 1.0 / std::sqrt(static_cast<double>(fanIn));
}

namespace {
/// One instantiation of a builtin layer: the checks of its constructor's
/// arguments, and one method per layer that declares its parameters.
class LayerBuilder {
public:
  LayerBuilder(Elaborator &elab, CallArgs &args, Instance &instance)
      : elab(elab), args(args), instance(instance), loc(args.loc) {}

  /// Each returns whether the arguments were valid (the errors reported).
  bool linear();
  bool embedding();
  /// layer_norm and rms_norm.
  bool norm();
  bool multiHeadAttention();
  bool feedForward();

private:
  std::optional<std::vector<std::optional<Arg>>>
  bind(ArrayRef<Formal> formals) {
    return elab.bindArgs(args, formals);
  }

  std::optional<int64_t> positive(const std::optional<Arg> &arg,
                                  llvm::StringRef what) {
    std::optional<int64_t> v = elab.expectInt(*arg, what);
    if (v && (*v <= 0 || *v > kMaxParamElements)) {
      elab.error(arg->loc) << what << " must be a positive size, got " << *v;
      return std::nullopt;
    }
    return v;
  }

  std::optional<bool> optionalBool(const std::optional<Arg> &arg,
                                   llvm::StringRef what, bool fallback) {
    return arg ? elab.expectBool(*arg, what) : fallback;
  }

  std::optional<double> rate(const std::optional<Arg> &arg) {
    if (!arg)
      return 0.0;
    std::optional<double> p = elab.expectNumber(*arg, "the dropout rate");
    if (p && !(*p >= 0 && *p < 1)) {
      elab.error(arg->loc) << "the dropout rate must be in [0, 1), got "
                           << formatNumber(*p);
      return std::nullopt;
    }
    return p;
  }

  std::optional<double> epsilon(const std::optional<Arg> &arg,
                                double fallback) {
    if (!arg)
      return fallback;
    std::optional<double> eps = elab.expectNumber(*arg, "eps");
    if (eps && !(*eps >= 0)) {
      elab.error(arg->loc) << "eps must not be negative, got "
                           << formatNumber(*eps);
      return std::nullopt;
    }
    return eps;
  }

  /// Each size is bounded, but a weight's rows times columns may not be.
  bool fits(int64_t rows, int64_t columns) {
    if (rows <= kMaxParamElements / columns)
      return true;
    elab.error(loc) << "a [" << rows << ", " << columns
                    << "] parameter is too large; at most "
                    << kMaxParamElements << " elements are supported";
    return false;
  }

  /// Adds an nn.Linear(in, out) as member `member` of the layer.
  void addLinear(llvm::StringRef member, int64_t in, int64_t out, bool bias,
                 bool zeroBias) {
    auto linear = std::make_unique<Instance>(LayerKind::Linear,
                                             instance.qualify(member), loc);
    linear->typeName = "linear";
    double bound = linearInitBound(in);
    elab.declareParam(*linear, "weight", {out, in}, InitKind::uniform,
                      {-bound, bound}, loc);
    if (bias && zeroBias)
      elab.declareParam(*linear, "bias", {out}, InitKind::zeros, {}, loc);
    else if (bias)
      elab.declareParam(*linear, "bias", {out}, InitKind::uniform,
                        {-bound, bound}, loc);
    linear->features = out;
    instance.layers[member] = std::move(linear);
  }

  Elaborator &elab;
  CallArgs &args;
  Instance &instance;
  Location loc;
};

/// A builtin layer: its name and the method that instantiates it.
struct BuiltinLayer {
  llvm::StringRef name;
  bool (LayerBuilder::*instantiate)();
};
} // namespace

/// The builtin layers of LANGUAGE.md section 4.
static const BuiltinLayer kBuiltinLayers[] = {
    {"linear", &LayerBuilder::linear},
    {"embedding", &LayerBuilder::embedding},
    {"layer_norm", &LayerBuilder::norm},
    {"rms_norm", &LayerBuilder::norm},
    {"multi_head_attention", &LayerBuilder::multiHeadAttention},
    {"feed_forward", &LayerBuilder::feedForward},
};

static const BuiltinLayer *lookupBuiltinLayer(llvm::StringRef name) {
  for (const BuiltinLayer &layer : kBuiltinLayers)
    if (layer.name == name)
      return &layer;
  return nullptr;
}

static SmallVector<StringRef> builtinLayerNames() {
  SmallVector<StringRef> names;
  for (const BuiltinLayer &layer : kBuiltinLayers)
    names.push_back(layer.name);
  return names;
}

bool Elaborator::isBuiltinLayer(llvm::StringRef name) const {
  return lookupBuiltinLayer(name) != nullptr;
}

std::unique_ptr<Instance>
Elaborator::instantiateBuiltinLayer(llvm::StringRef name, CallArgs &args,
                                    std::string path) {
  const BuiltinLayer *layer = lookupBuiltinLayer(name);
  assert(layer && "not a builtin layer");
  auto instance =
      std::make_unique<Instance>(LayerKind::Linear, path, args.loc);
  instance->typeName = name.str();
  LayerBuilder layerBuilder(*this, args, *instance);
  if (!(layerBuilder.*layer->instantiate)())
    return nullptr;
  return instance;
}

bool LayerBuilder::linear() {
  auto bound = bind({{"in", true}, {"out", true}, {"bias", false}});
  if (!bound)
    return false;
  std::optional<int64_t> in = positive((*bound)[0], "in");
  std::optional<int64_t> out = positive((*bound)[1], "out");
  std::optional<bool> bias = optionalBool((*bound)[2], "bias", true);
  if (!in || !out || !bias || !fits(*out, *in))
    return false;
  double limit = linearInitBound(*in);
  elab.declareParam(instance, "weight", {*out, *in}, InitKind::uniform,
                    {-limit, limit}, loc);
  if (*bias)
    elab.declareParam(instance, "bias", {*out}, InitKind::uniform,
                      {-limit, limit}, loc);
  instance.features = *out;
  return true;
}

bool LayerBuilder::embedding() {
  auto bound = bind({{"n", true}, {"d", true}});
  if (!bound)
    return false;
  std::optional<int64_t> n = positive((*bound)[0], "the number of rows");
  std::optional<int64_t> d = positive((*bound)[1], "the embedding size");
  if (!n || !d || !fits(*n, *d))
    return false;
  instance.kind = LayerKind::Embedding;
  elab.declareParam(instance, "weight", {*n, *d}, InitKind::normal,
                    {0.0, 1.0}, loc);
  instance.features = *d;
  return true;
}

bool LayerBuilder::norm() {
  bool layerNorm = args.callee == "layer_norm";
  auto bound = bind({{"d", true}, {"eps", false}});
  if (!bound)
    return false;
  std::optional<int64_t> d = positive((*bound)[0], "the normalised size");
  std::optional<double> eps = epsilon((*bound)[1], layerNorm ? 1e-5 : 1e-6);
  if (!d || !eps)
    return false;
  instance.kind = layerNorm ? LayerKind::LayerNorm : LayerKind::RmsNorm;
  instance.eps = *eps;
  instance.features = *d;
  elab.declareParam(instance, "weight", {*d}, InitKind::ones, {}, loc);
  if (layerNorm)
    elab.declareParam(instance, "bias", {*d}, InitKind::zeros, {}, loc);
  return true;
}

bool LayerBuilder::multiHeadAttention() {
  auto bound = bind({{"d", true},
                     {"heads", true},
                     {"bias", false},
                     {"dropout", false}});
  if (!bound)
    return false;
  std::optional<int64_t> d = positive((*bound)[0], "the model size");
  std::optional<int64_t> heads = positive((*bound)[1], "the head count");
  std::optional<bool> bias = optionalBool((*bound)[2], "bias", true);
  std::optional<double> p = rate((*bound)[3]);
  if (!d || !heads || !bias || !p || !fits(3 * *d, *d))
    return false;
  if (*d % *heads != 0) {
    elab.error((*bound)[1]->loc) << "the model size " << *d
                                 << " is not divisible by " << *heads
                                 << " heads";
    return false;
  }
  instance.kind = LayerKind::MultiHeadAttention;
  instance.features = *d;
  instance.heads = *heads;
  instance.dropout = *p;
  // As nn.MultiheadAttention._reset_parameters: Xavier for the packed
  // projection, zero biases; out_proj keeps nn.Linear's weight init.
  elab.declareParam(instance, "in_proj_weight", {3 * *d, *d},
                    InitKind::xavier_uniform, {1.0}, loc);
  if (*bias)
    elab.declareParam(instance, "in_proj_bias", {3 * *d}, InitKind::zeros, {},
                      loc);
  addLinear("out_proj", *d, *d, *bias, /*zeroBias=*/true);
  return true;
}

bool LayerBuilder::feedForward() {
  auto bound = bind({{"d", true},
                     {"hidden", true},
                     {"activation", false},
                     {"dropout", false}});
  if (!bound)
    return false;
  std::optional<int64_t> d = positive((*bound)[0], "the model size");
  std::optional<int64_t> hidden = positive((*bound)[1], "the hidden size");
  std::optional<double> p = rate((*bound)[3]);
  std::optional<std::string> activation =
      stringifyActivation(Activation::relu).str();
  if ((*bound)[2])
    activation = elab.expectWord(*(*bound)[2], "the activation",
                                 activationKeywords());
  if (!d || !hidden || !p || !activation || !fits(*hidden, *d))
    return false;
  instance.kind = LayerKind::FeedForward;
  instance.features = *d;
  instance.dropout = *p;
  instance.activation = *symbolizeActivation(*activation);
  addLinear("linear1", *d, *hidden, true, false);
  addLinear("linear2", *hidden, *d, true, false);
  return true;
}
