//===- ContractionKernels.cpp - Products and reductions -------------------===//
//
// Batched matmul, linear with its epilogue, sum/mean/max reductions with the
// masked mean, softmax and log-softmax; every sum accumulates in double.
//
//===----------------------------------------------------------------------===//

#include "attn/Reference/Kernels.h"

#include "KernelUtils.h"

#include <cmath>
#include <limits>

using namespace attn::reference;
using namespace attn::reference::detail;
using llvm::ArrayRef;
using llvm::Expected;
using llvm::SmallVector;
using llvm::Twine;

Expected<Tensor> attn::reference::matmul(const Tensor &lhs, const Tensor &rhs) {
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return makeError("matmul needs operands of rank 2 or more, got " +
                     lhs.describe() + " and " + rhs.describe());
  ArrayRef<int64_t> a = lhs.getShape(), b = rhs.getShape();
  int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
  if (b[b.size() - 2] != k)
    return makeError("contracted dimensions differ: " + lhs.describe() + " @ " +
                     rhs.describe());
  Expected<SmallVector<int64_t>> batch =
      broadcastShapes({a.drop_back(2), b.drop_back(2)});
  if (!batch)
    return batch.takeError();
  int64_t batchRank = static_cast<int64_t>(batch->size());
  // Batch strides in units of whole matrices.
  SmallVector<SmallVector<int64_t>> strides = {
      broadcastStrides(a.drop_back(2), batchRank),
      broadcastStrides(b.drop_back(2), batchRank)};
  SmallVector<int64_t> shape(*batch);
  shape.push_back(m);
  shape.push_back(n);
  Tensor result(lhs.getDType(), shape);
  forEachBroadcast(
      *batch, strides, [&](int64_t linear, ArrayRef<int64_t> offsets) {
        int64_t lhsBase = offsets[0] * m * k;
        int64_t rhsBase = offsets[1] * k * n;
        int64_t outBase = linear * m * n;
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double sum = 0.0;
            for (int64_t c = 0; c < k; ++c)
              sum += lhs[lhsBase + i * k + c] * rhs[rhsBase + c * n + j];
            result[outBase + i * n + j] = sum;
          }
      });
  return result;
}

Expected<Tensor> attn::reference::linear(const Tensor &input,
                                         const Tensor &weight,
                                         const Tensor *bias,
                                         const Tensor *residual,
                                         UnaryFn activation) {
  if (input.getRank() < 1 || weight.getRank() != 2 ||
      input.getShape().back() != weight.getDimSize(1))
    return makeError("input " + input.describe() + " does not match weight " +
                     weight.describe() + " (the weight is [out, in])");
  int64_t in = weight.getDimSize(1), out = weight.getDimSize(0);
  if (bias && (bias->getRank() != 1 || bias->getDimSize(0) != out))
    return makeError("bias " + bias->describe() + " does not match the " +
                     Twine(out) + " outputs");
  SmallVector<int64_t> shape(input.getShape());
  shape.back() = out;
  if (residual && residual->getShape() != ArrayRef<int64_t>(shape))
    return makeError("residual " + residual->describe() +
                     " does not have the result shape " + formatShape(shape));
  Tensor result(input.getDType(), shape);
  int64_t rows = getNumElements(input.getShape().drop_back());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double sum = bias ? (*bias)[o] : 0.0;
      for (int64_t c = 0; c < in; ++c)
        sum += input[r * in + c] * weight[o * in + c];
      double value = applyUnary(activation, sum);
      if (residual)
        value += (*residual)[r * out + o];
      result[r * out + o] = value;
    }
  return result;
}

Expected<Tensor> attn::reference::reduce(ReduceFn fn, const Tensor &input,
                                         int64_t axis, const Tensor *mask) {
  if (llvm::Error error = checkAxis(input, axis))
    return std::move(error);
  // A mask covers the input's leading dimensions; an input element reads
  // the mask at its index truncated to the mask's rank.
  int64_t maskInner = 1;
  if (mask) {
    if (fn != ReduceFn::Mean)
      return makeError("only a mean takes a mask");
    bool compatible =
        mask->getRank() > axis && mask->getRank() <= input.getRank();
    for (int64_t d = 0; compatible && d < mask->getRank(); ++d)
      compatible = mask->getDimSize(d) == input.getDimSize(d);
    if (!compatible)
      return makeError("mask " + mask->describe() +
                       " does not cover the leading dimensions of " +
                       input.describe() + " up to axis " + Twine(axis));
    for (int64_t d = mask->getRank(); d < input.getRank(); ++d)
      maskInner *= input.getDimSize(d);
  }
  AxisSplit split = splitAtAxis(input.getShape(), axis);
  SmallVector<int64_t> shape(input.getShape());
  shape.erase(shape.begin() + axis);
  Tensor result(input.getDType(), shape);
  for (int64_t o = 0; o < split.outer; ++o)
    for (int64_t j = 0; j < split.inner; ++j) {
      double acc =
          fn == ReduceFn::Max ? -std::numeric_limits<double>::infinity() : 0.0;
      int64_t count = 0;
      for (int64_t i = 0; i < split.size; ++i) {
        int64_t offset = split.offset(o, i, j);
        if (mask && (*mask)[offset / maskInner] != 0.0)
          continue;
        double x = input[offset];
        acc = fn == ReduceFn::Max ? std::max(acc, x) : acc + x;
        ++count;
      }
      if (fn == ReduceFn::Mean)
        acc = count == 0 ? 0.0 : acc / static_cast<double>(count);
      result[o * split.inner + j] = acc;
    }
  return result;
}

/// Softmax or log-softmax along `axis`, stabilised by the row maximum.
static Expected<Tensor> softmaxImpl(const Tensor &input, int64_t axis,
                                    bool logarithm) {
  if (llvm::Error error = checkAxis(input, axis))
    return std::move(error);
  AxisSplit split = splitAtAxis(input.getShape(), axis);
  Tensor result(input.getDType(), input.getShape());
  for (int64_t o = 0; o < split.outer; ++o)
    for (int64_t j = 0; j < split.inner; ++j) {
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t i = 0; i < split.size; ++i)
        max = std::max(max, input[split.offset(o, i, j)]);
      double sum = 0.0;
      for (int64_t i = 0; i < split.size; ++i)
        sum += std::exp(input[split.offset(o, i, j)] - max);
      double logSum = std::log(sum);
      for (int64_t i = 0; i < split.size; ++i) {
        int64_t offset = split.offset(o, i, j);
        double shifted = input[offset] - max;
        result[offset] = logarithm ? shifted - logSum : std::exp(shifted) / sum;
      }
    }
  return result;
}

Expected<Tensor> attn::reference::softmax(const Tensor &input, int64_t axis) {
  return softmaxImpl(input, axis, /*logarithm=*/false);
}

Expected<Tensor> attn::reference::logSoftmax(const Tensor &input,
                                             int64_t axis) {
  return softmaxImpl(input, axis, /*logarithm=*/true);
}
