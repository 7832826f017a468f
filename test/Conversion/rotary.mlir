// RUN: attnc-opt %s --convert-attn-to-linalg --split-input-file | FileCheck %s --implicit-check-not=attn.

// attn.rope: a [T, D] table of cos and one of sin (angle pos[t] *
// exp(j * -2 ln(base) / D), j = d mod D/2), the sin negated in the first
// half (rotate_half's sign); the input's halves swapped with slices; then
// x * cos + swapped * sin over the input, the tables read at (t, d).

// CHECK-DAG: #[[ROW:map[0-9]*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[TABLE:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ALL:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[TD:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d2, d3)>

// CHECK-LABEL: func.func @rope
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x4x?x32xf32>, %[[P:[^:]+]]: tensor<?xi32>)
// CHECK: %[[COS:.*]] = linalg.generic {indexing_maps = [#[[ROW]], #[[TABLE]]], {{.*}} ins(%[[P]] : tensor<?xi32>) outs(%{{.*}} : tensor<?x32xf32>)
// CHECK: %[[D:.*]] = linalg.index 1 : index
// CHECK: %[[HALF:.*]] = arith.constant 16 : index
// CHECK: %[[J:.*]] = arith.remui %[[D]], %[[HALF]] : index
// CHECK: arith.constant -0.575646281 : f32
// CHECK: math.exp
// CHECK: %[[COSV:.*]] = math.cos
// CHECK: linalg.yield %[[COSV]]
// CHECK: %[[SIN:.*]] = linalg.generic {indexing_maps = [#[[ROW]], #[[TABLE]]]
// CHECK: %[[S:.*]] = math.sin
// CHECK: %[[FIRST:.*]] = arith.cmpi ult, %{{.*}}, %{{.*}} : index
// CHECK: %[[NEG:.*]] = arith.negf %[[S]] : f32
// CHECK: %[[SIGNED:.*]] = arith.select %[[FIRST]], %[[NEG]], %[[S]] : f32
// CHECK: linalg.yield %[[SIGNED]]
// CHECK: %[[SECOND:.*]] = tensor.extract_slice %[[X]][0, 0, 0, 16] [%{{.*}}, 4, %{{.*}}, 16] [1, 1, 1, 1]
// CHECK: %[[S1:.*]] = tensor.insert_slice %[[SECOND]] into %{{.*}}[0, 0, 0, 0]
// CHECK: %[[FIRSTX:.*]] = tensor.extract_slice %[[X]][0, 0, 0, 0] [%{{.*}}, 4, %{{.*}}, 16] [1, 1, 1, 1]
// CHECK: %[[SWAPPED:.*]] = tensor.insert_slice %[[FIRSTX]] into %[[S1]][0, 0, 0, 16]
// CHECK: linalg.generic {indexing_maps = [#[[ALL]], #[[ALL]], #[[TD]], #[[TD]], #[[ALL]]], {{.*}} ins(%[[X]], %[[SWAPPED]], %[[COS]], %[[SIN]] : {{.*}})
// CHECK-NEXT: ^bb0(%[[XV:.*]]: f32, %[[PV:.*]]: f32, %[[C:.*]]: f32, %[[SV:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[A:.*]] = arith.mulf %[[XV]], %[[C]] : f32
// CHECK-NEXT: %[[B:.*]] = arith.mulf %[[PV]], %[[SV]] : f32
// CHECK-NEXT: %[[R:.*]] = arith.addf %[[A]], %[[B]] : f32
// CHECK-NEXT: linalg.yield %[[R]] : f32
// Tests the rotation of [B, H, T, D] heads (D = 32, base 10^4).
func.func @rope(%x: tensor<?x4x?x32xf32>, %p: tensor<?xi32>) -> tensor<?x4x?x32xf32> {
  %0 = attn.rope %x, %p base 1.000000e+04 : (tensor<?x4x?x32xf32>, tensor<?xi32>) -> tensor<?x4x?x32xf32>
  return %0 : tensor<?x4x?x32xf32>
}

// -----

// CHECK-LABEL: func.func @rope_inverse
// CHECK: math.sin
// CHECK: %[[SECOND:.*]] = arith.cmpi uge, %{{.*}}, %{{.*}} : index
// CHECK: arith.select %[[SECOND]]
// Tests that the inverse rotation negates the sin in the second half.
func.func @rope_inverse(%x: tensor<8x16xf32>, %p: tensor<8xi32>) -> tensor<8x16xf32> {
  %0 = attn.rope %x, %p base 1.000000e+04 inverse : (tensor<8x16xf32>, tensor<8xi32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

// CHECK-LABEL: func.func @rope_bf16
// CHECK: linalg.generic
// CHECK: ^bb0(%[[XV:.*]]: bf16, %[[PV:.*]]: bf16, %[[C:.*]]: f32, %[[SV:.*]]: f32, %{{.*}}: bf16):
// CHECK: %[[XF:.*]] = arith.extf %[[XV]] : bf16 to f32
// CHECK: %[[PF:.*]] = arith.extf %[[PV]] : bf16 to f32
// CHECK: %[[R:.*]] = arith.addf
// CHECK: %[[T:.*]] = arith.truncf %[[R]] : f32 to bf16
// CHECK: linalg.yield %[[T]] : bf16
// Tests that a bf16 input is rotated in f32 and rounded back.
func.func @rope_bf16(%x: tensor<2x8x16xbf16>, %p: tensor<8xi32>) -> tensor<2x8x16xbf16> {
  %0 = attn.rope %x, %p base 1.000000e+04 : (tensor<2x8x16xbf16>, tensor<8xi32>) -> tensor<2x8x16xbf16>
  return %0 : tensor<2x8x16xbf16>
}
