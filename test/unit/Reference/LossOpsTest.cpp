//===- LossOpsTest.cpp - Reference cross-entropy --------------------------===//
//
// cross_entropy with PyTorch's semantics (mean over the targets kept,
// ignore_index, label_smoothing), checked against a hand calculation.
//
//===----------------------------------------------------------------------===//

#include "ReferenceTestUtils.h"

using namespace attn::reference;
using namespace attn::reference::testing;

namespace {

using LossOpsTest = IRTest;

/// -log_softmax of `row`, for the hand calculation.
std::vector<double> negLogSoftmax(std::vector<double> row) {
  double sum = 0;
  for (double x : row)
    sum += std::exp(x);
  for (double &x : row)
    x = std::log(sum) - x;
  return row;
}

const char *kLossIR = R"mlir(
  func.func @plain(%l: tensor<?x3xf32>, %t: tensor<?xi32>) -> tensor<f32> {
    %0 = attn.cross_entropy %l, %t : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
  func.func @ignore(%l: tensor<?x3xf32>, %t: tensor<?xi32>) -> tensor<f32> {
    %0 = attn.cross_entropy %l, %t ignore_index 0 : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
  func.func @both(%l: tensor<?x3xf32>, %t: tensor<?xi32>) -> tensor<f32> {
    %0 = attn.cross_entropy %l, %t ignore_index 0 label_smoothing 1.000000e-01 : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
  func.func @smooth(%l: tensor<?x3xf32>, %t: tensor<?xi32>) -> tensor<f32> {
    %0 = attn.cross_entropy %l, %t label_smoothing 1.000000e-01 : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
  func.func @batched(%l: tensor<?x?x3xf32>, %t: tensor<?x?xi32>) -> tensor<f32> {
    %0 = attn.cross_entropy %l, %t ignore_index -100 : (tensor<?x?x3xf32>, tensor<?x?xi32>) -> tensor<f32>
    return %0 : tensor<f32>
  })mlir";

class CrossEntropyTest : public LossOpsTest {
protected:
  Tensor logits = f32({3, 3}, {1, 2, 3, 1, 1, 1, 0, 0, 5});
  Tensor targets = i32({3}, {2, 0, 1});
  // Per row: -log p[target], and the mean of -log p over the classes.
  std::vector<double> row0 = negLogSoftmax({1, 2, 3});
  std::vector<double> row1 = negLogSoftmax({1, 1, 1});
  std::vector<double> row2 = negLogSoftmax({0, 0, 5});
  double mean(const std::vector<double> &row) {
    return (row[0] + row[1] + row[2]) / 3;
  }
  double loss(llvm::StringRef fn, const Tensor &l, const Tensor &t) {
    auto r = run(kLossIR, {l, t}, {}, fn);
    EXPECT_EQ(r.size(), 1u);
    if (r.empty())
      return NAN;
    EXPECT_EQ(r[0].getRank(), 0);
    EXPECT_EQ(r[0].getDType(), DType::F32);
    return r[0][0];
  }
};

// Tests the plain mean of -log p[target] over three rows.
TEST_F(CrossEntropyTest, Mean) {
  EXPECT_NEAR(loss("plain", logits, targets), (row0[2] + row1[0] + row2[1]) / 3,
              1e-14);
  EXPECT_NEAR(loss("plain", logits, targets), 2.173201384944646, 1e-14);
}

// Tests that ignored targets are left out of the sum and of the count.
TEST_F(CrossEntropyTest, IgnoreIndex) {
  EXPECT_NEAR(loss("ignore", logits, targets), (row0[2] + row2[1]) / 2, 1e-14);
  EXPECT_NEAR(loss("ignore", logits, targets), 2.710495933082915, 1e-14);
}

// Tests label smoothing e = 0.1: (1 - e) nll + e mean_c(-log p_c) per
// target, as torch.nn.functional.cross_entropy, with and without ignoring.
TEST_F(CrossEntropyTest, LabelSmoothing) {
  double e = 0.1;
  auto smoothed = [&](const std::vector<double> &row, int target) {
    return (1 - e) * row[target] + e * mean(row);
  };
  EXPECT_NEAR(loss("smooth", logits, targets),
              (smoothed(row0, 2) + smoothed(row1, 0) + smoothed(row2, 1)) / 3,
              1e-14);
  EXPECT_NEAR(loss("smooth", logits, targets), 2.1509791627224244, 1e-14);
  EXPECT_NEAR(loss("both", logits, targets),
              (smoothed(row0, 2) + smoothed(row2, 1)) / 2, 1e-14);
  EXPECT_NEAR(loss("both", logits, targets), 2.6771625997495816, 1e-14);
}

// Tests that a batch with every target ignored has loss 0 (PyTorch: NaN).
TEST_F(CrossEntropyTest, AllIgnored) {
  EXPECT_EQ(loss("ignore", logits, i32({3}, {0, 0, 0})), 0.0);
  EXPECT_EQ(loss("batched", f32({1, 1, 3}, {1, 2, 3}), i32({1, 1}, {-100})),
            0.0);
}

// Tests targets of rank 2 (the [B, T] case) and PyTorch's default ignore
// index -100.
TEST_F(CrossEntropyTest, BatchedTargets) {
  Tensor l = f32({2, 2, 3}, {1, 2, 3, 1, 1, 1, 0, 0, 5, 9, 9, 9});
  Tensor t = i32({2, 2}, {2, 0, 1, -100});
  EXPECT_NEAR(loss("batched", l, t), (row0[2] + row1[0] + row2[1]) / 3, 1e-14);
}

// Tests that a target outside [0, C) that is not ignored is an error.
TEST_F(CrossEntropyTest, TargetOutOfRange) {
  std::string error =
      runError(kLossIR, {logits, i32({3}, {2, 3, 1})}, {}, "plain");
  EXPECT_NE(error.find("target 3 at position 1 is out of range for 3 classes"),
            std::string::npos)
      << error;
}

} // namespace
