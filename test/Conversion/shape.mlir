// RUN: attnc-opt %s --convert-attn-to-linalg | FileCheck %s --implicit-check-not=attn.

// Shape ops: gather reads one table row per id, clamping the id into the
// table; positions is the loop index; split_heads is an expand_shape and a
// transpose.

// CHECK-DAG: #[[IDS:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[OUT:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// CHECK-LABEL: func.func @gather
// CHECK-SAME: (%[[W:[^:]+]]: tensor<256x32xf32>, %[[IDS_ARG:[^:]+]]: tensor<?x?xi32>)
// CHECK: %[[ROWS:.*]] = arith.constant 256 : index
// CHECK: linalg.generic {indexing_maps = [#[[IDS]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[IDS_ARG]] : tensor<?x?xi32>) outs(%{{.*}} : tensor<?x?x32xf32>)
// CHECK-NEXT: ^bb0(%[[ID:.*]]: i32, %{{.*}}: f32):
// CHECK: %[[ROW:.*]] = arith.index_cast %[[ID]] : i32 to index
// CHECK: %[[ZERO:.*]] = arith.constant 0 : index
// CHECK: %[[LAST:.*]] = arith.subi %[[ROWS]], %{{.*}} : index
// CHECK: %[[LO:.*]] = arith.maxsi %[[ROW]], %[[ZERO]] : index
// CHECK: %[[CLAMPED:.*]] = arith.minsi %[[LO]], %[[LAST]] : index
// CHECK: %[[COL:.*]] = linalg.index 2 : index
// CHECK: %[[E:.*]] = tensor.extract %[[W]][%[[CLAMPED]], %[[COL]]] : tensor<256x32xf32>
// CHECK: linalg.yield %[[E]] : f32
func.func @gather(%w: tensor<256x32xf32>, %ids: tensor<?x?xi32>) -> tensor<?x?x32xf32> {
  %0 = attn.gather %w, %ids : (tensor<256x32xf32>, tensor<?x?xi32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// CHECK-LABEL: func.func @positions
// CHECK-SAME: (%[[IDS_ARG:[^:]+]]: tensor<?x?xi32>)
// CHECK: %[[T:.*]] = tensor.dim %[[IDS_ARG]], %{{.*}} : tensor<?x?xi32>
// CHECK: %[[E:.*]] = tensor.empty(%[[T]]) : tensor<?xi32>
// CHECK: linalg.generic {{.*}} outs(%[[E]] : tensor<?xi32>)
// CHECK: %[[I:.*]] = linalg.index 0 : index
// CHECK: arith.index_cast %[[I]] : index to i32
func.func @positions(%ids: tensor<?x?xi32>) -> tensor<?xi32> {
  %t = attn.dim %ids, 1 : tensor<?x?xi32>
  %0 = attn.positions %t : tensor<?xi32>
  return %0 : tensor<?xi32>
}

// CHECK-LABEL: func.func @split_heads
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x32xf32>)
// CHECK: %[[E:.*]] = tensor.expand_shape %[[X]] {{\[\[}}0], [1], [2, 3]] output_shape [%{{.*}}, %{{.*}}, 4, 8] : tensor<?x?x32xf32> into tensor<?x?x4x8xf32>
// CHECK: linalg.transpose ins(%[[E]] : tensor<?x?x4x8xf32>) outs(%{{.*}} : tensor<?x4x?x8xf32>) permutation = [0, 2, 1, 3]
func.func @split_heads(%x: tensor<?x?x32xf32>) -> tensor<?x4x?x8xf32> {
  %0 = attn.split_heads %x, 4 : (tensor<?x?x32xf32>) -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}
