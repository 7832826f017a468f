//===- ShapeOpsTest.cpp - Reference shape ops -----------------------------===//
//
// Reshape, transpose, head split/merge, concat, slice, take, broadcast,
// gather, positions, sinusoidal and rope, each on a tiny input whose result
// is written out by hand.
//
//===----------------------------------------------------------------------===//

#include "ReferenceTestUtils.h"

using namespace attn::reference;
using namespace attn::reference::testing;

namespace {

using ShapeOpsTest = IRTest;

std::vector<double> iota(int n) {
  std::vector<double> values(n);
  for (int i = 0; i < n; ++i)
    values[i] = i;
  return values;
}

// Tests a reshape whose dynamic sizes come from attn.dim, as the frontend
// emits it, and a size mismatch at run time.
TEST_F(ShapeOpsTest, ReshapeWithDynamicSizes) {
  const char *ir = R"mlir(
    func.func @f(%x: tensor<?x?x4xf32>) -> tensor<?x2x?x2xf32> {
      %b = attn.dim %x, 0 : tensor<?x?x4xf32>
      %t = attn.dim %x, 1 : tensor<?x?x4xf32>
      %0 = attn.reshape %x [%b, %t] : tensor<?x?x4xf32> -> tensor<?x2x?x2xf32>
      return %0 : tensor<?x2x?x2xf32>
    })mlir";
  auto r = run(ir, {f32({1, 3, 4}, iota(12))});
  ASSERT_EQ(r.size(), 1u);
  expectTensor(r[0], {1, 2, 3, 2}, iota(12));
}

// Tests transpose with a 3-D permutation: result[i, j, k] = x[k, i, j].
TEST_F(ShapeOpsTest, Transpose) {
  const char *ir = R"mlir(
    func.func @f(%x: tensor<2x3x4xf32>) -> tensor<3x4x2xf32> {
      %0 = attn.transpose %x, [1, 2, 0] : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
      return %0 : tensor<3x4x2xf32>
    })mlir";
  auto r = run(ir, {f32({2, 3, 4}, iota(24))});
  ASSERT_EQ(r.size(), 1u);
  std::vector<double> expected;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 2; ++k)
        expected.push_back(k * 12 + i * 4 + j);
  expectTensor(r[0], {3, 4, 2}, expected);
}

// Tests that head h of split_heads takes the contiguous features
// [h*k, (h+1)*k), as nn.MultiheadAttention does, and that merge_heads
// inverts it.
TEST_F(ShapeOpsTest, SplitAndMergeHeads) {
  const char *ir = R"mlir(
    func.func @f(%x: tensor<1x2x6xf32>) -> (tensor<1x3x2x2xf32>, tensor<1x2x6xf32>) {
      %0 = attn.split_heads %x, 3 : (tensor<1x2x6xf32>) -> tensor<1x3x2x2xf32>
      %1 = attn.merge_heads %0 : (tensor<1x3x2x2xf32>) -> tensor<1x2x6xf32>
      return %0, %1 : tensor<1x3x2x2xf32>, tensor<1x2x6xf32>
    })mlir";
  auto r = run(ir, {f32({1, 2, 6}, iota(12))});
  ASSERT_EQ(r.size(), 2u);
  // x = [[0 1 | 2 3 | 4 5], [6 7 | 8 9 | 10 11]]: head 1 is [[2 3], [8 9]].
  expectTensor(r[0], {1, 3, 2, 2}, {0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11});
  expectTensor(r[1], {1, 2, 6}, iota(12));
}

// Tests concat of three inputs along a middle axis.
TEST_F(ShapeOpsTest, Concat) {
  const char *ir = R"mlir(
    func.func @f(%a: tensor<2x1xf32>, %b: tensor<2x2xf32>) -> tensor<2x4xf32> {
      %0 = attn.concat %a, %b, %a axis 1 : (tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
      return %0 : tensor<2x4xf32>
    })mlir";
  auto r = run(ir, {f32({2, 1}, {1, 2}), f32({2, 2}, {3, 4, 5, 6})});
  ASSERT_EQ(r.size(), 1u);
  expectTensor(r[0], {2, 4}, {1, 3, 4, 1, 2, 5, 6, 2});
}

// Tests slice on a dynamic dimension, and that an end beyond the run-time
// size is an error.
TEST_F(ShapeOpsTest, Slice) {
  const char *ir = R"mlir(
    func.func @f(%x: tensor<2x?xf32>) -> tensor<2x2xf32> {
      %0 = attn.slice %x axis 1 [1, 3] : (tensor<2x?xf32>) -> tensor<2x2xf32>
      return %0 : tensor<2x2xf32>
    })mlir";
  auto r = run(ir, {f32({2, 4}, iota(8))});
  ASSERT_EQ(r.size(), 1u);
  expectTensor(r[0], {2, 2}, {1, 2, 5, 6});
  std::string error = runError(ir, {f32({2, 2}, iota(4))});
  EXPECT_NE(error.find("slice [1, 3) is outside dimension 1"),
            std::string::npos)
      << error;
}

// Tests take with a negative index (the last row) and a positive one.
TEST_F(ShapeOpsTest, Take) {
  const char *ir = R"mlir(
    func.func @f(%x: tensor<2x?x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) {
      %0 = attn.take %x axis 1 index -1 : (tensor<2x?x2xf32>) -> tensor<2x2xf32>
      %1 = attn.take %x axis 1 index 0 : (tensor<2x?x2xf32>) -> tensor<2x2xf32>
      return %0, %1 : tensor<2x2xf32>, tensor<2x2xf32>
    })mlir";
  auto r = run(ir, {f32({2, 3, 2}, iota(12))});
  ASSERT_EQ(r.size(), 2u);
  expectTensor(r[0], {2, 2}, {4, 5, 10, 11});
  expectTensor(r[1], {2, 2}, {0, 1, 6, 7});
}

// Tests broadcast to a shape with a dynamic size given by an operand.
TEST_F(ShapeOpsTest, Broadcast) {
  const char *ir = R"mlir(
    func.func @f(%b: tensor<3xf32>, %x: tensor<?x3xf32>) -> tensor<?x3xf32> {
      %n = attn.dim %x, 0 : tensor<?x3xf32>
      %0 = attn.broadcast %b [%n] : tensor<3xf32> -> tensor<?x3xf32>
      return %0 : tensor<?x3xf32>
    })mlir";
  auto r = run(ir, {f32({3}, {1, 2, 3}), f32({2, 3}, iota(6))});
  ASSERT_EQ(r.size(), 1u);
  expectTensor(r[0], {2, 3}, {1, 2, 3, 1, 2, 3});
}

// Tests gather of embedding rows at [2, 2] ids, and that an id outside the
// table is an error naming it.
TEST_F(ShapeOpsTest, Gather) {
  const char *ir = R"mlir(
    func.func @f(%w: tensor<3x2xf32>, %ids: tensor<?x?xi32>) -> tensor<?x?x2xf32> {
      %0 = attn.gather %w, %ids : (tensor<3x2xf32>, tensor<?x?xi32>) -> tensor<?x?x2xf32>
      return %0 : tensor<?x?x2xf32>
    })mlir";
  Tensor table = f32({3, 2}, {0, 1, 10, 11, 20, 21});
  auto r = run(ir, {table, i32({2, 2}, {2, 0, 1, 2})});
  ASSERT_EQ(r.size(), 1u);
  expectTensor(r[0], {2, 2, 2}, {20, 21, 0, 1, 10, 11, 20, 21});
  std::string error = runError(ir, {table, i32({1, 2}, {1, 3})});
  EXPECT_NE(error.find("'attn.gather' id 3 at position 1 is out of range for "
                       "a table of 3 rows"),
            std::string::npos)
      << error;
  std::string negative = runError(ir, {table, i32({1, 1}, {-1})});
  EXPECT_NE(negative.find("id -1"), std::string::npos) << negative;
}

// Tests positions and the sinusoidal table against the formula of
// LANGUAGE.md, for an even and an odd width.
TEST_F(ShapeOpsTest, PositionsAndSinusoidal) {
  const char *ir = R"mlir(
    func.func @f(%x: tensor<?xi32>) -> (tensor<?xi32>, tensor<?x4xf32>, tensor<?x5xf32>) {
      %t = attn.dim %x, 0 : tensor<?xi32>
      %0 = attn.positions %t : tensor<?xi32>
      %1 = attn.sinusoidal %t : tensor<?x4xf32>
      %2 = attn.sinusoidal %t : tensor<?x5xf32>
      return %0, %1, %2 : tensor<?xi32>, tensor<?x4xf32>, tensor<?x5xf32>
    })mlir";
  auto r = run(ir, {i32({3}, {0, 0, 0})});
  ASSERT_EQ(r.size(), 3u);
  expectTensor(r[0], {3}, {0, 1, 2});
  EXPECT_EQ(r[0].getDType(), DType::I32);
  // d = 4: columns are sin(i), cos(i), sin(i / 100), cos(i / 100).
  expectTensor(r[1], {3, 4},
               {0, 1, 0, 1, 0.8414709848078965, 0.5403023058681398,
                0.009999833334166664, 0.9999500004166653, 0.9092974268256817,
                -0.4161468365471424, 0.01999866669333308, 0.9998000066665778});
  // d = 5: the last column is a sine of frequency 10000^(-4/5).
  EXPECT_NEAR(r[2].at({1, 2}), 0.025116222909773774, 1e-15);
  EXPECT_NEAR(r[2].at({1, 4}), std::sin(std::pow(10000.0, -0.8)), 1e-15);
}

// Tests positions and sinusoidal with a start, as incremental decoding
// emits them: row i is position start + i.
TEST_F(ShapeOpsTest, PositionsAndSinusoidalFromStart) {
  const char *ir = R"mlir(
    func.func @f(%x: tensor<?xi32>) -> (tensor<?xi32>, tensor<?x4xf32>) {
      %t = attn.dim %x, 0 : tensor<?xi32>
      %s = arith.constant 2 : index
      %0 = attn.positions %t start %s : tensor<?xi32>
      %1 = attn.sinusoidal %t start %s : tensor<?x4xf32>
      return %0, %1 : tensor<?xi32>, tensor<?x4xf32>
    })mlir";
  auto r = run(ir, {i32({1}, {0})});
  ASSERT_EQ(r.size(), 2u);
  expectTensor(r[0], {1}, {2});
  expectTensor(r[1], {1, 4},
               {0.9092974268256817, -0.4161468365471424, 0.01999866669333308,
                0.9998000066665778});
}

// Tests rope's half rotation on D = 4 with base 100: feature j pairs with
// j + 2 and turns by pos * 100^(-j/2) (angles pos and pos / 10); row 0 at
// position 0 is unchanged, and the inverse rotation undoes the rotation.
TEST_F(ShapeOpsTest, RopeRotatesHalves) {
  const char *ir = R"mlir(
    func.func @f(%x: tensor<1x2x4xf32>) -> (tensor<1x2x4xf32>, tensor<1x2x4xf32>) {
      %p = arith.constant dense<[0, 3]> : tensor<2xi32>
      %0 = attn.rope %x, %p base 1.000000e+02 : (tensor<1x2x4xf32>, tensor<2xi32>) -> tensor<1x2x4xf32>
      %1 = attn.rope %0, %p base 1.000000e+02 inverse : (tensor<1x2x4xf32>, tensor<2xi32>) -> tensor<1x2x4xf32>
      return %0, %1 : tensor<1x2x4xf32>, tensor<1x2x4xf32>
    })mlir";
  std::vector<double> x = {1, 2, 3, 4, 1, 2, 3, 4};
  auto r = run(ir, {f32({1, 2, 4}, x)});
  ASSERT_EQ(r.size(), 2u);
  double c0 = std::cos(3.0), s0 = std::sin(3.0);
  double c1 = std::cos(0.3), s1 = std::sin(0.3);
  // x * cos + rotate_half(x) * sin, rotate_half([1, 2, 3, 4]) = [-3, -4, 1, 2].
  expectTensor(r[0], {1, 2, 4},
               {1, 2, 3, 4, 1 * c0 - 3 * s0, 2 * c1 - 4 * s1, 3 * c0 + 1 * s0,
                4 * c1 + 2 * s1},
               1e-14);
  expectTensor(r[1], {1, 2, 4}, x, 1e-14);
}

} // namespace
