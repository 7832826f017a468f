// RUN: attnc-opt %s -canonicalize | FileCheck %s

// The folds of attn ops, each with a case that must not fold.

// CHECK-LABEL: func.func @fold_dim_static
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x16xi32>)
// CHECK: %[[C:.*]] = arith.constant 16 : index
// CHECK-NOT: attn.dim
// CHECK: return %[[C]] : index
// Tests that dim of a static dimension folds to a constant.
func.func @fold_dim_static(%x: tensor<?x16xi32>) -> index {
  %0 = attn.dim %x, 1 : tensor<?x16xi32>
  return %0 : index
}

// CHECK-LABEL: func.func @no_fold_dim_dynamic
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x16xi32>)
// CHECK: %[[D:.*]] = attn.dim %[[X]], 0 : tensor<?x16xi32>
// CHECK: return %[[D]] : index
// Tests that dim of a dynamic dimension stays.
func.func @no_fold_dim_dynamic(%x: tensor<?x16xi32>) -> index {
  %0 = attn.dim %x, 0 : tensor<?x16xi32>
  return %0 : index
}

// CHECK-LABEL: func.func @fold_neg_neg
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x4xf32>)
// CHECK-NOT: attn.neg
// CHECK: return %[[X]] : tensor<?x4xf32>
// Tests that a double negation folds away.
func.func @fold_neg_neg(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = attn.neg %x : tensor<?x4xf32>
  %1 = attn.neg %0 : tensor<?x4xf32>
  return %1 : tensor<?x4xf32>
}

// CHECK-LABEL: func.func @no_fold_neg
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x4xf32>)
// CHECK: %[[N:.*]] = attn.neg %[[X]] : tensor<?x4xf32>
// CHECK: %[[E:.*]] = attn.exp %[[N]] : tensor<?x4xf32>
// CHECK: %[[R:.*]] = attn.neg %[[E]] : tensor<?x4xf32>
// CHECK: return %[[R]]
// Tests that negations separated by another op stay.
func.func @no_fold_neg(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = attn.neg %x : tensor<?x4xf32>
  %1 = attn.exp %0 : tensor<?x4xf32>
  %2 = attn.neg %1 : tensor<?x4xf32>
  return %2 : tensor<?x4xf32>
}

// CHECK-LABEL: func.func @fold_add_zero
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x192xf32>)
// CHECK-NOT: attn.add
// CHECK: return %[[X]], %[[X]] : tensor<?x?x192xf32>, tensor<?x?x192xf32>
// Tests that adding a splat zero folds, on either side.
func.func @fold_add_zero(%x: tensor<?x?x192xf32>) -> (tensor<?x?x192xf32>, tensor<?x?x192xf32>) {
  %zero = arith.constant dense<0.0> : tensor<192xf32>
  %0 = attn.add %x, %zero : (tensor<?x?x192xf32>, tensor<192xf32>) -> tensor<?x?x192xf32>
  %1 = attn.add %zero, %x : (tensor<192xf32>, tensor<?x?x192xf32>) -> tensor<?x?x192xf32>
  return %0, %1 : tensor<?x?x192xf32>, tensor<?x?x192xf32>
}

// CHECK-LABEL: func.func @no_fold_add_zero_broadcast
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4xf32>)
// CHECK: %[[Z:.*]] = arith.constant dense<0.000000e+00> : tensor<2x4xf32>
// CHECK: %[[R:.*]] = attn.add %[[X]], %[[Z]] : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK: return %[[R]]
// Tests that adding a zero that broadcasts to a larger shape stays.
func.func @no_fold_add_zero_broadcast(%x: tensor<4xf32>) -> tensor<2x4xf32> {
  %zero = arith.constant dense<0.0> : tensor<2x4xf32>
  %0 = attn.add %x, %zero : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// CHECK-LABEL: func.func @no_fold_add_nonzero
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4xf32>)
// CHECK: %[[C:.*]] = arith.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK: %[[R:.*]] = attn.add %[[X]], %[[C]]
// CHECK: return %[[R]]
// Tests that adding a splat one stays.
func.func @no_fold_add_nonzero(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = arith.constant dense<1.0> : tensor<4xf32>
  %0 = attn.add %x, %one : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// CHECK-LABEL: func.func @no_fold_add_non_splat
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2xf32>)
// CHECK: %[[C:.*]] = arith.constant dense<[0.000000e+00, 1.000000e+00]> : tensor<2xf32>
// CHECK: %[[R:.*]] = attn.add %[[X]], %[[C]]
// CHECK: return %[[R]]
// Tests that adding a constant that is not a splat stays.
func.func @no_fold_add_non_splat(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = arith.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %0 = attn.add %x, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// CHECK-LABEL: func.func @fold_sub_zero
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x8xf16>)
// CHECK-NOT: attn.sub
// CHECK: return %[[X]] : tensor<?x8xf16>
// Tests that subtracting a splat zero folds.
func.func @fold_sub_zero(%x: tensor<?x8xf16>) -> tensor<?x8xf16> {
  %zero = arith.constant dense<0.0> : tensor<f16>
  %0 = attn.sub %x, %zero : (tensor<?x8xf16>, tensor<f16>) -> tensor<?x8xf16>
  return %0 : tensor<?x8xf16>
}

// CHECK-LABEL: func.func @no_fold_zero_sub
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x8xf16>)
// CHECK: %[[Z:.*]] = arith.constant dense<0.000000e+00> : tensor<f16>
// CHECK: %[[R:.*]] = attn.sub %[[Z]], %[[X]] : (tensor<f16>, tensor<?x8xf16>) -> tensor<?x8xf16>
// CHECK: return %[[R]]
// Tests that zero minus x (a negation) stays: sub is not commutative.
func.func @no_fold_zero_sub(%x: tensor<?x8xf16>) -> tensor<?x8xf16> {
  %zero = arith.constant dense<0.0> : tensor<f16>
  %0 = attn.sub %zero, %x : (tensor<f16>, tensor<?x8xf16>) -> tensor<?x8xf16>
  return %0 : tensor<?x8xf16>
}

// CHECK-LABEL: func.func @fold_mul_one
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x3xbf16>)
// CHECK-NOT: attn.mul
// CHECK: return %[[X]], %[[X]] : tensor<2x3xbf16>, tensor<2x3xbf16>
// Tests that multiplying by a splat one folds, on either side.
func.func @fold_mul_one(%x: tensor<2x3xbf16>) -> (tensor<2x3xbf16>, tensor<2x3xbf16>) {
  %one = arith.constant dense<1.0> : tensor<2x3xbf16>
  %0 = attn.mul %x, %one : (tensor<2x3xbf16>, tensor<2x3xbf16>) -> tensor<2x3xbf16>
  %1 = attn.mul %one, %x : (tensor<2x3xbf16>, tensor<2x3xbf16>) -> tensor<2x3xbf16>
  return %0, %1 : tensor<2x3xbf16>, tensor<2x3xbf16>
}

// CHECK-LABEL: func.func @no_fold_mul
// CHECK-SAME: (%[[X:[^:]+]]: tensor<3xf32>)
// CHECK-DAG: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<2x3xf32>
// CHECK-DAG: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<3xf32>
// CHECK: %[[A:.*]] = attn.mul %[[X]], %[[ONE]] : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK: %[[B:.*]] = attn.mul %[[X]], %[[ZERO]] : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK: return %[[A]], %[[B]]
// Tests that a one that broadcasts to a larger shape, and a zero, stay.
func.func @no_fold_mul(%x: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>) {
  %one = arith.constant dense<1.0> : tensor<2x3xf32>
  %zero = arith.constant dense<0.0> : tensor<3xf32>
  %0 = attn.mul %x, %one : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = attn.mul %x, %zero : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<3xf32>
}

// CHECK-LABEL: func.func @no_fold_mul_near_one_f80
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4xf80>)
// CHECK: %[[C:.*]] = arith.constant dense<1.00000000000000000087> : tensor<4xf80>
// CHECK: %[[R:.*]] = attn.mul %[[X]], %[[C]] : (tensor<4xf80>, tensor<4xf80>) -> tensor<4xf80>
// CHECK: return %[[R]]
// Tests that multiplying by 1 + 2^-60, which f80 represents but f64 rounds
// to 1, stays: the identity is compared in the constant's own precision.
func.func @no_fold_mul_near_one_f80(%x: tensor<4xf80>) -> tensor<4xf80> {
  %c = arith.constant dense<0x3FFF8000000000000008> : tensor<4xf80>
  %0 = attn.mul %x, %c : (tensor<4xf80>, tensor<4xf80>) -> tensor<4xf80>
  return %0 : tensor<4xf80>
}

// CHECK-LABEL: func.func @no_fold_add_tiny_f128
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2xf128>)
// CHECK: %[[C:.*]] = arith.constant dense<3.3621031431120935062626778173217526E-4932> : tensor<2xf128>
// CHECK: %[[R:.*]] = attn.add %[[X]], %[[C]] : (tensor<2xf128>, tensor<2xf128>) -> tensor<2xf128>
// CHECK: return %[[R]]
// Tests that adding 2^-16382, which f128 represents but f64 flushes to 0,
// stays.
func.func @no_fold_add_tiny_f128(%x: tensor<2xf128>) -> tensor<2xf128> {
  %c = arith.constant dense<0x00010000000000000000000000000000> : tensor<2xf128>
  %0 = attn.add %x, %c : (tensor<2xf128>, tensor<2xf128>) -> tensor<2xf128>
  return %0 : tensor<2xf128>
}

// CHECK-LABEL: func.func @fold_div_one
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?xf64>)
// CHECK-NOT: attn.div
// CHECK: return %[[X]] : tensor<?x?xf64>
// Tests that dividing by a splat one folds.
func.func @fold_div_one(%x: tensor<?x?xf64>) -> tensor<?x?xf64> {
  %one = arith.constant dense<1.0> : tensor<1x1xf64>
  %0 = attn.div %x, %one : (tensor<?x?xf64>, tensor<1x1xf64>) -> tensor<?x?xf64>
  return %0 : tensor<?x?xf64>
}

// CHECK-LABEL: func.func @no_fold_one_div
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?xf64>)
// CHECK: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<1x1xf64>
// CHECK: %[[R:.*]] = attn.div %[[ONE]], %[[X]] : (tensor<1x1xf64>, tensor<?x?xf64>) -> tensor<?x?xf64>
// CHECK: return %[[R]]
// Tests that one divided by x (a reciprocal) stays.
func.func @no_fold_one_div(%x: tensor<?x?xf64>) -> tensor<?x?xf64> {
  %one = arith.constant dense<1.0> : tensor<1x1xf64>
  %0 = attn.div %one, %x : (tensor<1x1xf64>, tensor<?x?xf64>) -> tensor<?x?xf64>
  return %0 : tensor<?x?xf64>
}

// CHECK-LABEL: func.func @no_fold_identity_more_static
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x4xf32>)
// CHECK: %[[Z:.*]] = arith.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK: %[[R:.*]] = attn.add %[[X]], %[[Z]] : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK: return %[[R]] : tensor<2x4xf32>
// Tests that x + 0 stays when the stated result is more static than x (the
// fold would change the value's type).
func.func @no_fold_identity_more_static(%x: tensor<?x4xf32>) -> tensor<2x4xf32> {
  %zero = arith.constant dense<0.0> : tensor<4xf32>
  %0 = attn.add %x, %zero : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// CHECK-LABEL: func.func @fold_cast_same_type
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x3xi32>)
// CHECK-NOT: attn.cast
// CHECK: return %[[X]] : tensor<?x3xi32>
// Tests that a cast to the operand's own type folds.
func.func @fold_cast_same_type(%x: tensor<?x3xi32>) -> tensor<?x3xi32> {
  %0 = attn.cast %x : tensor<?x3xi32> to tensor<?x3xi32>
  return %0 : tensor<?x3xi32>
}

// CHECK-LABEL: func.func @no_fold_cast
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x3xi32>)
// CHECK: %[[R:.*]] = attn.cast %[[X]] : tensor<?x3xi32> to tensor<?x3xi64>
// CHECK: return %[[R]]
// Tests that a cast to another element type stays.
func.func @no_fold_cast(%x: tensor<?x3xi32>) -> tensor<?x3xi64> {
  %0 = attn.cast %x : tensor<?x3xi32> to tensor<?x3xi64>
  return %0 : tensor<?x3xi64>
}

// CHECK-LABEL: func.func @fold_dropout_zero
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x192xf32>)
// CHECK-NOT: attn.dropout
// CHECK: return %[[X]] : tensor<?x?x192xf32>
// Tests that dropout with rate 0 folds to its input.
func.func @fold_dropout_zero(%x: tensor<?x?x192xf32>) -> tensor<?x?x192xf32> {
  %0 = attn.dropout %x rate 0.0 : tensor<?x?x192xf32>
  return %0 : tensor<?x?x192xf32>
}

// CHECK-LABEL: func.func @fold_dropout_inference
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x192xf32>)
// CHECK-NOT: attn.dropout
// CHECK: return %[[X]] : tensor<?x?x192xf32>
// Tests that dropout without a seed (inference) folds to its input.
func.func @fold_dropout_inference(%x: tensor<?x?x192xf32>) -> tensor<?x?x192xf32> {
  %0 = attn.dropout %x rate 0.1 : tensor<?x?x192xf32>
  return %0 : tensor<?x?x192xf32>
}

// CHECK-LABEL: func.func @no_fold_dropout
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x192xf32>, %[[S:[^:]+]]: tensor<i64>)
// CHECK: %[[R:.*]] = attn.dropout %[[X]] rate 1.000000e-01 seed %[[S]] stream 0 : tensor<?x?x192xf32>
// CHECK: return %[[R]]
// Tests that a training dropout with rate 0.1 stays.
func.func @no_fold_dropout(%x: tensor<?x?x192xf32>, %seed: tensor<i64>) -> tensor<?x?x192xf32> {
  %0 = attn.dropout %x rate 0.1 seed %seed stream 0 : tensor<?x?x192xf32>
  return %0 : tensor<?x?x192xf32>
}

// CHECK-LABEL: func.func @fold_training_dropout_zero
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4xf32>, %{{[^:]+}}: tensor<i64>)
// CHECK-NOT: attn.dropout
// CHECK: return %[[X]]
// Tests that a training dropout of rate 0 folds too.
func.func @fold_training_dropout_zero(%x: tensor<4xf32>, %seed: tensor<i64>) -> tensor<4xf32> {
  %0 = attn.dropout %x rate 0.0 seed %seed stream 1 : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// CHECK-LABEL: func.func @no_fold_dropout_unused
// CHECK: attn.dropout
// Tests that an unused training dropout is not erased (it is not pure: it
// draws from the random stream).
func.func @no_fold_dropout_unused(%x: tensor<4xf32>, %seed: tensor<i64>) {
  %0 = attn.dropout %x rate 0.5 seed %seed stream 0 : tensor<4xf32>
  return
}

// CHECK-LABEL: func.func @fold_reshape_same_type
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x3xf32>)
// CHECK-NOT: attn.reshape
// CHECK: return %[[X]] : tensor<2x3xf32>
// Tests that a reshape to the same static type folds.
func.func @fold_reshape_same_type(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = attn.reshape %x : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @no_fold_reshape_dynamic
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?xf32>, %[[A:[^:]+]]: index, %[[B:[^:]+]]: index)
// CHECK: %[[R:.*]] = attn.reshape %[[X]] [%[[A]], %[[B]]] : tensor<?x?xf32> -> tensor<?x?xf32>
// CHECK: return %[[R]]
// Tests that a reshape between equal dynamic types stays: the sizes may differ.
func.func @no_fold_reshape_dynamic(%x: tensor<?x?xf32>, %a: index, %b: index) -> tensor<?x?xf32> {
  %0 = attn.reshape %x [%a, %b] : tensor<?x?xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// CHECK-LABEL: func.func @fold_reshape_reshape
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x3x4xf32>)
// CHECK: %[[R:.*]] = attn.reshape %[[X]] : tensor<2x3x4xf32> -> tensor<4x6xf32>
// CHECK-NOT: attn.reshape
// CHECK: return %[[R]]
// Tests that a reshape of a reshape reads the original tensor.
func.func @fold_reshape_reshape(%x: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %0 = attn.reshape %x : tensor<2x3x4xf32> -> tensor<24xf32>
  %1 = attn.reshape %0 : tensor<24xf32> -> tensor<4x6xf32>
  return %1 : tensor<4x6xf32>
}

// CHECK-LABEL: func.func @fold_reshape_round_trip
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x3x4xf32>)
// CHECK-NOT: attn.reshape
// CHECK: return %[[X]]
// Tests that a reshape there and back folds away entirely.
func.func @fold_reshape_round_trip(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = attn.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %1 = attn.reshape %0 : tensor<6x4xf32> -> tensor<2x3x4xf32>
  return %1 : tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @no_fold_reshape_reshape_count
// CHECK-SAME: (%[[X:[^:]+]]: tensor<6xf32>, %[[A:[^:]+]]: index, %[[B:[^:]+]]: index)
// CHECK: %[[R0:.*]] = attn.reshape %[[X]] [%[[A]], %[[B]]] : tensor<6xf32> -> tensor<?x?xf32>
// CHECK: %[[R1:.*]] = attn.reshape %[[R0]] : tensor<?x?xf32> -> tensor<8xf32>
// CHECK: return %[[R1]]
// Tests that reshapes through a dynamic shape whose static ends disagree in
// element count (an error only when the program runs) are not composed into
// a reshape the verifier rejects.
func.func @no_fold_reshape_reshape_count(%x: tensor<6xf32>, %a: index, %b: index) -> tensor<8xf32> {
  %0 = attn.reshape %x [%a, %b] : tensor<6xf32> -> tensor<?x?xf32>
  %1 = attn.reshape %0 : tensor<?x?xf32> -> tensor<8xf32>
  return %1 : tensor<8xf32>
}

// CHECK-LABEL: func.func @no_fold_reshape_single
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x3x4xf32>)
// CHECK: %[[R:.*]] = attn.reshape %[[X]] : tensor<2x3x4xf32> -> tensor<6x4xf32>
// CHECK: return %[[R]]
// Tests that a single reshape to another shape stays.
func.func @no_fold_reshape_single(%x: tensor<2x3x4xf32>) -> tensor<6x4xf32> {
  %0 = attn.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  return %0 : tensor<6x4xf32>
}

// CHECK-LABEL: func.func @fold_transpose_identity
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x4xf32>)
// CHECK-NOT: attn.transpose
// CHECK: return %[[X]] : tensor<?x4xf32>
// Tests that the identity permutation folds.
func.func @fold_transpose_identity(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = attn.transpose %x, [0, 1] : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// CHECK-LABEL: func.func @no_fold_transpose
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x4xf32>)
// CHECK: %[[A:.*]] = attn.transpose %[[X]], [1, 0] : (tensor<?x4xf32>) -> tensor<4x?xf32>
// CHECK: %[[B:.*]] = attn.transpose %[[X]], [0, 1] : (tensor<?x4xf32>) -> tensor<2x4xf32>
// CHECK: return %[[A]], %[[B]]
// Tests that a real permutation stays, and so does the identity when its
// stated result is more static than its input.
func.func @no_fold_transpose(%x: tensor<?x4xf32>) -> (tensor<4x?xf32>, tensor<2x4xf32>) {
  %0 = attn.transpose %x, [1, 0] : (tensor<?x4xf32>) -> tensor<4x?xf32>
  %1 = attn.transpose %x, [0, 1] : (tensor<?x4xf32>) -> tensor<2x4xf32>
  return %0, %1 : tensor<4x?xf32>, tensor<2x4xf32>
}

// CHECK-LABEL: func.func @fold_transpose_transpose
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x3x4xf32>)
// CHECK: %[[R:.*]] = attn.transpose %[[X]], [2, 1, 0] : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
// CHECK-NOT: attn.transpose
// CHECK: return %[[R]]
// Tests that two transposes compose into one: [1, 2, 0] then [1, 0, 2] is
// [2, 1, 0].
func.func @fold_transpose_transpose(%x: tensor<2x3x4xf32>) -> tensor<4x3x2xf32> {
  %0 = attn.transpose %x, [1, 2, 0] : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %1 = attn.transpose %0, [1, 0, 2] : (tensor<3x4x2xf32>) -> tensor<4x3x2xf32>
  return %1 : tensor<4x3x2xf32>
}

// CHECK-LABEL: func.func @fold_transpose_inverse
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x6x?x32xf32>)
// CHECK-NOT: attn.transpose
// CHECK: return %[[X]]
// Tests that a transpose followed by its inverse folds away entirely.
func.func @fold_transpose_inverse(%x: tensor<?x6x?x32xf32>) -> tensor<?x6x?x32xf32> {
  %0 = attn.transpose %x, [0, 1, 3, 2] : (tensor<?x6x?x32xf32>) -> tensor<?x6x32x?xf32>
  %1 = attn.transpose %0, [0, 1, 3, 2] : (tensor<?x6x32x?xf32>) -> tensor<?x6x?x32xf32>
  return %1 : tensor<?x6x?x32xf32>
}

// CHECK-LABEL: func.func @fold_merge_split
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x192xf32>)
// CHECK-NOT: attn.split_heads
// CHECK-NOT: attn.merge_heads
// CHECK: return %[[X]] : tensor<?x?x192xf32>
// Tests that merging the heads just split folds to the original tensor.
func.func @fold_merge_split(%x: tensor<?x?x192xf32>) -> tensor<?x?x192xf32> {
  %0 = attn.split_heads %x, 6 : (tensor<?x?x192xf32>) -> tensor<?x6x?x32xf32>
  %1 = attn.merge_heads %0 : (tensor<?x6x?x32xf32>) -> tensor<?x?x192xf32>
  return %1 : tensor<?x?x192xf32>
}

// CHECK-LABEL: func.func @no_fold_merge_split_more_static
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x?xf32>)
// CHECK: %[[S:.*]] = attn.split_heads %[[X]], 6 : (tensor<?x?x?xf32>) -> tensor<?x6x?x32xf32>
// CHECK: %[[M:.*]] = attn.merge_heads %[[S]] : (tensor<?x6x?x32xf32>) -> tensor<?x?x192xf32>
// CHECK: return %[[M]]
// Tests that merge_heads(split_heads x) stays when its type differs from x's.
func.func @no_fold_merge_split_more_static(%x: tensor<?x?x?xf32>) -> tensor<?x?x192xf32> {
  %0 = attn.split_heads %x, 6 : (tensor<?x?x?xf32>) -> tensor<?x6x?x32xf32>
  %1 = attn.merge_heads %0 : (tensor<?x6x?x32xf32>) -> tensor<?x?x192xf32>
  return %1 : tensor<?x?x192xf32>
}

// CHECK-LABEL: func.func @no_fold_merge_heads
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x6x?x32xf32>)
// CHECK: %[[R:.*]] = attn.merge_heads %[[X]] : (tensor<?x6x?x32xf32>) -> tensor<?x?x192xf32>
// CHECK: return %[[R]]
// Tests that merge_heads of a value not made by split_heads stays.
func.func @no_fold_merge_heads(%x: tensor<?x6x?x32xf32>) -> tensor<?x?x192xf32> {
  %0 = attn.merge_heads %x : (tensor<?x6x?x32xf32>) -> tensor<?x?x192xf32>
  return %0 : tensor<?x?x192xf32>
}

// CHECK-LABEL: func.func @fold_concat_single
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x?xf32>)
// CHECK-NOT: attn.concat
// CHECK: return %[[X]] : tensor<2x?xf32>
// Tests that a concatenation of one tensor folds to it.
func.func @fold_concat_single(%x: tensor<2x?xf32>) -> tensor<2x?xf32> {
  %0 = attn.concat %x axis 1 : (tensor<2x?xf32>) -> tensor<2x?xf32>
  return %0 : tensor<2x?xf32>
}

// CHECK-LABEL: func.func @no_fold_concat
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x?xf32>)
// CHECK: %[[A:.*]] = attn.concat %[[X]], %[[X]] axis 1 : (tensor<2x?xf32>, tensor<2x?xf32>) -> tensor<2x?xf32>
// CHECK: %[[B:.*]] = attn.concat %[[X]] axis 1 : (tensor<2x?xf32>) -> tensor<2x5xf32>
// CHECK: return %[[A]], %[[B]]
// Tests that a concatenation of two tensors stays, and so does one of a
// single tensor with a more static stated result.
func.func @no_fold_concat(%x: tensor<2x?xf32>) -> (tensor<2x?xf32>, tensor<2x5xf32>) {
  %0 = attn.concat %x, %x axis 1 : (tensor<2x?xf32>, tensor<2x?xf32>) -> tensor<2x?xf32>
  %1 = attn.concat %x axis 1 : (tensor<2x?xf32>) -> tensor<2x5xf32>
  return %0, %1 : tensor<2x?xf32>, tensor<2x5xf32>
}

// CHECK-LABEL: func.func @fold_slice_full
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x576xf32>)
// CHECK-NOT: attn.slice
// CHECK: return %[[X]] : tensor<?x576xf32>
// Tests that a slice of a whole static dimension folds.
func.func @fold_slice_full(%x: tensor<?x576xf32>) -> tensor<?x576xf32> {
  %0 = attn.slice %x axis 1 [0, 576] : (tensor<?x576xf32>) -> tensor<?x576xf32>
  return %0 : tensor<?x576xf32>
}

// CHECK-LABEL: func.func @no_fold_slice
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x576xf32>)
// CHECK: %[[A:.*]] = attn.slice %[[X]] axis 1 [0, 575] : (tensor<?x576xf32>) -> tensor<?x575xf32>
// CHECK: %[[B:.*]] = attn.slice %[[X]] axis 0 [0, 8] : (tensor<?x576xf32>) -> tensor<8x576xf32>
// CHECK: return %[[A]], %[[B]]
// Tests that a partial slice stays, and so does a slice of a dynamic
// dimension whose size is unknown.
func.func @no_fold_slice(%x: tensor<?x576xf32>) -> (tensor<?x575xf32>, tensor<8x576xf32>) {
  %0 = attn.slice %x axis 1 [0, 575] : (tensor<?x576xf32>) -> tensor<?x575xf32>
  %1 = attn.slice %x axis 0 [0, 8] : (tensor<?x576xf32>) -> tensor<8x576xf32>
  return %0, %1 : tensor<?x575xf32>, tensor<8x576xf32>
}

// CHECK-LABEL: func.func @fold_broadcast_same_type
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x3xi1>)
// CHECK-NOT: attn.broadcast
// CHECK: return %[[X]] : tensor<2x3xi1>
// Tests that a broadcast to the same static type folds.
func.func @fold_broadcast_same_type(%x: tensor<2x3xi1>) -> tensor<2x3xi1> {
  %0 = attn.broadcast %x : tensor<2x3xi1> -> tensor<2x3xi1>
  return %0 : tensor<2x3xi1>
}

// CHECK-LABEL: func.func @no_fold_broadcast
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x3xf32>, %[[N:[^:]+]]: index)
// CHECK: %[[A:.*]] = attn.broadcast %[[X]] [%[[N]]] : tensor<?x3xf32> -> tensor<?x3xf32>
// CHECK: %[[B:.*]] = attn.broadcast %[[X]] [%[[N]]] : tensor<?x3xf32> -> tensor<2x?x3xf32>
// CHECK: return %[[A]], %[[B]]
// Tests that a broadcast to the same dynamic type stays (a ? may be 1 and
// stretch), and so does one to a larger shape.
func.func @no_fold_broadcast(%x: tensor<?x3xf32>, %n: index) -> (tensor<?x3xf32>, tensor<2x?x3xf32>) {
  %0 = attn.broadcast %x [%n] : tensor<?x3xf32> -> tensor<?x3xf32>
  %1 = attn.broadcast %x [%n] : tensor<?x3xf32> -> tensor<2x?x3xf32>
  return %0, %1 : tensor<?x3xf32>, tensor<2x?x3xf32>
}
