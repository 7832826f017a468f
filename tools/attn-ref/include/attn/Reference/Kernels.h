//===- Kernels.h - The attn ops as functions of tensors ---------*- C++ -*-===//
//
// Every op of the attn dialect as a plain function of reference tensors,
// written as the direct loops of its definition in double precision, with no
// tiling, fusion or reassociation: the evaluator maps IR ops onto these, and
// tests call them directly. They know nothing of MLIR; broadcasting here is
// NumPy's (the evaluator adds the dialect's rule for dynamic sizes).
//
// Anything the inputs can get wrong (sizes that disagree at run time, an id
// out of range) is an llvm::Error with a message, never an assert.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_REFERENCE_KERNELS_H
#define ATTN_REFERENCE_KERNELS_H

#include "attn/Reference/Tensor.h"

#include "llvm/Support/Error.h"

namespace attn::reference {

//===----------------------------------------------------------------------===//
// Element-wise
//===----------------------------------------------------------------------===//

/// The element-wise functions; the first seven are also the activations of
/// `attn.linear` and `attn.activation_grad` (`None` is the identity).
enum class UnaryFn {
  None,
  Relu,
  Gelu,
  GeluTanh,
  Silu,
  Tanh,
  Sigmoid,
  Neg,
  Exp,
  Log,
  Sqrt
};
enum class BinaryFn { Add, Sub, Mul, Div };
enum class CompareFn { Eq, Ne, Lt, Le, Gt, Ge };

double applyUnary(UnaryFn fn, double x);
/// The derivative of `fn` at `x`.
double applyUnaryDerivative(UnaryFn fn, double x);

Tensor unary(UnaryFn fn, const Tensor &input);

/// NumPy broadcasting of several shapes.
llvm::Expected<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<llvm::ArrayRef<int64_t>> shapes);

/// `lhs fn rhs` broadcast; the result has the lhs element type.
llvm::Expected<Tensor> binary(BinaryFn fn, const Tensor &lhs,
                              const Tensor &rhs);
/// A boolean tensor of `lhs fn rhs`, broadcast.
llvm::Expected<Tensor> compare(CompareFn fn, const Tensor &lhs,
                               const Tensor &rhs);
/// `trueValue` where `condition` is nonzero, else `falseValue`, broadcast.
llvm::Expected<Tensor> select(const Tensor &condition, const Tensor &trueValue,
                              const Tensor &falseValue);
/// Converts every element to `dtype` (see convertTo).
Tensor castTensor(const Tensor &input, DType dtype);

/// Whether dropout of `rate` keeps the element `index` (row-major) of the
/// op numbered `stream` in a call seeded with `seed`: the counter-based
/// stream of runtime/include/attn/abi.h (attn_dropout_bits), exactly.
bool dropoutKeeps(uint64_t seed, uint64_t stream, uint64_t index, double rate);
/// Inverted dropout with the mask of dropoutKeeps: kept elements are scaled
/// by 1 / (1 - rate), the others are zero.
Tensor dropout(const Tensor &input, double rate, uint64_t seed,
               uint64_t stream);

//===----------------------------------------------------------------------===//
// Shape
//===----------------------------------------------------------------------===//

llvm::Expected<Tensor> reshape(const Tensor &input,
                               llvm::ArrayRef<int64_t> shape);
/// Result dimension i is input dimension permutation[i].
llvm::Expected<Tensor> transpose(const Tensor &input,
                                 llvm::ArrayRef<int64_t> permutation);
/// [B, T, h*k] -> [B, h, T, k]; head i takes features [i*k, (i+1)*k).
llvm::Expected<Tensor> splitHeads(const Tensor &input, int64_t heads);
/// [B, h, T, k] -> [B, T, h*k].
llvm::Expected<Tensor> mergeHeads(const Tensor &input);
llvm::Expected<Tensor> concat(llvm::ArrayRef<Tensor> inputs, int64_t axis);
/// Indices [start, end) of dimension `axis`.
llvm::Expected<Tensor> slice(const Tensor &input, int64_t axis, int64_t start,
                             int64_t end);
/// Index `index` of dimension `axis` (negative counts from the end), without
/// that dimension.
llvm::Expected<Tensor> take(const Tensor &input, int64_t axis, int64_t index);
/// Broadcasts to `shape` by NumPy's rules (aligned on the last dimension).
llvm::Expected<Tensor> broadcastTo(const Tensor &input,
                                   llvm::ArrayRef<int64_t> shape);
/// Rows of `table` [n, d] at `ids`; the result is [ids..., d].
llvm::Expected<Tensor> gather(const Tensor &table, const Tensor &ids);
/// i32 [start, start+1, ..., start+length-1].
Tensor positions(int64_t length, int64_t start = 0);
/// The [length, d] table PE[i, 2j] = sin(p / 10000^(2j/d)),
/// PE[i, 2j+1] = cos(p / 10000^(2j/d)) for position p = start + i.
Tensor sinusoidal(int64_t length, int64_t d, DType dtype, int64_t start = 0);
/// The rotary embedding of Hugging Face's Llama on `input` [..., T, D] at
/// `positions` [T]: each pair (j, j + D/2) rotated by the angle
/// positions[t] * base^(-2j/D), by its opposite when `inverse`.
llvm::Expected<Tensor> rope(const Tensor &input, const Tensor &positions,
                            double base, bool inverse);

//===----------------------------------------------------------------------===//
// Contractions and reductions
//===----------------------------------------------------------------------===//

/// [..., M, K] x [..., K, N] -> [..., M, N], batch dimensions broadcast.
llvm::Expected<Tensor> matmul(const Tensor &lhs, const Tensor &rhs);
/// activation(input @ weight^T + bias) + residual; bias and residual may be
/// null.
llvm::Expected<Tensor> linear(const Tensor &input, const Tensor &weight,
                              const Tensor *bias, const Tensor *residual,
                              UnaryFn activation);

enum class ReduceFn { Sum, Mean, Max };
/// Reduces and drops dimension `axis`. A `mask` (mean only) covers the
/// leading dimensions of the input up to at least `axis`; elements whose mask
/// is true are left out, and a row with all elements left out has mean 0.
llvm::Expected<Tensor> reduce(ReduceFn fn, const Tensor &input, int64_t axis,
                              const Tensor *mask);
llvm::Expected<Tensor> softmax(const Tensor &input, int64_t axis);
llvm::Expected<Tensor> logSoftmax(const Tensor &input, int64_t axis);

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

/// (y - mean) / sqrt(var + eps) * weight + bias over the last dimension, with
/// y = input + residual (residual may be null) and the biased variance.
llvm::Expected<Tensor> layerNorm(const Tensor &input, const Tensor &weight,
                                 const Tensor &bias, const Tensor *residual,
                                 double eps);
/// y / sqrt(mean(y^2) + eps) * weight with y = input + residual.
llvm::Expected<Tensor> rmsNorm(const Tensor &input, const Tensor &weight,
                               const Tensor *residual, double eps);

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

struct AttentionOptions {
  /// Key s is masked for query t when s > t + S - T.
  bool causal = false;
  /// Defaults to 1/sqrt(D).
  std::optional<double> scale;
  /// Boolean [B, S]; true masks the key. May be null.
  const Tensor *keyPadding = nullptr;
  /// Dropout of the attention probabilities, drawn as `dropout` draws its
  /// mask over the [B, H, T, S] probabilities; only with a seed.
  double dropout = 0.0;
  std::optional<uint64_t> seed;
  uint64_t stream = 0;
};

/// softmax(q k^T * scale + bias) v for q [B, H, T, D], k [B, H_kv, S, D],
/// v [B, H_kv, S, Dv], H a multiple of H_kv (query head h reads key/value
/// head h / (H / H_kv)); a query with every key masked gets zeros.
llvm::Expected<Tensor> sdpa(const Tensor &query, const Tensor &key,
                            const Tensor &value,
                            const AttentionOptions &options);

/// Each query's log(sum_s exp(scaled score)) over its visible keys, [B, H,
/// T]; 0 for a query with every key masked (sdpa's `logsumexp` result).
llvm::Expected<Tensor> sdpaLogsumexp(const Tensor &query, const Tensor &key,
                                     const Tensor &value,
                                     const AttentionOptions &options);

struct SdpaGradients {
  Tensor query, key, value;
};
/// The adjoints of q, k and v of `sdpa` given the adjoint of its output.
llvm::Expected<SdpaGradients> sdpaGrad(const Tensor &query, const Tensor &key,
                                       const Tensor &value,
                                       const Tensor &gradOutput,
                                       const AttentionOptions &options);

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

struct CrossEntropyOptions {
  std::optional<int64_t> ignoreIndex;
  double labelSmoothing = 0.0;
};

/// PyTorch's mean cross-entropy of logits [..., C] against class ids [...]:
/// per target (1 - e) * -logp[target] + e * mean_c(-logp[c]), averaged over
/// the targets not equal to the ignore index; 0 when all are ignored. The
/// result is a rank-0 f32 tensor.
llvm::Expected<Tensor> crossEntropy(const Tensor &logits, const Tensor &targets,
                                    const CrossEntropyOptions &options);
/// gradLoss * (softmax(logits) - ((1 - e) onehot + e / C)) / count for the
/// targets kept, zero rows for the ignored ones.
llvm::Expected<Tensor> crossEntropyGrad(const Tensor &logits,
                                        const Tensor &targets, double gradLoss,
                                        const CrossEntropyOptions &options);

//===----------------------------------------------------------------------===//
// Training
//===----------------------------------------------------------------------===//

/// gradOutput * f'(input).
llvm::Expected<Tensor> activationGrad(UnaryFn activation, const Tensor &input,
                                      const Tensor &gradOutput);
/// y * (dy - sum(dy * y, axis)), from the softmax's output y.
llvm::Expected<Tensor> softmaxGrad(const Tensor &output,
                                   const Tensor &gradOutput, int64_t axis);
/// dy - exp(y) * sum(dy, axis), from the log-softmax's output y.
llvm::Expected<Tensor> logSoftmaxGrad(const Tensor &output,
                                      const Tensor &gradOutput, int64_t axis);

struct NormGradients {
  Tensor input, weight, bias;
};
/// Adjoints of layer_norm (input already including any residual).
llvm::Expected<NormGradients> layerNormGrad(const Tensor &input,
                                            const Tensor &weight,
                                            const Tensor &gradOutput,
                                            double eps);
/// Adjoints of rms_norm; `bias` of the result is left empty.
llvm::Expected<NormGradients> rmsNormGrad(const Tensor &input,
                                          const Tensor &weight,
                                          const Tensor &gradOutput, double eps);
/// Scatter-add of gradOutput [ids..., d] into a zero [rows, d] table.
llvm::Expected<Tensor> gatherGrad(const Tensor &ids, const Tensor &gradOutput,
                                  int64_t rows);
/// sqrt of the sum of squares of every element of every input, rank-0 f32.
Tensor globalNorm(llvm::ArrayRef<Tensor> inputs);

struct AdamOptions {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0.0;
  /// AdamW: decay the weights, not the gradient.
  bool decoupled = false;
};
struct AdamState {
  Tensor param, firstMoment, secondMoment;
};
/// One Adam step at `step` (counted from 1) with learning rate `lr`.
llvm::Expected<AdamState> adamUpdate(const Tensor &param, const Tensor &grad,
                                     const Tensor &firstMoment,
                                     const Tensor &secondMoment, double lr,
                                     int64_t step, const AdamOptions &options);

} // namespace attn::reference

#endif // ATTN_REFERENCE_KERNELS_H
