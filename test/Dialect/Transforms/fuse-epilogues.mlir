// RUN: attnc-opt %s --attn-fuse-epilogues --split-input-file | FileCheck %s

// Activations and residual adds become the epilogue of the linear before
// them, a residual add the prologue of the norm after it; only when the
// inner result has no other use and nothing broadcasts.

// CHECK-LABEL: func.func @mlp_block
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<?x64xf32>, %[[W1:[^:]+]]: tensor<256x64xf32>, %[[B1:[^:]+]]: tensor<256xf32>, %[[W2:[^:]+]]: tensor<64x256xf32>, %[[B2:[^:]+]]: tensor<64xf32>)
// CHECK:         %[[H:.+]] = attn.linear %[[X]], %[[W1]], %[[B1]] activation gelu_tanh :
// CHECK:         %[[Y:.+]] = attn.linear %[[H]], %[[W2]], %[[B2]] residual %[[X]] :
// CHECK-NOT:     attn.gelu_tanh
// CHECK-NOT:     attn.add
// CHECK:         return %[[Y]]
func.func @mlp_block(%x: tensor<?x64xf32>, %w1: tensor<256x64xf32>,
                     %b1: tensor<256xf32>, %w2: tensor<64x256xf32>,
                     %b2: tensor<64xf32>) -> tensor<?x64xf32> {
  %0 = attn.linear %x, %w1, %b1 : (tensor<?x64xf32>, tensor<256x64xf32>, tensor<256xf32>) -> tensor<?x256xf32>
  %1 = attn.gelu_tanh %0 : tensor<?x256xf32>
  %2 = attn.linear %1, %w2, %b2 : (tensor<?x256xf32>, tensor<64x256xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %3 = attn.add %x, %2 : (tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  return %3 : tensor<?x64xf32>
}

// -----

// The product on the left of the add, without bias, with an activation:
// activation first, then the residual.
// CHECK-LABEL: func.func @left_operand
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<8x16xf32>, %[[W:[^:]+]]: tensor<16x16xf32>, %[[R:[^:]+]]: tensor<8x16xf32>)
// CHECK:         %[[Y:.+]] = attn.linear %[[X]], %[[W]] residual %[[R]] activation relu :
// CHECK-NEXT:    return %[[Y]]
func.func @left_operand(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>,
                        %r: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = attn.linear %x, %w activation relu : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %1 = attn.add %0, %r : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// -----

// Every activation the linear can carry.
// CHECK-LABEL: func.func @activations
// CHECK:         attn.linear {{.*}} activation relu
// CHECK:         attn.linear {{.*}} activation gelu :
// CHECK:         attn.linear {{.*}} activation gelu_tanh
// CHECK:         attn.linear {{.*}} activation silu
// CHECK:         attn.linear {{.*}} activation tanh
// CHECK:         attn.linear {{.*}} activation sigmoid
// CHECK-NOT:     attn.{{relu|gelu|silu|tanh|sigmoid}}
func.func @activations(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
        tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = attn.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = attn.relu %0 : tensor<4x8xf32>
  %2 = attn.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %3 = attn.gelu %2 : tensor<4x8xf32>
  %4 = attn.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %5 = attn.gelu_tanh %4 : tensor<4x8xf32>
  %6 = attn.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %7 = attn.silu %6 : tensor<4x8xf32>
  %8 = attn.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %9 = attn.tanh %8 : tensor<4x8xf32>
  %10 = attn.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %11 = attn.sigmoid %10 : tensor<4x8xf32>
  return %1, %3, %5, %7, %9, %11 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Not fused: a product read twice, a second activation, an activation after
// a residual, a broadcast residual, a linear that has its residual.
// CHECK-LABEL: func.func @not_fused
// CHECK:         %[[P:.+]] = attn.linear %{{[^,]+}}, %{{[^ ]+}} :
// CHECK:         attn.relu %[[P]]
// CHECK:         %[[A:.+]] = attn.linear {{.*}} activation relu :
// CHECK:         attn.tanh %[[A]]
// CHECK:         %[[R:.+]] = attn.linear {{.*}} residual
// CHECK:         attn.relu %[[R]]
// CHECK:         %[[Q:.+]] = attn.linear %{{[^,]+}}, %{{[^ ]+}} :
// CHECK:         attn.add %[[Q]], %{{.*}} : (tensor<4x8xf32>, tensor<8xf32>)
// CHECK:         %[[S:.+]] = attn.linear {{.*}} residual
// CHECK:         attn.add %[[S]]
func.func @not_fused(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>,
                     %v: tensor<8xf32>, %r: tensor<4x8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
        tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = attn.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = attn.relu %0 : tensor<4x8xf32>
  %2 = attn.linear %x, %w activation relu : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %3 = attn.tanh %2 : tensor<4x8xf32>
  %4 = attn.linear %x, %w residual %r : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %5 = attn.relu %4 : tensor<4x8xf32>
  %6 = attn.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %7 = attn.add %6, %v : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %8 = attn.linear %x, %w residual %r : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %9 = attn.add %8, %r : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0, %1, %3, %5, %7, %9 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A post-norm block's add becomes the norm's residual; a pre-norm block's
// residual stream (the sum read again later) stays an add.
// CHECK-LABEL: func.func @norms
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<?x?x32xf32>, %[[Y:[^:]+]]: tensor<?x?x32xf32>, %[[W:[^:]+]]: tensor<32xf32>, %[[B:[^:]+]]: tensor<32xf32>)
// CHECK:         %[[L:.+]] = attn.layer_norm %[[X]], %[[W]], %[[B]] residual %[[Y]] eps
// CHECK:         %[[R:.+]] = attn.rms_norm %[[L]], %[[W]] residual %[[X]] eps
// CHECK:         %[[S:.+]] = attn.add %[[R]], %[[Y]]
// CHECK:         %[[N:.+]] = attn.layer_norm %[[S]], %[[W]], %[[B]] eps
// CHECK:         return %[[N]], %[[S]]
func.func @norms(%x: tensor<?x?x32xf32>, %y: tensor<?x?x32xf32>,
                 %w: tensor<32xf32>, %b: tensor<32xf32>)
    -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %0 = attn.add %x, %y : (tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  %1 = attn.layer_norm %0, %w, %b eps 1.000000e-05 : (tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %2 = attn.add %1, %x : (tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  %3 = attn.rms_norm %2, %w eps 1.000000e-05 : (tensor<?x?x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %4 = attn.add %3, %y : (tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  %5 = attn.layer_norm %4, %w, %b eps 1.000000e-05 : (tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %5, %4 : tensor<?x?x32xf32>, tensor<?x?x32xf32>
}
