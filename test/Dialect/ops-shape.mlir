// RUN: attnc-opt %s | attnc-opt | FileCheck %s
// RUN: attnc-opt %s --mlir-print-op-generic | attnc-opt | FileCheck %s

// Round trips of the shape ops: reshape, transpose, split_heads, merge_heads,
// concat, slice, take, broadcast, gather, positions, sinusoidal and rope.

// CHECK-LABEL: func.func @reshape_dynamic
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x192xf32>, %[[B:[^:]+]]: index, %[[T:[^:]+]]: index)
// CHECK: %[[R:.*]] = attn.reshape %[[X]] [%[[B]], %[[T]]] : tensor<?x?x192xf32> -> tensor<?x?x6x32xf32>
// CHECK: return %[[R]]
// Tests that one index operand is given per dynamic result dimension.
func.func @reshape_dynamic(%x: tensor<?x?x192xf32>, %b: index, %t: index) -> tensor<?x?x6x32xf32> {
  %0 = attn.reshape %x [%b, %t] : tensor<?x?x192xf32> -> tensor<?x?x6x32xf32>
  return %0 : tensor<?x?x6x32xf32>
}

// CHECK-LABEL: func.func @reshape_static
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x3x4xi32>)
// CHECK: %[[R:.*]] = attn.reshape %[[X]] : tensor<2x3x4xi32> -> tensor<6x4xi32>
// Tests a static reshape, which has no size operands and no brackets.
func.func @reshape_static(%x: tensor<2x3x4xi32>) -> tensor<6x4xi32> {
  %0 = attn.reshape %x : tensor<2x3x4xi32> -> tensor<6x4xi32>
  return %0 : tensor<6x4xi32>
}

// CHECK-LABEL: func.func @reshape_to_scalar
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?xf32>)
// CHECK: %[[R:.*]] = attn.reshape %[[X]] : tensor<?xf32> -> tensor<f32>
// Tests a reshape of a dynamic vector to rank 0 (checked when the program runs).
func.func @reshape_to_scalar(%x: tensor<?xf32>) -> tensor<f32> {
  %0 = attn.reshape %x : tensor<?xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// CHECK-LABEL: func.func @transpose
// CHECK-SAME: (%[[W:[^:]+]]: tensor<256x192xf32>, %[[X:[^:]+]]: tensor<?x6x?x32xf32>)
// CHECK: attn.transpose %[[W]], [1, 0] : (tensor<256x192xf32>) -> tensor<192x256xf32>
// CHECK: attn.transpose %[[X]], [0, 1, 3, 2] : (tensor<?x6x?x32xf32>) -> tensor<?x6x32x?xf32>
// CHECK: attn.transpose %[[X]], [2, 0, 3, 1] : (tensor<?x6x?x32xf32>) -> tensor<4x?x32x6xf32>
// Tests a matrix transpose, a swap of the last two dimensions and a stated
// result more static than the inferred one.
func.func @transpose(%w: tensor<256x192xf32>, %x: tensor<?x6x?x32xf32>) {
  %0 = attn.transpose %w, [1, 0] : (tensor<256x192xf32>) -> tensor<192x256xf32>
  %1 = attn.transpose %x, [0, 1, 3, 2] : (tensor<?x6x?x32xf32>) -> tensor<?x6x32x?xf32>
  %2 = attn.transpose %x, [2, 0, 3, 1] : (tensor<?x6x?x32xf32>) -> tensor<4x?x32x6xf32>
  return
}

// CHECK-LABEL: func.func @transpose_scalar
// CHECK-SAME: (%[[X:[^:]+]]: tensor<i1>)
// CHECK: attn.transpose %[[X]], [] : (tensor<i1>) -> tensor<i1>
// Tests the empty permutation of a rank-0 tensor.
func.func @transpose_scalar(%x: tensor<i1>) -> tensor<i1> {
  %0 = attn.transpose %x, [] : (tensor<i1>) -> tensor<i1>
  return %0 : tensor<i1>
}

// CHECK-LABEL: func.func @split_heads
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x?x192xf32>, %[[D:[^:]+]]: tensor<2x16x?xf16>)
// CHECK: attn.split_heads %[[Q]], 6 : (tensor<?x?x192xf32>) -> tensor<?x6x?x32xf32>
// CHECK: attn.split_heads %[[D]], 4 : (tensor<2x16x?xf16>) -> tensor<2x4x16x?xf16>
// CHECK: attn.split_heads %[[D]], 4 : (tensor<2x16x?xf16>) -> tensor<2x4x16x8xf16>
// Tests static and dynamic feature counts, and a stated head size where the
// features are dynamic.
func.func @split_heads(%q: tensor<?x?x192xf32>, %d: tensor<2x16x?xf16>) {
  %0 = attn.split_heads %q, 6 : (tensor<?x?x192xf32>) -> tensor<?x6x?x32xf32>
  %1 = attn.split_heads %d, 4 : (tensor<2x16x?xf16>) -> tensor<2x4x16x?xf16>
  %2 = attn.split_heads %d, 4 : (tensor<2x16x?xf16>) -> tensor<2x4x16x8xf16>
  return
}

// CHECK-LABEL: func.func @merge_heads
// CHECK-SAME: (%[[O:[^:]+]]: tensor<?x6x?x32xf32>, %[[D:[^:]+]]: tensor<?x?x?x32xf32>)
// CHECK: attn.merge_heads %[[O]] : (tensor<?x6x?x32xf32>) -> tensor<?x?x192xf32>
// CHECK: attn.merge_heads %[[D]] : (tensor<?x?x?x32xf32>) -> tensor<?x?x?xf32>
// Tests that merge_heads multiplies static head counts and sizes, and leaves
// the features dynamic when the head count is.
func.func @merge_heads(%o: tensor<?x6x?x32xf32>, %d: tensor<?x?x?x32xf32>) {
  %0 = attn.merge_heads %o : (tensor<?x6x?x32xf32>) -> tensor<?x?x192xf32>
  %1 = attn.merge_heads %d : (tensor<?x?x?x32xf32>) -> tensor<?x?x?xf32>
  return
}

// CHECK-LABEL: func.func @concat
// CHECK-SAME: (%[[A:[^:]+]]: tensor<2x3xf32>, %[[B:[^:]+]]: tensor<2x5xf32>, %[[C:[^:]+]]: tensor<?x?xf32>)
// CHECK: attn.concat %[[A]], %[[B]] axis 1 : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
// CHECK: attn.concat %[[A]], %[[C]], %[[B]] axis 1 : (tensor<2x3xf32>, tensor<?x?xf32>, tensor<2x5xf32>) -> tensor<2x?xf32>
// CHECK: attn.concat %[[A]] axis 0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
// Tests static sizes adding up, a dynamic input making the axis dynamic (and
// taking the static size of the other dimension), and a single input.
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>, %c: tensor<?x?xf32>) {
  %0 = attn.concat %a, %b axis 1 : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  %1 = attn.concat %a, %c, %b axis 1 : (tensor<2x3xf32>, tensor<?x?xf32>, tensor<2x5xf32>) -> tensor<2x?xf32>
  %2 = attn.concat %a axis 0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// CHECK-LABEL: func.func @slice
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x576xf32>)
// CHECK: attn.slice %[[X]] axis 2 [0, 192] : (tensor<?x?x576xf32>) -> tensor<?x?x192xf32>
// CHECK: attn.slice %[[X]] axis 2 [384, 576] : (tensor<?x?x576xf32>) -> tensor<?x?x192xf32>
// CHECK: attn.slice %[[X]] axis 1 [3, 4] : (tensor<?x?x576xf32>) -> tensor<?x1x576xf32>
// Tests slices of a static dimension up to its end and of a dynamic one.
func.func @slice(%x: tensor<?x?x576xf32>) {
  %0 = attn.slice %x axis 2 [0, 192] : (tensor<?x?x576xf32>) -> tensor<?x?x192xf32>
  %1 = attn.slice %x axis 2 [384, 576] : (tensor<?x?x576xf32>) -> tensor<?x?x192xf32>
  %2 = attn.slice %x axis 1 [3, 4] : (tensor<?x?x576xf32>) -> tensor<?x1x576xf32>
  return
}

// CHECK-LABEL: func.func @take
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x192xf32>, %[[S:[^:]+]]: tensor<4x5xi64>)
// CHECK: attn.take %[[X]] axis 1 index -1 : (tensor<?x?x192xf32>) -> tensor<?x192xf32>
// CHECK: attn.take %[[S]] axis 0 index 3 : (tensor<4x5xi64>) -> tensor<5xi64>
// CHECK: attn.take %[[S]] axis 1 index -5 : (tensor<4x5xi64>) -> tensor<4xi64>
// Tests take of the last index, of a static index and of the first index
// counted from the end.
func.func @take(%x: tensor<?x?x192xf32>, %s: tensor<4x5xi64>) {
  %0 = attn.take %x axis 1 index -1 : (tensor<?x?x192xf32>) -> tensor<?x192xf32>
  %1 = attn.take %s axis 0 index 3 : (tensor<4x5xi64>) -> tensor<5xi64>
  %2 = attn.take %s axis 1 index -5 : (tensor<4x5xi64>) -> tensor<4xi64>
  return
}

// CHECK-LABEL: func.func @broadcast
// CHECK-SAME: (%[[B:[^:]+]]: tensor<192xf32>, %[[N:[^:]+]]: index, %[[S:[^:]+]]: tensor<i1>, %[[D:[^:]+]]: tensor<?x1xf32>)
// CHECK: attn.broadcast %[[B]] [%[[N]]] : tensor<192xf32> -> tensor<?x192xf32>
// CHECK: attn.broadcast %[[S]] : tensor<i1> -> tensor<2x3xi1>
// CHECK: attn.broadcast %[[D]] [%[[N]]] : tensor<?x1xf32> -> tensor<4x?x8xf32>
// Tests broadcasting to a new leading dimension, of a rank-0 tensor, and of
// size-1 and dynamic dimensions.
func.func @broadcast(%b: tensor<192xf32>, %n: index, %s: tensor<i1>, %d: tensor<?x1xf32>) {
  %0 = attn.broadcast %b [%n] : tensor<192xf32> -> tensor<?x192xf32>
  %1 = attn.broadcast %s : tensor<i1> -> tensor<2x3xi1>
  %2 = attn.broadcast %d [%n] : tensor<?x1xf32> -> tensor<4x?x8xf32>
  return
}

// CHECK-LABEL: func.func @gather
// CHECK-SAME: (%[[W:[^:]+]]: tensor<256x192xf32>, %[[T:[^:]+]]: tensor<?x?xi32>, %[[I:[^:]+]]: tensor<7xi64>)
// CHECK: attn.gather %[[W]], %[[T]] : (tensor<256x192xf32>, tensor<?x?xi32>) -> tensor<?x?x192xf32>
// CHECK: attn.gather %[[W]], %[[I]] : (tensor<256x192xf32>, tensor<7xi64>) -> tensor<7x192xf32>
// Tests embedding lookups with i32 and i64 ids.
func.func @gather(%w: tensor<256x192xf32>, %t: tensor<?x?xi32>, %i: tensor<7xi64>) {
  %0 = attn.gather %w, %t : (tensor<256x192xf32>, tensor<?x?xi32>) -> tensor<?x?x192xf32>
  %1 = attn.gather %w, %i : (tensor<256x192xf32>, tensor<7xi64>) -> tensor<7x192xf32>
  return
}

// CHECK-LABEL: func.func @positions
// CHECK-SAME: (%[[T:[^:]+]]: index)
// CHECK: %[[C:.*]] = arith.constant 16 : index
// CHECK: attn.positions %[[T]] : tensor<?xi32>
// CHECK: attn.positions %[[C]] : tensor<16xi32>
// Tests positions of a dynamic length and of a constant that matches the
// static result.
func.func @positions(%t: index) {
  %c16 = arith.constant 16 : index
  %0 = attn.positions %t : tensor<?xi32>
  %1 = attn.positions %c16 : tensor<16xi32>
  return
}

// CHECK-LABEL: func.func @sinusoidal
// CHECK-SAME: (%[[T:[^:]+]]: index)
// CHECK: %[[C:.*]] = arith.constant 8 : index
// CHECK: attn.sinusoidal %[[T]] : tensor<?x512xf32>
// CHECK: attn.sinusoidal %[[C]] : tensor<8x64xbf16>
// Tests sinusoidal tables of a dynamic and of a constant length.
func.func @sinusoidal(%t: index) {
  %c8 = arith.constant 8 : index
  %0 = attn.sinusoidal %t : tensor<?x512xf32>
  %1 = attn.sinusoidal %c8 : tensor<8x64xbf16>
  return
}

// CHECK-LABEL: func.func @rope
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x4x?x32xf32>, %[[P:[^:]+]]: tensor<?xi32>, %[[Y:[^:]+]]: tensor<8x6xbf16>, %[[Q:[^:]+]]: tensor<8xi32>)
// CHECK: attn.rope %[[X]], %[[P]] base 1.000000e+04 : (tensor<?x4x?x32xf32>, tensor<?xi32>) -> tensor<?x4x?x32xf32>
// CHECK: attn.rope %[[X]], %[[P]] base 5.000000e+05 inverse : (tensor<?x4x?x32xf32>, tensor<?xi32>) -> tensor<?x4x?x32xf32>
// CHECK: attn.rope %[[Y]], %[[Q]] base 1.000000e+04 : (tensor<8x6xbf16>, tensor<8xi32>) -> tensor<8x6xbf16>
// Tests the rotation and its inverse on heads, and on a rank-2 bf16 input.
func.func @rope(%x: tensor<?x4x?x32xf32>, %p: tensor<?xi32>, %y: tensor<8x6xbf16>, %q: tensor<8xi32>) {
  %0 = attn.rope %x, %p base 1.000000e+04 : (tensor<?x4x?x32xf32>, tensor<?xi32>) -> tensor<?x4x?x32xf32>
  %1 = attn.rope %x, %p base 5.000000e+05 inverse : (tensor<?x4x?x32xf32>, tensor<?xi32>) -> tensor<?x4x?x32xf32>
  %2 = attn.rope %y, %q base 1.000000e+04 : (tensor<8x6xbf16>, tensor<8xi32>) -> tensor<8x6xbf16>
  return
}
