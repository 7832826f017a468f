//===- NormKernels.cpp - Layer and RMS normalisation ----------------------===//
//
// layer_norm and rms_norm over the last dimension, with their optional fused
// residual, and their adjoints.
//
//===----------------------------------------------------------------------===//

#include "attn/Reference/Kernels.h"

#include "KernelUtils.h"

#include <cmath>

using namespace attn::reference;
using namespace attn::reference::detail;
using llvm::Expected;
using llvm::Twine;

/// Checks a [d] weight or bias against an input [..., d].
static llvm::Error checkFeatures(const char *what, const Tensor &vector,
                                 const Tensor &input) {
  if (input.getRank() >= 1 && vector.getRank() == 1 &&
      vector.getDimSize(0) == input.getShape().back())
    return llvm::Error::success();
  return makeError(Twine(what) + " " + vector.describe() +
                   " does not match the features of " + input.describe());
}

/// input + residual, or the input alone.
static Expected<Tensor> addResidual(const Tensor &input,
                                    const Tensor *residual) {
  if (!residual)
    return input;
  if (residual->getShape() != input.getShape())
    return makeError("residual " + residual->describe() +
                     " does not have the shape of the input " +
                     input.describe());
  Tensor sum = input;
  for (int64_t i = 0, e = sum.getNumElements(); i < e; ++i)
    sum[i] += (*residual)[i];
  return sum;
}

/// Mean and 1/sqrt(biased variance + eps) of row r of [rows, d].
static std::pair<double, double> rowStats(const Tensor &x, int64_t r, int64_t d,
                                          double eps) {
  double mean = 0.0;
  for (int64_t c = 0; c < d; ++c)
    mean += x[r * d + c];
  mean /= static_cast<double>(d);
  double var = 0.0;
  for (int64_t c = 0; c < d; ++c) {
    double centred = x[r * d + c] - mean;
    var += centred * centred;
  }
  var /= static_cast<double>(d);
  return {mean, 1.0 / std::sqrt(var + eps)};
}

/// 1/sqrt(mean(x^2) + eps) of row r of [rows, d].
static double rowRms(const Tensor &x, int64_t r, int64_t d, double eps) {
  double sumSquares = 0.0;
  for (int64_t c = 0; c < d; ++c)
    sumSquares += x[r * d + c] * x[r * d + c];
  return 1.0 / std::sqrt(sumSquares / static_cast<double>(d) + eps);
}

Expected<Tensor> attn::reference::layerNorm(const Tensor &input,
                                            const Tensor &weight,
                                            const Tensor &bias,
                                            const Tensor *residual,
                                            double eps) {
  if (llvm::Error error = checkFeatures("weight", weight, input))
    return std::move(error);
  if (llvm::Error error = checkFeatures("bias", bias, input))
    return std::move(error);
  Expected<Tensor> x = addResidual(input, residual);
  if (!x)
    return x.takeError();
  int64_t d = input.getShape().back();
  int64_t rows = d == 0 ? 0 : input.getNumElements() / d;
  Tensor result(input.getDType(), input.getShape());
  for (int64_t r = 0; r < rows; ++r) {
    auto [mean, rstd] = rowStats(*x, r, d, eps);
    for (int64_t c = 0; c < d; ++c)
      result[r * d + c] = ((*x)[r * d + c] - mean) * rstd * weight[c] + bias[c];
  }
  return result;
}

Expected<Tensor> attn::reference::rmsNorm(const Tensor &input,
                                          const Tensor &weight,
                                          const Tensor *residual, double eps) {
  if (llvm::Error error = checkFeatures("weight", weight, input))
    return std::move(error);
  Expected<Tensor> x = addResidual(input, residual);
  if (!x)
    return x.takeError();
  int64_t d = input.getShape().back();
  int64_t rows = d == 0 ? 0 : input.getNumElements() / d;
  Tensor result(input.getDType(), input.getShape());
  for (int64_t r = 0; r < rows; ++r) {
    double rms = rowRms(*x, r, d, eps);
    for (int64_t c = 0; c < d; ++c)
      result[r * d + c] = (*x)[r * d + c] * rms * weight[c];
  }
  return result;
}

/// Checks the operands of a norm's adjoint.
static llvm::Error checkNormGrad(const Tensor &input, const Tensor &weight,
                                 const Tensor &gradOutput) {
  if (llvm::Error error = checkFeatures("weight", weight, input))
    return error;
  if (gradOutput.getShape() != input.getShape())
    return makeError("grad_output " + gradOutput.describe() +
                     " does not have the shape of the input " +
                     input.describe());
  return llvm::Error::success();
}

Expected<NormGradients> attn::reference::layerNormGrad(const Tensor &input,
                                                       const Tensor &weight,
                                                       const Tensor &gradOutput,
                                                       double eps) {
  if (llvm::Error error = checkNormGrad(input, weight, gradOutput))
    return std::move(error);
  int64_t d = input.getShape().back();
  int64_t rows = d == 0 ? 0 : input.getNumElements() / d;
  NormGradients grads{Tensor(input.getDType(), input.getShape()),
                      Tensor(weight.getDType(), weight.getShape()),
                      Tensor(weight.getDType(), weight.getShape())};
  std::vector<double> xhat(d), dxhat(d);
  for (int64_t r = 0; r < rows; ++r) {
    auto [mean, rstd] = rowStats(input, r, d, eps);
    double meanDxhat = 0.0, meanDxhatXhat = 0.0;
    for (int64_t c = 0; c < d; ++c) {
      double dy = gradOutput[r * d + c];
      xhat[c] = (input[r * d + c] - mean) * rstd;
      dxhat[c] = dy * weight[c];
      meanDxhat += dxhat[c];
      meanDxhatXhat += dxhat[c] * xhat[c];
      grads.weight[c] += dy * xhat[c];
      grads.bias[c] += dy;
    }
    meanDxhat /= static_cast<double>(d);
    meanDxhatXhat /= static_cast<double>(d);
    for (int64_t c = 0; c < d; ++c)
      grads.input[r * d + c] =
          rstd * (dxhat[c] - meanDxhat - xhat[c] * meanDxhatXhat);
  }
  return grads;
}

Expected<NormGradients> attn::reference::rmsNormGrad(const Tensor &input,
                                                     const Tensor &weight,
                                                     const Tensor &gradOutput,
                                                     double eps) {
  if (llvm::Error error = checkNormGrad(input, weight, gradOutput))
    return std::move(error);
  int64_t d = input.getShape().back();
  int64_t rows = d == 0 ? 0 : input.getNumElements() / d;
  NormGradients grads{Tensor(input.getDType(), input.getShape()),
                      Tensor(weight.getDType(), weight.getShape()), Tensor()};
  for (int64_t r = 0; r < rows; ++r) {
    double rms = rowRms(input, r, d, eps);
    double meanGx = 0.0;
    for (int64_t c = 0; c < d; ++c) {
      double dy = gradOutput[r * d + c], x = input[r * d + c];
      meanGx += dy * weight[c] * x;
      grads.weight[c] += dy * x * rms;
    }
    meanGx /= static_cast<double>(d);
    for (int64_t c = 0; c < d; ++c)
      grads.input[r * d + c] = rms * gradOutput[r * d + c] * weight[c] -
                               rms * rms * rms * input[r * d + c] * meanGx;
  }
  return grads;
}
