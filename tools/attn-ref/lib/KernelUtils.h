//===- KernelUtils.h - Helpers shared by the reference kernels --*- C++ -*-===//
//
// Error construction and the index arithmetic (broadcast indexing, splitting
// a shape around an axis) that every family of kernels needs.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_REFERENCE_LIB_KERNELUTILS_H
#define ATTN_REFERENCE_LIB_KERNELUTILS_H

#include "attn/Reference/Tensor.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

namespace attn::reference::detail {

inline llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// A shape around one axis: `outer` elements before it, `size` along it and
/// `inner` after it: element (o, i, j) is at (o * size + i) * inner + j.
struct AxisSplit {
  int64_t outer = 1, size = 1, inner = 1;
  int64_t offset(int64_t o, int64_t i, int64_t j) const {
    return (o * size + i) * inner + j;
  }
};

inline AxisSplit splitAtAxis(llvm::ArrayRef<int64_t> shape, int64_t axis) {
  AxisSplit split;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < axis)
      split.outer *= shape[d];
    else if (d == axis)
      split.size = shape[d];
    else
      split.inner *= shape[d];
  }
  return split;
}

inline llvm::Error checkAxis(const Tensor &input, int64_t axis) {
  if (axis >= 0 && axis < input.getRank())
    return llvm::Error::success();
  return makeError("axis " + llvm::Twine(axis) + " is out of range for " +
                   input.describe());
}

/// The strides to read `shape` as broadcast to a result of rank `rank`
/// (aligned on the last dimension): 0 where a dimension stretches or is
/// missing.
llvm::SmallVector<int64_t> broadcastStrides(llvm::ArrayRef<int64_t> shape,
                                            int64_t rank);

/// Calls `fn(outIndex, offsets)` for every element of `resultShape` in
/// row-major order, where `offsets[k]` is the linear offset of the element of
/// operand k under `strides[k]`.
template <typename Fn>
void forEachBroadcast(llvm::ArrayRef<int64_t> resultShape,
                      llvm::ArrayRef<llvm::SmallVector<int64_t>> strides,
                      Fn fn) {
  int64_t rank = static_cast<int64_t>(resultShape.size());
  int64_t count = getNumElements(resultShape);
  llvm::SmallVector<int64_t> index(rank, 0);
  llvm::SmallVector<int64_t, 4> offsets(strides.size(), 0);
  for (int64_t linear = 0; linear < count; ++linear) {
    fn(linear, llvm::ArrayRef<int64_t>(offsets));
    // Advances the multi-index like an odometer, keeping offsets in step.
    for (int64_t d = rank - 1; d >= 0; --d) {
      ++index[d];
      for (size_t k = 0; k < strides.size(); ++k)
        offsets[k] += strides[k][d];
      if (index[d] < resultShape[d])
        break;
      for (size_t k = 0; k < strides.size(); ++k)
        offsets[k] -= strides[k][d] * resultShape[d];
      index[d] = 0;
    }
  }
}

} // namespace attn::reference::detail

#endif // ATTN_REFERENCE_LIB_KERNELUTILS_H
