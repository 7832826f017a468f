// RUN: attnc-opt %s --convert-attn-to-linalg="attention=materialized" | FileCheck %s

// Grouped-query attention over the whole score matrix (the GPU target's
// lowering): 4 query heads read 2 key/value heads through indexing maps with
// head `d1 floordiv 2`; the adjoints of keys and values sum over the 2 query
// heads of each group (loops d4, d5: member, query) of [B, 2, 2, ...] views.

// CHECK-DAG: #[[QMAP:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
// CHECK-DAG: #[[KMAP:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 floordiv 2, d3, d4)>
// CHECK-DAG: #[[VMAP:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 floordiv 2, d4, d3)>
// CHECK-DAG: #[[GW:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4, d5, d2)>
// CHECK-DAG: #[[GX:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4, d5, d3)>
// CHECK-DAG: #[[KVOUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>

// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x4x8x16xf32>, %[[K:[^:]+]]: tensor<2x2x8x16xf32>, %[[V:[^:]+]]: tensor<2x2x8x16xf32>)
// Scores q k^T:
// CHECK: linalg.generic {indexing_maps = [#[[QMAP]], #[[KMAP]], #{{.*}}]{{.*}} ins(%[[Q]], %[[K]] :
// The output: weights v.
// CHECK: linalg.generic {indexing_maps = [#[[QMAP]], #[[VMAP]], #{{.*}}]{{.*}} ins(%{{.*}}, %[[V]] :
func.func @forward(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %o = attn.sdpa %q, %k, %v mask causal : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// CHECK-LABEL: func.func @backward
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x4x8x16xf32>, %[[K:[^:]+]]: tensor<2x2x8x16xf32>, %[[V:[^:]+]]: tensor<2x2x8x16xf32>, %{{[^:]+}}: tensor<2x4x8x16xf32>, %[[DO:[^:]+]]: tensor<2x4x8x16xf32>)
// dV: the weights and dO viewed [B, 2, 2, ...], reduced over member and query.
// CHECK: %[[DOG:.*]] = tensor.expand_shape %[[DO]] {{\[\[}}0], [1, 2], [3], [4]] output_shape [2, 2, 2, 8, 16]
// CHECK: %[[DV:.*]] = linalg.generic {indexing_maps = [#[[GW]], #[[GX]], #[[KVOUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%{{.*}}, %[[DOG]] :
// dP = dO v^T reads key/value head h floordiv 2:
// CHECK: linalg.generic {indexing_maps = [#[[QMAP]], #[[KMAP]], #{{.*}}]{{.*}} ins(%[[DO]], %[[V]] :
// dQ = dS k:
// CHECK: linalg.generic {indexing_maps = [#[[QMAP]], #[[VMAP]], #{{.*}}]{{.*}} ins(%{{.*}}, %[[K]] :
// dK: dS and q viewed [B, 2, 2, ...].
// CHECK: %[[QG:.*]] = tensor.expand_shape %[[Q]] {{\[\[}}0], [1, 2], [3], [4]] output_shape [2, 2, 2, 8, 16]
// CHECK: %[[DK:.*]] = linalg.generic {indexing_maps = [#[[GW]], #[[GX]], #[[KVOUT]]], {{.*}} ins(%{{.*}}, %[[QG]] :
// CHECK: return %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
func.func @backward(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x8x16xf32>, %o: tensor<2x4x8x16xf32>, %do: tensor<2x4x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) {
  %dq, %dk, %dv = attn.sdpa_grad %q, %k, %v, %o, %do mask causal : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>)
  return %dq, %dk, %dv : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
}
