// RUN: attnc-opt %s | attnc-opt | FileCheck %s
// RUN: attnc-opt %s --mlir-print-op-generic | attnc-opt | FileCheck %s

// Round trips of cross_entropy with and without ignore_index and label
// smoothing.

// CHECK-LABEL: func.func @cross_entropy_plain
// CHECK-SAME: (%[[L:[^:]+]]: tensor<?x?x256xf32>, %[[T:[^:]+]]: tensor<?x?xi32>)
// CHECK: %[[R:.*]] = attn.cross_entropy %[[L]], %[[T]] : (tensor<?x?x256xf32>, tensor<?x?xi32>) -> tensor<f32>
// CHECK: return %[[R]]
// Tests cross_entropy without optional attributes; label_smoothing 0.0 is
// elided as the default.
func.func @cross_entropy_plain(%l: tensor<?x?x256xf32>, %t: tensor<?x?xi32>) -> tensor<f32> {
  %0 = attn.cross_entropy %l, %t label_smoothing 0.0 : (tensor<?x?x256xf32>, tensor<?x?xi32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// CHECK-LABEL: func.func @cross_entropy_all
// CHECK-SAME: (%[[L:[^:]+]]: tensor<?x?x256xf32>, %[[T:[^:]+]]: tensor<?x?xi32>)
// CHECK: attn.cross_entropy %[[L]], %[[T]] ignore_index 0 label_smoothing 1.000000e-01 : (tensor<?x?x256xf32>, tensor<?x?xi32>) -> tensor<f32>
// CHECK: attn.cross_entropy %[[L]], %[[T]] ignore_index -100 : (tensor<?x?x256xf32>, tensor<?x?xi32>) -> tensor<f32>
// CHECK: attn.cross_entropy %[[L]], %[[T]] label_smoothing 1.000000e+00 : (tensor<?x?x256xf32>, tensor<?x?xi32>) -> tensor<f32>
// Tests ignore_index with label smoothing, ignore_index alone (negative, as
// PyTorch's default) and label smoothing alone at its upper bound 1.
func.func @cross_entropy_all(%l: tensor<?x?x256xf32>, %t: tensor<?x?xi32>) {
  %0 = attn.cross_entropy %l, %t ignore_index 0 label_smoothing 0.1 : (tensor<?x?x256xf32>, tensor<?x?xi32>) -> tensor<f32>
  %1 = attn.cross_entropy %l, %t ignore_index -100 : (tensor<?x?x256xf32>, tensor<?x?xi32>) -> tensor<f32>
  %2 = attn.cross_entropy %l, %t label_smoothing 1.0 : (tensor<?x?x256xf32>, tensor<?x?xi32>) -> tensor<f32>
  return
}

// CHECK-LABEL: func.func @cross_entropy_flat
// CHECK-SAME: (%[[L:[^:]+]]: tensor<8x10xbf16>, %[[T:[^:]+]]: tensor<?xi64>, %[[C:[^:]+]]: tensor<10xf32>, %[[S:[^:]+]]: tensor<i64>)
// CHECK: attn.cross_entropy %[[L]], %[[T]] : (tensor<8x10xbf16>, tensor<?xi64>) -> tensor<f32>
// CHECK: attn.cross_entropy %[[C]], %[[S]] : (tensor<10xf32>, tensor<i64>) -> tensor<f32>
// Tests bf16 logits with i64 targets, and a single rank-0 target.
func.func @cross_entropy_flat(%l: tensor<8x10xbf16>, %t: tensor<?xi64>, %c: tensor<10xf32>, %s: tensor<i64>) {
  %0 = attn.cross_entropy %l, %t : (tensor<8x10xbf16>, tensor<?xi64>) -> tensor<f32>
  %1 = attn.cross_entropy %c, %s : (tensor<10xf32>, tensor<i64>) -> tensor<f32>
  return
}
