// RUN: attnc-opt %s --convert-attn-to-linalg | FileCheck %s

// Element-wise attn ops become one linalg.generic each, all loops parallel,
// over a fresh tensor.empty of the result's shape; NumPy broadcasting is in
// the indexing maps: a missing leading dim is dropped from the operand's
// map, a static size-1 dim reads index 0, a rank-0 operand has the map ().

// CHECK-DAG: #[[ID3:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[TRAIL2:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[ONE1:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, 0, d2)>
// CHECK-DAG: #[[SCALAR3:map[0-9]*]] = affine_map<(d0, d1, d2) -> ()>
// CHECK-DAG: #[[ID2:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[SCALAR2:map[0-9]*]] = affine_map<(d0, d1) -> ()>
// CHECK-DAG: #[[LAST1:map[0-9]*]] = affine_map<(d0, d1) -> (d1)>

// CHECK-LABEL: func.func @broadcast
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x32xf32>, %[[Y:[^:]+]]: tensor<?x32xf32>, %[[Z:[^:]+]]: tensor<?x1x32xf32>, %[[S:[^:]+]]: tensor<f32>)
// CHECK-NOT: attn.
// CHECK: %[[E0:.*]] = tensor.empty(%{{.*}}, %{{.*}}) : tensor<?x?x32xf32>
// CHECK: %[[ADD:.*]] = linalg.generic {indexing_maps = [#[[ID3]], #[[TRAIL2]], #[[ID3]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[X]], %[[Y]] : tensor<?x?x32xf32>, tensor<?x32xf32>) outs(%[[E0]] : tensor<?x?x32xf32>)
// CHECK: arith.addf
// CHECK: %[[MUL:.*]] = linalg.generic {indexing_maps = [#[[ONE1]], #[[ID3]], #[[ID3]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[Z]], %[[X]] :
// CHECK: arith.mulf
// CHECK: %[[SUB:.*]] = linalg.generic {indexing_maps = [#[[ID3]], #[[SCALAR3]], #[[ID3]]]
// CHECK-SAME: ins(%[[X]], %[[S]] :
// CHECK: arith.subf
// CHECK: %[[DIV:.*]] = linalg.generic {indexing_maps = [#[[SCALAR3]], #[[ID3]], #[[ID3]]]
// CHECK-SAME: ins(%[[S]], %[[X]] :
// CHECK: arith.divf
// CHECK: return %[[ADD]], %[[MUL]], %[[SUB]], %[[DIV]]
func.func @broadcast(%x: tensor<?x?x32xf32>, %y: tensor<?x32xf32>, %z: tensor<?x1x32xf32>, %s: tensor<f32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %0 = attn.add %x, %y : (tensor<?x?x32xf32>, tensor<?x32xf32>) -> tensor<?x?x32xf32>
  %1 = attn.mul %z, %x : (tensor<?x1x32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  %2 = attn.sub %x, %s : (tensor<?x?x32xf32>, tensor<f32>) -> tensor<?x?x32xf32>
  %3 = attn.div %s, %x : (tensor<f32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  return %0, %1, %2, %3 : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
}

// The result's dynamic sizes come from an operand that has them: the
// size-1 dim of %z is not one.
// CHECK-LABEL: func.func @dynamic_sizes
// CHECK-SAME: (%[[Z:[^:]+]]: tensor<?x1x32xf32>, %[[X:[^:]+]]: tensor<?x?x32xf32>)
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[B:.*]] = tensor.dim %[[Z]], %[[C0]] : tensor<?x1x32xf32>
// CHECK-DAG: %[[T:.*]] = tensor.dim %[[X]], %[[C1]] : tensor<?x?x32xf32>
// CHECK: tensor.empty(%[[B]], %[[T]]) : tensor<?x?x32xf32>
func.func @dynamic_sizes(%z: tensor<?x1x32xf32>, %x: tensor<?x?x32xf32>) -> tensor<?x?x32xf32> {
  %0 = attn.add %z, %x : (tensor<?x1x32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// Unary functions: the scalar body of each, dropout as the identity.
// CHECK-LABEL: func.func @unary
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x8xf32>)
// CHECK: %[[RELU:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ID2]]], iterator_types = ["parallel", "parallel"]} ins(%[[X]] : tensor<4x8xf32>)
// CHECK: arith.maximumf
// CHECK: %[[GELU:.*]] = linalg.generic
// CHECK: math.erf
// CHECK: %[[GELU_TANH:.*]] = linalg.generic
// CHECK: math.tanh
// CHECK: %[[EXP:.*]] = linalg.generic
// CHECK: math.exp
// CHECK: %[[LOG:.*]] = linalg.generic
// CHECK: math.log
// CHECK: %[[SQRT:.*]] = linalg.generic
// CHECK: math.sqrt
// CHECK: %[[NEG:.*]] = linalg.generic
// CHECK: arith.negf
// CHECK: return %[[RELU]], %[[GELU]], %[[GELU_TANH]], %[[EXP]], %[[LOG]], %[[SQRT]], %[[NEG]], %[[X]]
func.func @unary(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = attn.relu %x : tensor<4x8xf32>
  %1 = attn.gelu %x : tensor<4x8xf32>
  %2 = attn.gelu_tanh %x : tensor<4x8xf32>
  %3 = attn.exp %x : tensor<4x8xf32>
  %4 = attn.log %x : tensor<4x8xf32>
  %5 = attn.sqrt %x : tensor<4x8xf32>
  %6 = attn.neg %x : tensor<4x8xf32>
  %7 = attn.dropout %x rate 0.1 : tensor<4x8xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// Comparisons (integer and float predicates), select and casts; a bool
// becomes 0.0 or 1.0 (unsigned), not -1.0.
// CHECK-LABEL: func.func @compare_select_cast
// CHECK-SAME: (%[[T:[^:]+]]: tensor<?x?xi32>, %[[Z:[^:]+]]: tensor<i32>, %[[X:[^:]+]]: tensor<?x4xf32>, %[[Y:[^:]+]]: tensor<4xf32>)
// CHECK: %[[EQ:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[SCALAR2]], #[[ID2]]]
// CHECK-SAME: ins(%[[T]], %[[Z]] : tensor<?x?xi32>, tensor<i32>) outs(%{{.*}} : tensor<?x?xi1>)
// CHECK: arith.cmpi eq
// CHECK: %[[LT:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[LAST1]], #[[ID2]]]
// CHECK: arith.cmpf olt
// CHECK: %[[SEL:.*]] = linalg.generic
// CHECK-SAME: ins(%[[LT]], %[[X]], %[[Y]] :
// CHECK: arith.select
// CHECK: %[[F:.*]] = linalg.generic
// CHECK-SAME: ins(%[[EQ]] : tensor<?x?xi1>) outs(%{{.*}} : tensor<?x?xf32>)
// CHECK: arith.uitofp %{{.*}} : i1 to f32
// CHECK: %[[I:.*]] = linalg.generic
// CHECK: arith.fptosi %{{.*}} : f32 to i32
// CHECK: return %[[EQ]], %[[SEL]], %[[F]], %[[I]]
func.func @compare_select_cast(%t: tensor<?x?xi32>, %z: tensor<i32>, %x: tensor<?x4xf32>, %y: tensor<4xf32>) -> (tensor<?x?xi1>, tensor<?x4xf32>, tensor<?x?xf32>, tensor<?x4xi32>) {
  %0 = attn.compare eq, %t, %z : (tensor<?x?xi32>, tensor<i32>) -> tensor<?x?xi1>
  %1 = attn.compare lt, %x, %y : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xi1>
  %2 = attn.select %1, %x, %y : (tensor<?x4xi1>, tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %3 = attn.cast %0 : tensor<?x?xi1> to tensor<?x?xf32>
  %4 = attn.cast %x : tensor<?x4xf32> to tensor<?x4xi32>
  return %0, %2, %3, %4 : tensor<?x?xi1>, tensor<?x4xf32>, tensor<?x?xf32>, tensor<?x4xi32>
}
