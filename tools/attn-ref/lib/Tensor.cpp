//===- Tensor.cpp - Dense tensors of the reference evaluator --------------===//
//
// Element types, conversions between them, and the tensor container.
//
//===----------------------------------------------------------------------===//

#include "attn/Reference/Tensor.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cassert>
#include <cmath>

using namespace attn::reference;

bool attn::reference::isFloat(DType dtype) {
  return dtype == DType::F16 || dtype == DType::BF16 || dtype == DType::F32 ||
         dtype == DType::F64;
}

bool attn::reference::isInteger(DType dtype) {
  return dtype == DType::I32 || dtype == DType::I64 || dtype == DType::Index;
}

llvm::StringRef attn::reference::getDTypeName(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  case DType::Bool:
    return "i1";
  case DType::Index:
    return "index";
  }
  llvm_unreachable("unknown dtype");
}

std::optional<DType> attn::reference::getDType(mlir::Type type) {
  if (auto shaped = llvm::dyn_cast<mlir::ShapedType>(type))
    type = shaped.getElementType();
  if (type.isF16())
    return DType::F16;
  if (type.isBF16())
    return DType::BF16;
  if (type.isF32())
    return DType::F32;
  if (type.isF64())
    return DType::F64;
  if (type.isIndex())
    return DType::Index;
  if (type.isInteger(1))
    return DType::Bool;
  if (type.isInteger(32))
    return DType::I32;
  if (type.isInteger(64))
    return DType::I64;
  return std::nullopt;
}

/// Rounds through APFloat so that f16 and bf16 round exactly as a cast does.
static double roundToFormat(const llvm::fltSemantics &semantics, double value) {
  llvm::APFloat converted(value);
  bool losesInfo = false;
  converted.convert(semantics, llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  converted.convert(llvm::APFloat::IEEEdouble(),
                    llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  return converted.convertToDouble();
}

/// Truncates toward zero and wraps to `bits` as a two's-complement integer.
static double wrapInteger(double value, unsigned bits) {
  if (!std::isfinite(value))
    return 0.0;
  double truncated = std::trunc(value);
  if (bits >= 64 || std::fabs(truncated) < std::ldexp(1.0, bits - 1))
    return truncated;
  double modulus = std::ldexp(1.0, bits);
  double wrapped = std::fmod(truncated, modulus);
  if (wrapped < 0)
    wrapped += modulus;
  if (wrapped >= std::ldexp(1.0, bits - 1))
    wrapped -= modulus;
  return wrapped;
}

double attn::reference::convertTo(DType dtype, double value) {
  switch (dtype) {
  case DType::F16:
    return roundToFormat(llvm::APFloat::IEEEhalf(), value);
  case DType::BF16:
    return roundToFormat(llvm::APFloat::BFloat(), value);
  case DType::F32:
    return roundToFormat(llvm::APFloat::IEEEsingle(), value);
  case DType::F64:
    return value;
  case DType::I32:
    return wrapInteger(value, 32);
  case DType::I64:
  case DType::Index:
    return wrapInteger(value, 64);
  case DType::Bool:
    return value != 0.0 ? 1.0 : 0.0;
  }
  llvm_unreachable("unknown dtype");
}

int64_t attn::reference::getNumElements(llvm::ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  return count;
}

llvm::SmallVector<int64_t>
attn::reference::getStrides(llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

std::string attn::reference::formatShape(llvm::ArrayRef<int64_t> shape) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "[";
  llvm::interleaveComma(shape, os);
  os << "]";
  return text;
}

Tensor::Tensor(DType dtype, llvm::ArrayRef<int64_t> shape)
    : dtype(dtype), shape(shape.begin(), shape.end()),
      data(attn::reference::getNumElements(shape), 0.0) {}

Tensor::Tensor(DType dtype, llvm::ArrayRef<int64_t> shape,
               std::vector<double> data)
    : dtype(dtype), shape(shape.begin(), shape.end()), data(std::move(data)) {
  assert(static_cast<int64_t>(this->data.size()) ==
             attn::reference::getNumElements(shape) &&
         "element count must match the shape");
}

double Tensor::at(llvm::ArrayRef<int64_t> index) const {
  assert(static_cast<int64_t>(index.size()) == getRank() &&
         "index rank must match");
  int64_t linear = 0;
  for (auto [i, size] : llvm::zip(index, shape)) {
    assert(i >= 0 && i < size && "index out of range");
    linear = linear * size + i;
  }
  return data[linear];
}

std::string Tensor::describe() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "tensor<";
  for (int64_t size : shape)
    os << size << "x";
  os << getDTypeName(dtype) << ">";
  return text;
}
