//===- ConstantEval.cpp - Compile-time values of the model language -------===//
//
// The values the elaborator computes with, the arithmetic of `let`
// constants (Python's semantics: `/` is true division, `//` and `%` floor),
// and the checks that an argument is the kind of constant a caller needs.
//
//===----------------------------------------------------------------------===//

#include "Elaborator.h"

#include "attn/Frontend/Suggestions.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace attn;
using namespace attn::mlirgen;

EvalValue EvalValue::ofInt(int64_t v) {
  EvalValue r;
  r.kind = Kind::Int;
  r.intValue = v;
  return r;
}

EvalValue EvalValue::ofFloat(double v) {
  EvalValue r;
  r.kind = Kind::Float;
  r.floatValue = v;
  return r;
}

EvalValue EvalValue::ofBool(bool v) {
  EvalValue r;
  r.kind = Kind::Bool;
  r.intValue = v;
  return r;
}

EvalValue EvalValue::ofTensor(Value v) {
  assert(isa<RankedTensorType>(v.getType()) && "not a ranked tensor");
  EvalValue r;
  r.kind = Kind::Tensor;
  r.value = v;
  return r;
}

EvalValue EvalValue::ofSize(Value v, llvm::StringRef name) {
  assert(v.getType().isIndex() && "a size is an index");
  EvalValue r;
  r.kind = Kind::Size;
  r.value = v;
  r.word = name.str();
  return r;
}

EvalValue EvalValue::ofLayer(Instance *layer) {
  EvalValue r;
  r.kind = Kind::Layer;
  r.layer = layer;
  return r;
}

EvalValue EvalValue::ofWord(llvm::StringRef word) {
  EvalValue r;
  r.kind = Kind::Word;
  r.word = word.str();
  return r;
}

EvalValue EvalValue::ofList(std::vector<EvalValue> elements) {
  EvalValue r;
  r.kind = Kind::List;
  r.elements = std::move(elements);
  return r;
}

double EvalValue::getNumber() const {
  // A bool is 0 or 1 where a number is needed, as in Python.
  return kind == Kind::Float ? floatValue : static_cast<double>(intValue);
}

RankedTensorType EvalValue::getTensorType() const {
  return cast<RankedTensorType>(value.getType());
}

std::string mlirgen::formatNumber(double value) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%g", value);
  return text;
}

std::string mlirgen::describeElementType(Type type) {
  if (type.isF32())
    return "f32";
  if (type.isBF16())
    return "bf16";
  if (type.isInteger(1))
    return "bool";
  std::string text;
  llvm::raw_string_ostream(text) << type;
  return text;
}

std::string mlirgen::describeType(RankedTensorType type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << describeElementType(type.getElementType()) << "[";
  llvm::interleaveComma(type.getShape(), os, [&](int64_t d) {
    if (ShapedType::isDynamic(d))
      os << "?";
    else
      os << d;
  });
  os << "]";
  return text;
}

std::string mlirgen::describeTensor(Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  SmallVector<StringAttr> names = getDimNames(tensor);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << describeElementType(type.getElementType()) << "[";
  llvm::interleaveComma(llvm::seq<int64_t>(0, type.getRank()), os,
                        [&](int64_t axis) {
                          if (names[axis])
                            os << names[axis].getValue();
                          else if (type.isDynamicDim(axis))
                            os << "?";
                          else
                            os << type.getDimSize(axis);
                        });
  os << "]";
  return text;
}

std::string EvalValue::describe() const {
  switch (kind) {
  case Kind::Poison:
    return "an erroneous value";
  case Kind::Int:
    return "the integer " + std::to_string(intValue);
  case Kind::Float:
    return "the number " + formatNumber(floatValue);
  case Kind::Bool:
    return intValue ? "true" : "false";
  case Kind::Tensor:
    return "a tensor " + describeTensor(value);
  case Kind::Size:
    return "the size " + word;
  case Kind::Layer:
    return "the layer '" + (layer->path.empty() ? std::string("model")
                                                : layer->path) +
           "'";
  case Kind::Word:
    return "'" + word + "'";
  case Kind::List:
    return "a list";
  }
  llvm_unreachable("unknown value kind");
}

EvalValue Elaborator::evalConstantBinary(ast::BinaryOp op,
                                         const EvalValue &lhs,
                                         const EvalValue &rhs, Location loc) {
  using ast::BinaryOp;
  bool ints = lhs.getKind() == EvalValue::Kind::Int &&
              rhs.getKind() == EvalValue::Kind::Int;
  if (ast::isComparison(op)) {
    if (lhs.getKind() == EvalValue::Kind::Bool &&
        rhs.getKind() == EvalValue::Kind::Bool &&
        (op == BinaryOp::Eq || op == BinaryOp::Ne))
      return EvalValue::ofBool((lhs.getBool() == rhs.getBool()) ==
                               (op == BinaryOp::Eq));
    if (!lhs.isNumber() || !rhs.isNumber()) {
      error(loc) << "cannot compare " << lhs.describe() << " with "
                 << rhs.describe();
      return EvalValue::poison();
    }
    double a = lhs.getNumber(), b = rhs.getNumber();
    bool result = false;
    switch (op) {
    case BinaryOp::Eq:
      result = a == b;
      break;
    case BinaryOp::Ne:
      result = a != b;
      break;
    case BinaryOp::Lt:
      result = a < b;
      break;
    case BinaryOp::Le:
      result = a <= b;
      break;
    case BinaryOp::Gt:
      result = a > b;
      break;
    default:
      result = a >= b;
      break;
    }
    return EvalValue::ofBool(result);
  }
  if (!lhs.isNumber() || !rhs.isNumber()) {
    error(loc) << "operator '" << ast::getBinaryOpSpelling(op)
               << "' needs numbers, got " << lhs.describe() << " and "
               << rhs.describe();
    return EvalValue::poison();
  }
  if (op == BinaryOp::MatMul) {
    error(loc) << "operator '@' needs tensors, got " << lhs.describe()
               << " and " << rhs.describe();
    return EvalValue::poison();
  }
  if (ints) {
    int64_t a = lhs.getInt(), b = rhs.getInt(), r = 0;
    bool overflow = false;
    switch (op) {
    case BinaryOp::Add:
      overflow = llvm::AddOverflow(a, b, r);
      break;
    case BinaryOp::Sub:
      overflow = llvm::SubOverflow(a, b, r);
      break;
    case BinaryOp::Mul:
      overflow = llvm::MulOverflow(a, b, r);
      break;
    case BinaryOp::Div:
      if (b == 0)
        break;
      // True division, as in Python; exact quotients stay integers so that
      // `d / heads` can be a size.
      if (a % b == 0 && !(a == INT64_MIN && b == -1))
        return EvalValue::ofInt(a / b);
      return EvalValue::ofFloat(static_cast<double>(a) / b);
    case BinaryOp::FloorDiv:
    case BinaryOp::Mod: {
      if (b == 0 || (a == INT64_MIN && b == -1))
        break;
      int64_t q = a / b, m = a % b;
      if (m != 0 && ((m < 0) != (b < 0))) {
        --q;
        m += b;
      }
      return EvalValue::ofInt(op == BinaryOp::FloorDiv ? q : m);
    }
    default:
      llvm_unreachable("comparisons and @ are handled above");
    }
    if (b == 0 && (op == BinaryOp::Div || op == BinaryOp::FloorDiv ||
                   op == BinaryOp::Mod)) {
      error(loc) << "division by zero in a constant expression";
      return EvalValue::poison();
    }
    if (overflow || op == BinaryOp::FloorDiv || op == BinaryOp::Mod) {
      error(loc) << "integer overflow in a constant expression";
      return EvalValue::poison();
    }
    return EvalValue::ofInt(r);
  }
  double a = lhs.getNumber(), b = rhs.getNumber(), r = 0;
  switch (op) {
  case BinaryOp::Add:
    r = a + b;
    break;
  case BinaryOp::Sub:
    r = a - b;
    break;
  case BinaryOp::Mul:
    r = a * b;
    break;
  case BinaryOp::Div:
  case BinaryOp::FloorDiv:
  case BinaryOp::Mod:
    if (b == 0) {
      error(loc) << "division by zero in a constant expression";
      return EvalValue::poison();
    }
    r = op == BinaryOp::Div        ? a / b
        : op == BinaryOp::FloorDiv ? std::floor(a / b)
                                   : a - b * std::floor(a / b);
    break;
  default:
    llvm_unreachable("comparisons and @ are handled above");
  }
  if (!std::isfinite(r)) {
    error(loc) << "constant expression overflows";
    return EvalValue::poison();
  }
  return EvalValue::ofFloat(r);
}

EvalValue Elaborator::evalConstant(const ast::Expr &expr, Instance &instance) {
  Frame frame{&instance, {}, {}, /*constantOnly=*/true};
  return eval(expr, frame);
}

std::optional<int64_t> Elaborator::expectInt(const Arg &arg,
                                             llvm::StringRef what) {
  const EvalValue &v = arg.value;
  if (v.isPoison())
    return std::nullopt;
  if (v.getKind() == EvalValue::Kind::Int)
    return v.getInt();
  if (v.getKind() == EvalValue::Kind::Float && std::isfinite(v.getNumber()) &&
      std::trunc(v.getNumber()) == v.getNumber() &&
      std::fabs(v.getNumber()) < 9.0e15)
    return static_cast<int64_t>(v.getNumber());
  error(arg.loc) << what << " must be an integer constant, got "
                 << v.describe();
  return std::nullopt;
}

std::optional<double> Elaborator::expectNumber(const Arg &arg,
                                               llvm::StringRef what) {
  if (arg.value.isPoison())
    return std::nullopt;
  if (arg.value.isNumber())
    return arg.value.getNumber();
  error(arg.loc) << what << " must be a number, got " << arg.value.describe();
  return std::nullopt;
}

std::optional<bool> Elaborator::expectBool(const Arg &arg,
                                           llvm::StringRef what) {
  if (arg.value.isPoison())
    return std::nullopt;
  if (arg.value.getKind() == EvalValue::Kind::Bool)
    return arg.value.getBool();
  error(arg.loc) << what << " must be true or false, got "
                 << arg.value.describe();
  return std::nullopt;
}

std::optional<std::string>
Elaborator::expectWord(const Arg &arg, llvm::StringRef what,
                       llvm::ArrayRef<llvm::StringRef> allowed) {
  if (arg.value.isPoison())
    return std::nullopt;
  if (arg.value.getKind() == EvalValue::Kind::Word &&
      llvm::is_contained(allowed, arg.value.getWord()))
    return arg.value.getWord().str();
  InFlightDiagnostic diag = error(arg.loc);
  diag << what << " must be one of ";
  llvm::interleaveComma(allowed, diag);
  diag << "; got " << arg.value.describe();
  if (arg.value.getKind() == EvalValue::Kind::Word)
    diag << didYouMean(arg.value.getWord(), allowed);
  return std::nullopt;
}

Value Elaborator::expectTensor(const Arg &arg, llvm::StringRef what) {
  if (arg.value.isPoison())
    return nullptr;
  if (arg.value.isTensor())
    return arg.value.getValue();
  error(arg.loc) << what << " must be a tensor, got " << arg.value.describe();
  return nullptr;
}
