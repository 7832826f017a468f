//===- ShapeKernels.cpp - Reference kernels that move elements ------------===//
//
// Reshape, transpose, the head split and merge of attention, concat, slice,
// take, broadcast, the embedding gather, the position tables and the rotary
// embedding.
//
//===----------------------------------------------------------------------===//

#include "attn/Reference/Kernels.h"

#include "KernelUtils.h"

#include <cmath>

using namespace attn::reference;
using namespace attn::reference::detail;
using llvm::ArrayRef;
using llvm::Expected;
using llvm::SmallVector;
using llvm::Twine;

Expected<Tensor> attn::reference::reshape(const Tensor &input,
                                          ArrayRef<int64_t> shape) {
  for (int64_t size : shape)
    if (size < 0)
      return makeError("cannot reshape to " + formatShape(shape) +
                       ": negative size");
  if (getNumElements(shape) != input.getNumElements())
    return makeError("cannot reshape " + formatShape(input.getShape()) + " (" +
                     Twine(input.getNumElements()) + " elements) to " +
                     formatShape(shape) + " (" + Twine(getNumElements(shape)) +
                     " elements)");
  std::vector<double> data(input.getData().begin(), input.getData().end());
  return Tensor(input.getDType(), shape, std::move(data));
}

Expected<Tensor> attn::reference::transpose(const Tensor &input,
                                            ArrayRef<int64_t> permutation) {
  int64_t rank = input.getRank();
  SmallVector<bool> seen(rank, false);
  bool valid = static_cast<int64_t>(permutation.size()) == rank;
  for (int64_t p : permutation) {
    valid = valid && p >= 0 && p < rank && !seen[p];
    if (valid)
      seen[p] = true;
  }
  if (!valid)
    return makeError("invalid permutation " + formatShape(permutation) +
                     " of " + input.describe());
  SmallVector<int64_t> shape;
  SmallVector<int64_t> inputStrides = getStrides(input.getShape());
  // Reading the input through permuted strides walks it in result order.
  SmallVector<SmallVector<int64_t>> strides(1);
  for (int64_t p : permutation) {
    shape.push_back(input.getDimSize(p));
    strides[0].push_back(inputStrides[p]);
  }
  Tensor result(input.getDType(), shape);
  forEachBroadcast(shape, strides,
                   [&](int64_t linear, ArrayRef<int64_t> offsets) {
                     result[linear] = input[offsets[0]];
                   });
  return result;
}

Expected<Tensor> attn::reference::splitHeads(const Tensor &input,
                                             int64_t heads) {
  if (input.getRank() != 3 || heads <= 0 || input.getDimSize(2) % heads != 0)
    return makeError("cannot split " + input.describe() + " into " +
                     Twine(heads) + " heads");
  int64_t b = input.getDimSize(0), t = input.getDimSize(1);
  int64_t k = input.getDimSize(2) / heads;
  Tensor result(input.getDType(), {b, heads, t, k});
  for (int64_t ib = 0; ib < b; ++ib)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t it = 0; it < t; ++it)
        for (int64_t j = 0; j < k; ++j)
          result[((ib * heads + h) * t + it) * k + j] =
              input[(ib * t + it) * heads * k + h * k + j];
  return result;
}

Expected<Tensor> attn::reference::mergeHeads(const Tensor &input) {
  if (input.getRank() != 4)
    return makeError("cannot merge the heads of " + input.describe());
  int64_t b = input.getDimSize(0), heads = input.getDimSize(1);
  int64_t t = input.getDimSize(2), k = input.getDimSize(3);
  Tensor result(input.getDType(), {b, t, heads * k});
  for (int64_t ib = 0; ib < b; ++ib)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t it = 0; it < t; ++it)
        for (int64_t j = 0; j < k; ++j)
          result[(ib * t + it) * heads * k + h * k + j] =
              input[((ib * heads + h) * t + it) * k + j];
  return result;
}

Expected<Tensor> attn::reference::concat(ArrayRef<Tensor> inputs,
                                         int64_t axis) {
  if (inputs.empty())
    return makeError("concat needs at least one input");
  const Tensor &first = inputs.front();
  if (llvm::Error error = checkAxis(first, axis))
    return std::move(error);
  SmallVector<int64_t> shape(first.getShape());
  shape[axis] = 0;
  for (const Tensor &input : inputs) {
    bool compatible = input.getRank() == first.getRank();
    for (int64_t d = 0; compatible && d < first.getRank(); ++d)
      compatible = d == axis || input.getDimSize(d) == first.getDimSize(d);
    if (!compatible)
      return makeError("cannot concatenate " + first.describe() + " and " +
                       input.describe() + " along axis " + Twine(axis));
    shape[axis] += input.getDimSize(axis);
  }
  Tensor result(first.getDType(), shape);
  AxisSplit out = splitAtAxis(shape, axis);
  int64_t start = 0;
  for (const Tensor &input : inputs) {
    AxisSplit in = splitAtAxis(input.getShape(), axis);
    for (int64_t o = 0; o < in.outer; ++o)
      for (int64_t i = 0; i < in.size; ++i)
        for (int64_t j = 0; j < in.inner; ++j)
          result[out.offset(o, start + i, j)] = input[in.offset(o, i, j)];
    start += in.size;
  }
  return result;
}

Expected<Tensor> attn::reference::slice(const Tensor &input, int64_t axis,
                                        int64_t start, int64_t end) {
  if (llvm::Error error = checkAxis(input, axis))
    return std::move(error);
  if (start < 0 || end < start || end > input.getDimSize(axis))
    return makeError("slice [" + Twine(start) + ", " + Twine(end) +
                     ") is outside dimension " + Twine(axis) + " of " +
                     input.describe());
  SmallVector<int64_t> shape(input.getShape());
  shape[axis] = end - start;
  Tensor result(input.getDType(), shape);
  AxisSplit in = splitAtAxis(input.getShape(), axis);
  AxisSplit out = splitAtAxis(shape, axis);
  for (int64_t o = 0; o < out.outer; ++o)
    for (int64_t i = 0; i < out.size; ++i)
      for (int64_t j = 0; j < out.inner; ++j)
        result[out.offset(o, i, j)] = input[in.offset(o, start + i, j)];
  return result;
}

Expected<Tensor> attn::reference::take(const Tensor &input, int64_t axis,
                                       int64_t index) {
  if (llvm::Error error = checkAxis(input, axis))
    return std::move(error);
  int64_t size = input.getDimSize(axis);
  if (index < -size || index >= size)
    return makeError("index " + Twine(index) +
                     " is out of range for dimension " + Twine(axis) + " of " +
                     input.describe());
  if (index < 0)
    index += size;
  Expected<Tensor> sliced = slice(input, axis, index, index + 1);
  if (!sliced)
    return sliced.takeError();
  SmallVector<int64_t> shape(input.getShape());
  shape.erase(shape.begin() + axis);
  return reshape(*sliced, shape);
}

Expected<Tensor> attn::reference::broadcastTo(const Tensor &input,
                                              ArrayRef<int64_t> shape) {
  int64_t rank = static_cast<int64_t>(shape.size());
  bool compatible = input.getRank() <= rank;
  for (int64_t i = 1; compatible && i <= input.getRank(); ++i) {
    int64_t from = input.getDimSize(input.getRank() - i);
    compatible = from == 1 || from == shape[rank - i];
  }
  if (!compatible)
    return makeError("cannot broadcast " + input.describe() + " to " +
                     formatShape(shape));
  SmallVector<SmallVector<int64_t>> strides = {
      broadcastStrides(input.getShape(), rank)};
  Tensor result(input.getDType(), shape);
  forEachBroadcast(shape, strides,
                   [&](int64_t linear, ArrayRef<int64_t> offsets) {
                     result[linear] = input[offsets[0]];
                   });
  return result;
}

Expected<Tensor> attn::reference::gather(const Tensor &table,
                                         const Tensor &ids) {
  if (table.getRank() != 2)
    return makeError("expected a [rows, features] table, got " +
                     table.describe());
  int64_t rows = table.getDimSize(0), d = table.getDimSize(1);
  SmallVector<int64_t> shape(ids.getShape());
  shape.push_back(d);
  Tensor result(table.getDType(), shape);
  for (int64_t i = 0, e = ids.getNumElements(); i < e; ++i) {
    double id = ids[i];
    if (!(id >= 0 && id < static_cast<double>(rows)))
      return makeError(
          "id " + Twine(static_cast<int64_t>(id)) + " at position " + Twine(i) +
          " is out of range for a table of " + Twine(rows) + " rows");
    int64_t row = static_cast<int64_t>(id);
    for (int64_t j = 0; j < d; ++j)
      result[i * d + j] = table[row * d + j];
  }
  return result;
}

Tensor attn::reference::positions(int64_t length, int64_t start) {
  Tensor result(DType::I32, {length});
  for (int64_t i = 0; i < length; ++i)
    result[i] = static_cast<double>(start + i);
  return result;
}

Tensor attn::reference::sinusoidal(int64_t length, int64_t d, DType dtype,
                                   int64_t start) {
  Tensor result(dtype, {length, d});
  for (int64_t i = 0; i < length; ++i) {
    for (int64_t c = 0; c < d; ++c) {
      int64_t twoJ = c - c % 2;
      double angle =
          static_cast<double>(start + i) /
          std::pow(10000.0, static_cast<double>(twoJ) / static_cast<double>(d));
      result[i * d + c] = c % 2 == 0 ? std::sin(angle) : std::cos(angle);
    }
  }
  return result;
}

Expected<Tensor> attn::reference::rope(const Tensor &input,
                                       const Tensor &positions, double base,
                                       bool inverse) {
  int64_t rank = input.getRank();
  if (rank < 2 || input.getDimSize(rank - 1) % 2 != 0)
    return makeError("rope needs a [..., T, D] input with D even, got " +
                     input.describe());
  int64_t rows = input.getDimSize(rank - 2), d = input.getDimSize(rank - 1);
  if (positions.getRank() != 1 || positions.getDimSize(0) != rows)
    return makeError("rope's positions " + positions.describe() +
                     " do not number the rows of " + input.describe());
  int64_t half = d / 2;
  Tensor result(input.getDType(), input.getShape());
  for (int64_t row = 0; row < input.getNumElements() / d; ++row) {
    double position = positions[row % rows];
    for (int64_t j = 0; j < half; ++j) {
      // The pair (j, j + D/2) turns by position * base^(-2j/D).
      double angle = position * std::pow(base, -2.0 * static_cast<double>(j) /
                                                   static_cast<double>(d));
      double c = std::cos(angle);
      double s = inverse ? -std::sin(angle) : std::sin(angle);
      double first = input[row * d + j], second = input[row * d + j + half];
      result[row * d + j] = first * c - second * s;
      result[row * d + j + half] = second * c + first * s;
    }
  }
  return result;
}
