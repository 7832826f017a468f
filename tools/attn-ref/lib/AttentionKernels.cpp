//===- AttentionKernels.cpp - Scaled dot-product attention ----------------===//
//
// sdpa and its adjoint, materialising each query's row of probabilities: the
// plain definition the tiled, online-softmax lowerings are checked against.
// With fewer key/value heads than query heads (grouped-query attention) each
// query head reads its group's key and value head, and the adjoints of a
// key/value head accumulate over the query heads of its group.
//
//===----------------------------------------------------------------------===//

#include "attn/Reference/Kernels.h"

#include "KernelUtils.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace attn::reference;
using namespace attn::reference::detail;
using llvm::Expected;
using llvm::Twine;

namespace {

/// The sizes of one attention problem, checked once.
struct AttentionShape {
  int64_t batch, heads, kvHeads, queries, keys, headDim, valueDim;
  double scale;

  /// The key and value head query head h reads: the heads are grouped as
  /// `torch.repeat_interleave(k, heads / kvHeads, dim=1)` groups them.
  int64_t kvHead(int64_t h) const { return h / (heads / kvHeads); }
};

} // namespace

static Expected<AttentionShape> checkAttention(const Tensor &q, const Tensor &k,
                                               const Tensor &v,
                                               const AttentionOptions &opts) {
  if (q.getRank() != 4 || k.getRank() != 4 || v.getRank() != 4)
    return makeError("query, key and value must be [B, H, T, D] tensors, got " +
                     q.describe() + ", " + k.describe() + " and " +
                     v.describe());
  AttentionShape shape{
      q.getDimSize(0), q.getDimSize(1), k.getDimSize(1), q.getDimSize(2),
      k.getDimSize(2), q.getDimSize(3), v.getDimSize(3), 0.0};
  if (k.getDimSize(0) != shape.batch || v.getDimSize(0) != shape.batch ||
      shape.kvHeads <= 0 || shape.heads % shape.kvHeads != 0 ||
      v.getDimSize(1) != shape.kvHeads || k.getDimSize(3) != shape.headDim ||
      v.getDimSize(2) != shape.keys)
    return makeError("query " + q.describe() + ", key " + k.describe() +
                     " and value " + v.describe() + " do not agree");
  if (const Tensor *p = opts.keyPadding) {
    if (p->getRank() != 2 || p->getDimSize(0) != shape.batch ||
        p->getDimSize(1) != shape.keys)
      return makeError("key padding " + p->describe() + " must be [B, S] = [" +
                       Twine(shape.batch) + ", " + Twine(shape.keys) + "]");
  }
  shape.scale = opts.scale
                    ? *opts.scale
                    : 1.0 / std::sqrt(static_cast<double>(shape.headDim));
  return shape;
}

/// The attention probabilities of query (b, h, t) over every key, into
/// `probs`; all zero when every key is masked. Returns the logsumexp of the
/// scaled scores of the visible keys (0 when every key is masked).
static double attentionRow(const Tensor &q, const Tensor &k,
                         const AttentionShape &shape,
                         const AttentionOptions &opts, int64_t b, int64_t h,
                         int64_t t, std::vector<double> &probs) {
  int64_t numKeys = shape.keys, dim = shape.headDim;
  int64_t qBase = ((b * shape.heads + h) * shape.queries + t) * dim;
  int64_t kBase = (b * shape.kvHeads + shape.kvHead(h)) * numKeys * dim;
  double max = -std::numeric_limits<double>::infinity();
  std::vector<bool> masked(numKeys, false);
  for (int64_t s = 0; s < numKeys; ++s) {
    // Causal queries are aligned to the last key: query t sees keys up to
    // t + S - T, as in incremental decoding.
    masked[s] = (opts.causal && s > t + numKeys - shape.queries) ||
                (opts.keyPadding && (*opts.keyPadding)[b * numKeys + s] != 0);
    if (masked[s]) {
      probs[s] = 0.0;
      continue;
    }
    double dot = 0.0;
    for (int64_t c = 0; c < dim; ++c)
      dot += q[qBase + c] * k[kBase + s * dim + c];
    probs[s] = dot * shape.scale;
    max = std::max(max, probs[s]);
  }
  double sum = 0.0;
  for (int64_t s = 0; s < numKeys; ++s) {
    if (masked[s])
      continue;
    probs[s] = std::exp(probs[s] - max);
    sum += probs[s];
  }
  if (sum == 0.0)
    return 0.0;
  for (int64_t s = 0; s < numKeys; ++s)
    probs[s] /= sum;
  return max + std::log(sum);
}

/// Applies attention dropout to the probabilities `in` of query row `row`
/// (its index in [B, H, T]) into `out`: element (row, s) of the [B, H, T, S]
/// probabilities is kept as `dropout` keeps it. Nothing without a seed.
static void applyDropout(const AttentionOptions &opts, int64_t row,
                         const std::vector<double> &in,
                         std::vector<double> &out) {
  if (!opts.seed || opts.dropout == 0.0)
    return;
  auto numKeys = static_cast<int64_t>(in.size());
  double scale = 1.0 / (1.0 - opts.dropout);
  for (int64_t s = 0; s < numKeys; ++s) {
    auto index = static_cast<uint64_t>(row * numKeys + s);
    out[s] = dropoutKeeps(*opts.seed, opts.stream, index, opts.dropout)
                 ? in[s] * scale
                 : 0.0;
  }
}

Expected<Tensor> attn::reference::sdpa(const Tensor &query, const Tensor &key,
                                       const Tensor &value,
                                       const AttentionOptions &options) {
  Expected<AttentionShape> shape = checkAttention(query, key, value, options);
  if (!shape)
    return shape.takeError();
  int64_t heads = shape->heads, numQueries = shape->queries;
  int64_t numKeys = shape->keys, dv = shape->valueDim;
  Tensor result(query.getDType(), {shape->batch, heads, numQueries, dv});
  std::vector<double> probs(numKeys);
  for (int64_t b = 0; b < shape->batch; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      int64_t vBase = (b * shape->kvHeads + shape->kvHead(h)) * numKeys * dv;
      for (int64_t t = 0; t < numQueries; ++t) {
        attentionRow(query, key, *shape, options, b, h, t, probs);
        applyDropout(options, (b * heads + h) * numQueries + t, probs, probs);
        int64_t oBase = ((b * heads + h) * numQueries + t) * dv;
        for (int64_t c = 0; c < dv; ++c) {
          double sum = 0.0;
          for (int64_t s = 0; s < numKeys; ++s)
            sum += probs[s] * value[vBase + s * dv + c];
          result[oBase + c] = sum;
        }
      }
    }
  return result;
}

Expected<Tensor>
attn::reference::sdpaLogsumexp(const Tensor &query, const Tensor &key,
                               const Tensor &value,
                               const AttentionOptions &options) {
  Expected<AttentionShape> shape = checkAttention(query, key, value, options);
  if (!shape)
    return shape.takeError();
  Tensor result(query.getDType(), {shape->batch, shape->heads, shape->queries});
  std::vector<double> probs(shape->keys);
  for (int64_t b = 0; b < shape->batch; ++b)
    for (int64_t h = 0; h < shape->heads; ++h)
      for (int64_t t = 0; t < shape->queries; ++t)
        result[(b * shape->heads + h) * shape->queries + t] =
            attentionRow(query, key, *shape, options, b, h, t, probs);
  return result;
}

Expected<SdpaGradients>
attn::reference::sdpaGrad(const Tensor &query, const Tensor &key,
                          const Tensor &value, const Tensor &gradOutput,
                          const AttentionOptions &options) {
  Expected<AttentionShape> shape = checkAttention(query, key, value, options);
  if (!shape)
    return shape.takeError();
  int64_t heads = shape->heads, numQueries = shape->queries;
  int64_t numKeys = shape->keys, dim = shape->headDim, dv = shape->valueDim;
  if (gradOutput.getShape() !=
      llvm::ArrayRef<int64_t>({shape->batch, heads, numQueries, dv}))
    return makeError("grad_output " + gradOutput.describe() +
                     " does not have the shape of the attention output");
  SdpaGradients grads{Tensor(query.getDType(), query.getShape()),
                      Tensor(key.getDType(), key.getShape()),
                      Tensor(value.getDType(), value.getShape())};
  std::vector<double> probs(numKeys), dprobs(numKeys), dropped(numKeys),
      keepScale(numKeys, 1.0);
  for (int64_t b = 0; b < shape->batch; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      int64_t kvBase = (b * shape->kvHeads + shape->kvHead(h)) * numKeys;
      for (int64_t t = 0; t < numQueries; ++t) {
        attentionRow(query, key, *shape, options, b, h, t, probs);
        int64_t row = (b * heads + h) * numQueries + t;
        // With dropout the output is D v for D = P * keep / (1 - rate):
        // dV = D^T dO and dP = (dO v^T) * keep / (1 - rate).
        std::fill(keepScale.begin(), keepScale.end(), 1.0);
        applyDropout(options, row, keepScale, keepScale);
        for (int64_t s = 0; s < numKeys; ++s)
          dropped[s] = probs[s] * keepScale[s];
        // dP = dO v^T; dScores = P * (dP - sum(P * dP)).
        double weighted = 0.0;
        for (int64_t s = 0; s < numKeys; ++s) {
          double dot = 0.0;
          for (int64_t c = 0; c < dv; ++c) {
            double dout = gradOutput[row * dv + c];
            dot += dout * value[(kvBase + s) * dv + c];
            grads.value[(kvBase + s) * dv + c] += dropped[s] * dout;
          }
          dprobs[s] = dot * keepScale[s];
          weighted += probs[s] * dprobs[s];
        }
        for (int64_t s = 0; s < numKeys; ++s) {
          double dscore = probs[s] * (dprobs[s] - weighted) * shape->scale;
          if (dscore == 0.0)
            continue;
          for (int64_t c = 0; c < dim; ++c) {
            grads.query[row * dim + c] += dscore * key[(kvBase + s) * dim + c];
            grads.key[(kvBase + s) * dim + c] += dscore * query[row * dim + c];
          }
        }
      }
    }
  return grads;
}
