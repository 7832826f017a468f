//===- ElementwiseKernels.cpp - Element-wise reference kernels ------------===//
//
// Activations and their derivatives, arithmetic and comparisons with NumPy
// broadcasting, select and cast.
//
//===----------------------------------------------------------------------===//

#include "attn/Reference/Kernels.h"

#include "KernelUtils.h"

#include "attn/abi.h"

#include <cmath>

using namespace attn::reference;
using namespace attn::reference::detail;
using llvm::ArrayRef;
using llvm::Expected;
using llvm::SmallVector;

static constexpr double kSqrt2 = 1.41421356237309504880;
static constexpr double kSqrt2OverPi = 0.79788456080286535588;
static constexpr double kInvSqrt2Pi = 0.39894228040143267794;
static constexpr double kGeluTanhCubic = 0.044715;

static double sigmoidOf(double x) { return 1.0 / (1.0 + std::exp(-x)); }

double attn::reference::applyUnary(UnaryFn fn, double x) {
  switch (fn) {
  case UnaryFn::None:
    return x;
  case UnaryFn::Relu:
    return x > 0 ? x : 0.0;
  case UnaryFn::Gelu:
    return 0.5 * x * (1.0 + std::erf(x / kSqrt2));
  case UnaryFn::GeluTanh:
    return 0.5 * x *
           (1.0 + std::tanh(kSqrt2OverPi * (x + kGeluTanhCubic * x * x * x)));
  case UnaryFn::Silu:
    return x * sigmoidOf(x);
  case UnaryFn::Tanh:
    return std::tanh(x);
  case UnaryFn::Sigmoid:
    return sigmoidOf(x);
  case UnaryFn::Neg:
    return -x;
  case UnaryFn::Exp:
    return std::exp(x);
  case UnaryFn::Log:
    return std::log(x);
  case UnaryFn::Sqrt:
    return std::sqrt(x);
  }
  llvm_unreachable("unknown unary function");
}

double attn::reference::applyUnaryDerivative(UnaryFn fn, double x) {
  switch (fn) {
  case UnaryFn::None:
    return 1.0;
  case UnaryFn::Relu:
    // PyTorch's threshold_backward: the subgradient at 0 is 0.
    return x > 0 ? 1.0 : 0.0;
  case UnaryFn::Gelu:
    return 0.5 * (1.0 + std::erf(x / kSqrt2)) +
           x * kInvSqrt2Pi * std::exp(-0.5 * x * x);
  case UnaryFn::GeluTanh: {
    double t = std::tanh(kSqrt2OverPi * (x + kGeluTanhCubic * x * x * x));
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * kSqrt2OverPi *
                                 (1.0 + 3.0 * kGeluTanhCubic * x * x);
  }
  case UnaryFn::Silu: {
    double s = sigmoidOf(x);
    return s * (1.0 + x * (1.0 - s));
  }
  case UnaryFn::Tanh: {
    double t = std::tanh(x);
    return 1.0 - t * t;
  }
  case UnaryFn::Sigmoid: {
    double s = sigmoidOf(x);
    return s * (1.0 - s);
  }
  case UnaryFn::Neg:
    return -1.0;
  case UnaryFn::Exp:
    return std::exp(x);
  case UnaryFn::Log:
    return 1.0 / x;
  case UnaryFn::Sqrt:
    return 0.5 / std::sqrt(x);
  }
  llvm_unreachable("unknown unary function");
}

Tensor attn::reference::unary(UnaryFn fn, const Tensor &input) {
  Tensor result(input.getDType(), input.getShape());
  for (int64_t i = 0, e = input.getNumElements(); i < e; ++i)
    result[i] = applyUnary(fn, input[i]);
  return result;
}

SmallVector<int64_t>
attn::reference::detail::broadcastStrides(ArrayRef<int64_t> shape,
                                          int64_t rank) {
  SmallVector<int64_t> own = getStrides(shape);
  SmallVector<int64_t> strides(rank, 0);
  int64_t shift = rank - static_cast<int64_t>(shape.size());
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    strides[d + shift] = shape[d] == 1 ? 0 : own[d];
  return strides;
}

Expected<SmallVector<int64_t>>
attn::reference::broadcastShapes(ArrayRef<ArrayRef<int64_t>> shapes) {
  size_t rank = 0;
  for (ArrayRef<int64_t> shape : shapes)
    rank = std::max(rank, shape.size());
  SmallVector<int64_t> result(rank, 1);
  for (ArrayRef<int64_t> shape : shapes) {
    for (size_t i = 0; i < shape.size(); ++i) {
      int64_t &out = result[rank - 1 - i];
      int64_t size = shape[shape.size() - 1 - i];
      if (size == out || size == 1)
        continue;
      if (out == 1) {
        out = size;
        continue;
      }
      std::string message = "shapes";
      for (ArrayRef<int64_t> s : shapes)
        message += " " + formatShape(s);
      return makeError(message + " cannot be broadcast together");
    }
  }
  return result;
}

/// Applies `fn(a, b, ...)` over operands broadcast together.
template <typename Fn>
static Expected<Tensor> broadcastMap(ArrayRef<const Tensor *> operands,
                                     DType resultType, Fn fn) {
  SmallVector<ArrayRef<int64_t>> shapes;
  for (const Tensor *operand : operands)
    shapes.push_back(operand->getShape());
  Expected<SmallVector<int64_t>> shape = broadcastShapes(shapes);
  if (!shape)
    return shape.takeError();
  int64_t rank = static_cast<int64_t>(shape->size());
  SmallVector<SmallVector<int64_t>> strides;
  for (const Tensor *operand : operands)
    strides.push_back(broadcastStrides(operand->getShape(), rank));
  Tensor result(resultType, *shape);
  forEachBroadcast(*shape, strides,
                   [&](int64_t linear, ArrayRef<int64_t> offsets) {
                     result[linear] = fn(offsets);
                   });
  return result;
}

static double applyBinary(BinaryFn fn, double a, double b) {
  switch (fn) {
  case BinaryFn::Add:
    return a + b;
  case BinaryFn::Sub:
    return a - b;
  case BinaryFn::Mul:
    return a * b;
  case BinaryFn::Div:
    return a / b;
  }
  llvm_unreachable("unknown binary function");
}

Expected<Tensor> attn::reference::binary(BinaryFn fn, const Tensor &lhs,
                                         const Tensor &rhs) {
  return broadcastMap({&lhs, &rhs}, lhs.getDType(), [&](ArrayRef<int64_t> at) {
    return applyBinary(fn, lhs[at[0]], rhs[at[1]]);
  });
}

static bool applyCompare(CompareFn fn, double a, double b) {
  switch (fn) {
  case CompareFn::Eq:
    return a == b;
  case CompareFn::Ne:
    return a != b;
  case CompareFn::Lt:
    return a < b;
  case CompareFn::Le:
    return a <= b;
  case CompareFn::Gt:
    return a > b;
  case CompareFn::Ge:
    return a >= b;
  }
  llvm_unreachable("unknown comparison");
}

Expected<Tensor> attn::reference::compare(CompareFn fn, const Tensor &lhs,
                                          const Tensor &rhs) {
  return broadcastMap({&lhs, &rhs}, DType::Bool, [&](ArrayRef<int64_t> at) {
    return applyCompare(fn, lhs[at[0]], rhs[at[1]]) ? 1.0 : 0.0;
  });
}

Expected<Tensor> attn::reference::select(const Tensor &condition,
                                         const Tensor &trueValue,
                                         const Tensor &falseValue) {
  return broadcastMap({&condition, &trueValue, &falseValue},
                      trueValue.getDType(), [&](ArrayRef<int64_t> at) {
                        return condition[at[0]] != 0.0 ? trueValue[at[1]]
                                                       : falseValue[at[2]];
                      });
}

Tensor attn::reference::castTensor(const Tensor &input, DType dtype) {
  Tensor result(dtype, input.getShape());
  for (int64_t i = 0, e = input.getNumElements(); i < e; ++i)
    result[i] = convertTo(dtype, input[i]);
  return result;
}

bool attn::reference::dropoutKeeps(uint64_t seed, uint64_t stream,
                                   uint64_t index, double rate) {
  return attn_dropout_keeps(seed, stream, index, rate);
}

Tensor attn::reference::dropout(const Tensor &input, double rate,
                                uint64_t seed, uint64_t stream) {
  Tensor result(input.getDType(), input.getShape());
  double scale = 1.0 / (1.0 - rate);
  for (int64_t i = 0, e = input.getNumElements(); i < e; ++i)
    if (dropoutKeeps(seed, stream, static_cast<uint64_t>(i), rate))
      result[i] = input[i] * scale;
  return result;
}
