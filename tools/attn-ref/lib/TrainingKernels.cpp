//===- TrainingKernels.cpp - Adjoints and the optimizer step --------------===//
//
// The gradient ops of the autodiff pass that are not tied to one forward
// family (activations, softmax, the embedding scatter-add), the global
// gradient norm and the Adam/AdamW update.
//
//===----------------------------------------------------------------------===//

#include "attn/Reference/Kernels.h"

#include "KernelUtils.h"

#include <cmath>

using namespace attn::reference;
using namespace attn::reference::detail;
using llvm::Expected;
using llvm::Twine;

static llvm::Error checkSameShape(const char *what, const Tensor &value,
                                  const Tensor &expected) {
  if (value.getShape() == expected.getShape())
    return llvm::Error::success();
  return makeError(Twine(what) + " " + value.describe() + " must have shape " +
                   formatShape(expected.getShape()));
}

Expected<Tensor> attn::reference::activationGrad(UnaryFn activation,
                                                 const Tensor &input,
                                                 const Tensor &gradOutput) {
  if (llvm::Error error = checkSameShape("grad_output", gradOutput, input))
    return std::move(error);
  Tensor result(input.getDType(), input.getShape());
  for (int64_t i = 0, e = input.getNumElements(); i < e; ++i)
    result[i] = gradOutput[i] * applyUnaryDerivative(activation, input[i]);
  return result;
}

/// The adjoint of softmax (logarithm false) or log-softmax from its output.
static Expected<Tensor> softmaxGradImpl(const Tensor &output,
                                        const Tensor &gradOutput, int64_t axis,
                                        bool logarithm) {
  if (llvm::Error error = checkAxis(output, axis))
    return std::move(error);
  if (llvm::Error error = checkSameShape("grad_output", gradOutput, output))
    return std::move(error);
  AxisSplit split = splitAtAxis(output.getShape(), axis);
  Tensor result(output.getDType(), output.getShape());
  for (int64_t o = 0; o < split.outer; ++o)
    for (int64_t j = 0; j < split.inner; ++j) {
      double sum = 0.0;
      for (int64_t i = 0; i < split.size; ++i) {
        int64_t at = split.offset(o, i, j);
        sum += logarithm ? gradOutput[at] : gradOutput[at] * output[at];
      }
      for (int64_t i = 0; i < split.size; ++i) {
        int64_t at = split.offset(o, i, j);
        result[at] = logarithm ? gradOutput[at] - std::exp(output[at]) * sum
                               : output[at] * (gradOutput[at] - sum);
      }
    }
  return result;
}

Expected<Tensor> attn::reference::softmaxGrad(const Tensor &output,
                                              const Tensor &gradOutput,
                                              int64_t axis) {
  return softmaxGradImpl(output, gradOutput, axis, /*logarithm=*/false);
}

Expected<Tensor> attn::reference::logSoftmaxGrad(const Tensor &output,
                                                 const Tensor &gradOutput,
                                                 int64_t axis) {
  return softmaxGradImpl(output, gradOutput, axis, /*logarithm=*/true);
}

Expected<Tensor> attn::reference::gatherGrad(const Tensor &ids,
                                             const Tensor &gradOutput,
                                             int64_t rows) {
  bool compatible = gradOutput.getRank() == ids.getRank() + 1 &&
                    gradOutput.getShape().drop_back() == ids.getShape();
  if (!compatible)
    return makeError("gradient " + gradOutput.describe() +
                     " does not match ids " + ids.describe());
  int64_t d = gradOutput.getShape().back();
  Tensor result(gradOutput.getDType(), {rows, d});
  for (int64_t i = 0, e = ids.getNumElements(); i < e; ++i) {
    double id = ids[i];
    if (!(id >= 0 && id < static_cast<double>(rows)))
      return makeError(
          "id " + Twine(static_cast<int64_t>(id)) + " at position " + Twine(i) +
          " is out of range for a table of " + Twine(rows) + " rows");
    auto row = static_cast<int64_t>(id);
    for (int64_t j = 0; j < d; ++j)
      result[row * d + j] += gradOutput[i * d + j];
  }
  return result;
}

Tensor attn::reference::globalNorm(llvm::ArrayRef<Tensor> inputs) {
  double sum = 0.0;
  for (const Tensor &input : inputs)
    for (double x : input.getData())
      sum += x * x;
  return Tensor::scalar(DType::F32, std::sqrt(sum));
}

Expected<AdamState> attn::reference::adamUpdate(const Tensor &param,
                                                const Tensor &grad,
                                                const Tensor &firstMoment,
                                                const Tensor &secondMoment,
                                                double lr, int64_t step,
                                                const AdamOptions &options) {
  if (llvm::Error error = checkSameShape("gradient", grad, param))
    return std::move(error);
  if (llvm::Error error = checkSameShape("first moment", firstMoment, param))
    return std::move(error);
  if (llvm::Error error = checkSameShape("second moment", secondMoment, param))
    return std::move(error);
  if (step < 1)
    return makeError("Adam step " + Twine(step) + " is not positive");
  double b1 = options.beta1, b2 = options.beta2;
  double correction1 = 1.0 - std::pow(b1, static_cast<double>(step));
  double correction2 = 1.0 - std::pow(b2, static_cast<double>(step));
  AdamState state{Tensor(param.getDType(), param.getShape()),
                  Tensor(firstMoment.getDType(), param.getShape()),
                  Tensor(secondMoment.getDType(), param.getShape())};
  for (int64_t i = 0, e = param.getNumElements(); i < e; ++i) {
    double p = param[i], g = grad[i];
    // torch.optim.Adam adds the decay to the gradient; AdamW shrinks the
    // weight before the step.
    if (options.decoupled)
      p -= lr * options.weightDecay * p;
    else
      g += options.weightDecay * p;
    double m = b1 * firstMoment[i] + (1.0 - b1) * g;
    double v = b2 * secondMoment[i] + (1.0 - b2) * g * g;
    p -= lr * (m / correction1) / (std::sqrt(v / correction2) + options.eps);
    state.param[i] = p;
    state.firstMoment[i] = m;
    state.secondMoment[i] = v;
  }
  return state;
}
