// RUN: attnc-opt %s --split-input-file --convert-attn-to-linalg \
// RUN:   | FileCheck %s --implicit-check-not=attn.

// The gradient ops become reductions and element-wise generics.

// Tests that activation_grad multiplies by f'(x) in one generic (gelu: the
// normal pdf constant 1/sqrt(2 pi) and erf).
// CHECK-LABEL: func.func @activation_grad
// CHECK: linalg.generic
// CHECK-DAG: math.erf
// CHECK-DAG: arith.constant 0.398942292 : f32
// CHECK: linalg.yield
func.func @activation_grad(%x: tensor<?x32xf32>, %dy: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %0 = attn.activation_grad gelu %x, %dy : tensor<?x32xf32>
  return %0 : tensor<?x32xf32>
}

// -----

// Tests that softmax_grad reduces dy * y over the axis in one generic and
// reads the sums in a second: y (dy - sum).
// CHECK-LABEL: func.func @softmax_grad
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: linalg.generic {{.*}}ins(%{{.*}}, %{{.*}}, %[[SUM]] :
// CHECK: arith.subf
// CHECK: arith.mulf
func.func @softmax_grad(%y: tensor<?x32xf32>, %dy: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %0 = attn.softmax_grad %y, %dy axis 1 : tensor<?x32xf32>
  return %0 : tensor<?x32xf32>
}

// -----

// Tests that log_softmax_grad is dy - exp(y) sum(dy).
// CHECK-LABEL: func.func @log_softmax_grad
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]
// CHECK: linalg.generic
// CHECK: math.exp
// CHECK: arith.subf
func.func @log_softmax_grad(%y: tensor<?x32xf32>, %dy: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %0 = attn.log_softmax_grad %y, %dy axis 0 : tensor<?x32xf32>
  return %0 : tensor<?x32xf32>
}

// -----

// Tests that layer_norm_grad recomputes the statistics (mean, rsqrt of the
// variance), sums dxhat and dxhat * xhat per row in one two-result
// reduction, and sums the weight and bias gradients over every row in one
// reduction whose only parallel dim is the feature.
// CHECK-LABEL: func.func @layer_norm_grad
// CHECK: math.rsqrt
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: } -> (tensor<?x?xf32>, tensor<?x?xf32>)
// CHECK: %[[DX:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel"]
// CHECK: %[[DWDB:.*]]:2 = linalg.generic {{.*}}iterator_types = ["reduction", "reduction", "parallel"]
// CHECK: } -> (tensor<48xf32>, tensor<48xf32>)
// CHECK: %[[DB:.*]] = tensor.cast %[[DWDB]]#1
// CHECK: return %{{.*}}, %[[DWDB]]#0, %[[DB]]
func.func @layer_norm_grad(%x: tensor<?x?x48xf32>, %w: tensor<48xf32>, %dy: tensor<?x?x48xf32>) -> (tensor<?x?x48xf32>, tensor<48xf32>, tensor<48xf32>) {
  %dx, %dw, %db = attn.layer_norm_grad %x, %w, %dy eps 1.000000e-05 : (tensor<?x?x48xf32>, tensor<48xf32>, tensor<?x?x48xf32>) -> (tensor<?x?x48xf32>, tensor<48xf32>, tensor<48xf32>)
  return %dx, %dw, %db : tensor<?x?x48xf32>, tensor<48xf32>, tensor<48xf32>
}

// -----

// Tests that rms_norm_grad recomputes 1/rms and reduces the weight gradient
// over the rows.
// CHECK-LABEL: func.func @rms_norm_grad
// CHECK: math.rsqrt
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]
// CHECK: } -> tensor<48xf32>
func.func @rms_norm_grad(%x: tensor<?x48xf32>, %w: tensor<48xf32>, %dy: tensor<?x48xf32>) -> (tensor<?x48xf32>, tensor<48xf32>) {
  %dx, %dw = attn.rms_norm_grad %x, %w, %dy eps 1.000000e-06 : (tensor<?x48xf32>, tensor<48xf32>, tensor<?x48xf32>) -> (tensor<?x48xf32>, tensor<48xf32>)
  return %dx, %dw : tensor<?x48xf32>, tensor<48xf32>
}

// -----

// Tests that cross_entropy_grad materialises nothing logits-shaped but its
// result: one tensor.empty of the logits' shape; the sum of exponentials
// is fused with the subtraction of the row maximum; ignored targets count
// through a reduction over the targets and give 0.
// CHECK-LABEL: func.func @cross_entropy_grad
// CHECK-NOT: tensor.empty{{.*}}tensor<?x?x256xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "reduction"]
// CHECK: arith.cmpi ne, %{{.*}}, %c0_i32
// CHECK-NOT: tensor.empty{{.*}}tensor<?x?x256xf32>
// CHECK: tensor.empty(%{{.*}}, %{{.*}}) : tensor<?x?x256xf32>
// CHECK-NEXT: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel"]
// CHECK: linalg.index 2
// CHECK: arith.select
// CHECK-NOT: tensor.empty{{.*}}tensor<?x?x256xf32>
// CHECK: return
func.func @cross_entropy_grad(%l: tensor<?x?x256xf32>, %t: tensor<?x?xi32>, %g: tensor<f32>) -> tensor<?x?x256xf32> {
  %0 = attn.cross_entropy_grad %l, %t, %g ignore_index 0 label_smoothing 1.000000e-01 : (tensor<?x?x256xf32>, tensor<?x?xi32>, tensor<f32>) -> tensor<?x?x256xf32>
  return %0 : tensor<?x?x256xf32>
}

// -----

// Tests that gather_grad is a sequential loop over the flattened ids into a
// zero-filled table, adding one row per id in place (extract and insert of
// the same row): duplicate ids accumulate, deterministically.
// CHECK-LABEL: func.func @gather_grad
// CHECK: %[[IDS:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<?x?xi32> into tensor<?xi32>
// CHECK: %[[ZERO:.*]] = linalg.fill {{.*}} -> tensor<256x64xf32>
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[T:.*]] = %[[ZERO]]) -> (tensor<256x64xf32>)
// CHECK: %[[ID:.*]] = tensor.extract %[[IDS]][%[[I]]]
// CHECK: %[[ROW:.*]] = arith.minsi
// CHECK: %[[DEST:.*]] = tensor.extract_slice %[[T]][%[[ROW]], 0] [1, 64] [1, 1]
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} outs(%[[DEST]] : tensor<1x64xf32>)
// CHECK: tensor.insert_slice %[[SUM]] into %[[T]][%[[ROW]], 0] [1, 64] [1, 1]
func.func @gather_grad(%ids: tensor<?x?xi32>, %dx: tensor<?x?x64xf32>) -> tensor<256x64xf32> {
  %0 = attn.gather_grad %ids, %dx : (tensor<?x?xi32>, tensor<?x?x64xf32>) -> tensor<256x64xf32>
  return %0 : tensor<256x64xf32>
}

// -----

// Tests that global_norm accumulates every input's squares into one f64
// scalar, then takes the square root.
// CHECK-LABEL: func.func @global_norm
// CHECK: %[[A:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<f64>)
// CHECK: arith.extf
// CHECK: %[[B:.*]] = linalg.generic {{.*}} outs(%[[A]] : tensor<f64>)
// CHECK: math.sqrt %{{.*}} : f64
func.func @global_norm(%a: tensor<4x4xf32>, %b: tensor<4xf32>) -> tensor<f32> {
  %0 = attn.global_norm %a, %b : tensor<4x4xf32>, tensor<4xf32>
  return %0 : tensor<f32>
}

// -----

// Tests that adam_update computes the bias corrections once (powf of the
// betas to the step) and the three results in one element-wise generic;
// AdamW (decoupled) scales the weight by 1 - lr wd.
// CHECK-LABEL: func.func @adam_update
// CHECK: math.powf
// CHECK: math.powf
// CHECK: %[[R:.*]]:3 = linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK: math.sqrt
// CHECK: } -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK: return %[[R]]#0, %[[R]]#1, %[[R]]#2
func.func @adam_update(%p: tensor<4x8xf32>, %g: tensor<4x8xf32>, %m: tensor<4x8xf32>, %v: tensor<4x8xf32>, %lr: tensor<f32>, %t: tensor<f32>, %b1: tensor<f32>, %b2: tensor<f32>, %eps: tensor<f32>, %wd: tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %0:3 = attn.adam_update %p, %g, %m, %v, %lr, %t, %b1, %b2, %eps, %wd decoupled : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return %0#0, %0#1, %0#2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Tests that seeded dropout hashes (seed, stream, row-major index) with
// splitmix64 in i64 arithmetic: the stream's offset 0x9E3779B97F4A7C15 *
// (3 + 1) = -7046029254386353132 (wrapped), the index multiplier, the two
// mixing constants, and the top 24 bits compared with 0.25 * 2^24.
// CHECK-LABEL: func.func @dropout
// CHECK: %[[SEED:.*]] = tensor.extract %{{.*}}[] : tensor<i64>
// CHECK: %[[BASE:.*]] = arith.addi %[[SEED]], %{{.*}} : i64
// CHECK: linalg.generic
// CHECK: linalg.index 0
// CHECK: linalg.index 1
// CHECK: arith.muli %{{.*}}, %c-3335678366873096957_i64
// CHECK: arith.shrui %{{.*}}, %c30_i64
// CHECK: arith.muli %{{.*}}, %c-4658895280553007687_i64
// CHECK: arith.muli %{{.*}}, %c-7723592293110705685_i64
// CHECK: arith.shrui %{{.*}}, %c40_i64
// CHECK: arith.cmpi sge, %{{.*}}, %c4194304_i64
// CHECK: arith.select
func.func @dropout(%x: tensor<?x32xf32>, %seed: tensor<i64>) -> tensor<?x32xf32> {
  %0 = attn.dropout %x rate 2.500000e-01 seed %seed stream 3 : tensor<?x32xf32>
  return %0 : tensor<?x32xf32>
}

// -----

// Tests that dropout without a seed (inference) is the identity.
// CHECK-LABEL: func.func @dropout_inference
// CHECK-SAME: (%[[X:.*]]: tensor<?x32xf32>)
// CHECK-NEXT: return %[[X]]
func.func @dropout_inference(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %0 = attn.dropout %x rate 2.500000e-01 : tensor<?x32xf32>
  return %0 : tensor<?x32xf32>
}
