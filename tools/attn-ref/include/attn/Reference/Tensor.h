//===- Tensor.h - Dense tensors of the reference evaluator ------*- C++ -*-===//
//
// The one value type of the reference evaluator: a dense row-major tensor
// whose elements are held as doubles whatever its element type, so that every
// op is computed in double precision; the element type is remembered to check
// operands against the IR and to write results back in their own format.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_REFERENCE_TENSOR_H
#define ATTN_REFERENCE_TENSOR_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
class Type;
} // namespace mlir

namespace attn::reference {

/// Element types of the attn dialect's tensors, plus `Index` for the sizes
/// (`attn.dim`, `arith.constant ... : index`) held as rank-0 tensors.
enum class DType : uint8_t { F16, BF16, F32, F64, I32, I64, Bool, Index };

bool isFloat(DType dtype);
bool isInteger(DType dtype);

/// The MLIR spelling of the element type: "f32", "i32", "i1", "index", ...
llvm::StringRef getDTypeName(DType dtype);

/// The element type of an MLIR type (an element type or the element type of
/// a shaped type); nothing for types the dialect has no tensors of.
std::optional<DType> getDType(mlir::Type type);

/// `value` as `dtype` holds it: floats rounded to nearest even in the
/// format's precision, integers truncated toward zero and wrapped to their
/// width, booleans 0 or 1 (nonzero is true).
double convertTo(DType dtype, double value);

/// The number of elements of a shape (1 for rank 0).
int64_t getNumElements(llvm::ArrayRef<int64_t> shape);

/// Row-major strides of a shape, in elements.
llvm::SmallVector<int64_t> getStrides(llvm::ArrayRef<int64_t> shape);

/// A shape as diagnostics print it: "[2, 3]".
std::string formatShape(llvm::ArrayRef<int64_t> shape);

class Tensor {
public:
  /// A rank-0 f64 zero.
  Tensor() : data(1, 0.0) {}
  /// A tensor of zeros.
  Tensor(DType dtype, llvm::ArrayRef<int64_t> shape);
  /// A tensor with the given row-major elements; their count must match.
  Tensor(DType dtype, llvm::ArrayRef<int64_t> shape, std::vector<double> data);

  static Tensor scalar(DType dtype, double value) {
    return Tensor(dtype, {}, {value});
  }

  DType getDType() const { return dtype; }
  /// Relabels the elements with another element type without converting
  /// them; the caller knows they are representable.
  void setDType(DType newType) { dtype = newType; }

  llvm::ArrayRef<int64_t> getShape() const { return shape; }
  int64_t getRank() const { return static_cast<int64_t>(shape.size()); }
  int64_t getDimSize(int64_t axis) const { return shape[axis]; }
  int64_t getNumElements() const { return static_cast<int64_t>(data.size()); }

  llvm::ArrayRef<double> getData() const { return data; }
  llvm::MutableArrayRef<double> getData() { return data; }
  double operator[](int64_t i) const { return data[i]; }
  double &operator[](int64_t i) { return data[i]; }

  /// The element at a multi-index of the tensor's rank.
  double at(llvm::ArrayRef<int64_t> index) const;

  /// "tensor<2x3xf32>"-like description for diagnostics.
  std::string describe() const;

private:
  DType dtype = DType::F64;
  llvm::SmallVector<int64_t, 4> shape;
  std::vector<double> data;
};

} // namespace attn::reference

#endif // ATTN_REFERENCE_TENSOR_H
