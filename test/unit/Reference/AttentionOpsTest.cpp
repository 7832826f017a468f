//===- AttentionOpsTest.cpp - Reference scaled dot-product attention ------===//
//
// sdpa on a [1, 1, 3, 2] example worked out by hand: no mask, the causal
// mask, its alignment to the last query when T < S and T > S, key padding,
// fully masked queries and an explicit scale.
//
//===----------------------------------------------------------------------===//

#include "ReferenceTestUtils.h"

using namespace attn::reference;
using namespace attn::reference::testing;

namespace {

// q = [[0, 0], [1, 0], [0, 1]], k = [[1, 0], [0, 1], [1, 1]], v = [[1, 2],
// [3, 4], [5, 6]], scale 1/sqrt(2): the scores of query 1 are [1, 0, 1] and
// of query 2 [0, 1, 1] before scaling, query 0 scores 0 everywhere.
class AttentionOpsTest : public IRTest {
protected:
  Tensor q = f32({1, 1, 3, 2}, {0, 0, 1, 0, 0, 1});
  Tensor k = f32({1, 1, 3, 2}, {1, 0, 0, 1, 1, 1});
  Tensor v = f32({1, 1, 3, 2}, {1, 2, 3, 4, 5, 6});

  /// sigmoid(1/sqrt(2)): the weight of key 0 for query 1 when keys 0 and 1
  /// are visible.
  double p1 = 1.0 / (1.0 + std::exp(-1.0 / std::sqrt(2.0)));
  /// Query 2 over all keys: weights [1, e, e] / (1 + 2e), e = exp(1/sqrt 2).
  double e = std::exp(1.0 / std::sqrt(2.0));
  std::vector<double> all2 = {(1 + 3 * e + 5 * e) / (1 + 2 * e),
                              (2 + 4 * e + 6 * e) / (1 + 2 * e)};
};

// Tests attention without a mask: query 0 averages the values.
TEST_F(AttentionOpsTest, NoMask) {
  const char *ir = R"mlir(
    func.func @f(%q: tensor<1x1x?x2xf32>, %k: tensor<1x1x?x2xf32>, %v: tensor<1x1x?x2xf32>) -> tensor<1x1x?x2xf32> {
      %0 = attn.sdpa %q, %k, %v : (tensor<1x1x?x2xf32>, tensor<1x1x?x2xf32>, tensor<1x1x?x2xf32>) -> tensor<1x1x?x2xf32>
      return %0 : tensor<1x1x?x2xf32>
    })mlir";
  auto r = run(ir, {q, k, v});
  ASSERT_EQ(r.size(), 1u);
  // Query 1 scores [1, 0, 1] / sqrt 2: weights [e, 1, e] / (1 + 2e).
  expectTensor(r[0], {1, 1, 3, 2},
               {3, 4, (e + 3 + 5 * e) / (1 + 2 * e),
                (2 * e + 4 + 6 * e) / (1 + 2 * e), all2[0], all2[1]},
               1e-14);
}

// Tests the causal mask worked out by hand: query 0 sees key 0 only, query 1
// keys 0 and 1, query 2 all three.
TEST_F(AttentionOpsTest, Causal) {
  const char *ir = R"mlir(
    func.func @f(%q: tensor<1x1x?x2xf32>, %k: tensor<1x1x?x2xf32>, %v: tensor<1x1x?x2xf32>) -> tensor<1x1x?x2xf32> {
      %0 = attn.sdpa %q, %k, %v mask causal : (tensor<1x1x?x2xf32>, tensor<1x1x?x2xf32>, tensor<1x1x?x2xf32>) -> tensor<1x1x?x2xf32>
      return %0 : tensor<1x1x?x2xf32>
    })mlir";
  auto r = run(ir, {q, k, v});
  ASSERT_EQ(r.size(), 1u);
  expectTensor(
      r[0], {1, 1, 3, 2},
      {1, 2, p1 * 1 + (1 - p1) * 3, p1 * 2 + (1 - p1) * 4, all2[0], all2[1]},
      1e-14);
  EXPECT_NEAR(r[0][2], 1.6604769013466862, 1e-14);
  EXPECT_NEAR(r[0][4], 3.4066725560787154, 1e-14);

  // T = 2 < S = 3: the queries are the last two positions, so query 0 sees
  // keys 0 and 1 and query 1 sees every key.
  Tensor lastTwo = f32({1, 1, 2, 2}, {1, 0, 0, 1});
  auto aligned = run(ir, {lastTwo, k, v});
  ASSERT_EQ(aligned.size(), 1u);
  expectTensor(aligned[0], {1, 1, 2, 2},
               {p1 * 1 + (1 - p1) * 3, p1 * 2 + (1 - p1) * 4, all2[0], all2[1]},
               1e-14);

  // T = 3 > S = 1: query t sees key s only when s <= t + S - T = t - 2, so
  // queries 0 and 1 see nothing and get zeros, never NaN.
  Tensor k1 = f32({1, 1, 1, 2}, {1, 0}), v1 = f32({1, 1, 1, 2}, {7, 8});
  auto early = run(ir, {q, k1, v1});
  ASSERT_EQ(early.size(), 1u);
  expectTensor(early[0], {1, 1, 3, 2}, {0, 0, 0, 0, 7, 8});
}

// Tests key padding (true masks the key) combined with the causal mask, and
// a batch row whose keys are all padding, which gives zeros.
TEST_F(AttentionOpsTest, KeyPadding) {
  const char *ir = R"mlir(
    func.func @f(%q: tensor<?x1x3x2xf32>, %k: tensor<?x1x3x2xf32>, %v: tensor<?x1x3x2xf32>, %p: tensor<?x3xi1>) -> tensor<?x1x3x2xf32> {
      %0 = attn.sdpa %q, %k, %v key_padding %p mask causal : (tensor<?x1x3x2xf32>, tensor<?x1x3x2xf32>, tensor<?x1x3x2xf32>, tensor<?x3xi1>) -> tensor<?x1x3x2xf32>
      return %0 : tensor<?x1x3x2xf32>
    })mlir";
  auto twice = [](const Tensor &t) {
    std::vector<double> data(t.getData().begin(), t.getData().end());
    data.insert(data.end(), t.getData().begin(), t.getData().end());
    return f32({2, 1, 3, 2}, data);
  };
  Tensor pad = boolean({2, 3}, {0, 1, 0, 1, 1, 1});
  auto r = run(ir, {twice(q), twice(k), twice(v), pad});
  ASSERT_EQ(r.size(), 1u);
  // Batch 0, key 1 padded: query 1 sees key 0 only; query 2 keys 0 and 2
  // with scores [0, 1] / sqrt 2.
  double w0 = 1.0 / (1.0 + e);
  expectTensor(r[0], {2, 1, 3, 2},
               {1, 2, 1, 2, w0 * 1 + (1 - w0) * 5, w0 * 2 + (1 - w0) * 6, 0, 0,
                0, 0, 0, 0},
               1e-14);
  EXPECT_NEAR(r[0][4], 3.6790461973066275, 1e-14);
}

// Tests an explicit scale: with scale 0 every visible key weighs the same.
TEST_F(AttentionOpsTest, ExplicitScale) {
  const char *ir = R"mlir(
    func.func @f(%q: tensor<1x1x3x2xf32>, %k: tensor<1x1x3x2xf32>, %v: tensor<1x1x3x2xf32>) -> (tensor<1x1x3x2xf32>, tensor<1x1x3x2xf32>) {
      %0 = attn.sdpa %q, %k, %v mask causal scale 1.0e-30 : (tensor<1x1x3x2xf32>, tensor<1x1x3x2xf32>, tensor<1x1x3x2xf32>) -> tensor<1x1x3x2xf32>
      %1 = attn.sdpa %q, %k, %v scale 2.0 : (tensor<1x1x3x2xf32>, tensor<1x1x3x2xf32>, tensor<1x1x3x2xf32>) -> tensor<1x1x3x2xf32>
      return %0, %1 : tensor<1x1x3x2xf32>, tensor<1x1x3x2xf32>
    })mlir";
  auto r = run(ir, {q, k, v});
  ASSERT_EQ(r.size(), 2u);
  expectTensor(r[0], {1, 1, 3, 2}, {1, 2, 2, 3, 3, 4}, 1e-14);
  // Query 2 with scale 2: weights [1, e^2, e^2] / (1 + 2 e^2).
  double e2 = std::exp(2.0);
  EXPECT_NEAR(r[1][4], (1 + 3 * e2 + 5 * e2) / (1 + 2 * e2), 1e-14);
}

} // namespace
