// RUN: attnc-opt %s --convert-attn-to-linalg="attention=rows warp-norms" --canonicalize --cse | FileCheck %s
// RUN: attnc-opt %s --convert-attn-to-linalg="attention=rows warp-norms" --attn-gpu-warp-lanes --canonicalize --cse | FileCheck %s --check-prefix=WARP
// RUN: attnc-opt %s --convert-attn-to-linalg="attention=rows warp-norms" --attn-gpu-warp-lanes=lanes=1 --canonicalize --cse | FileCheck %s --check-prefix=ONE
// RUN: attnc-opt %s --convert-attn-to-linalg="attention=rows" | FileCheck %s --check-prefix=LINALG

// Layer and RMS norms as one loop over rows and the lanes of a warp (the
// GPU target's lowering): lane l of a row sums elements l, l + L, ...,
// five XOR shuffles combine the lanes' sums, and the lane writes its
// elements of the result through a strided slice. L is gpu.subgroup_size
// until attn-gpu-warp-lanes fixes it: 32 on the GPU (the shuffles stay),
// 1 on the host (each shuffle from past the lanes adds nothing, so the
// butterfly folds away and one lane walks the whole row).

// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x768xf32>, %[[R:[^:]+]]: tensor<?x?x768xf32>, %[[W:[^:]+]]: tensor<768xf32>, %[[B:[^:]+]]: tensor<768xf32>)
// CHECK-NOT: linalg.generic
// CHECK: %[[L:.*]] = gpu.subgroup_size : index
// CHECK: scf.forall (%[[I:.*]], %[[J:.*]], %[[LANE:.*]]) in (%{{.*}}, %{{.*}}, %[[L]])
// The mean: input plus residual, this lane's elements, then the lanes.
// CHECK: scf.for %[[C:.*]] = %[[LANE]] to %c768 step %[[L]] iter_args
// CHECK: tensor.extract %[[X]][%[[I]], %[[J]], %[[C]]]
// CHECK: tensor.extract %[[R]][%[[I]], %[[J]], %[[C]]]
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: arith.divf
// The variance about it.
// CHECK: scf.for %{{.*}} = %[[LANE]] to %c768 step %[[L]] iter_args
// CHECK: arith.subf
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: math.rsqrt
// The lane's elements of the result: (768 + L - 1 - lane) / L of them, L apart.
// CHECK: %[[N:.*]] = arith.divui
// CHECK: tensor.extract_slice %{{.*}}[%[[I]], %[[J]], %[[LANE]]] [1, 1, %[[N]]] [1, 1, %[[L]]]
// CHECK: scf.for
// CHECK: tensor.extract %[[W]]
// CHECK: tensor.extract %[[B]]
// CHECK: tensor.insert
// CHECK: tensor.parallel_insert_slice %{{.*}}[%[[I]], %[[J]], %[[LANE]]] [1, 1, %[[N]]] [1, 1, %[[L]]]

// WARP-LABEL: func.func @layer_norm
// WARP-NOT: gpu.subgroup_size
// WARP: scf.forall ({{.*}}) in (%{{.*}}, %{{.*}}, 32)
// WARP: scf.for %{{.*}} = %{{.*}} to %c768 step %c32
// WARP-COUNT-5: gpu.shuffle  xor %{{.*}}, %c{{[0-9]+}}_i32, %c32_i32 : f32
// WARP-NOT: arith.select

// ONE-LABEL: func.func @layer_norm
// ONE-NOT: gpu.
// ONE: scf.forall (%{{.*}}, %{{.*}}) in (%{{.*}}, %{{.*}})
// ONE: scf.for %{{.*}} = %c0 to %c768 step %c1 iter_args
// ONE-NOT: gpu.
// ONE: return

// Without warp-norms: the linalg form.
// LINALG-LABEL: func.func @layer_norm
// LINALG-NOT: gpu.
// LINALG: linalg.generic
func.func @layer_norm(%x: tensor<?x?x768xf32>, %r: tensor<?x?x768xf32>, %w: tensor<768xf32>, %b: tensor<768xf32>) -> tensor<?x?x768xf32> {
  %y = attn.layer_norm %x, %w, %b residual %r eps 1.000000e-05 : (tensor<?x?x768xf32>, tensor<768xf32>, tensor<768xf32>, tensor<?x?x768xf32>) -> tensor<?x?x768xf32>
  return %y : tensor<?x?x768xf32>
}

// RMS norm of one row of 10 elements (fewer than the lanes): its mean
// square, then y * rsqrt(ms + eps) * w.
// CHECK-LABEL: func.func @rms_norm
// CHECK: scf.forall (%[[LANE:.*]]) in (%{{.*}})
// CHECK: scf.for %{{.*}} = %[[LANE]] to %c10 step
// CHECK: arith.mulf
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: math.rsqrt
// CHECK: tensor.extract_slice
// CHECK-NOT: tensor.extract %{{.*}}[%{{.*}}] : tensor<10xf32>{{.*}}bias
// CHECK: tensor.parallel_insert_slice
func.func @rms_norm(%x: tensor<10xf32>, %w: tensor<10xf32>) -> tensor<10xf32> {
  %y = attn.rms_norm %x, %w eps 1.000000e-06 : (tensor<10xf32>, tensor<10xf32>) -> tensor<10xf32>
  return %y : tensor<10xf32>
}

// The adjoints: one loop over rows and lanes recomputes the statistics,
// sums dy w and dy w xhat in one pass over the row (two butterflies), and
// writes dx and, from lane 0, the row's mean and 1/sqrt(var + eps), which
// the weight's and bias's sums over the rows read (a linalg reduction).
// CHECK-LABEL: func.func @layer_norm_grad
// CHECK: scf.forall ({{.*}}) in (%{{.*}}, %{{.*}}, %[[L:.*]]) shared_outs({{.*}}) -> (tensor<?x?x768xf32>, tensor<?x?x1xf32>, tensor<?x?x1xf32>)
// CHECK-COUNT-20: gpu.shuffle  xor
// CHECK-NOT: gpu.shuffle
// CHECK: scf.forall.in_parallel
// CHECK-COUNT-3: tensor.parallel_insert_slice
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2]] : tensor<?x?x1xf32> into tensor<?x?xf32>
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2]] : tensor<?x?x1xf32> into tensor<?x?xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "reduction", "parallel"]
func.func @layer_norm_grad(%x: tensor<?x?x768xf32>, %w: tensor<768xf32>, %dy: tensor<?x?x768xf32>) -> (tensor<?x?x768xf32>, tensor<768xf32>, tensor<768xf32>) {
  %dx, %dw, %db = attn.layer_norm_grad %x, %w, %dy eps 1.000000e-05 : (tensor<?x?x768xf32>, tensor<768xf32>, tensor<?x?x768xf32>) -> (tensor<?x?x768xf32>, tensor<768xf32>, tensor<768xf32>)
  return %dx, %dw, %db : tensor<?x?x768xf32>, tensor<768xf32>, tensor<768xf32>
}

// RMS norm's: the mean square, then mean(dy w x), dx and the row's
// 1/sqrt(ms + eps) for the weight's sum.
// CHECK-LABEL: func.func @rms_norm_grad
// CHECK: scf.forall ({{.*}}) in (%{{.*}}, %{{.*}}) shared_outs({{.*}}) -> (tensor<?x64xf32>, tensor<?x1xf32>)
// CHECK-COUNT-10: gpu.shuffle  xor
// CHECK-NOT: gpu.shuffle
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<?x1xf32> into tensor<?xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]
func.func @rms_norm_grad(%x: tensor<?x64xf32>, %w: tensor<64xf32>, %dy: tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<64xf32>) {
  %dx, %dw = attn.rms_norm_grad %x, %w, %dy eps 1.000000e-06 : (tensor<?x64xf32>, tensor<64xf32>, tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<64xf32>)
  return %dx, %dw : tensor<?x64xf32>, tensor<64xf32>
}

// A norm's adjoint of one row (no rows to keep statistics for): the
// linalg form.
// CHECK-LABEL: func.func @rms_norm_grad_of_one_row
// CHECK-NOT: gpu.shuffle
// CHECK: linalg.generic
func.func @rms_norm_grad_of_one_row(%x: tensor<64xf32>, %w: tensor<64xf32>, %dy: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %dx, %dw = attn.rms_norm_grad %x, %w, %dy eps 1.000000e-06 : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>)
  return %dx, %dw : tensor<64xf32>, tensor<64xf32>
}
