// RUN: attnc-opt %s --convert-attn-to-linalg | FileCheck %s --implicit-check-not=attn.

// Products become contractions into a zero-filled tensor: a 2-D
// right-hand side (a weight) as one matrix product over all rows, either a
// linalg.matmul on the collapsed rows or a linalg.generic with the
// reduction loop last; batched products with broadcast batch dims as a
// linalg.generic whose maps read a size-1 batch dim at index 0. A linear
// layer reads W[out, in] in place (no transposed copy), then applies its
// epilogue (bias, activation, residual) element-wise. Reductions reduce
// the axis loop; the masked mean accumulates the sum and the count in one
// pass and gives 0 where nothing is left.

// Batched matmul, loops (batch..., m, n, k), a size-1 head dim broadcast:
// CHECK-DAG: #[[BMM_A:map[0-9]*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, 0, d2, d4)>
// CHECK-DAG: #[[BMM_B:map[0-9]*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d4, d3)>
// CHECK-DAG: #[[BMM_C:map[0-9]*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// Reductions, loops over the input's dims:
// CHECK-DAG: #[[R_IN:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[R_LAST:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[R_MID:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d2)>

// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x32xf32>, %[[W:[^:]+]]: tensor<32x64xf32>, %[[Q:[^:]+]]: tensor<?x1x?x16xf32>, %[[K:[^:]+]]: tensor<4x16x?xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: linalg.fill ins(%[[ZERO]] : f32)
// CHECK: {{linalg.matmul|linalg.generic}}
// CHECK-SAME: ins(%{{[^,]*}}, %[[W]] : tensor<{{(\?x)+}}32xf32>, tensor<32x64xf32>)
// CHECK: %[[BMM:.*]] = linalg.generic {indexing_maps = [#[[BMM_A]], #[[BMM_B]], #[[BMM_C]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME: ins(%[[Q]], %[[K]] : tensor<?x1x?x16xf32>, tensor<4x16x?xf32>) outs(%{{.*}} : tensor<?x4x?x?xf32>)
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[ACC]], %[[P]] : f32
// CHECK-NEXT: linalg.yield %[[S]] : f32
// CHECK: return %{{.*}}, %[[BMM]]
func.func @matmul(%x: tensor<?x?x32xf32>, %w: tensor<32x64xf32>, %q: tensor<?x1x?x16xf32>, %k: tensor<4x16x?xf32>) -> (tensor<?x?x64xf32>, tensor<?x4x?x?xf32>) {
  %0 = attn.matmul %x, %w : (tensor<?x?x32xf32>, tensor<32x64xf32>) -> tensor<?x?x64xf32>
  %1 = attn.matmul %q, %k : (tensor<?x1x?x16xf32>, tensor<4x16x?xf32>) -> tensor<?x4x?x?xf32>
  return %0, %1 : tensor<?x?x64xf32>, tensor<?x4x?x?xf32>
}

// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x32xf32>, %[[W:[^:]+]]: tensor<64x32xf32>, %[[B:[^:]+]]: tensor<64xf32>, %[[W2:[^:]+]]: tensor<32x64xf32>, %[[H:[^:]+]]: tensor<?x?x32xf32>, %[[W3:[^:]+]]: tensor<8x32xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: {{linalg.matmul|linalg.generic}}
// CHECK-SAME: ins(%{{[^,]*}}, %[[W]] : tensor<{{(\?x)+}}32xf32>, tensor<64x32xf32>)
// CHECK-NOT: linalg.transpose
// The epilogue over the product's rows (the residual seen as rows too):
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{[^,]*}}, %[[B]] : tensor<?x64xf32>, tensor<64xf32>)
// CHECK: arith.addf
// CHECK: math.erf
// CHECK: %[[G:.*]] = tensor.expand_shape
// CHECK: {{linalg.matmul|linalg.generic}}
// CHECK-SAME: ins(%{{[^,]*}}, %[[W2]] : tensor<{{(\?x)+}}64xf32>, tensor<32x64xf32>)
// CHECK: %[[HR:.*]] = tensor.collapse_shape %[[H]]
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{[^,]*}}, %[[HR]] : tensor<?x32xf32>, tensor<?x32xf32>)
// CHECK: arith.addf
// CHECK: %[[R:.*]] = tensor.expand_shape
// A linear with nothing after the product is the product alone.
// CHECK: {{linalg.matmul|linalg.generic}}
// CHECK-SAME: ins(%{{[^,]*}}, %[[W3]] : tensor<{{(\?x)+}}32xf32>, tensor<8x32xf32>)
// CHECK-NOT: linalg.generic
// CHECK: return %[[G]], %[[R]], %{{.*}}
func.func @linear(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>, %w2: tensor<32x64xf32>, %h: tensor<?x?x32xf32>, %w3: tensor<8x32xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x8xf32>) {
  %0 = attn.linear %x, %w, %b activation gelu : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %1 = attn.linear %0, %w2 residual %h : (tensor<?x?x64xf32>, tensor<32x64xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  %2 = attn.linear %h, %w3 : (tensor<?x?x32xf32>, tensor<8x32xf32>) -> tensor<?x?x8xf32>
  return %0, %1, %2 : tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x8xf32>
}

// CHECK-LABEL: func.func @reduce
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x128xf32>, %[[M:[^:]+]]: tensor<?x?xi1>)
// sum over the last axis
// CHECK: linalg.generic {indexing_maps = [#[[R_IN]], #[[R_LAST]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[X]] :
// CHECK: arith.addf
// mean over axis 1: a sum, then a division by the axis' size
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[R_IN]], #[[R_MID]]], iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[X]] :
// CHECK: %[[C1:.*]] = arith.constant 1 : index
// CHECK: %[[N:.*]] = tensor.dim %[[X]], %[[C1]]
// CHECK: %[[NI:.*]] = arith.index_cast %[[N]] : index to i64
// CHECK: %[[NF:.*]] = arith.sitofp %[[NI]] : i64 to f32
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[SUM]] :
// CHECK: arith.divf %{{.*}}, %[[NF]]
// max from -inf
// CHECK: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: linalg.fill ins(%[[NEGINF]] : f32)
// CHECK: linalg.generic {indexing_maps = [#[[R_IN]], #[[R_MID]]], iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[X]] :
// CHECK: arith.maximumf
// masked mean: sum and count together (the mask read at (b, t)), then
// sum / count, 0 where the count is 0
// CHECK: %[[SC:.*]]:2 = linalg.generic {indexing_maps = [#[[R_IN]], #[[R_LAST]], #[[R_MID]], #[[R_MID]]], iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[X]], %[[M]] :
// CHECK: arith.select
// CHECK: arith.select
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[SC]]#0, %[[SC]]#1 :
// CHECK: arith.cmpf oeq
// CHECK: arith.divf
// CHECK: arith.select
func.func @reduce(%x: tensor<?x?x128xf32>, %m: tensor<?x?xi1>) -> (tensor<?x?xf32>, tensor<?x128xf32>, tensor<?x128xf32>, tensor<?x128xf32>) {
  %0 = attn.reduce sum %x axis 2 : (tensor<?x?x128xf32>) -> tensor<?x?xf32>
  %1 = attn.reduce mean %x axis 1 : (tensor<?x?x128xf32>) -> tensor<?x128xf32>
  %2 = attn.reduce max %x axis 1 : (tensor<?x?x128xf32>) -> tensor<?x128xf32>
  %3 = attn.reduce mean %x axis 1 mask %m : (tensor<?x?x128xf32>, tensor<?x?xi1>) -> tensor<?x128xf32>
  return %0, %1, %2, %3 : tensor<?x?xf32>, tensor<?x128xf32>, tensor<?x128xf32>, tensor<?x128xf32>
}
