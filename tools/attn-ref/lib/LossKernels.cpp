//===- LossKernels.cpp - Cross-entropy and its adjoint --------------------===//
//
// torch.nn.functional.cross_entropy with reduction "mean", ignore_index and
// label_smoothing, except that a batch with every target ignored has loss 0
// where PyTorch gives NaN.
//
//===----------------------------------------------------------------------===//

#include "attn/Reference/Kernels.h"

#include "KernelUtils.h"

#include <cmath>
#include <limits>

using namespace attn::reference;
using namespace attn::reference::detail;
using llvm::Expected;
using llvm::Twine;

/// Checks the shapes, and every target that is not ignored against [0, C).
/// Returns the number of targets kept.
static Expected<int64_t> checkTargets(const Tensor &logits,
                                      const Tensor &targets,
                                      const CrossEntropyOptions &options) {
  bool compatible = logits.getRank() >= 1 &&
                    targets.getRank() == logits.getRank() - 1 &&
                    targets.getShape() == logits.getShape().drop_back();
  if (!compatible)
    return makeError("targets " + targets.describe() +
                     " must have the shape of logits " + logits.describe() +
                     " without its last (class) dimension");
  if (options.labelSmoothing < 0 || options.labelSmoothing > 1)
    return makeError("label smoothing " +
                     std::to_string(options.labelSmoothing) +
                     " is not in [0, 1]");
  int64_t classes = logits.getShape().back(), kept = 0;
  for (int64_t n = 0, e = targets.getNumElements(); n < e; ++n) {
    auto target = static_cast<int64_t>(targets[n]);
    if (options.ignoreIndex && target == *options.ignoreIndex)
      continue;
    if (target < 0 || target >= classes)
      return makeError("target " + Twine(target) + " at position " + Twine(n) +
                       " is out of range for " + Twine(classes) + " classes");
    ++kept;
  }
  return kept;
}

/// log_softmax of row n of [rows, C] into `logp`.
static void rowLogSoftmax(const Tensor &logits, int64_t n, int64_t classes,
                          std::vector<double> &logp) {
  double max = -std::numeric_limits<double>::infinity();
  for (int64_t c = 0; c < classes; ++c)
    max = std::max(max, logits[n * classes + c]);
  double sum = 0.0;
  for (int64_t c = 0; c < classes; ++c)
    sum += std::exp(logits[n * classes + c] - max);
  double logSum = std::log(sum);
  for (int64_t c = 0; c < classes; ++c)
    logp[c] = logits[n * classes + c] - max - logSum;
}

Expected<Tensor>
attn::reference::crossEntropy(const Tensor &logits, const Tensor &targets,
                              const CrossEntropyOptions &options) {
  Expected<int64_t> kept = checkTargets(logits, targets, options);
  if (!kept)
    return kept.takeError();
  if (*kept == 0)
    return Tensor::scalar(DType::F32, 0.0);
  int64_t classes = logits.getShape().back();
  double smoothing = options.labelSmoothing, total = 0.0;
  std::vector<double> logp(classes);
  for (int64_t n = 0, e = targets.getNumElements(); n < e; ++n) {
    auto target = static_cast<int64_t>(targets[n]);
    if (options.ignoreIndex && target == *options.ignoreIndex)
      continue;
    rowLogSoftmax(logits, n, classes, logp);
    double uniform = 0.0;
    for (int64_t c = 0; c < classes; ++c)
      uniform -= logp[c];
    uniform /= static_cast<double>(classes);
    total += (1.0 - smoothing) * -logp[target] + smoothing * uniform;
  }
  return Tensor::scalar(DType::F32, total / static_cast<double>(*kept));
}

Expected<Tensor>
attn::reference::crossEntropyGrad(const Tensor &logits, const Tensor &targets,
                                  double gradLoss,
                                  const CrossEntropyOptions &options) {
  Expected<int64_t> kept = checkTargets(logits, targets, options);
  if (!kept)
    return kept.takeError();
  Tensor result(logits.getDType(), logits.getShape());
  if (*kept == 0)
    return result;
  int64_t classes = logits.getShape().back();
  double smoothing = options.labelSmoothing;
  double factor = gradLoss / static_cast<double>(*kept);
  std::vector<double> logp(classes);
  for (int64_t n = 0, e = targets.getNumElements(); n < e; ++n) {
    auto target = static_cast<int64_t>(targets[n]);
    if (options.ignoreIndex && target == *options.ignoreIndex)
      continue;
    rowLogSoftmax(logits, n, classes, logp);
    for (int64_t c = 0; c < classes; ++c) {
      double smoothed = smoothing / static_cast<double>(classes) +
                        (c == target ? 1.0 - smoothing : 0.0);
      result[n * classes + c] = factor * (std::exp(logp[c]) - smoothed);
    }
  }
  return result;
}
