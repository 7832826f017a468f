//===- Builtins.cpp - Builtin functions and layers of the language --------===//
//
// The tensor functions of LANGUAGE.md section 3 and the forward computation
// of the builtin layers of section 4, each checking its arguments (count,
// keywords, kinds, ranges) before building `attn` ops, so that a mistake is
// reported at the argument that is wrong.
//
//===----------------------------------------------------------------------===//

#include "Elaborator.h"

#include "attn/Frontend/Suggestions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <cmath>

using namespace mlir;
using namespace attn;
using namespace attn::mlirgen;

std::optional<std::vector<std::optional<Arg>>>
Elaborator::bindArgs(CallArgs &args, llvm::ArrayRef<Formal> formals) {
  if (args.positional.size() > formals.size()) {
    error(args.positional[formals.size()].loc)
        << "'" << args.callee << "' takes at most " << formals.size()
        << " argument" << (formals.size() == 1 ? "" : "s") << ", got "
        << args.positional.size();
    return std::nullopt;
  }
  std::vector<std::optional<Arg>> bound(formals.size());
  for (auto [i, arg] : llvm::enumerate(args.positional))
    bound[i] = arg;
  bool ok = true;
  for (auto &[name, arg] : args.keywords) {
    auto *formal = llvm::find_if(
        formals, [&, &name = name](const Formal &f) { return f.name == name; });
    if (formal == formals.end()) {
      InFlightDiagnostic diag = error(arg.loc);
      diag << "'" << args.callee << "' has no argument '" << name << "'";
      if (!formals.empty()) {
        diag << "; expected ";
        llvm::interleaveComma(formals, diag,
                              [&](const Formal &f) { diag << f.name; });
        SmallVector<StringRef> names;
        for (const Formal &f : formals)
          names.push_back(f.name);
        diag << didYouMean(name, names);
      }
      ok = false;
      continue;
    }
    std::optional<Arg> &slot = bound[formal - formals.begin()];
    if (slot) {
      error(arg.loc) << "argument '" << name << "' of '" << args.callee
                     << "' is given twice";
      ok = false;
      continue;
    }
    slot = arg;
  }
  for (auto [formal, slot] : llvm::zip(formals, bound)) {
    if (formal.required && !slot) {
      error(args.loc) << "'" << args.callee << "' needs argument '"
                      << formal.name << "'";
      ok = false;
    }
  }
  if (!ok)
    return std::nullopt;
  return bound;
}

//===----------------------------------------------------------------------===//
// Vocabularies
//===----------------------------------------------------------------------===//

SmallVector<StringRef> mlirgen::activationKeywords() {
  SmallVector<StringRef> words =
      enumKeywords<Activation>(getMaxEnumValForActivation());
  llvm::erase(words, stringifyActivation(Activation::none));
  return words;
}

std::optional<Activation> mlirgen::lookupActivation(StringRef name) {
  std::optional<Activation> activation = symbolizeActivation(name);
  if (activation == Activation::none)
    return std::nullopt;
  return activation;
}

SmallVector<StringRef> mlirgen::maskKeywords() {
  return enumKeywords<MaskKind>(getMaxEnumValForMaskKind());
}

SmallVector<StringRef> mlirgen::elementTypeKeywords() {
  SmallVector<StringRef> words;
  for (int type = 0; type <= static_cast<int>(ast::ElementType::Bool); ++type)
    words.push_back(
        ast::getElementTypeName(static_cast<ast::ElementType>(type)));
  return words;
}

Value Elaborator::sizeOf(Value tensor, int64_t axis, Location loc) {
  auto type = cast<RankedTensorType>(tensor.getType());
  if (!type.isDynamicDim(axis))
    return arith::ConstantIndexOp::create(builder, loc, type.getDimSize(axis));
  return DimOp::create(builder, loc, tensor, axis);
}

static EvalValue tensorResult(Operation *op) {
  if (!op)
    return EvalValue::poison();
  return EvalValue::ofTensor(op->getResult(0));
}

/// Reshapes `x` to `shape`, taking each dynamic size from `sizes`.
static Value reshapeTo(OpBuilder &builder, Value x, ArrayRef<int64_t> shape,
                       ValueRange sizes, Location loc) {
  auto type = RankedTensorType::get(
      shape, cast<RankedTensorType>(x.getType()).getElementType());
  return ReshapeOp::create(builder, loc, type, x, sizes);
}

namespace {
/// One call of a builtin function or layer: the argument checks the builtins
/// share, and one method per builtin that checks its own arguments and builds
/// its ops.
class BuiltinCall {
public:
  BuiltinCall(Elaborator &elab, CallArgs &args)
      : elab(elab), builder(elab.builder), args(args), name(args.callee),
        loc(args.loc) {}

  //===--------------------------------------------------------------------===//
  // Argument checks
  //===--------------------------------------------------------------------===//

  std::optional<std::vector<std::optional<Arg>>>
  bind(ArrayRef<Formal> formals) {
    return elab.bindArgs(args, formals);
  }

  InFlightDiagnostic error(Location at) { return elab.error(at); }

  /// Normalises `axis` (negative counts from the end) for a tensor of `rank`.
  std::optional<int64_t> axis(const std::optional<Arg> &arg, int64_t rank,
                              int64_t fallback) {
    if (!arg)
      return fallback < 0 ? fallback + rank : fallback;
    std::optional<int64_t> value = elab.expectInt(*arg, "the axis");
    if (!value)
      return std::nullopt;
    if (*value < -rank || *value >= rank) {
      error(arg->loc) << "axis " << *value
                      << " is out of range for a tensor of rank " << rank;
      return std::nullopt;
    }
    return *value < 0 ? *value + rank : *value;
  }

  /// A dropout rate in [0, 1), 0 when absent.
  std::optional<double> rate(const std::optional<Arg> &arg) {
    if (!arg)
      return 0.0;
    std::optional<double> p = elab.expectNumber(*arg, "the dropout rate");
    if (p && !(*p >= 0 && *p < 1)) {
      error(arg->loc) << "the dropout rate must be in [0, 1), got "
                      << formatNumber(*p);
      return std::nullopt;
    }
    return p;
  }

  /// An attention mask word, `none` when absent.
  std::optional<MaskKind> mask(const std::optional<Arg> &arg) {
    if (!arg)
      return MaskKind::none;
    std::optional<std::string> word =
        elab.expectWord(*arg, "the mask", maskKeywords());
    if (!word)
      return std::nullopt;
    return symbolizeMaskKind(*word);
  }

  /// A float tensor.
  Value floatTensor(const std::optional<Arg> &arg, llvm::StringRef what) {
    Value v = elab.expectTensor(*arg, what);
    if (v && !isa<FloatType>(cast<RankedTensorType>(v.getType())
                                 .getElementType())) {
      error(arg->loc) << what << " must be a float tensor, got "
                      << arg->value.describe();
      return nullptr;
    }
    return v;
  }

  /// An integer (id) tensor.
  Value idTensor(const std::optional<Arg> &arg, llvm::StringRef what) {
    Value v = elab.expectTensor(*arg, what);
    if (v && !cast<RankedTensorType>(v.getType()).getElementType().isInteger(32))
      if (!cast<RankedTensorType>(v.getType()).getElementType().isInteger(64)) {
        error(arg->loc) << what << " must be an i32 tensor, got "
                        << arg->value.describe();
        return nullptr;
      }
    return v;
  }

  /// A boolean tensor.
  Value boolTensor(const std::optional<Arg> &arg, llvm::StringRef what) {
    Value v = elab.expectTensor(*arg, what);
    if (v && !cast<RankedTensorType>(v.getType()).getElementType().isInteger(1)) {
      error(arg->loc) << what << " must be a bool tensor, got "
                      << arg->value.describe();
      return nullptr;
    }
    return v;
  }

  /// A run-time or constant size as an `index` value; its static value, if
  /// known, in `staticSize`.
  Value size(const std::optional<Arg> &arg, llvm::StringRef what,
             int64_t &staticSize) {
    const EvalValue &v = arg->value;
    staticSize = ShapedType::kDynamic;
    if (v.getKind() == EvalValue::Kind::Size)
      return v.getValue();
    std::optional<int64_t> n = elab.expectInt(*arg, what);
    if (!n)
      return nullptr;
    if (*n <= 0) {
      error(arg->loc) << what << " must be positive, got " << *n;
      return nullptr;
    }
    staticSize = *n;
    return arith::ConstantIndexOp::create(builder, arg->loc, *n);
  }

  /// The value of a parameter of a builtin layer, or null when the layer has
  /// none by that name (a linear without bias).
  Value param(Instance &layer, llvm::StringRef paramName) {
    auto it = layer.params.find(paramName);
    if (it == layer.params.end())
      return nullptr;
    return elab.readParam(it->second, loc);
  }

  /// Checks that `x`, the argument `arg` of a call of `layer`, has the
  /// `features` the layer takes as its last dim, naming both when not; a
  /// dynamic last dim is checked when the program runs.
  bool takesFeatures(Instance &layer, llvm::StringRef role, const Arg &arg,
                     Value x, int64_t features) {
    auto type = cast<RankedTensorType>(x.getType());
    if (type.getRank() == 0 || type.isDynamicDim(type.getRank() - 1) ||
        type.getShape().back() == features)
      return true;
    elab.reportOperands(loc, args.call, {{role, arg.expr, x}},
                        layer.typeName + " '" + layer.path + "' takes " +
                            Twine(features) + " features");
    return false;
  }

  /// A float tensor of rank 3, [B, T, d], for attention layers.
  Value sequenceInput(const std::optional<Arg> &arg, llvm::StringRef what) {
    Value x = elab.expectTensor(*arg, what);
    if (!x)
      return nullptr;
    auto type = cast<RankedTensorType>(x.getType());
    if (type.getRank() != 3 || !isa<FloatType>(type.getElementType())) {
      error(arg->loc) << what << " of multi_head_attention must be a "
                      << "[B, T, d] float tensor, got "
                      << arg->value.describe();
      return nullptr;
    }
    return x;
  }

  //===--------------------------------------------------------------------===//
  // Builtin functions
  //===--------------------------------------------------------------------===//

  EvalValue activation();
  /// exp, log, sqrt of a tensor.
  template <typename OpTy>
  EvalValue unaryMath();
  EvalValue matmul();
  EvalValue transpose();
  EvalValue reshape();
  EvalValue splitHeads();
  EvalValue mergeHeads();
  EvalValue concat();
  EvalValue slice();
  EvalValue take();
  /// softmax and log_softmax.
  template <typename OpTy>
  EvalValue softmax();
  /// sum, mean and max.
  EvalValue reduce();
  EvalValue tensorMin();
  EvalValue attention();
  EvalValue gather();
  EvalValue positions();
  EvalValue sinusoidal();
  EvalValue rope();
  EvalValue dropout();
  EvalValue crossEntropy();
  EvalValue castElements();

  //===--------------------------------------------------------------------===//
  // The forward computation of builtin layers
  //===--------------------------------------------------------------------===//

  EvalValue linearLayer(Instance &layer);
  EvalValue embeddingLayer(Instance &layer);
  /// layer_norm and rms_norm.
  EvalValue normLayer(Instance &layer);
  EvalValue feedForwardLayer(Instance &layer);
  EvalValue multiHeadAttentionLayer(Instance &layer);

private:
  /// `attention(q, k, v, ...)` on [B, H, T, D] tensors, or on [B, T, D] ones
  /// seen as a single head.
  EvalValue buildAttention(Value q, Value k, Value v, Value keyPadding,
                           MaskKind maskKind, std::optional<double> scale,
                           double dropoutRate);
  /// A [B, T, D] tensor as [B, 1, T, D].
  Value addHeadDim(Value x);

  Elaborator &elab;
  OpBuilder &builder;
  CallArgs &args;
  llvm::StringRef name;
  Location loc;
};

/// The method of BuiltinCall that elaborates calls of one builtin function.
using ElaborateFn = EvalValue (BuiltinCall::*)();

/// A builtin function: its name and the method that elaborates a call.
struct BuiltinFunction {
  llvm::StringRef name;
  ElaborateFn elaborate;
};
} // namespace

/// The builtin functions of LANGUAGE.md section 3 but the activations, which
/// are the cases of the dialect's Activation enum (activationKeywords()).
static const BuiltinFunction kBuiltinFunctions[] = {
    {"matmul", &BuiltinCall::matmul},
    {"transpose", &BuiltinCall::transpose},
    {"reshape", &BuiltinCall::reshape},
    {"split_heads", &BuiltinCall::splitHeads},
    {"merge_heads", &BuiltinCall::mergeHeads},
    {"concat", &BuiltinCall::concat},
    {"slice", &BuiltinCall::slice},
    {"take", &BuiltinCall::take},
    {"exp", &BuiltinCall::unaryMath<ExpOp>},
    {"log", &BuiltinCall::unaryMath<LogOp>},
    {"sqrt", &BuiltinCall::unaryMath<SqrtOp>},
    {"softmax", &BuiltinCall::softmax<SoftmaxOp>},
    {"log_softmax", &BuiltinCall::softmax<LogSoftmaxOp>},
    {"sum", &BuiltinCall::reduce},
    {"mean", &BuiltinCall::reduce},
    {"max", &BuiltinCall::reduce},
    {"min", &BuiltinCall::tensorMin},
    {"attention", &BuiltinCall::attention},
    {"gather", &BuiltinCall::gather},
    {"positions", &BuiltinCall::positions},
    {"sinusoidal", &BuiltinCall::sinusoidal},
    {"rope", &BuiltinCall::rope},
    {"dropout", &BuiltinCall::dropout},
    {"cross_entropy", &BuiltinCall::crossEntropy},
    {"cast", &BuiltinCall::castElements},
};

/// The method that elaborates a call of builtin function `name`, or null.
static ElaborateFn lookupBuiltinFunction(StringRef name) {
  if (lookupActivation(name))
    return &BuiltinCall::activation;
  for (const BuiltinFunction &function : kBuiltinFunctions)
    if (function.name == name)
      return function.elaborate;
  return nullptr;
}

bool Elaborator::isBuiltinFunction(llvm::StringRef name) const {
  return lookupBuiltinFunction(name) != nullptr;
}

SmallVector<StringRef> mlirgen::builtinFunctionNames() {
  SmallVector<StringRef> names = activationKeywords();
  for (const BuiltinFunction &function : kBuiltinFunctions)
    names.push_back(function.name);
  return names;
}

//===----------------------------------------------------------------------===//
// Builtin functions
//===----------------------------------------------------------------------===//

/// Computes a math function of a constant, for `let d2 = sqrt(d)`.
static EvalValue constantMath(Elaborator &elab, llvm::StringRef name,
                              const Arg &arg) {
  std::optional<double> x = elab.expectNumber(arg, "the argument of " + name.str());
  if (!x)
    return EvalValue::poison();
  double r = name == "sqrt" ? std::sqrt(*x)
             : name == "exp" ? std::exp(*x)
                             : std::log(*x);
  if (!std::isfinite(r)) {
    elab.error(arg.loc) << name << "(" << formatNumber(*x)
                        << ") is not a finite number";
    return EvalValue::poison();
  }
  return EvalValue::ofFloat(r);
}

/// The value of a builtin applied to constants (sqrt, exp and log of a
/// number, min and max of two), usable in `let` and sizes; nothing for any
/// other call.
static std::optional<EvalValue> constantFunction(Elaborator &elab,
                                                 CallArgs &args) {
  llvm::StringRef name = args.callee;
  if (!args.keywords.empty())
    return std::nullopt;
  if ((name == "sqrt" || name == "exp" || name == "log") &&
      args.positional.size() == 1 && args.positional[0].value.isNumber())
    return constantMath(elab, name, args.positional[0]);
  if ((name == "min" || name == "max") && args.positional.size() == 2 &&
      args.positional[0].value.isNumber() &&
      args.positional[1].value.isNumber()) {
    const EvalValue &a = args.positional[0].value, &b = args.positional[1].value;
    bool pickA = name == "min" ? a.getNumber() <= b.getNumber()
                               : a.getNumber() >= b.getNumber();
    return pickA ? a : b;
  }
  return std::nullopt;
}

EvalValue Elaborator::callBuiltinFunction(CallArgs &args, Frame &frame) {
  if (std::optional<EvalValue> constant = constantFunction(*this, args))
    return *constant;
  if (frame.constantOnly) {
    error(args.loc) << "'" << args.callee
                    << "' does not give a compile-time constant "
                    << "here; a constant may use numbers, + - * / // %, sqrt, "
                       "min and max";
    return EvalValue::poison();
  }
  ElaborateFn elaborate = lookupBuiltinFunction(args.callee);
  assert(elaborate && "not a builtin function");
  BuiltinCall call(*this, args);
  return (call.*elaborate)();
}

EvalValue BuiltinCall::activation() {
  auto bound = bind({{"x", true}});
  if (!bound)
    return EvalValue::poison();
  Value x = floatTensor((*bound)[0], "the argument of " + name.str());
  if (!x)
    return EvalValue::poison();
  return EvalValue::ofTensor(
      createActivation(builder, loc, *lookupActivation(name), x));
}

template <typename OpTy>
EvalValue BuiltinCall::unaryMath() {
  auto bound = bind({{"x", true}});
  if (!bound)
    return EvalValue::poison();
  Value x = floatTensor((*bound)[0], "the argument of " + name.str());
  if (!x)
    return EvalValue::poison();
  return EvalValue::ofTensor(OpTy::create(builder, loc, x));
}

EvalValue BuiltinCall::matmul() {
  auto bound = bind({{"a", true}, {"b", true}});
  if (!bound)
    return EvalValue::poison();
  Value a = floatTensor((*bound)[0], "the first operand of matmul");
  Value b = floatTensor((*bound)[1], "the second operand of matmul");
  if (!a || !b)
    return EvalValue::poison();
  Elaborator::Operand first{"the first argument", (*bound)[0]->expr, a};
  Elaborator::Operand second{"the second argument", (*bound)[1]->expr, b};
  return tensorResult(elab.tryCreateReporting<MatmulOp>(
      loc,
      [&] {
        elab.reportOperands(loc, args.call, {first, second},
                            Elaborator::explainMatmulShapes(first, second));
      },
      a, b));
}

EvalValue BuiltinCall::transpose() {
  auto bound = bind({{"x", true}, {"a", false}, {"b", false}});
  if (!bound)
    return EvalValue::poison();
  Value x = elab.expectTensor(*(*bound)[0], "the argument of transpose");
  if (!x)
    return EvalValue::poison();
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  if (rank < 2) {
    error((*bound)[0]->loc) << "transpose needs a tensor of rank 2 or more, "
                            << "got " << (*bound)[0]->value.describe();
    return EvalValue::poison();
  }
  if ((*bound)[1].has_value() != (*bound)[2].has_value()) {
    error(loc) << "transpose takes no dims (the last two) or two dims";
    return EvalValue::poison();
  }
  std::optional<int64_t> a = axis((*bound)[1], rank, -2);
  std::optional<int64_t> b = axis((*bound)[2], rank, -1);
  if (!a || !b)
    return EvalValue::poison();
  SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  std::swap(perm[*a], perm[*b]);
  return tensorResult(elab.tryCreate<TransposeOp>(loc, x, perm));
}

EvalValue BuiltinCall::reshape() {
  auto bound = bind({{"x", true}, {"shape", true}});
  if (!bound)
    return EvalValue::poison();
  Value x = elab.expectTensor(*(*bound)[0], "the argument of reshape");
  if (!x)
    return EvalValue::poison();
  const Arg &shapeArg = *(*bound)[1];
  if (shapeArg.value.getKind() != EvalValue::Kind::List) {
    error(shapeArg.loc) << "the shape of reshape must be a list like "
                           "[B, T, 4, 48], got "
                        << shapeArg.value.describe();
    return EvalValue::poison();
  }
  SmallVector<int64_t> shape;
  SmallVector<Value> sizes;
  for (const EvalValue &dim : shapeArg.value.getElements()) {
    int64_t staticSize;
    std::optional<Arg> dimArg = Arg{dim, shapeArg.loc};
    Value sizeValue = size(dimArg, "a size of reshape", staticSize);
    if (!sizeValue)
      return EvalValue::poison();
    shape.push_back(staticSize);
    if (ShapedType::isDynamic(staticSize))
      sizes.push_back(sizeValue);
  }
  auto input = cast<RankedTensorType>(x.getType());
  if (input.hasStaticShape() && llvm::none_of(shape, ShapedType::isDynamic) &&
      input.getNumElements() != ShapedType::getNumElements(shape)) {
    error(loc) << "cannot reshape " << (*bound)[0]->value.describe() << " ("
               << input.getNumElements() << " elements) to "
               << ShapedType::getNumElements(shape) << " elements";
    return EvalValue::poison();
  }
  return EvalValue::ofTensor(reshapeTo(builder, x, shape, sizes, loc));
}

EvalValue BuiltinCall::splitHeads() {
  auto bound = bind({{"x", true}, {"heads", true}});
  if (!bound)
    return EvalValue::poison();
  Value x = floatTensor((*bound)[0], "the argument of split_heads");
  std::optional<int64_t> heads = elab.expectInt(*(*bound)[1], "the head count");
  if (!x || !heads)
    return EvalValue::poison();
  if (*heads <= 0) {
    error((*bound)[1]->loc) << "the head count must be positive";
    return EvalValue::poison();
  }
  return tensorResult(elab.tryCreate<SplitHeadsOp>(loc, x, *heads));
}

EvalValue BuiltinCall::mergeHeads() {
  auto bound = bind({{"x", true}});
  if (!bound)
    return EvalValue::poison();
  Value x = floatTensor((*bound)[0], "the argument of merge_heads");
  if (!x)
    return EvalValue::poison();
  return tensorResult(elab.tryCreate<MergeHeadsOp>(loc, x));
}

EvalValue BuiltinCall::concat() {
  // Variadic: every positional argument is a tensor.
  CallArgs keywordsOnly{loc, name, {}, args.keywords};
  auto bound = elab.bindArgs(keywordsOnly, {{"axis", false}});
  if (!bound)
    return EvalValue::poison();
  if (args.positional.empty()) {
    error(loc) << "concat needs at least one tensor";
    return EvalValue::poison();
  }
  SmallVector<Value> inputs;
  for (const Arg &arg : args.positional) {
    Value t = elab.expectTensor(arg, "an argument of concat");
    if (!t)
      return EvalValue::poison();
    inputs.push_back(t);
  }
  int64_t rank = cast<RankedTensorType>(inputs[0].getType()).getRank();
  std::optional<int64_t> concatAxis = axis((*bound)[0], rank, 0);
  if (!concatAxis)
    return EvalValue::poison();
  return tensorResult(elab.tryCreate<ConcatOp>(loc, inputs, *concatAxis));
}

EvalValue BuiltinCall::slice() {
  auto bound =
      bind({{"x", true}, {"axis", true}, {"start", false}, {"end", false}});
  if (!bound)
    return EvalValue::poison();
  Value x = elab.expectTensor(*(*bound)[0], "the argument of " + name.str());
  if (!x)
    return EvalValue::poison();
  auto type = cast<RankedTensorType>(x.getType());
  std::optional<int64_t> sliceAxis = axis((*bound)[1], type.getRank(), 0);
  if (!sliceAxis)
    return EvalValue::poison();
  int64_t dim = type.getDimSize(*sliceAxis);
  // A bound of the slice; a negative one counts from the end.
  auto bound1 = [&](const std::optional<Arg> &arg, llvm::StringRef what,
                    std::optional<int64_t> fallback) -> std::optional<int64_t> {
    std::optional<int64_t> v = arg ? elab.expectInt(*arg, what) : fallback;
    if (!arg && !v) {
      error(loc) << "slice of a dynamic dimension needs an explicit end";
      return std::nullopt;
    }
    if (v && *v < 0) {
      if (ShapedType::isDynamic(dim)) {
        error(arg->loc) << "a negative " << what
                        << " needs a dimension of static size";
        return std::nullopt;
      }
      *v += dim;
    }
    return v;
  };
  std::optional<int64_t> start = bound1((*bound)[2], "start", 0);
  std::optional<int64_t> end = bound1(
      (*bound)[3], "end",
      ShapedType::isDynamic(dim) ? std::nullopt : std::optional<int64_t>(dim));
  if (!start || !end)
    return EvalValue::poison();
  return tensorResult(
      elab.tryCreate<SliceOp>(loc, x, *sliceAxis, *start, *end));
}

EvalValue BuiltinCall::take() {
  auto bound = bind({{"x", true}, {"axis", true}, {"index", true}});
  if (!bound)
    return EvalValue::poison();
  Value x = elab.expectTensor(*(*bound)[0], "the argument of " + name.str());
  if (!x)
    return EvalValue::poison();
  auto type = cast<RankedTensorType>(x.getType());
  std::optional<int64_t> takeAxis = axis((*bound)[1], type.getRank(), 0);
  if (!takeAxis)
    return EvalValue::poison();
  std::optional<int64_t> index = elab.expectInt(*(*bound)[2], "the index");
  if (!index)
    return EvalValue::poison();
  return tensorResult(elab.tryCreate<TakeOp>(loc, x, *takeAxis, *index));
}

template <typename OpTy>
EvalValue BuiltinCall::softmax() {
  auto bound = bind({{"x", true}, {"axis", false}});
  if (!bound)
    return EvalValue::poison();
  Value x = floatTensor((*bound)[0], "the argument of " + name.str());
  if (!x)
    return EvalValue::poison();
  std::optional<int64_t> softmaxAxis =
      axis((*bound)[1], cast<RankedTensorType>(x.getType()).getRank(), -1);
  if (!softmaxAxis)
    return EvalValue::poison();
  return EvalValue::ofTensor(OpTy::create(builder, loc, x, *softmaxAxis));
}

EvalValue BuiltinCall::reduce() {
  auto bound = bind({{"x", true}, {"axis", false}, {"mask", false}});
  if (!bound)
    return EvalValue::poison();
  Value x = floatTensor((*bound)[0], "the argument of " + name.str());
  if (!x)
    return EvalValue::poison();
  ReduceKind kind = *symbolizeReduceKind(name);
  Value maskValue;
  if ((*bound)[2]) {
    if (kind != ReduceKind::mean) {
      error((*bound)[2]->loc) << "only mean takes a mask";
      return EvalValue::poison();
    }
    maskValue = boolTensor((*bound)[2], "the mask");
    if (!maskValue)
      return EvalValue::poison();
  }
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  if (!(*bound)[1]) {
    // No axis: reduce every dimension, last first.
    if (maskValue) {
      error(loc) << "a masked mean needs an axis";
      return EvalValue::poison();
    }
    Value result = x;
    for (int64_t a = rank - 1; a >= 0; --a) {
      result = elab.tryBuild<ReduceOp>(loc, kind, result, a, Value());
      if (!result)
        return EvalValue::poison();
    }
    return EvalValue::ofTensor(result);
  }
  std::optional<int64_t> reduceAxis = axis((*bound)[1], rank, 0);
  if (!reduceAxis)
    return EvalValue::poison();
  return tensorResult(
      elab.tryCreate<ReduceOp>(loc, kind, x, *reduceAxis, maskValue));
}

/// `min` of anything but two numbers (those are constantFunction's).
EvalValue BuiltinCall::tensorMin() {
  error(loc) << "min takes two numbers; a tensor reduction is sum, mean "
                "or max";
  return EvalValue::poison();
}

EvalValue BuiltinCall::attention() {
  auto bound = bind({{"q", true},
                     {"k", true},
                     {"v", true},
                     {"mask", false},
                     {"key_padding", false},
                     {"scale", false},
                     {"dropout", false}});
  if (!bound)
    return EvalValue::poison();
  Value q = floatTensor((*bound)[0], "the query");
  Value k = floatTensor((*bound)[1], "the key");
  Value v = floatTensor((*bound)[2], "the value");
  std::optional<MaskKind> maskKind = mask((*bound)[3]);
  Value keyPadding;
  if ((*bound)[4]) {
    keyPadding = boolTensor((*bound)[4], "the key padding");
    if (!keyPadding)
      return EvalValue::poison();
  }
  std::optional<double> scale;
  if ((*bound)[5]) {
    scale = elab.expectNumber(*(*bound)[5], "the scale");
    if (!scale)
      return EvalValue::poison();
    if (!(*scale > 0)) {
      error((*bound)[5]->loc) << "the scale must be positive";
      return EvalValue::poison();
    }
  }
  std::optional<double> dropoutRate = rate((*bound)[6]);
  if (!q || !k || !v || !maskKind || !dropoutRate)
    return EvalValue::poison();
  return buildAttention(q, k, v, keyPadding, *maskKind, scale, *dropoutRate);
}

Value BuiltinCall::addHeadDim(Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<Value> sizes;
  for (int64_t a : {0, 1, 2})
    if (type.isDynamicDim(a))
      sizes.push_back(elab.sizeOf(x, a, loc));
  return reshapeTo(
      builder, x,
      {type.getDimSize(0), 1, type.getDimSize(1), type.getDimSize(2)}, sizes,
      loc);
}

EvalValue BuiltinCall::buildAttention(Value q, Value k, Value v,
                                      Value keyPadding, MaskKind maskKind,
                                      std::optional<double> scale,
                                      double dropoutRate) {
  int64_t rank = cast<RankedTensorType>(q.getType()).getRank();
  for (Value t : {k, v}) {
    if (cast<RankedTensorType>(t.getType()).getRank() != rank) {
      error(loc) << "query, key and value of attention must have the "
                    "same rank";
      return EvalValue::poison();
    }
  }
  if (rank != 3 && rank != 4) {
    error(loc) << "attention takes [B, T, D] or [B, H, T, D] tensors, "
                  "got rank "
               << rank;
    return EvalValue::poison();
  }
  Value q4 = rank == 3 ? addHeadDim(q) : q;
  Value k4 = rank == 3 ? addHeadDim(k) : k;
  Value v4 = rank == 3 ? addHeadDim(v) : v;
  FloatAttr scaleAttr = scale ? builder.getF64FloatAttr(*scale) : FloatAttr();
  SdpaOp sdpa = elab.tryCreate<SdpaOp>(loc, q4, k4, v4, keyPadding,
                                       /*seed=*/Value(), maskKind, scaleAttr,
                                       APFloat(dropoutRate), IntegerAttr());
  if (!sdpa)
    return EvalValue::poison();
  Value output = sdpa.getResult();
  if (rank == 4)
    return EvalValue::ofTensor(output);
  auto type = cast<RankedTensorType>(output.getType());
  SmallVector<Value> sizes;
  for (int64_t a : {0, 2, 3})
    if (type.isDynamicDim(a))
      sizes.push_back(elab.sizeOf(output, a, loc));
  return EvalValue::ofTensor(reshapeTo(
      builder, output,
      {type.getDimSize(0), type.getDimSize(2), type.getDimSize(3)}, sizes,
      loc));
}

EvalValue BuiltinCall::gather() {
  auto bound = bind({{"table", true}, {"ids", true}});
  if (!bound)
    return EvalValue::poison();
  Value table = floatTensor((*bound)[0], "the table");
  Value ids = idTensor((*bound)[1], "the ids");
  if (!table || !ids)
    return EvalValue::poison();
  return tensorResult(elab.tryCreate<GatherOp>(loc, table, ids));
}

EvalValue BuiltinCall::positions() {
  auto bound = bind({{"n", true}});
  if (!bound)
    return EvalValue::poison();
  int64_t length;
  Value n = size((*bound)[0], "the length", length);
  if (!n)
    return EvalValue::poison();
  return EvalValue::ofTensor(PositionsOp::create(
      builder, loc, RankedTensorType::get({length}, builder.getI32Type()), n,
      /*start=*/Value()));
}

EvalValue BuiltinCall::sinusoidal() {
  auto bound = bind({{"n", true}, {"d", true}});
  if (!bound)
    return EvalValue::poison();
  int64_t length;
  Value n = size((*bound)[0], "the length", length);
  if (!n)
    return EvalValue::poison();
  std::optional<int64_t> d = elab.expectInt(*(*bound)[1], "the feature size");
  if (!d)
    return EvalValue::poison();
  if (*d <= 0) {
    error((*bound)[1]->loc) << "the feature size must be positive";
    return EvalValue::poison();
  }
  return EvalValue::ofTensor(SinusoidalOp::create(
      builder, loc, RankedTensorType::get({length, *d}, builder.getF32Type()),
      n, /*start=*/Value()));
}

EvalValue BuiltinCall::rope() {
  auto bound = bind({{"x", true}, {"pos", true}, {"base", false}});
  if (!bound)
    return EvalValue::poison();
  Value x = floatTensor((*bound)[0], "the argument of rope");
  Value pos = elab.expectTensor(*(*bound)[1], "the positions");
  std::optional<double> base =
      (*bound)[2] ? elab.expectNumber(*(*bound)[2], "the base") : 10000.0;
  if (!x || !pos || !base)
    return EvalValue::poison();
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getRank() < 2 || type.isDynamicDim(type.getRank() - 1) ||
      type.getShape().back() % 2 != 0) {
    error((*bound)[0]->loc)
        << "rope needs x as [..., T, D] with D a constant even size, got "
        << (*bound)[0]->value.describe();
    return EvalValue::poison();
  }
  auto posType = cast<RankedTensorType>(pos.getType());
  if (posType.getRank() != 1 || !posType.getElementType().isInteger(32)) {
    error((*bound)[1]->loc) << "the positions of rope must be an i32[T] "
                               "tensor like positions(T), got "
                            << (*bound)[1]->value.describe();
    return EvalValue::poison();
  }
  if (!(*base > 0) || !std::isfinite(*base)) {
    error((*bound)[2]->loc)
        << "the base of rope must be positive, got " << formatNumber(*base);
    return EvalValue::poison();
  }
  return tensorResult(elab.tryCreate<RopeOp>(
      loc, x, pos, builder.getF64FloatAttr(*base), UnitAttr()));
}

EvalValue BuiltinCall::dropout() {
  auto bound = bind({{"x", true}, {"p", true}});
  if (!bound)
    return EvalValue::poison();
  Value x = floatTensor((*bound)[0], "the argument of dropout");
  std::optional<double> p = rate((*bound)[1]);
  if (!x || !p)
    return EvalValue::poison();
  return EvalValue::ofTensor(DropoutOp::create(builder, loc, x, APFloat(*p)));
}

EvalValue BuiltinCall::crossEntropy() {
  auto bound = bind({{"logits", true},
                     {"targets", true},
                     {"ignore_index", false},
                     {"label_smoothing", false}});
  if (!bound)
    return EvalValue::poison();
  Value logits = floatTensor((*bound)[0], "the logits");
  Value targets = idTensor((*bound)[1], "the targets");
  if (!logits || !targets)
    return EvalValue::poison();
  IntegerAttr ignoreIndex;
  if ((*bound)[2]) {
    std::optional<int64_t> index = elab.expectInt(*(*bound)[2], "ignore_index");
    if (!index)
      return EvalValue::poison();
    ignoreIndex = builder.getI64IntegerAttr(*index);
  }
  double smoothing = 0;
  if ((*bound)[3]) {
    std::optional<double> e =
        elab.expectNumber(*(*bound)[3], "label_smoothing");
    if (!e)
      return EvalValue::poison();
    if (!(*e >= 0 && *e <= 1)) {
      error((*bound)[3]->loc) << "label_smoothing must be in [0, 1], got "
                              << formatNumber(*e);
      return EvalValue::poison();
    }
    smoothing = *e;
  }
  auto l = cast<RankedTensorType>(logits.getType());
  auto t = cast<RankedTensorType>(targets.getType());
  bool compatible = l.getRank() >= 1 && t.getRank() == l.getRank() - 1;
  for (int64_t d = 0; compatible && d < t.getRank(); ++d)
    compatible = l.getDimSize(d) == t.getDimSize(d) || l.isDynamicDim(d) ||
                 t.isDynamicDim(d);
  if (!compatible) {
    error(loc) << "cross_entropy needs targets shaped like the logits "
                  "without their last dimension; got logits "
               << (*bound)[0]->value.describe() << " and targets "
               << (*bound)[1]->value.describe();
    return EvalValue::poison();
  }
  return EvalValue::ofTensor(CrossEntropyOp::create(
      builder, loc, logits, targets, ignoreIndex, APFloat(smoothing)));
}

EvalValue BuiltinCall::castElements() {
  auto bound = bind({{"x", true}, {"type", true}});
  if (!bound)
    return EvalValue::poison();
  Value x = elab.expectTensor(*(*bound)[0], "the argument of cast");
  std::optional<std::string> type =
      elab.expectWord(*(*bound)[1], "the type", elementTypeKeywords());
  if (!x || !type)
    return EvalValue::poison();
  Type element = getElementType(builder, *ast::lookupElementType(*type));
  auto input = cast<RankedTensorType>(x.getType());
  return EvalValue::ofTensor(
      CastOp::create(builder, loc, input.clone(element), x));
}

//===----------------------------------------------------------------------===//
// Builtin layers
//===----------------------------------------------------------------------===//

EvalValue Elaborator::callBuiltinLayer(Instance &layer, CallArgs &args) {
  BuiltinCall call(*this, args);
  switch (layer.kind) {
  case LayerKind::Linear:
    return call.linearLayer(layer);
  case LayerKind::Embedding:
    return call.embeddingLayer(layer);
  case LayerKind::LayerNorm:
  case LayerKind::RmsNorm:
    return call.normLayer(layer);
  case LayerKind::FeedForward:
    return call.feedForwardLayer(layer);
  case LayerKind::MultiHeadAttention:
    return call.multiHeadAttentionLayer(layer);
  default:
    llvm_unreachable("not a builtin layer");
  }
}

EvalValue BuiltinCall::linearLayer(Instance &layer) {
  auto bound = bind({{"x", true}});
  if (!bound)
    return EvalValue::poison();
  Value x = floatTensor((*bound)[0], "the input of linear");
  if (!x || !takesFeatures(layer, "the input", *(*bound)[0], x,
                           layer.params["weight"].type.getDimSize(1)))
    return EvalValue::poison();
  return tensorResult(elab.tryCreate<LinearOp>(loc, x, param(layer, "weight"),
                                               param(layer, "bias"), Value(),
                                               Activation::none));
}

EvalValue BuiltinCall::embeddingLayer(Instance &layer) {
  auto bound = bind({{"ids", true}});
  if (!bound)
    return EvalValue::poison();
  Value ids = idTensor((*bound)[0], "the ids of embedding");
  if (!ids)
    return EvalValue::poison();
  return tensorResult(
      elab.tryCreate<GatherOp>(loc, param(layer, "weight"), ids));
}

EvalValue BuiltinCall::normLayer(Instance &layer) {
  auto bound = bind({{"x", true}});
  if (!bound)
    return EvalValue::poison();
  Value x = floatTensor((*bound)[0], "the input of " + layer.typeName);
  if (!x || !takesFeatures(layer, "the input", *(*bound)[0], x, layer.features))
    return EvalValue::poison();
  Value weight = param(layer, "weight");
  if (layer.kind == LayerKind::LayerNorm)
    return tensorResult(elab.tryCreate<LayerNormOp>(
        loc, x, weight, param(layer, "bias"), Value(), APFloat(layer.eps)));
  return tensorResult(
      elab.tryCreate<RmsNormOp>(loc, x, weight, Value(), APFloat(layer.eps)));
}

EvalValue BuiltinCall::feedForwardLayer(Instance &layer) {
  auto bound = bind({{"x", true}});
  if (!bound)
    return EvalValue::poison();
  Value x = floatTensor((*bound)[0], "the input of feed_forward");
  if (!x || !takesFeatures(layer, "the input", *(*bound)[0], x, layer.features))
    return EvalValue::poison();
  Instance &l1 = *layer.layers["linear1"], &l2 = *layer.layers["linear2"];
  LinearOp hidden =
      elab.tryCreate<LinearOp>(loc, x, param(l1, "weight"), param(l1, "bias"),
                               Value(), layer.activation);
  if (!hidden)
    return EvalValue::poison();
  Value h = hidden;
  if (layer.dropout > 0)
    h = DropoutOp::create(builder, loc, h, APFloat(layer.dropout));
  return tensorResult(elab.tryCreate<LinearOp>(
      loc, h, param(l2, "weight"), param(l2, "bias"), Value(),
      Activation::none));
}

EvalValue BuiltinCall::multiHeadAttentionLayer(Instance &layer) {
  auto bound = bind({{"x", true},
                     {"memory", false},
                     {"mask", false},
                     {"key_padding", false}});
  if (!bound)
    return EvalValue::poison();
  Value x = sequenceInput((*bound)[0], "the input");
  if (x && !takesFeatures(layer, "the input", *(*bound)[0], x, layer.features))
    return EvalValue::poison();
  Value memory;
  if ((*bound)[1]) {
    memory = sequenceInput((*bound)[1], "the memory");
    if (!memory || !takesFeatures(layer, "the memory", *(*bound)[1], memory,
                                  layer.features))
      return EvalValue::poison();
  }
  std::optional<MaskKind> maskKind = mask((*bound)[2]);
  Value keyPadding;
  if ((*bound)[3]) {
    keyPadding = boolTensor((*bound)[3], "the key padding");
    if (!keyPadding)
      return EvalValue::poison();
  }
  if (!x || !maskKind)
    return EvalValue::poison();
  int64_t d = layer.features;
  Value weight = param(layer, "in_proj_weight");
  Value bias = param(layer, "in_proj_bias");
  auto sliceRows = [&](Value t, int64_t begin, int64_t end) -> Value {
    return t ? elab.tryBuild<SliceOp>(loc, t, 0, begin, end) : Value();
  };
  Value q, k, v;
  if (!memory) {
    // Self-attention: one product with the packed [3d, d] projection.
    LinearOp qkv = elab.tryCreate<LinearOp>(loc, x, weight, bias, Value(),
                                            Activation::none);
    if (!qkv)
      return EvalValue::poison();
    q = elab.tryBuild<SliceOp>(loc, qkv, 2, 0, d);
    k = elab.tryBuild<SliceOp>(loc, qkv, 2, d, 2 * d);
    v = elab.tryBuild<SliceOp>(loc, qkv, 2, 2 * d, 3 * d);
  } else {
    // Cross-attention: queries from x, keys and values from memory.
    q = elab.tryBuild<LinearOp>(loc, x, sliceRows(weight, 0, d),
                                sliceRows(bias, 0, d), Value(),
                                Activation::none);
    LinearOp kv = elab.tryCreate<LinearOp>(
        loc, memory, sliceRows(weight, d, 3 * d), sliceRows(bias, d, 3 * d),
        Value(), Activation::none);
    if (!q || !kv)
      return EvalValue::poison();
    k = elab.tryBuild<SliceOp>(loc, kv, 2, 0, d);
    v = elab.tryBuild<SliceOp>(loc, kv, 2, d, 2 * d);
  }
  if (!q || !k || !v)
    return EvalValue::poison();
  Value q4 = elab.tryBuild<SplitHeadsOp>(loc, q, layer.heads);
  Value k4 = elab.tryBuild<SplitHeadsOp>(loc, k, layer.heads);
  Value v4 = elab.tryBuild<SplitHeadsOp>(loc, v, layer.heads);
  if (!q4 || !k4 || !v4)
    return EvalValue::poison();
  SdpaOp sdpa = elab.tryCreate<SdpaOp>(
      loc, q4, k4, v4, keyPadding, /*seed=*/Value(), *maskKind, FloatAttr(),
      APFloat(layer.dropout), IntegerAttr());
  if (!sdpa)
    return EvalValue::poison();
  Value merged = elab.tryBuild<MergeHeadsOp>(loc, sdpa.getResult());
  if (!merged)
    return EvalValue::poison();
  Instance &outProj = *layer.layers["out_proj"];
  return tensorResult(elab.tryCreate<LinearOp>(
      loc, merged, param(outProj, "weight"), param(outProj, "bias"), Value(),
      Activation::none));
}
