// RUN: attnc-opt %s --convert-attn-to-linalg --canonicalize | FileCheck %s --implicit-check-not=attn.

// Products with a 2-D right-hand side lower to one linalg.matmul over all
// rows (the leading dims collapsed), so that attn-matmul-to-vector gives them
// the packed, register-tiled kernel. A linear's W[out, in], and a right-hand
// side that is the transpose of a matrix, are read through the matmul's
// indexing maps (B as [N, K]): no transposed copy.

// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[BT:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[AT:.*]] = affine_map<(d0, d1, d2) -> (d2, d0)>
// CHECK-DAG: #[[BKN:.*]] = affine_map<(d0, d1, d2) -> (d2, d1)>

// CHECK-LABEL: func.func @linear
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<?x?x32xf32>, %[[W:[^:]+]]: tensor<64x32xf32>, %[[B:[^:]+]]: tensor<64xf32>)
// CHECK-DAG:     %[[D0:.*]] = tensor.dim %[[X]], %c0
// CHECK-DAG:     %[[D1:.*]] = tensor.dim %[[X]], %c1
// CHECK:         %[[ROWS:.*]] = tensor.collapse_shape %[[X]] {{\[}}[0, 1], [2]] : tensor<?x?x32xf32> into tensor<?x32xf32>
// CHECK:         %[[ZERO:.*]] = linalg.fill {{.*}} -> tensor<?x64xf32>
// CHECK:         %[[P:.*]] = linalg.matmul indexing_maps = [#[[A]], #[[BT]], #[[C]]] ins(%[[ROWS]], %[[W]] : tensor<?x32xf32>, tensor<64x32xf32>) outs(%[[ZERO]] : tensor<?x64xf32>)
// The epilogue (bias) element-wise over the product's rows, where the
// matrix-product kernel can apply it to its tiles, then the leading dims:
// CHECK:         %[[Y:.*]] = linalg.generic {{.*}} ins(%[[P]], %[[B]] : tensor<?x64xf32>, tensor<64xf32>)
// CHECK:         tensor.expand_shape %[[Y]] {{\[}}[0, 1], [2]] output_shape [%[[D0]], %[[D1]], 64]
func.func @linear(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>) -> tensor<?x?x64xf32> {
  %0 = attn.linear %x, %w, %b : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// The tied lm head, x @ transpose(wte): the transpose is folded into the maps.
// CHECK-LABEL: func.func @lm_head
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<?x?x32xf32>, %[[WTE:[^:]+]]: tensor<100x32xf32>)
// CHECK-NOT:     linalg.transpose
// CHECK:         linalg.matmul indexing_maps = [#[[A]], #[[BT]], #[[C]]] ins(%{{.*}}, %[[WTE]] : tensor<?x32xf32>, tensor<100x32xf32>)
// CHECK-NOT:     linalg.generic
// CHECK:         tensor.expand_shape
func.func @lm_head(%x: tensor<?x?x32xf32>, %wte: tensor<100x32xf32>) -> tensor<?x?x100xf32> {
  %t = attn.transpose %wte, [1, 0] : (tensor<100x32xf32>) -> tensor<32x100xf32>
  %0 = attn.matmul %x, %t : (tensor<?x?x32xf32>, tensor<32x100xf32>) -> tensor<?x?x100xf32>
  return %0 : tensor<?x?x100xf32>
}

// A weight gradient, transpose(dY) @ X with both 2-D: the left operand's
// transpose is folded into the maps too (A as [K, M]).
// CHECK-LABEL: func.func @weight_grad
// CHECK-SAME:    (%[[DY:[^:]+]]: tensor<?x64xf32>, %[[X:[^:]+]]: tensor<?x32xf32>)
// CHECK-NOT:     linalg.transpose
// CHECK:         linalg.matmul indexing_maps = [#[[AT]], #[[BKN]], #[[C]]] ins(%[[DY]], %[[X]] : tensor<?x64xf32>, tensor<?x32xf32>) outs(%{{.*}} : tensor<64x32xf32>)
func.func @weight_grad(%dy: tensor<?x64xf32>, %x: tensor<?x32xf32>) -> tensor<64x32xf32> {
  %t = attn.transpose %dy, [1, 0] : (tensor<?x64xf32>) -> tensor<64x?xf32>
  %0 = attn.matmul %t, %x : (tensor<64x?xf32>, tensor<?x32xf32>) -> tensor<64x32xf32>
  return %0 : tensor<64x32xf32>
}

// A vector input is one row.
// CHECK-LABEL: func.func @linear_vector
// CHECK:         tensor.expand_shape %{{.*}} {{\[}}[0, 1]] output_shape [1, 32] : tensor<32xf32> into tensor<1x32xf32>
// CHECK:         linalg.matmul indexing_maps = [#[[A]], #[[BT]], #[[C]]] {{.*}} outs(%{{.*}} : tensor<1x16xf32>)
// CHECK:         tensor.collapse_shape %{{.*}} {{\[}}[0, 1]] : tensor<1x16xf32> into tensor<16xf32>
func.func @linear_vector(%x: tensor<32xf32>, %w: tensor<16x32xf32>) -> tensor<16xf32> {
  %0 = attn.linear %x, %w : (tensor<32xf32>, tensor<16x32xf32>) -> tensor<16xf32>
  return %0 : tensor<16xf32>
}
