// RUN: attnc-opt %s -canonicalize | FileCheck %s

// attn.take of a leading axis sinks through ops that treat every index of
// that axis alike, when nothing else reads their full result: the ops then
// run on the one slice kept (prefill's last position).

// The head of a decoder's prefill: the final norm and the tied head on the
// last position only; the residual add too, since both its operands are
// sliced, but not the attention that mixes positions.
// CHECK-LABEL: func.func @prefill_head
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<?x?x32xf32>, %[[A:[^:]+]]: tensor<?x?x32xf32>, %[[G:[^:]+]]: tensor<32xf32>, %[[B:[^:]+]]: tensor<32xf32>, %[[W:[^:]+]]: tensor<32x100xf32>)
// CHECK-DAG:     %[[XL:.*]] = attn.take %[[X]] axis 1 index -1 : (tensor<?x?x32xf32>) -> tensor<?x32xf32>
// CHECK-DAG:     %[[AL:.*]] = attn.take %[[A]] axis 1 index -1 : (tensor<?x?x32xf32>) -> tensor<?x32xf32>
// CHECK:         %[[S:.*]] = attn.add %[[XL]], %[[AL]] : (tensor<?x32xf32>, tensor<?x32xf32>) -> tensor<?x32xf32>
// CHECK:         %[[N:.*]] = attn.layer_norm %[[S]], %[[G]], %[[B]] eps {{.*}} : (tensor<?x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<?x32xf32>
// CHECK:         %[[L:.*]] = attn.matmul %[[N]], %[[W]] : (tensor<?x32xf32>, tensor<32x100xf32>) -> tensor<?x100xf32>
// CHECK:         return %[[L]]
func.func @prefill_head(%x: tensor<?x?x32xf32>, %a: tensor<?x?x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>, %w: tensor<32x100xf32>) -> tensor<?x100xf32> {
  %s = attn.add %x, %a : (tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  %n = attn.layer_norm %s, %g, %b eps 1.0e-05 : (tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %l = attn.matmul %n, %w : (tensor<?x?x32xf32>, tensor<32x100xf32>) -> tensor<?x?x100xf32>
  %last = attn.take %l axis 1 index -1 : (tensor<?x?x100xf32>) -> tensor<?x100xf32>
  return %last : tensor<?x100xf32>
}

// A linear with an activation and a residual, and a broadcast operand: the
// bias-like [1, 32] operand takes its index 0, the [32] one is kept.
// CHECK-LABEL: func.func @linear_and_broadcast
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<4x8x16xf32>, %[[W:[^:]+]]: tensor<32x16xf32>, %[[R:[^:]+]]: tensor<4x8x32xf32>, %[[ROW:[^:]+]]: tensor<4x1x32xf32>, %[[V:[^:]+]]: tensor<32xf32>)
// CHECK-DAG:     %[[XS:.*]] = attn.take %[[X]] axis 1 index 2 : (tensor<4x8x16xf32>) -> tensor<4x16xf32>
// CHECK-DAG:     %[[RS:.*]] = attn.take %[[R]] axis 1 index 2 : (tensor<4x8x32xf32>) -> tensor<4x32xf32>
// CHECK:         %[[Y:.*]] = attn.linear %[[XS]], %[[W]] residual %[[RS]] activation gelu
// CHECK-DAG:     %[[ROWS:.*]] = attn.take %[[ROW]] axis 1 index 0 : (tensor<4x1x32xf32>) -> tensor<4x32xf32>
// CHECK:         %[[M:.*]] = attn.mul %[[Y]], %[[ROWS]] : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
// CHECK:         %[[T:.*]] = attn.tanh %[[M]] : tensor<4x32xf32>
// CHECK:         %[[Z:.*]] = attn.add %[[T]], %[[V]] : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
// CHECK:         return %[[Z]]
func.func @linear_and_broadcast(%x: tensor<4x8x16xf32>, %w: tensor<32x16xf32>, %r: tensor<4x8x32xf32>, %row: tensor<4x1x32xf32>, %v: tensor<32xf32>) -> tensor<4x32xf32> {
  %y = attn.linear %x, %w residual %r activation gelu : (tensor<4x8x16xf32>, tensor<32x16xf32>, tensor<4x8x32xf32>) -> tensor<4x8x32xf32>
  %m = attn.mul %y, %row : (tensor<4x8x32xf32>, tensor<4x1x32xf32>) -> tensor<4x8x32xf32>
  %t = attn.tanh %m : tensor<4x8x32xf32>
  %z = attn.add %t, %v : (tensor<4x8x32xf32>, tensor<32xf32>) -> tensor<4x8x32xf32>
  %k = attn.take %z axis 1 index 2 : (tensor<4x8x32xf32>) -> tensor<4x32xf32>
  return %k : tensor<4x32xf32>
}

// Not sunk: the last axis (a norm mixes it), a value also used whole,
// dropout (its mask depends on the index) and attention.
// CHECK-LABEL: func.func @not_sunk
// CHECK:         %[[N:.*]] = attn.layer_norm {{.*}} -> tensor<2x8x32xf32>
// CHECK:         attn.take %[[N]] axis 2 index 0
// CHECK:         %[[R:.*]] = attn.relu
// CHECK:         attn.take %[[R]] axis 1 index 0
// CHECK:         %[[D:.*]] = attn.dropout
// CHECK:         attn.take %[[D]] axis 1 index 0
// CHECK:         %[[S:.*]] = attn.sdpa
// CHECK:         attn.take %[[S]] axis 2 index -1
func.func @not_sunk(%x: tensor<2x8x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>, %seed: tensor<i64>,
                    %q: tensor<2x4x8x16xf32>) -> (tensor<2x8xf32>, tensor<2x32xf32>, tensor<2x8x32xf32>, tensor<2x32xf32>, tensor<2x4x16xf32>) {
  %n = attn.layer_norm %x, %g, %b eps 1.0e-05 : (tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  %0 = attn.take %n axis 2 index 0 : (tensor<2x8x32xf32>) -> tensor<2x8xf32>
  %r = attn.relu %x : tensor<2x8x32xf32>
  %1 = attn.take %r axis 1 index 0 : (tensor<2x8x32xf32>) -> tensor<2x32xf32>
  %d = attn.dropout %x rate 0.1 seed %seed stream 0 : tensor<2x8x32xf32>
  %2 = attn.take %d axis 1 index 0 : (tensor<2x8x32xf32>) -> tensor<2x32xf32>
  %s = attn.sdpa %q, %q, %q mask causal : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %3 = attn.take %s axis 2 index -1 : (tensor<2x4x8x16xf32>) -> tensor<2x4x16xf32>
  return %0, %1, %r, %2, %3 : tensor<2x8xf32>, tensor<2x32xf32>, tensor<2x8x32xf32>, tensor<2x32xf32>, tensor<2x4x16xf32>
}

// Every element-wise op (ElementwiseOpInterface) sinks the same way,
// comparisons, selects and casts included: the select and its operands run
// on the slice kept.
// CHECK-LABEL: func.func @select_and_cast
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<4x8x32xf32>, %[[Y:[^:]+]]: tensor<4x8x32xf32>)
// CHECK:         %[[XC:.*]] = attn.take %[[X]] axis 1 index 3 : (tensor<4x8x32xf32>) -> tensor<4x32xf32>
// CHECK:         %[[YC:.*]] = attn.take %[[Y]] axis 1 index 3 : (tensor<4x8x32xf32>) -> tensor<4x32xf32>
// CHECK:         %[[C:.*]] = attn.compare gt, %[[XC]], %[[YC]] : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xi1>
// CHECK:         %[[XS:.*]] = attn.take %[[X]] axis 1 index 3 : (tensor<4x8x32xf32>) -> tensor<4x32xf32>
// CHECK:         %[[YS:.*]] = attn.take %[[Y]] axis 1 index 3 : (tensor<4x8x32xf32>) -> tensor<4x32xf32>
// CHECK:         %[[S:.*]] = attn.select %[[C]], %[[XS]], %[[YS]] : (tensor<4x32xi1>, tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
// CHECK:         %[[B:.*]] = attn.cast %[[S]] : tensor<4x32xf32> to tensor<4x32xbf16>
// CHECK:         return %[[B]]
func.func @select_and_cast(%x: tensor<4x8x32xf32>, %y: tensor<4x8x32xf32>) -> tensor<4x32xbf16> {
  %c = attn.compare gt, %x, %y : (tensor<4x8x32xf32>, tensor<4x8x32xf32>) -> tensor<4x8x32xi1>
  %s = attn.select %c, %x, %y : (tensor<4x8x32xi1>, tensor<4x8x32xf32>, tensor<4x8x32xf32>) -> tensor<4x8x32xf32>
  %b = attn.cast %s : tensor<4x8x32xf32> to tensor<4x8x32xbf16>
  %last = attn.take %b axis 1 index 3 : (tensor<4x8x32xbf16>) -> tensor<4x32xbf16>
  return %last : tensor<4x32xbf16>
}
