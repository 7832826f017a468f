//===- TrainingOpsTest.cpp - Reference adjoints and optimizer step --------===//
//
// Every gradient kernel against central finite differences of the forward
// kernel it differentiates (L = sum(forward(x) * G) for a fixed random G),
// the optimizer step against a hand calculation, and each training op run
// through the evaluator once.
//
//===----------------------------------------------------------------------===//

#include "ReferenceTestUtils.h"

#include "attn/Reference/Kernels.h"

#include <functional>

using namespace attn::reference;
using namespace attn::reference::testing;

namespace {

/// Deterministic values in [-1, 1): the tests need no real randomness, only
/// inputs without symmetries that could hide a wrong index.
class Values {
public:
  explicit Values(uint64_t seed) : state(seed) {}
  Tensor next(llvm::ArrayRef<int64_t> shape, double scale = 1.0) {
    Tensor t(DType::F32, shape);
    for (int64_t i = 0; i < t.getNumElements(); ++i) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      t[i] = scale * (static_cast<double>(state >> 11) * 0x1.0p-52 - 1.0);
    }
    return t;
  }

private:
  uint64_t state;
};

double dot(const Tensor &a, const Tensor &b) {
  double sum = 0;
  for (int64_t i = 0; i < a.getNumElements(); ++i)
    sum += a[i] * b[i];
  return sum;
}

/// Expects `grad` to be the gradient of `loss` at `x` (which it perturbs and
/// restores), by central differences.
void expectGradient(const std::function<double()> &loss, Tensor &x,
                    const Tensor &grad, const char *what,
                    double tolerance = 1e-7) {
  ASSERT_EQ(formatShape(grad.getShape()), formatShape(x.getShape())) << what;
  const double h = 1e-5;
  for (int64_t i = 0; i < x.getNumElements(); ++i) {
    double saved = x[i];
    x[i] = saved + h;
    double up = loss();
    x[i] = saved - h;
    double down = loss();
    x[i] = saved;
    EXPECT_NEAR(grad[i], (up - down) / (2 * h), tolerance)
        << what << " element " << i;
  }
}

template <typename T> T unwrap(llvm::Expected<T> value) {
  if (!value) {
    ADD_FAILURE() << llvm::toString(value.takeError());
    return T();
  }
  return std::move(*value);
}

// Tests the derivative of every activation at points away from relu's kink.
TEST(TrainingKernelsTest, ActivationGrad) {
  Values values(1);
  Tensor x = values.next({2, 5}, 3.0), g = values.next({2, 5});
  for (UnaryFn fn : {UnaryFn::Relu, UnaryFn::Gelu, UnaryFn::GeluTanh,
                     UnaryFn::Silu, UnaryFn::Tanh, UnaryFn::Sigmoid}) {
    Tensor grad = unwrap(activationGrad(fn, x, g));
    expectGradient([&] { return dot(unary(fn, x), g); }, x, grad, "activation");
  }
}

// Tests softmax_grad and log_softmax_grad (from the forward outputs) along a
// middle axis.
TEST(TrainingKernelsTest, SoftmaxGrads) {
  Values values(2);
  Tensor x = values.next({2, 4, 3}, 2.0), g = values.next({2, 4, 3});
  Tensor y = unwrap(softmax(x, 1));
  expectGradient([&] { return dot(unwrap(softmax(x, 1)), g); }, x,
                 unwrap(softmaxGrad(y, g, 1)), "softmax");
  Tensor ly = unwrap(logSoftmax(x, 1));
  expectGradient([&] { return dot(unwrap(logSoftmax(x, 1)), g); }, x,
                 unwrap(logSoftmaxGrad(ly, g, 1)), "log_softmax");
}

// Tests the adjoints of layer_norm with respect to its input, weight and
// bias.
TEST(TrainingKernelsTest, LayerNormGrad) {
  Values values(3);
  Tensor x = values.next({3, 5}, 2.0), w = values.next({5}),
         b = values.next({5}), g = values.next({3, 5});
  double eps = 1e-5;
  auto loss = [&] { return dot(unwrap(layerNorm(x, w, b, nullptr, eps)), g); };
  NormGradients grads = unwrap(layerNormGrad(x, w, g, eps));
  expectGradient(loss, x, grads.input, "layer_norm input");
  expectGradient(loss, w, grads.weight, "layer_norm weight");
  expectGradient(loss, b, grads.bias, "layer_norm bias");
}

// Tests the adjoints of rms_norm with respect to its input and weight.
TEST(TrainingKernelsTest, RmsNormGrad) {
  Values values(4);
  Tensor x = values.next({3, 4}, 2.0), w = values.next({4}),
         g = values.next({3, 4});
  double eps = 1e-6;
  auto loss = [&] { return dot(unwrap(rmsNorm(x, w, nullptr, eps)), g); };
  NormGradients grads = unwrap(rmsNormGrad(x, w, g, eps));
  expectGradient(loss, x, grads.input, "rms_norm input");
  expectGradient(loss, w, grads.weight, "rms_norm weight");
}

// Tests the adjoints of causal attention with key padding, T = 3 < S = 4,
// including a batch row whose first query sees only padding.
TEST(TrainingKernelsTest, SdpaGrad) {
  Values values(5);
  Tensor q = values.next({2, 2, 3, 3}), k = values.next({2, 2, 4, 3}),
         v = values.next({2, 2, 4, 2}), g = values.next({2, 2, 3, 2});
  Tensor pad = boolean({2, 4}, {0, 0, 1, 0, 1, 1, 0, 0});
  for (bool causal : {false, true}) {
    AttentionOptions options;
    options.causal = causal;
    options.keyPadding = &pad;
    auto loss = [&] { return dot(unwrap(sdpa(q, k, v, options)), g); };
    SdpaGradients grads = unwrap(sdpaGrad(q, k, v, g, options));
    expectGradient(loss, q, grads.query, "sdpa query");
    expectGradient(loss, k, grads.key, "sdpa key");
    expectGradient(loss, v, grads.value, "sdpa value");
  }
}

/// `x` [B, H_kv, S, D] with each head repeated `group` times in place, as
/// `torch.repeat_interleave(x, group, dim=1)`.
Tensor repeatHeads(const Tensor &x, int64_t group) {
  llvm::ArrayRef<int64_t> shape = x.getShape();
  Tensor out(x.getDType(), {shape[0], shape[1] * group, shape[2], shape[3]});
  int64_t plane = shape[2] * shape[3];
  for (int64_t i = 0; i < out.getNumElements(); ++i) {
    int64_t head = i / plane % (shape[1] * group),
            b = i / plane / (shape[1] * group);
    out[i] = x[(b * shape[1] + head / group) * plane + i % plane];
  }
  return out;
}

// Tests grouped-query attention (4 query heads, 2 key/value heads, causal,
// T = 3 < S = 4): the output is attention over keys and values repeated per
// group, and the adjoints of keys and values, summed over each group, match
// finite differences.
TEST(TrainingKernelsTest, GroupedSdpaGrad) {
  Values values(11);
  Tensor q = values.next({2, 4, 3, 3}), k = values.next({2, 2, 4, 3}),
         v = values.next({2, 2, 4, 2}), g = values.next({2, 4, 3, 2});
  AttentionOptions options;
  options.causal = true;
  Tensor grouped = unwrap(sdpa(q, k, v, options));
  Tensor repeated =
      unwrap(sdpa(q, repeatHeads(k, 2), repeatHeads(v, 2), options));
  ASSERT_EQ(formatShape(grouped.getShape()), "[2, 4, 3, 2]");
  for (int64_t i = 0; i < grouped.getNumElements(); ++i)
    EXPECT_NEAR(grouped[i], repeated[i], 1e-15) << "element " << i;
  auto loss = [&] { return dot(unwrap(sdpa(q, k, v, options)), g); };
  SdpaGradients grads = unwrap(sdpaGrad(q, k, v, g, options));
  expectGradient(loss, q, grads.query, "grouped sdpa query");
  expectGradient(loss, k, grads.key, "grouped sdpa key");
  expectGradient(loss, v, grads.value, "grouped sdpa value");
  // Three query heads do not share two key heads.
  Tensor q3 = values.next({2, 3, 3, 3});
  llvm::Expected<Tensor> bad = sdpa(q3, k, v, options);
  ASSERT_FALSE(static_cast<bool>(bad));
  llvm::consumeError(bad.takeError());
}

// Tests the adjoint of cross-entropy with ignored targets and label
// smoothing, scaled by the loss's adjoint.
TEST(TrainingKernelsTest, CrossEntropyGrad) {
  Values values(6);
  Tensor logits = values.next({2, 3, 4}, 3.0);
  Tensor targets = i32({2, 3}, {1, 0, 3, 0, 2, 2});
  CrossEntropyOptions options;
  options.ignoreIndex = 0;
  options.labelSmoothing = 0.2;
  double gradLoss = 1.5;
  auto loss = [&] {
    return gradLoss * unwrap(crossEntropy(logits, targets, options))[0];
  };
  Tensor grad = unwrap(crossEntropyGrad(logits, targets, gradLoss, options));
  expectGradient(loss, logits, grad, "cross_entropy");
  // The rows of ignored targets get no gradient.
  for (int64_t c = 0; c < 4; ++c)
    EXPECT_EQ(grad.at({0, 1, c}), 0.0);
}

// Tests gather_grad as the adjoint of gather (rows gathered twice
// accumulate) and its range check.
TEST(TrainingKernelsTest, GatherGrad) {
  Values values(7);
  Tensor table = values.next({4, 3}), g = values.next({2, 3, 3});
  Tensor ids = i32({2, 3}, {1, 3, 1, 0, 1, 2});
  Tensor grad = unwrap(gatherGrad(ids, g, 4));
  expectGradient([&] { return dot(unwrap(gather(table, ids)), g); }, table,
                 grad, "gather");
  llvm::Expected<Tensor> bad = gatherGrad(i32({1}, {4}), f32({1, 1}, {1}), 4);
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("id 4"), std::string::npos);
}

// Tests the global norm: sqrt(3^2 + 4^2 + 12^2) = 13.
TEST(TrainingKernelsTest, GlobalNorm) {
  Tensor norm = globalNorm({f32({2}, {3, 4}), f32({1, 1}, {12})});
  EXPECT_EQ(norm.getRank(), 0);
  EXPECT_NEAR(norm[0], 13.0, 1e-15);
}

// Tests one Adam step by hand: p = 1, g = 0.5, fresh moments, step 1, lr
// 0.1: m = 0.05, v = 0.00025, and the bias-corrected step is lr * 0.5 /
// (0.5 + eps). Weight decay 0.1 adds 0.1 to the gradient (Adam) or shrinks
// p by lr * 0.1 * p first (AdamW).
TEST(TrainingKernelsTest, AdamUpdate) {
  Tensor p = f32({1}, {1.0}), g = f32({1}, {0.5}), zero = f32({1}, {0.0});
  AdamOptions options;
  options.beta1 = 0.9;
  options.beta2 = 0.999;
  options.eps = 1e-8;
  AdamState plain = unwrap(adamUpdate(p, g, zero, zero, 0.1, 1, options));
  EXPECT_NEAR(plain.firstMoment[0], 0.05, 1e-16);
  EXPECT_NEAR(plain.secondMoment[0], 0.00025, 1e-17);
  EXPECT_NEAR(plain.param[0], 1.0 - 0.1 * 0.5 / (0.5 + 1e-8), 1e-15);

  options.weightDecay = 0.1;
  AdamState adam = unwrap(adamUpdate(p, g, zero, zero, 0.1, 1, options));
  EXPECT_NEAR(adam.firstMoment[0], 0.1 * 0.6, 1e-16);
  EXPECT_NEAR(adam.param[0], 1.0 - 0.1 * 0.6 / (0.6 + 1e-8), 1e-15);

  options.decoupled = true;
  AdamState adamw = unwrap(adamUpdate(p, g, zero, zero, 0.1, 1, options));
  EXPECT_NEAR(adamw.firstMoment[0], 0.05, 1e-16);
  EXPECT_NEAR(adamw.param[0], 0.99 - 0.1 * 0.5 / (0.5 + 1e-8), 1e-15);

  // Step 2 from the step-1 state: the bias corrections are 1 - beta^2.
  AdamState second =
      unwrap(adamUpdate(plain.param, g, plain.firstMoment, plain.secondMoment,
                        0.1, 2, AdamOptions()));
  double m = 0.9 * 0.05 + 0.1 * 0.5, v = 0.999 * 0.00025 + 0.001 * 0.25;
  EXPECT_NEAR(second.param[0],
              plain.param[0] - 0.1 * (m / (1 - 0.81)) /
                                   (std::sqrt(v / (1 - 0.999 * 0.999)) + 1e-8),
              1e-15);
}

using TrainingOpsTest = IRTest;

// Tests that the evaluator runs each training op with the operands and
// attributes the kernels are tested with above.
TEST_F(TrainingOpsTest, OpsRunThroughTheEvaluator) {
  const char *ir = R"mlir(
    func.func @f(%x: tensor<2x3xf32>, %w: tensor<3xf32>, %g: tensor<2x3xf32>, %ids: tensor<2xi32>, %t: tensor<2xi32>, %lr: tensor<f32>, %step: tensor<f32>, %sq: tensor<3xf32>)
        -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3xf32>, tensor<3xf32>, tensor<2x3xf32>, tensor<4x3xf32>, tensor<f32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
      %a = attn.activation_grad gelu %x, %g : tensor<2x3xf32>
      %s = attn.softmax_grad %x, %g axis 1 : tensor<2x3xf32>
      %ls = attn.log_softmax_grad %x, %g axis 0 : tensor<2x3xf32>
      %dx, %dw, %db = attn.layer_norm_grad %x, %w, %g eps 1.0e-05 : (tensor<2x3xf32>, tensor<3xf32>, tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>)
      %rx, %rw = attn.rms_norm_grad %x, %w, %g eps 1.0e-06 : (tensor<2x3xf32>, tensor<3xf32>, tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>)
      %gl = arith.constant dense<2.0> : tensor<f32>
      %ce = attn.cross_entropy_grad %x, %t, %gl ignore_index 1 label_smoothing 1.000000e-01 : (tensor<2x3xf32>, tensor<2xi32>, tensor<f32>) -> tensor<2x3xf32>
      %gg = attn.gather_grad %ids, %g : (tensor<2xi32>, tensor<2x3xf32>) -> tensor<4x3xf32>
      %n = attn.global_norm %x, %w : tensor<2x3xf32>, tensor<3xf32>
      %b1 = arith.constant dense<0.9> : tensor<f32>
      %b2 = arith.constant dense<0.95> : tensor<f32>
      %eps = arith.constant dense<1.0e-08> : tensor<f32>
      %wd = arith.constant dense<0.1> : tensor<f32>
      %p, %m, %v = attn.adam_update %w, %w, %w, %sq, %lr, %step, %b1, %b2, %eps, %wd decoupled : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
      return %a, %s, %ls, %dx, %dw, %db, %rx, %rw, %ce, %gg, %n, %p, %m, %v : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3xf32>, tensor<3xf32>, tensor<2x3xf32>, tensor<4x3xf32>, tensor<f32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
    })mlir";
  Values values(8);
  Tensor x = values.next({2, 3}), w = values.next({3}), g = values.next({2, 3});
  Tensor ids = i32({2}, {3, 3}), t = i32({2}, {1, 2});
  Tensor lr = Tensor::scalar(DType::F32, 0.01);
  Tensor step = Tensor::scalar(DType::F32, 3);
  // The second moment is a running mean of squares: never negative.
  Tensor sq = f32({3}, {0.5, 0.25, 2.0});
  auto r = run(ir, {x, w, g, ids, t, lr, step, sq});
  ASSERT_EQ(r.size(), 14u);
  auto same = [](const Tensor &a, const Tensor &b) {
    expectTensor(a, b.getShape(),
                 std::vector<double>(b.getData().begin(), b.getData().end()),
                 0.0);
  };
  same(r[0], unwrap(activationGrad(UnaryFn::Gelu, x, g)));
  same(r[1], unwrap(softmaxGrad(x, g, 1)));
  same(r[2], unwrap(logSoftmaxGrad(x, g, 0)));
  NormGradients ln = unwrap(layerNormGrad(x, w, g, 1e-5));
  same(r[3], ln.input);
  same(r[4], ln.weight);
  same(r[5], ln.bias);
  NormGradients rms = unwrap(rmsNormGrad(x, w, g, 1e-6));
  same(r[6], rms.input);
  same(r[7], rms.weight);
  CrossEntropyOptions ce;
  ce.ignoreIndex = 1;
  ce.labelSmoothing = 0.1;
  same(r[8], unwrap(crossEntropyGrad(x, t, 2.0, ce)));
  same(r[9], unwrap(gatherGrad(ids, g, 4)));
  same(r[10], globalNorm({x, w}));
  AdamOptions adam;
  // The hyperparameters are f32 scalars in the IR.
  adam.beta1 = static_cast<float>(0.9);
  adam.beta2 = static_cast<float>(0.95);
  adam.eps = static_cast<float>(1e-8);
  adam.weightDecay = static_cast<float>(0.1);
  adam.decoupled = true;
  AdamState state = unwrap(adamUpdate(w, w, w, sq, 0.01, 3, adam));
  same(r[11], state.param);
  same(r[12], state.firstMoment);
  same(r[13], state.secondMoment);
}

// Tests sdpa_grad through the evaluator against the kernel.
TEST_F(TrainingOpsTest, SdpaGradRunsThroughTheEvaluator) {
  const char *ir = R"mlir(
    func.func @f(%q: tensor<1x2x3x2xf32>, %k: tensor<1x2x3x2xf32>, %v: tensor<1x2x3x2xf32>, %g: tensor<1x2x3x2xf32>) -> (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) {
      %o = attn.sdpa %q, %k, %v mask causal : (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32>
      %dq, %dk, %dv = attn.sdpa_grad %q, %k, %v, %o, %g mask causal : (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) -> (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>)
      return %dq, %dk, %dv : tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>
    })mlir";
  Values values(9);
  Tensor q = values.next({1, 2, 3, 2}), k = values.next({1, 2, 3, 2}),
         v = values.next({1, 2, 3, 2}), g = values.next({1, 2, 3, 2});
  auto r = run(ir, {q, k, v, g});
  ASSERT_EQ(r.size(), 3u);
  AttentionOptions options;
  options.causal = true;
  SdpaGradients grads = unwrap(sdpaGrad(q, k, v, g, options));
  for (auto [actual, expected] :
       {std::pair{&r[0], &grads.query}, std::pair{&r[1], &grads.key},
        std::pair{&r[2], &grads.value}})
    expectTensor(*actual, expected->getShape(),
                 std::vector<double>(expected->getData().begin(),
                                     expected->getData().end()),
                 0.0);
}

} // namespace
