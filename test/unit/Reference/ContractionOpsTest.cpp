//===- ContractionOpsTest.cpp - Reference products and reductions ---------===//
//
// matmul with batch broadcasting, linear with its epilogue, sum/mean/max and
// the masked mean, softmax and log-softmax, against hand-computed values.
//
//===----------------------------------------------------------------------===//

#include "ReferenceTestUtils.h"

using namespace attn::reference;
using namespace attn::reference::testing;

namespace {

using ContractionOpsTest = IRTest;

// Tests a [2, 2, 3] @ [3, 2] product (the rhs broadcast over the batch) and
// a [1, 2, 3] @ [2, 3, 1] product (the lhs broadcast).
TEST_F(ContractionOpsTest, MatmulBroadcastsBatch) {
  const char *ir = R"mlir(
    func.func @f(%a: tensor<2x2x3xf32>, %b: tensor<3x2xf32>, %c: tensor<1x2x3xf32>, %d: tensor<2x3x1xf32>) -> (tensor<2x2x2xf32>, tensor<2x2x1xf32>) {
      %0 = attn.matmul %a, %b : (tensor<2x2x3xf32>, tensor<3x2xf32>) -> tensor<2x2x2xf32>
      %1 = attn.matmul %c, %d : (tensor<1x2x3xf32>, tensor<2x3x1xf32>) -> tensor<2x2x1xf32>
      return %0, %1 : tensor<2x2x2xf32>, tensor<2x2x1xf32>
    })mlir";
  Tensor a = f32({2, 2, 3}, {1, 2, 3, 4, 5, 6, -1, 0, 1, 2, 2, 2});
  Tensor b = f32({3, 2}, {1, 0, 0, 1, 1, 1});
  Tensor c = f32({1, 2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor d = f32({2, 3, 1}, {1, 1, 1, 1, 0, -1});
  auto r = run(ir, {a, b, c, d});
  ASSERT_EQ(r.size(), 2u);
  // Row [x, y, z] @ b = [x + z, y + z].
  expectTensor(r[0], {2, 2, 2}, {4, 5, 10, 11, 0, 1, 4, 4});
  // Rows of c against column sums [1, 1, 1] and differences [1, 0, -1].
  expectTensor(r[1], {2, 2, 1}, {6, 15, -2, -2});
}

// Tests linear: x @ w^T + b, then gelu, then the residual.
TEST_F(ContractionOpsTest, LinearWithEpilogue) {
  const char *ir = R"mlir(
    func.func @f(%x: tensor<2x2xf32>, %w: tensor<3x2xf32>, %b: tensor<3xf32>, %r: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
      %0 = attn.linear %x, %w, %b : (tensor<2x2xf32>, tensor<3x2xf32>, tensor<3xf32>) -> tensor<2x3xf32>
      %1 = attn.linear %x, %w, %b residual %r activation gelu : (tensor<2x2xf32>, tensor<3x2xf32>, tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
      return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
    })mlir";
  Tensor x = f32({2, 2}, {1, 2, -1, 0.5});
  Tensor w = f32({3, 2}, {1, 0, 0, 1, 1, -1});
  Tensor b = f32({3}, {0, -1, 0.5});
  Tensor res = f32({2, 3}, {10, 20, 30, 40, 50, 60});
  auto r = run(ir, {x, w, b, res});
  ASSERT_EQ(r.size(), 2u);
  // x @ w^T = [[1, 2, -1], [-1, 0.5, -1.5]]; + b.
  expectTensor(r[0], {2, 3}, {1, 1, -0.5, -1, -0.5, -1});
  double gelu1 = 0.8413447460685429, geluMinusHalf = -0.15426876936299344;
  double geluMinus1 = gelu1 - 1.0; // gelu(-x) = gelu(x) - x
  expectTensor(r[1], {2, 3},
               {10 + gelu1, 20 + gelu1, 30 + geluMinusHalf, 40 + geluMinus1,
                50 + geluMinusHalf, 60 + geluMinus1});
}

// Tests sum, mean and max over the middle axis of a [2, 3, 2] input.
TEST_F(ContractionOpsTest, Reductions) {
  const char *ir = R"mlir(
    func.func @f(%x: tensor<2x3x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>) {
      %0 = attn.reduce sum %x axis 1 : (tensor<2x3x2xf32>) -> tensor<2x2xf32>
      %1 = attn.reduce mean %x axis 1 : (tensor<2x3x2xf32>) -> tensor<2x2xf32>
      %2 = attn.reduce max %x axis 1 : (tensor<2x3x2xf32>) -> tensor<2x2xf32>
      return %0, %1, %2 : tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>
    })mlir";
  Tensor x = f32({2, 3, 2}, {1, -1, 2, -2, 3, -3, 0, 5, 0, 7, 0, 6});
  auto r = run(ir, {x});
  ASSERT_EQ(r.size(), 3u);
  expectTensor(r[0], {2, 2}, {6, -6, 0, 18});
  expectTensor(r[1], {2, 2}, {2, -2, 0, 6});
  expectTensor(r[2], {2, 2}, {3, -1, 0, 7});
}

// Tests the masked mean: elements whose mask is true are left out, and a row
// with every element masked has mean 0 (not NaN).
TEST_F(ContractionOpsTest, MaskedMean) {
  const char *ir = R"mlir(
    func.func @f(%x: tensor<?x?x2xf32>, %m: tensor<?x?xi1>) -> tensor<?x2xf32> {
      %0 = attn.reduce mean %x axis 1 mask %m : (tensor<?x?x2xf32>, tensor<?x?xi1>) -> tensor<?x2xf32>
      return %0 : tensor<?x2xf32>
    })mlir";
  Tensor x = f32({2, 3, 2}, {1, 10, 100, 1000, 3, 30, 5, 6, 7, 8, 9, 10});
  Tensor mask = boolean({2, 3}, {0, 1, 0, 1, 1, 1});
  auto r = run(ir, {x, mask});
  ASSERT_EQ(r.size(), 1u);
  expectTensor(r[0], {2, 2}, {2, 20, 0, 0});
}

// Tests softmax and log-softmax of [1, 2, 3] (and along axis 0 of a
// [3, 1]), against exp(x_i) / sum(exp(x)).
TEST_F(ContractionOpsTest, SoftmaxAndLogSoftmax) {
  const char *ir = R"mlir(
    func.func @f(%x: tensor<1x3xf32>, %y: tensor<3x1xf32>) -> (tensor<1x3xf32>, tensor<1x3xf32>, tensor<3x1xf32>) {
      %0 = attn.softmax %x axis 1 : tensor<1x3xf32>
      %1 = attn.log_softmax %x axis 1 : tensor<1x3xf32>
      %2 = attn.softmax %y axis 0 : tensor<3x1xf32>
      return %0, %1, %2 : tensor<1x3xf32>, tensor<1x3xf32>, tensor<3x1xf32>
    })mlir";
  // Large logits check the max-shift: exp(1001) overflows a double.
  auto r = run(ir, {f32({1, 3}, {1, 2, 3}), f32({3, 1}, {1001, 1002, 1003})});
  ASSERT_EQ(r.size(), 3u);
  std::vector<double> p = {0.09003057317038046, 0.24472847105479767,
                           0.6652409557748219};
  expectTensor(r[0], {1, 3}, p, 1e-15);
  expectTensor(r[1], {1, 3},
               {-2.4076059644443806, -1.4076059644443804, -0.4076059644443804},
               1e-14);
  expectTensor(r[2], {3, 1}, p, 1e-15);
}

} // namespace
