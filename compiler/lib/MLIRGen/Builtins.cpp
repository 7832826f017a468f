//===- Builtins.cpp - Builtin functions and layers of the language --------===//
//
// The tensor functions of LANGUAGE.md section 3 and the forward computation
// of the builtin layers of section 4, each checking its arguments (count,
// keywords, kinds, ranges) before building `attn` ops, so that a mistake is
// reported at the argument that is wrong.
//
//===----------------------------------------------------------------------===//

#include "Elaborator.h"

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

bool Elaborator::isBuiltinLayer(llvm::StringRef name) const {
  return llvm::is_contained({"linear", "embedding", "layer_norm", "rms_norm",
                             "multi_head_attention", "feed_forward"},
                            name);
}

/// Element-wise functions of one tensor.
static std::optional<Activation> unaryActivation(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<Activation>>(name)
      .Case("relu", Activation::relu)
      .Case("gelu", Activation::gelu)
      .Case("gelu_tanh", Activation::gelu_tanh)
      .Case("silu", Activation::silu)
      .Case("tanh", Activation::tanh)
      .Case("sigmoid", Activation::sigmoid)
      .Default(std::nullopt);
}

bool Elaborator::isBuiltinFunction(llvm::StringRef name) const {
  return unaryActivation(name) ||
         llvm::is_contained(
             {"matmul", "transpose", "reshape", "split_heads", "merge_heads",
              "concat", "slice", "take", "exp", "log", "sqrt", "softmax",
              "log_softmax", "sum", "mean", "max", "min", "attention",
              "gather", "positions", "sinusoidal", "dropout", "cross_entropy",
              "cast"},
             name);
}

Value Elaborator::sizeOf(Value tensor, int64_t axis, Location loc) {
  auto type = cast<RankedTensorType>(tensor.getType());
  if (!type.isDynamicDim(axis))
    return arith::ConstantIndexOp::create(builder, loc, type.getDimSize(axis));
  return DimOp::create(builder, loc, tensor, axis);
}

namespace {
/// Argument checks shared by the builtins, bound to one call.
class BuiltinCall {
public:
  BuiltinCall(Elaborator &elab, CallArgs &args) : elab(elab), args(args) {}

  /// Normalises `axis` (negative counts from the end) for a tensor of `rank`.
  std::optional<int64_t> axis(const std::optional<Arg> &arg, int64_t rank,
                              int64_t fallback) {
    if (!arg)
      return fallback < 0 ? fallback + rank : fallback;
    std::optional<int64_t> value = elab.expectInt(*arg, "the axis");
    if (!value)
      return std::nullopt;
    if (*value < -rank || *value >= rank) {
      elab.error(arg->loc) << "axis " << *value
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
      elab.error(arg->loc) << "the dropout rate must be in [0, 1), got "
                           << formatNumber(*p);
      return std::nullopt;
    }
    return p;
  }

  /// A float tensor.
  Value floatTensor(const std::optional<Arg> &arg, llvm::StringRef what) {
    Value v = elab.expectTensor(*arg, what);
    if (v && !isa<FloatType>(cast<RankedTensorType>(v.getType())
                                 .getElementType())) {
      elab.error(arg->loc) << what << " must be a float tensor, got "
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
        elab.error(arg->loc) << what << " must be an i32 tensor, got "
                             << arg->value.describe();
        return nullptr;
      }
    return v;
  }

  /// A boolean tensor.
  Value boolTensor(const std::optional<Arg> &arg, llvm::StringRef what) {
    Value v = elab.expectTensor(*arg, what);
    if (v && !cast<RankedTensorType>(v.getType()).getElementType().isInteger(1)) {
      elab.error(arg->loc) << what << " must be a bool tensor, got "
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
      elab.error(arg->loc) << what << " must be positive, got " << *n;
      return nullptr;
    }
    staticSize = *n;
    return arith::ConstantIndexOp::create(elab.builder, arg->loc, *n);
  }

  Elaborator &elab;
  CallArgs &args;
};
} // namespace

static EvalValue tensorResult(Operation *op) {
  if (!op)
    return EvalValue::poison();
  return EvalValue::ofTensor(op->getResult(0));
}

/// Reshapes `x` to `shape`, taking each dynamic size from `sizes`.
static Value reshape(Elaborator &elab, Value x, ArrayRef<int64_t> shape,
                     ValueRange sizes, Location loc) {
  auto type = RankedTensorType::get(
      shape, cast<RankedTensorType>(x.getType()).getElementType());
  return ReshapeOp::create(elab.builder, loc, type, x, sizes);
}

/// `attention(q, k, v, ...)` on [B, H, T, D] tensors, or on [B, T, D] ones
/// seen as a single head.
static EvalValue attention(Elaborator &elab, BuiltinCall &call, Value q,
                           Value k, Value v, Value keyPadding, MaskKind mask,
                           std::optional<double> scale, double dropout,
                           Location loc) {
  int64_t rank = cast<RankedTensorType>(q.getType()).getRank();
  for (Value t : {k, v}) {
    if (cast<RankedTensorType>(t.getType()).getRank() != rank) {
      elab.error(loc) << "query, key and value of attention must have the "
                         "same rank";
      return EvalValue::poison();
    }
  }
  if (rank != 3 && rank != 4) {
    elab.error(loc) << "attention takes [B, T, D] or [B, H, T, D] tensors, "
                       "got rank "
                    << rank;
    return EvalValue::poison();
  }
  auto addHeadDim = [&](Value x) {
    auto type = cast<RankedTensorType>(x.getType());
    SmallVector<Value> sizes;
    for (int64_t axis : {0, 1, 2})
      if (type.isDynamicDim(axis))
        sizes.push_back(elab.sizeOf(x, axis, loc));
    return reshape(elab, x,
                   {type.getDimSize(0), 1, type.getDimSize(1),
                    type.getDimSize(2)},
                   sizes, loc);
  };
  Value q4 = rank == 3 ? addHeadDim(q) : q;
  Value k4 = rank == 3 ? addHeadDim(k) : k;
  Value v4 = rank == 3 ? addHeadDim(v) : v;
  FloatAttr scaleAttr =
      scale ? elab.builder.getF64FloatAttr(*scale) : FloatAttr();
  SdpaOp sdpa = elab.tryCreate<SdpaOp>(loc, q4, k4, v4, keyPadding,
                                       /*seed=*/Value(), mask, scaleAttr,
                                       APFloat(dropout), IntegerAttr());
  if (!sdpa)
    return EvalValue::poison();
  Value output = sdpa.getResult();
  if (rank == 4)
    return EvalValue::ofTensor(output);
  auto type = cast<RankedTensorType>(output.getType());
  SmallVector<Value> sizes;
  for (int64_t axis : {0, 2, 3})
    if (type.isDynamicDim(axis))
      sizes.push_back(elab.sizeOf(output, axis, loc));
  return EvalValue::ofTensor(reshape(
      elab, output, {type.getDimSize(0), type.getDimSize(2), type.getDimSize(3)},
      sizes, loc));
}

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

EvalValue Elaborator::callBuiltinFunction(CallArgs &args, Frame &frame) {
  llvm::StringRef name = args.callee;
  Location loc = args.loc;
  BuiltinCall call(*this, args);

  // Functions of constants: usable in `let` and sizes too.
  if ((name == "sqrt" || name == "exp" || name == "log") &&
      args.positional.size() == 1 && args.keywords.empty() &&
      args.positional[0].value.isNumber())
    return constantMath(*this, name, args.positional[0]);
  if ((name == "min" || name == "max") && args.positional.size() == 2 &&
      args.keywords.empty() && args.positional[0].value.isNumber() &&
      args.positional[1].value.isNumber()) {
    const EvalValue &a = args.positional[0].value, &b = args.positional[1].value;
    bool pickA = name == "min" ? a.getNumber() <= b.getNumber()
                               : a.getNumber() >= b.getNumber();
    return pickA ? a : b;
  }
  if (frame.constantOnly) {
    error(loc) << "'" << name << "' does not give a compile-time constant "
               << "here; a constant may use numbers, + - * / // %, sqrt, "
                  "min and max";
    return EvalValue::poison();
  }

  if (std::optional<Activation> activation = unaryActivation(name);
      activation || name == "exp" || name == "log" || name == "sqrt") {
    auto bound = bindArgs(args, {{"x", true}});
    if (!bound)
      return EvalValue::poison();
    Value x = call.floatTensor((*bound)[0], "the argument of " + name.str());
    if (!x)
      return EvalValue::poison();
    if (activation)
      return EvalValue::ofTensor(
          createActivation(builder, loc, *activation, x));
    if (name == "exp")
      return EvalValue::ofTensor(ExpOp::create(builder, loc, x));
    if (name == "log")
      return EvalValue::ofTensor(LogOp::create(builder, loc, x));
    return EvalValue::ofTensor(SqrtOp::create(builder, loc, x));
  }

  if (name == "matmul") {
    auto bound = bindArgs(args, {{"a", true}, {"b", true}});
    if (!bound)
      return EvalValue::poison();
    Value a = call.floatTensor((*bound)[0], "the first operand of matmul");
    Value b = call.floatTensor((*bound)[1], "the second operand of matmul");
    if (!a || !b)
      return EvalValue::poison();
    return tensorResult(tryCreate<MatmulOp>(loc, a, b));
  }

  if (name == "transpose") {
    auto bound = bindArgs(args, {{"x", true}, {"a", false}, {"b", false}});
    if (!bound)
      return EvalValue::poison();
    Value x = expectTensor(*(*bound)[0], "the argument of transpose");
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
    std::optional<int64_t> a = call.axis((*bound)[1], rank, -2);
    std::optional<int64_t> b = call.axis((*bound)[2], rank, -1);
    if (!a || !b)
      return EvalValue::poison();
    SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
    std::swap(perm[*a], perm[*b]);
    return tensorResult(tryCreate<TransposeOp>(loc, x, perm));
  }

  if (name == "reshape") {
    auto bound = bindArgs(args, {{"x", true}, {"shape", true}});
    if (!bound)
      return EvalValue::poison();
    Value x = expectTensor(*(*bound)[0], "the argument of reshape");
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
      Value size = call.size(dimArg, "a size of reshape", staticSize);
      if (!size)
        return EvalValue::poison();
      shape.push_back(staticSize);
      if (ShapedType::isDynamic(staticSize))
        sizes.push_back(size);
    }
    auto input = cast<RankedTensorType>(x.getType());
    if (input.hasStaticShape() && llvm::none_of(shape, ShapedType::isDynamic) &&
        input.getNumElements() != ShapedType::getNumElements(shape)) {
      error(loc) << "cannot reshape " << (*bound)[0]->value.describe() << " ("
                 << input.getNumElements() << " elements) to "
                 << ShapedType::getNumElements(shape) << " elements";
      return EvalValue::poison();
    }
    return EvalValue::ofTensor(reshape(*this, x, shape, sizes, loc));
  }

  if (name == "split_heads") {
    auto bound = bindArgs(args, {{"x", true}, {"heads", true}});
    if (!bound)
      return EvalValue::poison();
    Value x = call.floatTensor((*bound)[0], "the argument of split_heads");
    std::optional<int64_t> heads = expectInt(*(*bound)[1], "the head count");
    if (!x || !heads)
      return EvalValue::poison();
    if (*heads <= 0) {
      error((*bound)[1]->loc) << "the head count must be positive";
      return EvalValue::poison();
    }
    return tensorResult(tryCreate<SplitHeadsOp>(loc, x, *heads));
  }

  if (name == "merge_heads") {
    auto bound = bindArgs(args, {{"x", true}});
    if (!bound)
      return EvalValue::poison();
    Value x = call.floatTensor((*bound)[0], "the argument of merge_heads");
    if (!x)
      return EvalValue::poison();
    return tensorResult(tryCreate<MergeHeadsOp>(loc, x));
  }

  if (name == "concat") {
    // Variadic: every positional argument is a tensor.
    CallArgs keywordsOnly{loc, name, {}, args.keywords};
    auto bound = bindArgs(keywordsOnly, {{"axis", false}});
    if (!bound)
      return EvalValue::poison();
    if (args.positional.empty()) {
      error(loc) << "concat needs at least one tensor";
      return EvalValue::poison();
    }
    SmallVector<Value> inputs;
    for (const Arg &arg : args.positional) {
      Value t = expectTensor(arg, "an argument of concat");
      if (!t)
        return EvalValue::poison();
      inputs.push_back(t);
    }
    int64_t rank = cast<RankedTensorType>(inputs[0].getType()).getRank();
    std::optional<int64_t> axis = call.axis((*bound)[0], rank, 0);
    if (!axis)
      return EvalValue::poison();
    return tensorResult(tryCreate<ConcatOp>(loc, inputs, *axis));
  }

  if (name == "slice" || name == "take") {
    bool isSlice = name == "slice";
    auto bound =
        isSlice ? bindArgs(args, {{"x", true},
                                  {"axis", true},
                                  {"start", false},
                                  {"end", false}})
                : bindArgs(args, {{"x", true}, {"axis", true}, {"index", true}});
    if (!bound)
      return EvalValue::poison();
    Value x = expectTensor(*(*bound)[0], "the argument of " + name.str());
    if (!x)
      return EvalValue::poison();
    auto type = cast<RankedTensorType>(x.getType());
    std::optional<int64_t> axis = call.axis((*bound)[1], type.getRank(), 0);
    if (!axis)
      return EvalValue::poison();
    if (!isSlice) {
      std::optional<int64_t> index = expectInt(*(*bound)[2], "the index");
      if (!index)
        return EvalValue::poison();
      return tensorResult(tryCreate<TakeOp>(loc, x, *axis, *index));
    }
    int64_t dim = type.getDimSize(*axis);
    auto bound1 = [&](const std::optional<Arg> &arg, llvm::StringRef what,
                      std::optional<int64_t> fallback)
        -> std::optional<int64_t> {
      std::optional<int64_t> v = arg ? expectInt(*arg, what) : fallback;
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
    return tensorResult(tryCreate<SliceOp>(loc, x, *axis, *start, *end));
  }

  if (name == "softmax" || name == "log_softmax") {
    auto bound = bindArgs(args, {{"x", true}, {"axis", false}});
    if (!bound)
      return EvalValue::poison();
    Value x = call.floatTensor((*bound)[0], "the argument of " + name.str());
    if (!x)
      return EvalValue::poison();
    std::optional<int64_t> axis = call.axis(
        (*bound)[1], cast<RankedTensorType>(x.getType()).getRank(), -1);
    if (!axis)
      return EvalValue::poison();
    if (name == "softmax")
      return EvalValue::ofTensor(SoftmaxOp::create(builder, loc, x, *axis));
    return EvalValue::ofTensor(LogSoftmaxOp::create(builder, loc, x, *axis));
  }

  if (name == "sum" || name == "mean" || name == "max" || name == "min") {
    if (name == "min") {
      error(loc) << "min takes two numbers; a tensor reduction is sum, mean "
                    "or max";
      return EvalValue::poison();
    }
    auto bound =
        bindArgs(args, {{"x", true}, {"axis", false}, {"mask", false}});
    if (!bound)
      return EvalValue::poison();
    Value x = call.floatTensor((*bound)[0], "the argument of " + name.str());
    if (!x)
      return EvalValue::poison();
    ReduceKind kind = *symbolizeReduceKind(name);
    Value mask;
    if ((*bound)[2]) {
      if (kind != ReduceKind::mean) {
        error((*bound)[2]->loc) << "only mean takes a mask";
        return EvalValue::poison();
      }
      mask = call.boolTensor((*bound)[2], "the mask");
      if (!mask)
        return EvalValue::poison();
    }
    int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
    if (!(*bound)[1]) {
      // No axis: reduce every dimension, last first.
      if (mask) {
        error(loc) << "a masked mean needs an axis";
        return EvalValue::poison();
      }
      Value result = x;
      for (int64_t axis = rank - 1; axis >= 0; --axis) {
        result = tryBuild<ReduceOp>(loc, kind, result, axis, Value());
        if (!result)
          return EvalValue::poison();
      }
      return EvalValue::ofTensor(result);
    }
    std::optional<int64_t> axis = call.axis((*bound)[1], rank, 0);
    if (!axis)
      return EvalValue::poison();
    return tensorResult(tryCreate<ReduceOp>(loc, kind, x, *axis, mask));
  }

  if (name == "attention") {
    auto bound = bindArgs(args, {{"q", true},
                                 {"k", true},
                                 {"v", true},
                                 {"mask", false},
                                 {"key_padding", false},
                                 {"scale", false},
                                 {"dropout", false}});
    if (!bound)
      return EvalValue::poison();
    Value q = call.floatTensor((*bound)[0], "the query");
    Value k = call.floatTensor((*bound)[1], "the key");
    Value v = call.floatTensor((*bound)[2], "the value");
    std::optional<std::string> mask = "none";
    if ((*bound)[3])
      mask = expectWord(*(*bound)[3], "the mask", {"none", "causal"});
    Value keyPadding;
    if ((*bound)[4]) {
      keyPadding = call.boolTensor((*bound)[4], "the key padding");
      if (!keyPadding)
        return EvalValue::poison();
    }
    std::optional<double> scale;
    if ((*bound)[5]) {
      scale = expectNumber(*(*bound)[5], "the scale");
      if (!scale)
        return EvalValue::poison();
      if (!(*scale > 0)) {
        error((*bound)[5]->loc) << "the scale must be positive";
        return EvalValue::poison();
      }
    }
    std::optional<double> dropout = call.rate((*bound)[6]);
    if (!q || !k || !v || !mask || !dropout)
      return EvalValue::poison();
    return attention(*this, call, q, k, v, keyPadding,
                     *symbolizeMaskKind(*mask), scale, *dropout, loc);
  }

  if (name == "gather") {
    auto bound = bindArgs(args, {{"table", true}, {"ids", true}});
    if (!bound)
      return EvalValue::poison();
    Value table = call.floatTensor((*bound)[0], "the table");
    Value ids = call.idTensor((*bound)[1], "the ids");
    if (!table || !ids)
      return EvalValue::poison();
    return tensorResult(tryCreate<GatherOp>(loc, table, ids));
  }

  if (name == "positions" || name == "sinusoidal") {
    bool positions = name == "positions";
    auto bound = positions ? bindArgs(args, {{"n", true}})
                           : bindArgs(args, {{"n", true}, {"d", true}});
    if (!bound)
      return EvalValue::poison();
    int64_t length;
    Value n = call.size((*bound)[0], "the length", length);
    if (!n)
      return EvalValue::poison();
    if (positions)
      return EvalValue::ofTensor(PositionsOp::create(
          builder, loc, RankedTensorType::get({length}, builder.getI32Type()),
          n, /*start=*/Value()));
    std::optional<int64_t> d = expectInt(*(*bound)[1], "the feature size");
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

  if (name == "dropout") {
    auto bound = bindArgs(args, {{"x", true}, {"p", true}});
    if (!bound)
      return EvalValue::poison();
    Value x = call.floatTensor((*bound)[0], "the argument of dropout");
    std::optional<double> p = call.rate((*bound)[1]);
    if (!x || !p)
      return EvalValue::poison();
    return EvalValue::ofTensor(
        DropoutOp::create(builder, loc, x, APFloat(*p)));
  }

  if (name == "cross_entropy") {
    auto bound = bindArgs(args, {{"logits", true},
                                 {"targets", true},
                                 {"ignore_index", false},
                                 {"label_smoothing", false}});
    if (!bound)
      return EvalValue::poison();
    Value logits = call.floatTensor((*bound)[0], "the logits");
    Value targets = call.idTensor((*bound)[1], "the targets");
    if (!logits || !targets)
      return EvalValue::poison();
    IntegerAttr ignoreIndex;
    if ((*bound)[2]) {
      std::optional<int64_t> index = expectInt(*(*bound)[2], "ignore_index");
      if (!index)
        return EvalValue::poison();
      ignoreIndex = builder.getI64IntegerAttr(*index);
    }
    double smoothing = 0;
    if ((*bound)[3]) {
      std::optional<double> e =
          expectNumber(*(*bound)[3], "label_smoothing");
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

  if (name == "cast") {
    auto bound = bindArgs(args, {{"x", true}, {"type", true}});
    if (!bound)
      return EvalValue::poison();
    Value x = expectTensor(*(*bound)[0], "the argument of cast");
    std::optional<std::string> type = expectWord(
        *(*bound)[1], "the type", {"f32", "bf16", "i32", "bool"});
    if (!x || !type)
      return EvalValue::poison();
    Type element = llvm::StringSwitch<Type>(*type)
                       .Case("f32", builder.getF32Type())
                       .Case("bf16", builder.getBF16Type())
                       .Case("i32", builder.getI32Type())
                       .Default(builder.getI1Type());
    auto input = cast<RankedTensorType>(x.getType());
    return EvalValue::ofTensor(
        CastOp::create(builder, loc, input.clone(element), x));
  }

  if (name == "min" || name == "max") {
    error(loc) << name << " takes two numbers";
    return EvalValue::poison();
  }
  llvm_unreachable("unhandled builtin function");
}

//===----------------------------------------------------------------------===//
// Builtin layers
//===----------------------------------------------------------------------===//

/// A parameter of a builtin layer, or null when the layer has none by that
/// name (a linear without bias).
static Value paramOrNull(Elaborator &elab, Instance &layer,
                         llvm::StringRef name, Location loc) {
  auto it = layer.params.find(name);
  if (it == layer.params.end())
    return nullptr;
  return elab.readParam(it->second, loc);
}

/// Requires a float tensor of rank 3, [B, T, d], for attention layers.
static Value sequenceInput(Elaborator &elab, const std::optional<Arg> &arg,
                           llvm::StringRef what) {
  Value x = elab.expectTensor(*arg, what);
  if (!x)
    return nullptr;
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getRank() != 3 || !isa<FloatType>(type.getElementType())) {
    elab.error(arg->loc) << what << " of multi_head_attention must be a "
                         << "[B, T, d] float tensor, got "
                         << arg->value.describe();
    return nullptr;
  }
  return x;
}

EvalValue Elaborator::callBuiltinLayer(Instance &layer, CallArgs &args) {
  Location loc = args.loc;
  BuiltinCall call(*this, args);
  switch (layer.kind) {
  case LayerKind::Linear: {
    auto bound = bindArgs(args, {{"x", true}});
    if (!bound)
      return EvalValue::poison();
    Value x = call.floatTensor((*bound)[0], "the input of linear");
    if (!x)
      return EvalValue::poison();
    return tensorResult(tryCreate<LinearOp>(
        loc, x, paramOrNull(*this, layer, "weight", loc),
        paramOrNull(*this, layer, "bias", loc), Value(), Activation::none));
  }
  case LayerKind::Embedding: {
    auto bound = bindArgs(args, {{"ids", true}});
    if (!bound)
      return EvalValue::poison();
    Value ids = call.idTensor((*bound)[0], "the ids of embedding");
    if (!ids)
      return EvalValue::poison();
    return tensorResult(
        tryCreate<GatherOp>(loc, paramOrNull(*this, layer, "weight", loc), ids));
  }
  case LayerKind::LayerNorm:
  case LayerKind::RmsNorm: {
    auto bound = bindArgs(args, {{"x", true}});
    if (!bound)
      return EvalValue::poison();
    Value x = call.floatTensor((*bound)[0], "the input of " + layer.typeName);
    if (!x)
      return EvalValue::poison();
    Value weight = paramOrNull(*this, layer, "weight", loc);
    if (layer.kind == LayerKind::LayerNorm)
      return tensorResult(tryCreate<LayerNormOp>(
          loc, x, weight, paramOrNull(*this, layer, "bias", loc), Value(),
          APFloat(layer.eps)));
    return tensorResult(
        tryCreate<RmsNormOp>(loc, x, weight, Value(), APFloat(layer.eps)));
  }
  case LayerKind::FeedForward: {
    auto bound = bindArgs(args, {{"x", true}});
    if (!bound)
      return EvalValue::poison();
    Value x = call.floatTensor((*bound)[0], "the input of feed_forward");
    if (!x)
      return EvalValue::poison();
    Instance &l1 = *layer.layers["linear1"], &l2 = *layer.layers["linear2"];
    LinearOp hidden = tryCreate<LinearOp>(
        loc, x, paramOrNull(*this, l1, "weight", loc),
        paramOrNull(*this, l1, "bias", loc), Value(), layer.activation);
    if (!hidden)
      return EvalValue::poison();
    Value h = hidden;
    if (layer.dropout > 0)
      h = DropoutOp::create(builder, loc, h, APFloat(layer.dropout));
    return tensorResult(tryCreate<LinearOp>(
        loc, h, paramOrNull(*this, l2, "weight", loc),
        paramOrNull(*this, l2, "bias", loc), Value(), Activation::none));
  }
  case LayerKind::MultiHeadAttention: {
    auto bound = bindArgs(args, {{"x", true},
                                 {"memory", false},
                                 {"mask", false},
                                 {"key_padding", false}});
    if (!bound)
      return EvalValue::poison();
    Value x = sequenceInput(*this, (*bound)[0], "the input");
    Value memory;
    if ((*bound)[1]) {
      memory = sequenceInput(*this, (*bound)[1], "the memory");
      if (!memory)
        return EvalValue::poison();
    }
    std::optional<std::string> mask = "none";
    if ((*bound)[2])
      mask = expectWord(*(*bound)[2], "the mask", {"none", "causal"});
    Value keyPadding;
    if ((*bound)[3]) {
      keyPadding = call.boolTensor((*bound)[3], "the key padding");
      if (!keyPadding)
        return EvalValue::poison();
    }
    if (!x || !mask)
      return EvalValue::poison();
    int64_t d = layer.features;
    Value weight = paramOrNull(*this, layer, "in_proj_weight", loc);
    Value bias = paramOrNull(*this, layer, "in_proj_bias", loc);
    auto sliceRows = [&](Value t, int64_t begin, int64_t end) -> Value {
      return t ? tryBuild<SliceOp>(loc, t, 0, begin, end) : Value();
    };
    Value q, k, v;
    if (!memory) {
      // Self-attention: one product with the packed [3d, d] projection.
      LinearOp qkv =
          tryCreate<LinearOp>(loc, x, weight, bias, Value(), Activation::none);
      if (!qkv)
        return EvalValue::poison();
      q = tryBuild<SliceOp>(loc, qkv, 2, 0, d);
      k = tryBuild<SliceOp>(loc, qkv, 2, d, 2 * d);
      v = tryBuild<SliceOp>(loc, qkv, 2, 2 * d, 3 * d);
    } else {
      // Cross-attention: queries from x, keys and values from memory.
      q = tryBuild<LinearOp>(loc, x, sliceRows(weight, 0, d),
                              sliceRows(bias, 0, d), Value(), Activation::none);
      LinearOp kv = tryCreate<LinearOp>(loc, memory,
                                        sliceRows(weight, d, 3 * d),
                                        sliceRows(bias, d, 3 * d), Value(),
                                        Activation::none);
      if (!q || !kv)
        return EvalValue::poison();
      k = tryBuild<SliceOp>(loc, kv, 2, 0, d);
      v = tryBuild<SliceOp>(loc, kv, 2, d, 2 * d);
    }
    if (!q || !k || !v)
      return EvalValue::poison();
    Value q4 = tryBuild<SplitHeadsOp>(loc, q, layer.heads);
    Value k4 = tryBuild<SplitHeadsOp>(loc, k, layer.heads);
    Value v4 = tryBuild<SplitHeadsOp>(loc, v, layer.heads);
    if (!q4 || !k4 || !v4)
      return EvalValue::poison();
    SdpaOp sdpa =
        tryCreate<SdpaOp>(loc, q4, k4, v4, keyPadding, /*seed=*/Value(),
                          *symbolizeMaskKind(*mask), FloatAttr(),
                          APFloat(layer.dropout), IntegerAttr());
    if (!sdpa)
      return EvalValue::poison();
    Value merged = tryBuild<MergeHeadsOp>(loc, sdpa.getResult());
    if (!merged)
      return EvalValue::poison();
    Instance &outProj = *layer.layers["out_proj"];
    return tensorResult(tryCreate<LinearOp>(
        loc, merged, paramOrNull(*this, outProj, "weight", loc),
        paramOrNull(*this, outProj, "bias", loc), Value(), Activation::none));
  }
  default:
    llvm_unreachable("not a builtin layer");
  }
}
