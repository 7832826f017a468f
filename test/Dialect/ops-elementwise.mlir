// RUN: attnc-opt %s | attnc-opt | FileCheck %s
// RUN: attnc-opt %s --mlir-print-op-generic | attnc-opt | FileCheck %s

// Round trips of the element-wise ops: unary functions, broadcasting binary
// arithmetic, compare, select, cast and dropout.

// CHECK-LABEL: func.func @neg
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x192xf32>)
// CHECK: %[[R:.*]] = attn.neg %[[X]] : tensor<?x?x192xf32>
// CHECK: return %[[R]] : tensor<?x?x192xf32>
// Tests that neg round-trips on a tensor with dynamic dimensions.
func.func @neg(%x: tensor<?x?x192xf32>) -> tensor<?x?x192xf32> {
  %0 = attn.neg %x : tensor<?x?x192xf32>
  return %0 : tensor<?x?x192xf32>
}

// CHECK-LABEL: func.func @relu
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x8xf16>)
// CHECK: %[[R:.*]] = attn.relu %[[X]] : tensor<4x8xf16>
// CHECK: return %[[R]] : tensor<4x8xf16>
// Tests that relu round-trips on an f16 tensor.
func.func @relu(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %0 = attn.relu %x : tensor<4x8xf16>
  return %0 : tensor<4x8xf16>
}

// CHECK-LABEL: func.func @gelu
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x768xf32>)
// CHECK: %[[R:.*]] = attn.gelu %[[X]] : tensor<?x?x768xf32>
// CHECK: return %[[R]] : tensor<?x?x768xf32>
// Tests that gelu round-trips on an MLP hidden tensor.
func.func @gelu(%x: tensor<?x?x768xf32>) -> tensor<?x?x768xf32> {
  %0 = attn.gelu %x : tensor<?x?x768xf32>
  return %0 : tensor<?x?x768xf32>
}

// CHECK-LABEL: func.func @gelu_tanh
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x768xbf16>)
// CHECK: %[[R:.*]] = attn.gelu_tanh %[[X]] : tensor<?x?x768xbf16>
// CHECK: return %[[R]] : tensor<?x?x768xbf16>
// Tests that gelu_tanh round-trips on a bf16 tensor.
func.func @gelu_tanh(%x: tensor<?x?x768xbf16>) -> tensor<?x?x768xbf16> {
  %0 = attn.gelu_tanh %x : tensor<?x?x768xbf16>
  return %0 : tensor<?x?x768xbf16>
}

// CHECK-LABEL: func.func @silu
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x?x64xf32>)
// CHECK: %[[R:.*]] = attn.silu %[[X]] : tensor<2x?x64xf32>
// CHECK: return %[[R]] : tensor<2x?x64xf32>
// Tests that silu round-trips on mixed static and dynamic dimensions.
func.func @silu(%x: tensor<2x?x64xf32>) -> tensor<2x?x64xf32> {
  %0 = attn.silu %x : tensor<2x?x64xf32>
  return %0 : tensor<2x?x64xf32>
}

// CHECK-LABEL: func.func @tanh
// CHECK-SAME: (%[[X:[^:]+]]: tensor<f32>)
// CHECK: %[[R:.*]] = attn.tanh %[[X]] : tensor<f32>
// CHECK: return %[[R]] : tensor<f32>
// Tests that tanh round-trips on a rank-0 tensor.
func.func @tanh(%x: tensor<f32>) -> tensor<f32> {
  %0 = attn.tanh %x : tensor<f32>
  return %0 : tensor<f32>
}

// CHECK-LABEL: func.func @sigmoid
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?xf64>)
// CHECK: %[[R:.*]] = attn.sigmoid %[[X]] : tensor<?xf64>
// CHECK: return %[[R]] : tensor<?xf64>
// Tests that sigmoid round-trips on an f64 tensor.
func.func @sigmoid(%x: tensor<?xf64>) -> tensor<?xf64> {
  %0 = attn.sigmoid %x : tensor<?xf64>
  return %0 : tensor<?xf64>
}

// CHECK-LABEL: func.func @exp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<1x1x1xf32>)
// CHECK: %[[R:.*]] = attn.exp %[[X]] : tensor<1x1x1xf32>
// CHECK: return %[[R]] : tensor<1x1x1xf32>
// Tests that exp round-trips on a tensor of size-1 dimensions.
func.func @exp(%x: tensor<1x1x1xf32>) -> tensor<1x1x1xf32> {
  %0 = attn.exp %x : tensor<1x1x1xf32>
  return %0 : tensor<1x1x1xf32>
}

// CHECK-LABEL: func.func @log
// CHECK-SAME: (%[[X:[^:]+]]: tensor<3xf32>)
// CHECK: %[[R:.*]] = attn.log %[[X]] : tensor<3xf32>
// CHECK: return %[[R]] : tensor<3xf32>
// Tests that log round-trips on a static vector.
func.func @log(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = attn.log %x : tensor<3xf32>
  return %0 : tensor<3xf32>
}

// CHECK-LABEL: func.func @sqrt
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x?x?xf32>)
// CHECK: %[[R:.*]] = attn.sqrt %[[X]] : tensor<?x?x?x?xf32>
// CHECK: return %[[R]] : tensor<?x?x?x?xf32>
// Tests that sqrt round-trips on a rank-4 dynamic tensor.
func.func @sqrt(%x: tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32> {
  %0 = attn.sqrt %x : tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}
// CHECK-LABEL: func.func @add_bias
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x192xf32>, %[[B:[^:]+]]: tensor<192xf32>)
// CHECK: %[[R:.*]] = attn.add %[[X]], %[[B]] : (tensor<?x?x192xf32>, tensor<192xf32>) -> tensor<?x?x192xf32>
// CHECK: return %[[R]]
// Tests that add broadcasts a [192] bias over a [?, ?, 192] tensor.
func.func @add_bias(%x: tensor<?x?x192xf32>, %b: tensor<192xf32>) -> tensor<?x?x192xf32> {
  %0 = attn.add %x, %b : (tensor<?x?x192xf32>, tensor<192xf32>) -> tensor<?x?x192xf32>
  return %0 : tensor<?x?x192xf32>
}

// CHECK-LABEL: func.func @add_scalar_lhs
// CHECK-SAME: (%[[S:[^:]+]]: tensor<f32>, %[[X:[^:]+]]: tensor<?x4xf32>)
// CHECK: %[[R:.*]] = attn.add %[[S]], %[[X]] : (tensor<f32>, tensor<?x4xf32>) -> tensor<?x4xf32>
// Tests that a rank-0 left operand broadcasts to the right operand's shape.
func.func @add_scalar_lhs(%s: tensor<f32>, %x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = attn.add %s, %x : (tensor<f32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// CHECK-LABEL: func.func @add_more_static
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x192xf32>, %[[Y:[^:]+]]: tensor<?x?x192xf32>)
// CHECK: %[[R:.*]] = attn.add %[[X]], %[[Y]] : (tensor<?x?x192xf32>, tensor<?x?x192xf32>) -> tensor<8x?x192xf32>
// Tests that the stated result may be more static than the inferred one.
func.func @add_more_static(%x: tensor<?x?x192xf32>, %y: tensor<?x?x192xf32>) -> tensor<8x?x192xf32> {
  %0 = attn.add %x, %y : (tensor<?x?x192xf32>, tensor<?x?x192xf32>) -> tensor<8x?x192xf32>
  return %0 : tensor<8x?x192xf32>
}

// CHECK-LABEL: func.func @sub
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x1xf32>, %[[Y:[^:]+]]: tensor<1x5xf32>)
// CHECK: %[[R:.*]] = attn.sub %[[X]], %[[Y]] : (tensor<4x1xf32>, tensor<1x5xf32>) -> tensor<4x5xf32>
// Tests that size-1 dimensions of both operands stretch (an outer difference).
func.func @sub(%x: tensor<4x1xf32>, %y: tensor<1x5xf32>) -> tensor<4x5xf32> {
  %0 = attn.sub %x, %y : (tensor<4x1xf32>, tensor<1x5xf32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// CHECK-LABEL: func.func @mul
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x6x?x?xf32>, %[[M:[^:]+]]: tensor<?x1x1x?xf32>)
// CHECK: %[[R:.*]] = attn.mul %[[X]], %[[M]] : (tensor<?x6x?x?xf32>, tensor<?x1x1x?xf32>) -> tensor<?x6x?x?xf32>
// Tests that two dynamic dimensions are taken to be equal.
func.func @mul(%x: tensor<?x6x?x?xf32>, %m: tensor<?x1x1x?xf32>) -> tensor<?x6x?x?xf32> {
  %0 = attn.mul %x, %m : (tensor<?x6x?x?xf32>, tensor<?x1x1x?xf32>) -> tensor<?x6x?x?xf32>
  return %0 : tensor<?x6x?x?xf32>
}

// CHECK-LABEL: func.func @div
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x192xf16>, %[[Y:[^:]+]]: tensor<8x1xf16>)
// CHECK: %[[R:.*]] = attn.div %[[X]], %[[Y]] : (tensor<?x192xf16>, tensor<8x1xf16>) -> tensor<8x192xf16>
// Tests that a dynamic dimension against a static one takes the static size.
func.func @div(%x: tensor<?x192xf16>, %y: tensor<8x1xf16>) -> tensor<8x192xf16> {
  %0 = attn.div %x, %y : (tensor<?x192xf16>, tensor<8x1xf16>) -> tensor<8x192xf16>
  return %0 : tensor<8x192xf16>
}

// CHECK-LABEL: func.func @compare
// CHECK-SAME: (%[[T:[^:]+]]: tensor<?x?xi32>, %[[Z:[^:]+]]: tensor<i32>, %[[X:[^:]+]]: tensor<?x4xf32>, %[[Y:[^:]+]]: tensor<4xf32>)
// CHECK: attn.compare eq, %[[T]], %[[Z]] : (tensor<?x?xi32>, tensor<i32>) -> tensor<?x?xi1>
// CHECK: attn.compare ne, %[[T]], %[[Z]] : (tensor<?x?xi32>, tensor<i32>) -> tensor<?x?xi1>
// CHECK: attn.compare lt, %[[X]], %[[Y]] : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xi1>
// CHECK: attn.compare le, %[[X]], %[[Y]] : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xi1>
// CHECK: attn.compare gt, %[[X]], %[[Y]] : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xi1>
// CHECK: attn.compare ge, %[[X]], %[[Y]] : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<2x4xi1>
// Tests every predicate, on integer and float operands, with a boolean result.
func.func @compare(%t: tensor<?x?xi32>, %z: tensor<i32>, %x: tensor<?x4xf32>, %y: tensor<4xf32>) {
  %0 = attn.compare eq, %t, %z : (tensor<?x?xi32>, tensor<i32>) -> tensor<?x?xi1>
  %1 = attn.compare ne, %t, %z : (tensor<?x?xi32>, tensor<i32>) -> tensor<?x?xi1>
  %2 = attn.compare lt, %x, %y : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xi1>
  %3 = attn.compare le, %x, %y : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xi1>
  %4 = attn.compare gt, %x, %y : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xi1>
  %5 = attn.compare ge, %x, %y : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<2x4xi1>
  return
}

// CHECK-LABEL: func.func @compare_bool
// CHECK-SAME: (%[[A:[^:]+]]: tensor<3xi1>, %[[B:[^:]+]]: tensor<3xi1>)
// CHECK: %[[R:.*]] = attn.compare eq, %[[A]], %[[B]] : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
// Tests that booleans can be compared.
func.func @compare_bool(%a: tensor<3xi1>, %b: tensor<3xi1>) -> tensor<3xi1> {
  %0 = attn.compare eq, %a, %b : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  return %0 : tensor<3xi1>
}

// CHECK-LABEL: func.func @select
// CHECK-SAME: (%[[C:[^:]+]]: tensor<?x?xi1>, %[[X:[^:]+]]: tensor<?x?x8xf32>, %[[Z:[^:]+]]: tensor<f32>)
// CHECK: %[[R:.*]] = attn.select %[[C]], %[[X]], %[[Z]] : (tensor<?x?xi1>, tensor<?x?x8xf32>, tensor<f32>) -> tensor<?x?x8xf32>
// Tests that the three operands of select broadcast together.
func.func @select(%c: tensor<?x?xi1>, %x: tensor<?x?x8xf32>, %z: tensor<f32>) -> tensor<?x?x8xf32> {
  %0 = attn.select %c, %x, %z : (tensor<?x?xi1>, tensor<?x?x8xf32>, tensor<f32>) -> tensor<?x?x8xf32>
  return %0 : tensor<?x?x8xf32>
}

// CHECK-LABEL: func.func @select_int
// CHECK-SAME: (%[[C:[^:]+]]: tensor<4xi1>, %[[A:[^:]+]]: tensor<4xi64>, %[[B:[^:]+]]: tensor<1xi64>)
// CHECK: %[[R:.*]] = attn.select %[[C]], %[[A]], %[[B]] : (tensor<4xi1>, tensor<4xi64>, tensor<1xi64>) -> tensor<4xi64>
// Tests select between integer tensors.
func.func @select_int(%c: tensor<4xi1>, %a: tensor<4xi64>, %b: tensor<1xi64>) -> tensor<4xi64> {
  %0 = attn.select %c, %a, %b : (tensor<4xi1>, tensor<4xi64>, tensor<1xi64>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// CHECK-LABEL: func.func @cast
// CHECK-SAME: (%[[M:[^:]+]]: tensor<?x?xi1>, %[[X:[^:]+]]: tensor<2x3xf32>)
// CHECK: %[[F:.*]] = attn.cast %[[M]] : tensor<?x?xi1> to tensor<?x?xf32>
// CHECK: %[[I:.*]] = attn.cast %[[X]] : tensor<2x3xf32> to tensor<2x3xi32>
// CHECK: %[[H:.*]] = attn.cast %[[X]] : tensor<2x3xf32> to tensor<2x3xbf16>
// CHECK: return %[[F]], %[[I]], %[[H]]
// Tests casts from bool to float, float to int and float to float.
func.func @cast(%m: tensor<?x?xi1>, %x: tensor<2x3xf32>) -> (tensor<?x?xf32>, tensor<2x3xi32>, tensor<2x3xbf16>) {
  %0 = attn.cast %m : tensor<?x?xi1> to tensor<?x?xf32>
  %1 = attn.cast %x : tensor<2x3xf32> to tensor<2x3xi32>
  %2 = attn.cast %x : tensor<2x3xf32> to tensor<2x3xbf16>
  return %0, %1, %2 : tensor<?x?xf32>, tensor<2x3xi32>, tensor<2x3xbf16>
}

// CHECK-LABEL: func.func @dropout
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x192xf32>)
// CHECK: %[[A:.*]] = attn.dropout %[[X]] rate 1.000000e-01 : tensor<?x?x192xf32>
// CHECK: %[[B:.*]] = attn.dropout %[[A]] rate 0.000000e+00 : tensor<?x?x192xf32>
// CHECK: return %[[B]]
// Tests dropout with a positive rate and with rate 0 (kept without folding).
func.func @dropout(%x: tensor<?x?x192xf32>) -> tensor<?x?x192xf32> {
  %0 = attn.dropout %x rate 0.1 : tensor<?x?x192xf32>
  %1 = attn.dropout %0 rate 0.0 : tensor<?x?x192xf32>
  return %1 : tensor<?x?x192xf32>
}
