//===- NormOpsTest.cpp - Reference layer and RMS normalisation ------------===//
//
// layer_norm with the biased variance and rms_norm, with and without their
// fused residual, against hand-computed rows.
//
//===----------------------------------------------------------------------===//

#include "ReferenceTestUtils.h"

using namespace attn::reference;
using namespace attn::reference::testing;

namespace {

using NormOpsTest = IRTest;

// Tests layer_norm of [[1, 2, 3], [2, 4, 8]]: row 1 has mean 2 and biased
// variance 2/3, so it normalises to [-sqrt(3/2), 0, sqrt(3/2)]; with eps 0
// and then eps 1e-5.
TEST_F(NormOpsTest, LayerNorm) {
  const char *ir = R"mlir(
    func.func @f(%x: tensor<2x3xf32>, %w: tensor<3xf32>, %b: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
      %0 = attn.layer_norm %x, %w, %b eps 0.0 : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
      %1 = attn.layer_norm %x, %w, %b eps 1.0e-05 : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
      return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
    })mlir";
  Tensor x = f32({2, 3}, {1, 2, 3, 2, 4, 8});
  Tensor w = f32({3}, {1, 2, 0.5});
  Tensor b = f32({3}, {0, 1, -1});
  auto r = run(ir, {x, w, b});
  ASSERT_EQ(r.size(), 2u);
  // Row 2: mean 14/3, deviations [-8/3, -2/3, 10/3], variance 56/9.
  double s = std::sqrt(56.0 / 9.0);
  expectTensor(r[0], {2, 3},
               {-std::sqrt(1.5), 1.0, 0.5 * std::sqrt(1.5) - 1.0,
                (-8.0 / 3.0) / s, 2.0 * (-2.0 / 3.0) / s + 1.0,
                0.5 * (10.0 / 3.0) / s - 1.0},
               1e-14);
  EXPECT_NEAR(r[1][0], -1.2247356859083902, 1e-14);
  EXPECT_NEAR(r[1][2], -0.3876321570458049, 1e-14);
}

// Tests that the fused residual is added before normalising:
// layer_norm(x, residual r) = layer_norm(x + r).
TEST_F(NormOpsTest, LayerNormResidual) {
  const char *ir = R"mlir(
    func.func @f(%x: tensor<1x3xf32>, %r: tensor<1x3xf32>, %w: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<1x3xf32> {
      %0 = attn.layer_norm %x, %w, %b residual %r eps 0.0 : (tensor<1x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<1x3xf32>) -> tensor<1x3xf32>
      return %0 : tensor<1x3xf32>
    })mlir";
  auto r = run(ir, {f32({1, 3}, {0, 0, 0}), f32({1, 3}, {1, 2, 3}),
                    f32({3}, {1, 1, 1}), f32({3}, {0, 0, 0})});
  ASSERT_EQ(r.size(), 1u);
  expectTensor(r[0], {1, 3}, {-std::sqrt(1.5), 0, std::sqrt(1.5)}, 1e-14);
}

// Tests rms_norm of [3, 4] (mean square 12.5) with a weight, and with the
// residual split off the same input.
TEST_F(NormOpsTest, RmsNorm) {
  const char *ir = R"mlir(
    func.func @f(%x: tensor<1x2xf32>, %r: tensor<1x2xf32>, %w: tensor<2xf32>) -> (tensor<1x2xf32>, tensor<1x2xf32>) {
      %0 = attn.rms_norm %x, %w eps 1.0e-06 : (tensor<1x2xf32>, tensor<2xf32>) -> tensor<1x2xf32>
      %1 = attn.rms_norm %r, %w residual %r eps 1.0e-06 : (tensor<1x2xf32>, tensor<2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
      return %0, %1 : tensor<1x2xf32>, tensor<1x2xf32>
    })mlir";
  auto r =
      run(ir, {f32({1, 2}, {3, 4}), f32({1, 2}, {1.5, 2}), f32({2}, {2, 0.5})});
  ASSERT_EQ(r.size(), 2u);
  double inv = 1.0 / std::sqrt(12.5 + 1e-6);
  expectTensor(r[0], {1, 2}, {6 * inv, 2 * inv}, 1e-14);
  expectTensor(r[1], {1, 2}, {6 * inv, 2 * inv}, 1e-14);
}

} // namespace
