// RUN: attnc-opt %s --attn-attention-weights --split-input-file | FileCheck %s

// Tests that a causal decoder with two attention layers gets
// attention_weights: per layer softmax(q k^T * scale) with the causal mask
// (key s after query t + S - T) selected away before and after the
// softmax, the layers stacked on a new first axis, and the logits dropped.
module {
  attn.param @wte : tensor<16x8xf32> init normal [0.0, 1.0]
  func.func @forward(%tokens: tensor<?x?xi32> {attn.dims = ["B", "T"], attn.name = "tokens"}) -> tensor<?x?x16xf32> {
    %w = attn.get_param @wte : tensor<16x8xf32>
    %x = attn.gather %w, %tokens : (tensor<16x8xf32>, tensor<?x?xi32>) -> tensor<?x?x8xf32>
    %q = attn.split_heads %x, 2 : (tensor<?x?x8xf32>) -> tensor<?x2x?x4xf32>
    %o = attn.sdpa %q, %q, %q mask causal dropout 1.000000e-01 : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
    %m = attn.merge_heads %o : (tensor<?x2x?x4xf32>) -> tensor<?x?x8xf32>
    %d = attn.dropout %m rate 1.000000e-01 : tensor<?x?x8xf32>
    %q2 = attn.split_heads %d, 2 : (tensor<?x?x8xf32>) -> tensor<?x2x?x4xf32>
    %o2 = attn.sdpa %q2, %q2, %q2 mask causal scale 2.500000e-01 : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
    %m2 = attn.merge_heads %o2 : (tensor<?x2x?x4xf32>) -> tensor<?x?x8xf32>
    %wt = attn.transpose %w, [1, 0] : (tensor<16x8xf32>) -> tensor<8x16xf32>
    %l = attn.matmul %m2, %wt : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
    return %l : tensor<?x?x16xf32>
  }
}

// CHECK-LABEL: func.func @forward(
// CHECK: return %{{.*}} : tensor<?x?x16xf32>
// CHECK-LABEL: func.func @attention_weights(
// CHECK-SAME: %[[TOK:.*]]: tensor<?x?xi32> {attn.dims = ["B", "T"]
// CHECK-SAME: -> tensor<2x?x2x?x?xf32>
// CHECK-NOT: attn.dropout
// CHECK: %[[Q:.*]] = attn.split_heads
// CHECK: %[[KT:.*]] = attn.transpose %[[Q]], [0, 1, 3, 2]
// CHECK: %[[S:.*]] = attn.matmul %[[Q]], %[[KT]] : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
// CHECK: %[[HALF:.*]] = arith.constant dense<5.000000e-01> : tensor<f32>
// CHECK: %[[SCALED:.*]] = attn.mul %[[S]], %[[HALF]]
// CHECK: %[[OFF:.*]] = arith.subi %[[KEYS:.*]], %[[QUERIES:.*]] : index
// CHECK: %[[TP:.*]] = attn.positions %[[QUERIES]] start %[[OFF]]
// CHECK: %[[SP:.*]] = attn.positions %[[KEYS]] : tensor<?xi32>
// CHECK: %[[COL:.*]] = attn.reshape %[[TP]] {{.*}} -> tensor<?x1xi32>
// CHECK: %[[ROW:.*]] = attn.reshape %[[SP]] {{.*}} -> tensor<1x?xi32>
// CHECK: %[[CAUSAL:.*]] = attn.compare gt, %[[ROW]], %[[COL]] : (tensor<1x?xi32>, tensor<?x1xi32>) -> tensor<?x?xi1>
// CHECK: %[[NEG:.*]] = arith.constant dense<-1.000000e+30> : tensor<f32>
// CHECK: %[[MASKED:.*]] = attn.select %[[CAUSAL]], %[[NEG]], %[[SCALED]]
// CHECK: %[[P:.*]] = attn.softmax %[[MASKED]] axis 3
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[W0:.*]] = attn.select %[[CAUSAL]], %[[ZERO]], %[[P]]
// CHECK: attn.sdpa
// CHECK: arith.constant dense<2.500000e-01> : tensor<f32>
// CHECK: attn.softmax
// CHECK: %[[W1:.*]] = attn.select %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x?xi1>, tensor<f32>, tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
// CHECK-NOT: attn.sdpa
// CHECK: %[[R0:.*]] = attn.reshape %[[W0]] {{.*}} -> tensor<1x?x2x?x?xf32>
// CHECK: %[[R1:.*]] = attn.reshape %[[W1]] {{.*}} -> tensor<1x?x2x?x?xf32>
// CHECK: %[[ALL:.*]] = attn.concat %[[R0]], %[[R1]] axis 0
// CHECK-NOT: attn.matmul
// CHECK: return %[[ALL]] : tensor<2x?x2x?x?xf32>

// -----

// Tests that key padding masks the keys where it is true, as [B, 1, 1, S],
// without a causal mask.
module {
  func.func @forward(%tokens: tensor<?x?xi32>) -> tensor<?x?x4xf32> {
    %c = arith.constant dense<1.0> : tensor<4x4xf32>
    %x = attn.gather %c, %tokens : (tensor<4x4xf32>, tensor<?x?xi32>) -> tensor<?x?x4xf32>
    %zero = arith.constant dense<0> : tensor<i32>
    %pad = attn.compare eq, %tokens, %zero : (tensor<?x?xi32>, tensor<i32>) -> tensor<?x?xi1>
    %q = attn.split_heads %x, 1 : (tensor<?x?x4xf32>) -> tensor<?x1x?x4xf32>
    %o = attn.sdpa %q, %q, %q key_padding %pad : (tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>, tensor<?x?xi1>) -> tensor<?x1x?x4xf32>
    %m = attn.merge_heads %o : (tensor<?x1x?x4xf32>) -> tensor<?x?x4xf32>
    return %m : tensor<?x?x4xf32>
  }
}
// CHECK-LABEL: func.func @attention_weights(
// CHECK-SAME: -> tensor<1x?x1x?x?xf32>
// CHECK: %[[PAD:.*]] = attn.compare eq
// CHECK-NOT: attn.positions
// CHECK: %[[PAD4:.*]] = attn.reshape %[[PAD]] {{.*}} : tensor<?x?xi1> -> tensor<?x1x1x?xi1>
// CHECK: attn.select %[[PAD4]], %{{.*}}, %{{.*}} : (tensor<?x1x1x?xi1>, tensor<f32>, tensor<?x1x?x?xf32>)
// CHECK: %[[P:.*]] = attn.softmax
// CHECK: %[[W:.*]] = attn.select %[[PAD4]], %{{.*}}, %[[P]]
// CHECK: %[[R:.*]] = attn.reshape %[[W]] {{.*}} -> tensor<1x?x1x?x?xf32>
// CHECK: return %[[R]]

// -----

// Tests that a model whose forward does not take one sequence of tokens
// (an encoder-decoder's two) gets no attention_weights.
module {
  func.func @forward(%src: tensor<?x?xi32>, %x: tensor<?x1x?x4xf32>) -> tensor<?x1x?x4xf32> {
    %o = attn.sdpa %x, %x, %x : (tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>) -> tensor<?x1x?x4xf32>
    return %o : tensor<?x1x?x4xf32>
  }
}
// CHECK-LABEL: func.func @forward(
// CHECK-NOT: func.func @attention_weights

// -----

// Tests that a forward without attention gets no attention_weights.
module {
  func.func @forward(%tokens: tensor<?x?xi32>) -> tensor<?x?x4xf32> {
    %c = arith.constant dense<1.0> : tensor<4x4xf32>
    %x = attn.gather %c, %tokens : (tensor<4x4xf32>, tensor<?x?xi32>) -> tensor<?x?x4xf32>
    return %x : tensor<?x?x4xf32>
  }
}
// CHECK-LABEL: func.func @forward(
// CHECK-NOT: func.func @attention_weights

// -----

// Tests that attention layers with different head counts, whose weights
// cannot be stacked, give no attention_weights.
module {
  func.func @forward(%tokens: tensor<?x?xi32>) -> tensor<?x?x4xf32> {
    %c = arith.constant dense<1.0> : tensor<4x4xf32>
    %x = attn.gather %c, %tokens : (tensor<4x4xf32>, tensor<?x?xi32>) -> tensor<?x?x4xf32>
    %q1 = attn.split_heads %x, 1 : (tensor<?x?x4xf32>) -> tensor<?x1x?x4xf32>
    %o1 = attn.sdpa %q1, %q1, %q1 : (tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>) -> tensor<?x1x?x4xf32>
    %m1 = attn.merge_heads %o1 : (tensor<?x1x?x4xf32>) -> tensor<?x?x4xf32>
    %q2 = attn.split_heads %m1, 2 : (tensor<?x?x4xf32>) -> tensor<?x2x?x2xf32>
    %o2 = attn.sdpa %q2, %q2, %q2 : (tensor<?x2x?x2xf32>, tensor<?x2x?x2xf32>, tensor<?x2x?x2xf32>) -> tensor<?x2x?x2xf32>
    %m2 = attn.merge_heads %o2 : (tensor<?x2x?x2xf32>) -> tensor<?x?x4xf32>
    return %m2 : tensor<?x?x4xf32>
  }
}
// CHECK-LABEL: func.func @forward(
// CHECK-NOT: func.func @attention_weights

// -----

// Tests that a module defining attention_weights itself keeps its own.
module {
  func.func @forward(%tokens: tensor<?x?xi32>) -> tensor<?x1x?x4xf32> {
    %c = arith.constant dense<1.0> : tensor<4x4xf32>
    %x = attn.gather %c, %tokens : (tensor<4x4xf32>, tensor<?x?xi32>) -> tensor<?x?x4xf32>
    %q = attn.split_heads %x, 1 : (tensor<?x?x4xf32>) -> tensor<?x1x?x4xf32>
    %o = attn.sdpa %q, %q, %q : (tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>) -> tensor<?x1x?x4xf32>
    return %o : tensor<?x1x?x4xf32>
  }
  func.func @attention_weights(%tokens: tensor<?x?xi32>) -> tensor<?x?xi32> {
    return %tokens : tensor<?x?xi32>
  }
}
// CHECK-LABEL: func.func @attention_weights(
// CHECK-SAME: -> tensor<?x?xi32>
// CHECK-NOT: func.func @attention_weights
