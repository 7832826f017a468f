// RUN: attnc-opt %s --attn-fuse-elementwise | FileCheck %s

// Element-wise chains on tensors become one generic; nothing fuses through
// a broadcast, and reshapes are not propagated through the products.

// A linear's epilogue (bias, activation) and the residual add after it.
// CHECK-LABEL: func.func @chain
// CHECK-SAME:    (%[[P:[^:]+]]: tensor<?x64xf32>, %[[B:[^:]+]]: tensor<64xf32>, %[[R:[^:]+]]: tensor<?x64xf32>)
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%[[P]], %[[B]], %[[R]] :
// CHECK:           arith.addf
// CHECK:           math.tanh
// CHECK:           arith.addf
// CHECK-NOT:     linalg.generic
// CHECK:         return

// A per-row rsqrt read by every element of its row stays a separate op.
// CHECK-LABEL: func.func @broadcast
// CHECK:         linalg.generic
// CHECK:           math.rsqrt
// CHECK:         linalg.generic
// CHECK:           arith.mulf

// The product stays a 2-D linalg.matmul on the collapsed rows.
// CHECK-LABEL: func.func @matmul_rows
// CHECK:         tensor.collapse_shape
// CHECK:         linalg.matmul {{.*}} ins(%{{.*}}, %{{.*}} : tensor<?x32xf32>, tensor<64x32xf32>)
// CHECK:         tensor.expand_shape
// CHECK:         linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @chain(%p: tensor<?x64xf32>, %b: tensor<64xf32>, %r: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %p, %c0 : tensor<?x64xf32>
  %e0 = tensor.empty(%n) : tensor<?x64xf32>
  %0 = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%p, %b : tensor<?x64xf32>, tensor<64xf32>) outs(%e0 : tensor<?x64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %t = math.tanh %s : f32
    linalg.yield %t : f32
  } -> tensor<?x64xf32>
  %e1 = tensor.empty(%n) : tensor<?x64xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%0, %r : tensor<?x64xf32>, tensor<?x64xf32>) outs(%e1 : tensor<?x64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<?x64xf32>
  return %1 : tensor<?x64xf32>
}
func.func @broadcast(%v: tensor<?xf32>, %x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %v, %c0 : tensor<?xf32>
  %e0 = tensor.empty(%n) : tensor<?xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%v : tensor<?xf32>) outs(%e0 : tensor<?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.rsqrt %a : f32
    linalg.yield %r : f32
  } -> tensor<?xf32>
  %e1 = tensor.empty(%n) : tensor<?x64xf32>
  %1 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %0 : tensor<?x64xf32>, tensor<?xf32>) outs(%e1 : tensor<?x64xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %m = arith.mulf %a, %s : f32
    linalg.yield %m : f32
  } -> tensor<?x64xf32>
  return %1 : tensor<?x64xf32>
}
func.func @matmul_rows(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>, %init: tensor<?x64xf32>, %d0: index, %d1: index) -> tensor<?x?x64xf32> {
  %rows = tensor.collapse_shape %x [[0, 1], [2]] : tensor<?x?x32xf32> into tensor<?x32xf32>
  %p = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%rows, %w : tensor<?x32xf32>, tensor<64x32xf32>) outs(%init : tensor<?x64xf32>) -> tensor<?x64xf32>
  %e = tensor.expand_shape %p [[0, 1], [2]] output_shape [%d0, %d1, 64] : tensor<?x64xf32> into tensor<?x?x64xf32>
  %empty = tensor.empty(%d0, %d1) : tensor<?x?x64xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%e : tensor<?x?x64xf32>) outs(%empty : tensor<?x?x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  } -> tensor<?x?x64xf32>
  return %r : tensor<?x?x64xf32>
}
