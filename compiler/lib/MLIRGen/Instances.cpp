//===- Instances.cpp - Instantiating the model's layers -------------------===//
//
// Builds the tree of layer instances of a model: block arguments and `let`s
// evaluated, sub-layers and stacks instantiated (each block once per
// instance, with its own constants), and every parameter declared as an
// `attn.param` named by its dotted path, exactly as PyTorch's `state_dict`
// names it. Builtin layers get PyTorch's default initialisers unless their
// `init:` says otherwise; a model's or block's `init` statements apply once
// its members are all instantiated.
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
                              llvm::ArrayRef<int64_t> shape,
                              const Initializer &init, Location loc) {
  auto type = RankedTensorType::get(shape, builder.getF32Type());
  std::string symbol = instance.qualify(localName);
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(module.getBody(), module.getBody()->end());
  auto op = ParamOp::create(builder, loc, symbol, type, init.kind, init.args);
  instance.params[localName] = ParamRef{symbol, type, op};
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
  SmallVector<const ast::InitDecl *> inits;
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
      // No `init`: zeros, as `nn.Parameter(torch.zeros(...))`.
      FailureOr<Initializer> init = Initializer{InitKind::zeros, {}};
      if (const ast::CallExpr *initCall = param->getInit()) {
        Frame frame{&instance, {}, {}, /*constantOnly=*/true};
        init = evalInitializer(*initCall, frame);
        if (succeeded(init) && init->kind == InitKind::xavier_uniform &&
            shape->size() < 2) {
          error(initCall->getLoc())
              << "xavier_uniform needs a parameter of rank 2 or more";
          init = failure();
        }
      }
      if (failed(init)) {
        fail();
        continue;
      }
      declareParam(instance, name, *shape, *init, param->getLoc());
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
    if (auto *init = dyn_cast<ast::InitDecl>(member.get())) {
      inits.push_back(init);
      continue;
    }
    // `train` is handled with the model's fns.
  }
  // After the members, so that a statement may name a layer declared below
  // it; in order, so that a later statement overrides an earlier one.
  for (const ast::InitDecl *init : inits)
    applyInitDecl(instance, *init);
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
  CallArgs args = evalArgs(call, frame, /*exceptKeyword=*/"init");
  std::optional<Initializer> weightInit;
  if (failed(evalLayerInit(call, frame, weightInit)) || args.hasPoison())
    return nullptr;
  if (isBuiltinLayer(name))
    return instantiateBuiltinLayer(name, args, weightInit, std::move(path));
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
  LayerBuilder(Elaborator &elab, CallArgs &args,
               const std::optional<Initializer> &weightInit, Instance &instance)
      : elab(elab), args(args), weightInit(weightInit), instance(instance),
        loc(args.loc) {}

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

  /// Declares weight matrix `name` of `layer`: from `init:` when the layer
  /// has one, else from PyTorch's default `fallback`.
  void addWeight(Instance &layer, llvm::StringRef name, ArrayRef<int64_t> shape,
                 const Initializer &fallback) {
    elab.declareParam(layer, name, shape, weightInit.value_or(fallback), loc);
  }

  /// Declares bias `name` of `layer`: zeros with `init:`, as GPT-2 and BERT
  /// initialise them, else PyTorch's default `fallback`.
  void addBias(Instance &layer, llvm::StringRef name, ArrayRef<int64_t> shape,
               const Initializer &fallback) {
    elab.declareParam(layer, name, shape,
                      weightInit ? Initializer{InitKind::zeros, {}} : fallback,
                      loc);
  }

  /// Declares the weight and bias of an nn.Linear(in, out) in `layer`;
  /// `zeroBias` for a bias PyTorch's module zeroes itself.
  void declareLinear(Instance &layer, int64_t in, int64_t out, bool bias,
                     bool zeroBias) {
    double bound = linearInitBound(in);
    Initializer uniform{InitKind::uniform, {-bound, bound}};
    addWeight(layer, "weight", {out, in}, uniform);
    if (bias)
      addBias(layer, "bias", {out},
              zeroBias ? Initializer{InitKind::zeros, {}} : uniform);
    layer.features = out;
  }

  /// Adds an nn.Linear(in, out) as member `member` of the layer.
  void addLinear(llvm::StringRef member, int64_t in, int64_t out, bool bias,
                 bool zeroBias) {
    auto linear = std::make_unique<Instance>(LayerKind::Linear,
                                             instance.qualify(member), loc);
    linear->typeName = "linear";
    declareLinear(*linear, in, out, bias, zeroBias);
    instance.layers[member] = std::move(linear);
  }

  Elaborator &elab;
  CallArgs &args;
  const std::optional<Initializer> &weightInit;
  Instance &instance;
  Location loc;
};

/// A builtin layer: its name, the method that instantiates it, and whether
/// it takes `init:` (the layers with weight matrices).
struct BuiltinLayer {
  llvm::StringRef name;
  bool (LayerBuilder::*instantiate)();
  bool takesInit;
};
} // namespace

/// The builtin layers of LANGUAGE.md section 4.
static const BuiltinLayer kBuiltinLayers[] = {
    {"linear", &LayerBuilder::linear, true},
    {"embedding", &LayerBuilder::embedding, true},
    {"layer_norm", &LayerBuilder::norm, false},
    {"rms_norm", &LayerBuilder::norm, false},
    {"multi_head_attention", &LayerBuilder::multiHeadAttention, true},
    {"feed_forward", &LayerBuilder::feedForward, true},
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

SmallVector<StringRef> mlirgen::builtinLayersTakingInit() {
  SmallVector<StringRef> names;
  for (const BuiltinLayer &layer : kBuiltinLayers)
    if (layer.takesInit)
      names.push_back(layer.name);
  return names;
}

std::unique_ptr<Instance> Elaborator::instantiateBuiltinLayer(
    llvm::StringRef name, CallArgs &args,
    const std::optional<Initializer> &weightInit, std::string path) {
  const BuiltinLayer *layer = lookupBuiltinLayer(name);
  assert(layer && "not a builtin layer");
  auto instance =
      std::make_unique<Instance>(LayerKind::Linear, path, args.loc);
  instance->typeName = name.str();
  LayerBuilder layerBuilder(*this, args, weightInit, *instance);
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
  declareLinear(instance, *in, *out, *bias, /*zeroBias=*/false);
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
  addWeight(instance, "weight", {*n, *d}, {InitKind::normal, {0.0, 1.0}});
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
  elab.declareParam(instance, "weight", {*d}, {InitKind::ones, {}}, loc);
  if (layerNorm)
    elab.declareParam(instance, "bias", {*d}, {InitKind::zeros, {}}, loc);
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
  addWeight(instance, "in_proj_weight", {3 * *d, *d},
            {InitKind::xavier_uniform, {1.0}});
  if (*bias)
    addBias(instance, "in_proj_bias", {3 * *d}, {InitKind::zeros, {}});
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
