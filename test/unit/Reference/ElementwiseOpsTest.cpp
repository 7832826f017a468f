//===- ElementwiseOpsTest.cpp - Reference element-wise ops ----------------===//
//
// Activations against closed forms, NumPy broadcasting, the dialect's rule
// that dynamic sizes never stretch, comparisons, select and cast.
//
//===----------------------------------------------------------------------===//

#include "ReferenceTestUtils.h"

using namespace attn::reference;
using namespace attn::reference::testing;

namespace {

using ElementwiseOpsTest = IRTest;

// Tests every unary op at a few points against its closed form; gelu(1) is
// the value PyTorch prints for F.gelu(torch.tensor(1.0, dtype=float64)).
TEST_F(ElementwiseOpsTest, Activations) {
  const char *ir = R"mlir(
    func.func @f(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
      %0 = attn.gelu %x : tensor<4xf32>
      %1 = attn.gelu_tanh %x : tensor<4xf32>
      %2 = attn.silu %x : tensor<4xf32>
      %3 = attn.sigmoid %x : tensor<4xf32>
      %4 = attn.tanh %x : tensor<4xf32>
      %5 = attn.relu %x : tensor<4xf32>
      %6 = attn.neg %x : tensor<4xf32>
      return %0, %1, %2, %3, %4, %5, %6 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
    })mlir";
  auto r = run(ir, {f32({4}, {1.0, -0.5, 0.0, 0.5})});
  ASSERT_EQ(r.size(), 7u);
  expectTensor(r[0], {4},
               {0.8413447460685429, -0.15426876936299344, 0.0,
                0.5 - 0.15426876936299344});
  expectTensor(r[1], {4},
               {0.8411919906082768, -0.15428599017485606, 0.0,
                0.5 - 0.15428599017485606});
  expectTensor(
      r[2], {4},
      {0.7310585786300049, -0.1887703343990727, 0.0, 0.5 * 0.6224593312018546});
  expectTensor(
      r[3], {4},
      {0.7310585786300049, 0.3775406687981454, 0.5, 0.6224593312018546});
  expectTensor(
      r[4], {4},
      {0.7615941559557649, -0.46211715726000974, 0.0, 0.46211715726000974});
  expectTensor(r[5], {4}, {1.0, 0.0, 0.0, 0.5});
  expectTensor(r[6], {4}, {-1.0, 0.5, -0.0, -0.5});
}

// Tests exp, log and sqrt, including log(0) = -inf and sqrt(-1) = NaN as
// IEEE arithmetic gives them.
TEST_F(ElementwiseOpsTest, ExpLogSqrt) {
  const char *ir = R"mlir(
    func.func @f(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
      %0 = attn.exp %x : tensor<3xf32>
      %1 = attn.log %x : tensor<3xf32>
      %2 = attn.sqrt %x : tensor<3xf32>
      return %0, %1, %2 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
    })mlir";
  auto r = run(ir, {f32({3}, {1.0, 4.0, 0.0})});
  ASSERT_EQ(r.size(), 3u);
  expectTensor(r[0], {3}, {M_E, std::exp(4.0), 1.0});
  EXPECT_NEAR(r[1][0], 0.0, 1e-15);
  EXPECT_NEAR(r[1][1], std::log(4.0), 1e-15);
  EXPECT_TRUE(std::isinf(r[1][2]) && r[1][2] < 0);
  expectTensor(r[2], {3}, {1.0, 2.0, 0.0});
  auto n = run(ir, {f32({3}, {-1.0, 1.0, 1.0})});
  EXPECT_TRUE(std::isnan(n[2][0]));
}

// Tests NumPy broadcasting of [2, 1, 3] with [4, 1] to [2, 4, 3] for all
// four arithmetic ops.
TEST_F(ElementwiseOpsTest, BroadcastArithmetic) {
  const char *ir = R"mlir(
    func.func @f(%a: tensor<2x1x3xf32>, %b: tensor<4x1xf32>) -> (tensor<2x4x3xf32>, tensor<2x4x3xf32>, tensor<2x4x3xf32>, tensor<2x4x3xf32>) {
      %0 = attn.add %a, %b : (tensor<2x1x3xf32>, tensor<4x1xf32>) -> tensor<2x4x3xf32>
      %1 = attn.sub %a, %b : (tensor<2x1x3xf32>, tensor<4x1xf32>) -> tensor<2x4x3xf32>
      %2 = attn.mul %a, %b : (tensor<2x1x3xf32>, tensor<4x1xf32>) -> tensor<2x4x3xf32>
      %3 = attn.div %a, %b : (tensor<2x1x3xf32>, tensor<4x1xf32>) -> tensor<2x4x3xf32>
      return %0, %1, %2, %3 : tensor<2x4x3xf32>, tensor<2x4x3xf32>, tensor<2x4x3xf32>, tensor<2x4x3xf32>
    })mlir";
  std::vector<double> a = {1, 2, 3, 4, 5, 6}, b = {1, 2, 4, 8};
  auto r = run(ir, {f32({2, 1, 3}, a), f32({4, 1}, b)});
  ASSERT_EQ(r.size(), 4u);
  std::vector<double> add, sub, mul, div;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k) {
        double x = a[i * 3 + k], y = b[j];
        add.push_back(x + y);
        sub.push_back(x - y);
        mul.push_back(x * y);
        div.push_back(x / y);
      }
  expectTensor(r[0], {2, 4, 3}, add);
  expectTensor(r[1], {2, 4, 3}, sub);
  expectTensor(r[2], {2, 4, 3}, mul);
  expectTensor(r[3], {2, 4, 3}, div);
}

// Tests a rank-0 operand (a splat constant) broadcast against a dynamic
// shape, and that the result takes the run-time sizes.
TEST_F(ElementwiseOpsTest, ScalarConstantOperand) {
  const char *ir = R"mlir(
    func.func @f(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
      %c = arith.constant dense<2.5> : tensor<f32>
      %0 = attn.mul %x, %c : (tensor<?x?xf32>, tensor<f32>) -> tensor<?x?xf32>
      return %0 : tensor<?x?xf32>
    })mlir";
  auto r = run(ir, {f32({1, 3}, {1, -2, 4})});
  ASSERT_EQ(r.size(), 1u);
  expectTensor(r[0], {1, 3}, {2.5, -5.0, 10.0});
}

// Tests that a dynamic size of 1 does not stretch against another dynamic
// size: the dialect takes them to be equal, so this is a run-time error
// (NumPy would broadcast).
TEST_F(ElementwiseOpsTest, DynamicSizesDoNotBroadcast) {
  const char *ir = R"mlir(
    func.func @f(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
      %0 = attn.add %a, %b : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
      return %0 : tensor<?xf32>
    })mlir";
  std::string error = runError(ir, {f32({1}, {1}), f32({3}, {1, 2, 3})});
  EXPECT_NE(error.find("'attn.add' operand #0 'tensor<?xf32>' has a dynamic "
                       "size of 1 where the other operands have 3"),
            std::string::npos)
      << error;
  std::string mismatch = runError(ir, {f32({2}, {1, 2}), f32({3}, {1, 2, 3})});
  EXPECT_NE(mismatch.find("cannot be broadcast together"), std::string::npos)
      << mismatch;
}

// Tests every comparison predicate on i32 operands against a scalar, and a
// comparison of floats.
TEST_F(ElementwiseOpsTest, Compare) {
  const char *ir = R"mlir(
    func.func @f(%x: tensor<3xi32>, %y: tensor<3xf32>) -> (tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<3xi1>) {
      %c = arith.constant dense<1> : tensor<i32>
      %0 = attn.compare eq, %x, %c : (tensor<3xi32>, tensor<i32>) -> tensor<3xi1>
      %1 = attn.compare ne, %x, %c : (tensor<3xi32>, tensor<i32>) -> tensor<3xi1>
      %2 = attn.compare lt, %x, %c : (tensor<3xi32>, tensor<i32>) -> tensor<3xi1>
      %3 = attn.compare le, %x, %c : (tensor<3xi32>, tensor<i32>) -> tensor<3xi1>
      %4 = attn.compare gt, %x, %c : (tensor<3xi32>, tensor<i32>) -> tensor<3xi1>
      %5 = attn.compare ge, %x, %c : (tensor<3xi32>, tensor<i32>) -> tensor<3xi1>
      %6 = attn.compare lt, %y, %y : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
      return %0, %1, %2, %3, %4, %5, %6 : tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<3xi1>
    })mlir";
  auto r = run(ir, {i32({3}, {0, 1, 2}), f32({3}, {0.5, 1, 2})});
  ASSERT_EQ(r.size(), 7u);
  expectTensor(r[0], {3}, {0, 1, 0});
  expectTensor(r[1], {3}, {1, 0, 1});
  expectTensor(r[2], {3}, {1, 0, 0});
  expectTensor(r[3], {3}, {1, 1, 0});
  expectTensor(r[4], {3}, {0, 0, 1});
  expectTensor(r[5], {3}, {0, 1, 1});
  expectTensor(r[6], {3}, {0, 0, 0});
  EXPECT_EQ(r[0].getDType(), DType::Bool);
}

// Tests select with a [2, 1] condition broadcast over [2, 3] values and a
// scalar false value.
TEST_F(ElementwiseOpsTest, Select) {
  const char *ir = R"mlir(
    func.func @f(%c: tensor<2x1xi1>, %x: tensor<2x3xf32>) -> tensor<2x3xf32> {
      %z = arith.constant dense<-1.0> : tensor<f32>
      %0 = attn.select %c, %x, %z : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
      return %0 : tensor<2x3xf32>
    })mlir";
  auto r = run(ir, {boolean({2, 1}, {1, 0}), f32({2, 3}, {1, 2, 3, 4, 5, 6})});
  ASSERT_EQ(r.size(), 1u);
  expectTensor(r[0], {2, 3}, {1, 2, 3, -1, -1, -1});
}

// Tests cast: float to int truncates toward zero, bool to float gives 0/1,
// int to bool is "nonzero", and f32 to bf16 rounds to nearest even (1 +
// 2^-8 is a tie between 1 and 1 + 2^-7).
TEST_F(ElementwiseOpsTest, Cast) {
  const char *ir = R"mlir(
    func.func @f(%x: tensor<4xf32>, %b: tensor<2xi1>, %i: tensor<3xi32>) -> (tensor<4xi32>, tensor<2xf32>, tensor<3xi1>, tensor<4xbf16>) {
      %0 = attn.cast %x : tensor<4xf32> to tensor<4xi32>
      %1 = attn.cast %b : tensor<2xi1> to tensor<2xf32>
      %2 = attn.cast %i : tensor<3xi32> to tensor<3xi1>
      %3 = attn.cast %x : tensor<4xf32> to tensor<4xbf16>
      return %0, %1, %2, %3 : tensor<4xi32>, tensor<2xf32>, tensor<3xi1>, tensor<4xbf16>
    })mlir";
  double tie = 1.0 + std::ldexp(1.0, -8);
  double above = 1.0 + 3 * std::ldexp(1.0, -8);
  auto r = run(ir, {f32({4}, {-1.7, 2.9, tie, above}), boolean({2}, {1, 0}),
                    i32({3}, {0, -3, 5})});
  ASSERT_EQ(r.size(), 4u);
  expectTensor(r[0], {4}, {-1, 2, 1, 1});
  EXPECT_EQ(r[0].getDType(), DType::I32);
  expectTensor(r[1], {2}, {1, 0});
  expectTensor(r[2], {3}, {0, 1, 1});
  expectTensor(r[3], {4}, {-1.703125, 2.90625, 1.0, 1.0 + std::ldexp(1.0, -6)});
}

// Tests that dropout is the identity in inference, and an error in training
// mode unless its rate is 0.
TEST_F(ElementwiseOpsTest, Dropout) {
  const char *ir = R"mlir(
    func.func @f(%x: tensor<3xf32>) -> tensor<3xf32> {
      %0 = attn.dropout %x rate 0.5 : tensor<3xf32>
      return %0 : tensor<3xf32>
    })mlir";
  auto r = run(ir, {f32({3}, {1, 2, 3})});
  ASSERT_EQ(r.size(), 1u);
  expectTensor(r[0], {3}, {1, 2, 3});
  EvaluatorOptions training;
  training.training = true;
  std::string error = runError(ir, {f32({3}, {1, 2, 3})}, {}, "f", training);
  EXPECT_NE(error.find("'attn.dropout' draws a random mask in training mode"),
            std::string::npos)
      << error;
}

} // namespace
