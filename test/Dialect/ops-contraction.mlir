// RUN: attnc-opt %s | attnc-opt | FileCheck %s
// RUN: attnc-opt %s --mlir-print-op-generic | attnc-opt | FileCheck %s

// Round trips of the contractions and reductions: matmul, linear, reduce,
// softmax and log_softmax.

// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x192xf32>, %[[W:[^:]+]]: tensor<192x256xf32>)
// CHECK: %[[R:.*]] = attn.matmul %[[X]], %[[W]] : (tensor<?x?x192xf32>, tensor<192x256xf32>) -> tensor<?x?x256xf32>
// CHECK: return %[[R]]
// Tests a batched left operand against a rank-2 right operand.
func.func @matmul(%x: tensor<?x?x192xf32>, %w: tensor<192x256xf32>) -> tensor<?x?x256xf32> {
  %0 = attn.matmul %x, %w : (tensor<?x?x192xf32>, tensor<192x256xf32>) -> tensor<?x?x256xf32>
  return %0 : tensor<?x?x256xf32>
}

// CHECK-LABEL: func.func @matmul_batch_broadcast
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x1x?x32xf32>, %[[K:[^:]+]]: tensor<6x32x?xf32>)
// CHECK: %[[R:.*]] = attn.matmul %[[Q]], %[[K]] : (tensor<?x1x?x32xf32>, tensor<6x32x?xf32>) -> tensor<?x6x?x?xf32>
// Tests that the batch dimensions broadcast by NumPy's rules.
func.func @matmul_batch_broadcast(%q: tensor<?x1x?x32xf32>, %k: tensor<6x32x?xf32>) -> tensor<?x6x?x?xf32> {
  %0 = attn.matmul %q, %k : (tensor<?x1x?x32xf32>, tensor<6x32x?xf32>) -> tensor<?x6x?x?xf32>
  return %0 : tensor<?x6x?x?xf32>
}

// CHECK-LABEL: func.func @matmul_more_static
// CHECK-SAME: (%[[A:[^:]+]]: tensor<?x?xf16>, %[[B:[^:]+]]: tensor<?x?xf16>)
// CHECK: %[[R:.*]] = attn.matmul %[[A]], %[[B]] : (tensor<?x?xf16>, tensor<?x?xf16>) -> tensor<4x8xf16>
// Tests a stated result more static than the inferred tensor<?x?xf16>.
func.func @matmul_more_static(%a: tensor<?x?xf16>, %b: tensor<?x?xf16>) -> tensor<4x8xf16> {
  %0 = attn.matmul %a, %b : (tensor<?x?xf16>, tensor<?x?xf16>) -> tensor<4x8xf16>
  return %0 : tensor<4x8xf16>
}

// CHECK-LABEL: func.func @linear_plain
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x192xf32>, %[[W:[^:]+]]: tensor<768x192xf32>)
// CHECK: %[[R:.*]] = attn.linear %[[X]], %[[W]] : (tensor<?x?x192xf32>, tensor<768x192xf32>) -> tensor<?x?x768xf32>
// Tests linear without bias, residual or activation.
func.func @linear_plain(%x: tensor<?x?x192xf32>, %w: tensor<768x192xf32>) -> tensor<?x?x768xf32> {
  %0 = attn.linear %x, %w : (tensor<?x?x192xf32>, tensor<768x192xf32>) -> tensor<?x?x768xf32>
  return %0 : tensor<?x?x768xf32>
}

// CHECK-LABEL: func.func @linear_bias_activation
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x192xf32>, %[[W:[^:]+]]: tensor<768x192xf32>, %[[B:[^:]+]]: tensor<768xf32>)
// CHECK: attn.linear %[[X]], %[[W]], %[[B]] activation gelu : (tensor<?x?x192xf32>, tensor<768x192xf32>, tensor<768xf32>) -> tensor<?x?x768xf32>
// CHECK: attn.linear %[[X]], %[[W]], %[[B]] activation relu
// CHECK: attn.linear %[[X]], %[[W]], %[[B]] activation gelu_tanh
// CHECK: attn.linear %[[X]], %[[W]], %[[B]] activation silu
// CHECK: attn.linear %[[X]], %[[W]], %[[B]] activation tanh
// CHECK: attn.linear %[[X]], %[[W]], %[[B]] activation sigmoid
// CHECK: attn.linear %[[X]], %[[W]], %[[B]] : (tensor<?x?x192xf32>, tensor<768x192xf32>, tensor<768xf32>) -> tensor<?x?x768xf32>
// Tests linear with a bias and every activation; an explicit none is elided.
func.func @linear_bias_activation(%x: tensor<?x?x192xf32>, %w: tensor<768x192xf32>, %b: tensor<768xf32>) {
  %0 = attn.linear %x, %w, %b activation gelu : (tensor<?x?x192xf32>, tensor<768x192xf32>, tensor<768xf32>) -> tensor<?x?x768xf32>
  %1 = attn.linear %x, %w, %b activation relu : (tensor<?x?x192xf32>, tensor<768x192xf32>, tensor<768xf32>) -> tensor<?x?x768xf32>
  %2 = attn.linear %x, %w, %b activation gelu_tanh : (tensor<?x?x192xf32>, tensor<768x192xf32>, tensor<768xf32>) -> tensor<?x?x768xf32>
  %3 = attn.linear %x, %w, %b activation silu : (tensor<?x?x192xf32>, tensor<768x192xf32>, tensor<768xf32>) -> tensor<?x?x768xf32>
  %4 = attn.linear %x, %w, %b activation tanh : (tensor<?x?x192xf32>, tensor<768x192xf32>, tensor<768xf32>) -> tensor<?x?x768xf32>
  %5 = attn.linear %x, %w, %b activation sigmoid : (tensor<?x?x192xf32>, tensor<768x192xf32>, tensor<768xf32>) -> tensor<?x?x768xf32>
  %6 = attn.linear %x, %w, %b activation none : (tensor<?x?x192xf32>, tensor<768x192xf32>, tensor<768xf32>) -> tensor<?x?x768xf32>
  return
}

// CHECK-LABEL: func.func @linear_residual
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x768xf32>, %[[W:[^:]+]]: tensor<192x768xf32>, %[[B:[^:]+]]: tensor<192xf32>, %[[H:[^:]+]]: tensor<?x?x192xf32>)
// CHECK: attn.linear %[[X]], %[[W]], %[[B]] residual %[[H]] : (tensor<?x?x768xf32>, tensor<192x768xf32>, tensor<192xf32>, tensor<?x?x192xf32>) -> tensor<?x?x192xf32>
// CHECK: attn.linear %[[X]], %[[W]] residual %[[H]] activation silu : (tensor<?x?x768xf32>, tensor<192x768xf32>, tensor<?x?x192xf32>) -> tensor<?x?x192xf32>
// Tests linear with bias and residual, and with a residual but no bias (the
// operand segments tell the two optional operands apart).
func.func @linear_residual(%x: tensor<?x?x768xf32>, %w: tensor<192x768xf32>, %b: tensor<192xf32>, %h: tensor<?x?x192xf32>) {
  %0 = attn.linear %x, %w, %b residual %h : (tensor<?x?x768xf32>, tensor<192x768xf32>, tensor<192xf32>, tensor<?x?x192xf32>) -> tensor<?x?x192xf32>
  %1 = attn.linear %x, %w residual %h activation silu : (tensor<?x?x768xf32>, tensor<192x768xf32>, tensor<?x?x192xf32>) -> tensor<?x?x192xf32>
  return
}

// CHECK-LABEL: func.func @linear_vector
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?xbf16>, %[[W:[^:]+]]: tensor<10x?xbf16>)
// CHECK: attn.linear %[[X]], %[[W]] : (tensor<?xbf16>, tensor<10x?xbf16>) -> tensor<10xbf16>
// Tests linear on a rank-1 input with a dynamic inner size.
func.func @linear_vector(%x: tensor<?xbf16>, %w: tensor<10x?xbf16>) -> tensor<10xbf16> {
  %0 = attn.linear %x, %w : (tensor<?xbf16>, tensor<10x?xbf16>) -> tensor<10xbf16>
  return %0 : tensor<10xbf16>
}

// CHECK-LABEL: func.func @reduce
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x128xf32>, %[[M:[^:]+]]: tensor<?x?xi1>)
// CHECK: attn.reduce sum %[[X]] axis 2 : (tensor<?x?x128xf32>) -> tensor<?x?xf32>
// CHECK: attn.reduce mean %[[X]] axis 1 : (tensor<?x?x128xf32>) -> tensor<?x128xf32>
// CHECK: attn.reduce max %[[X]] axis 0 : (tensor<?x?x128xf32>) -> tensor<?x128xf32>
// CHECK: attn.reduce mean %[[X]] axis 1 mask %[[M]] : (tensor<?x?x128xf32>, tensor<?x?xi1>) -> tensor<?x128xf32>
// Tests every reduction kind, and a masked mean.
func.func @reduce(%x: tensor<?x?x128xf32>, %m: tensor<?x?xi1>) {
  %0 = attn.reduce sum %x axis 2 : (tensor<?x?x128xf32>) -> tensor<?x?xf32>
  %1 = attn.reduce mean %x axis 1 : (tensor<?x?x128xf32>) -> tensor<?x128xf32>
  %2 = attn.reduce max %x axis 0 : (tensor<?x?x128xf32>) -> tensor<?x128xf32>
  %3 = attn.reduce mean %x axis 1 mask %m : (tensor<?x?x128xf32>, tensor<?x?xi1>) -> tensor<?x128xf32>
  return
}

// CHECK-LABEL: func.func @reduce_to_scalar
// CHECK-SAME: (%[[X:[^:]+]]: tensor<5xf32>, %[[M:[^:]+]]: tensor<5xi1>)
// CHECK: attn.reduce mean %[[X]] axis 0 mask %[[M]] : (tensor<5xf32>, tensor<5xi1>) -> tensor<f32>
// Tests a masked mean whose mask has the input's full shape, down to rank 0.
func.func @reduce_to_scalar(%x: tensor<5xf32>, %m: tensor<5xi1>) -> tensor<f32> {
  %0 = attn.reduce mean %x axis 0 mask %m : (tensor<5xf32>, tensor<5xi1>) -> tensor<f32>
  return %0 : tensor<f32>
}

// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x256xf32>)
// CHECK: %[[A:.*]] = attn.softmax %[[X]] axis 2 : tensor<?x?x256xf32>
// CHECK: %[[B:.*]] = attn.softmax %[[A]] axis 0 : tensor<?x?x256xf32>
// CHECK: return %[[B]]
// Tests softmax over the last and the first dimension.
func.func @softmax(%x: tensor<?x?x256xf32>) -> tensor<?x?x256xf32> {
  %0 = attn.softmax %x axis 2 : tensor<?x?x256xf32>
  %1 = attn.softmax %0 axis 0 : tensor<?x?x256xf32>
  return %1 : tensor<?x?x256xf32>
}

// CHECK-LABEL: func.func @log_softmax
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x256xf16>)
// CHECK: %[[R:.*]] = attn.log_softmax %[[X]] axis 1 : tensor<?x256xf16>
// CHECK: return %[[R]]
// Tests log_softmax over the class dimension of f16 logits.
func.func @log_softmax(%x: tensor<?x256xf16>) -> tensor<?x256xf16> {
  %0 = attn.log_softmax %x axis 1 : tensor<?x256xf16>
  return %0 : tensor<?x256xf16>
}
