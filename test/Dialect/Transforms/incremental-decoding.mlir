// RUN: attnc-opt %s --attn-incremental-decoding --split-input-file | FileCheck %s

// Tests that a causal decoder gets prefill and decode_step: keys and values
// go through the cache, positions start at the cache length, and only the
// last position's logits are returned.
module {
  attn.param @wte : tensor<16x8xf32> init normal [0.0, 1.0]
  func.func @forward(%tokens: tensor<?x?xi32> {attn.dims = ["B", "T"], attn.name = "tokens"}) -> tensor<?x?x16xf32> {
    %w = attn.get_param @wte : tensor<16x8xf32>
    %x = attn.gather %w, %tokens : (tensor<16x8xf32>, tensor<?x?xi32>) -> tensor<?x?x8xf32>
    %t = attn.dim %tokens, 1 : tensor<?x?xi32>
    %p = attn.positions %t : tensor<?xi32>
    %pe = attn.gather %w, %p : (tensor<16x8xf32>, tensor<?xi32>) -> tensor<?x8xf32>
    %y = attn.add %x, %pe : (tensor<?x?x8xf32>, tensor<?x8xf32>) -> tensor<?x?x8xf32>
    %q = attn.split_heads %y, 2 : (tensor<?x?x8xf32>) -> tensor<?x2x?x4xf32>
    %o = attn.sdpa %q, %q, %q mask causal : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
    %m = attn.merge_heads %o : (tensor<?x2x?x4xf32>) -> tensor<?x?x8xf32>
    %wt = attn.transpose %w, [1, 0] : (tensor<16x8xf32>) -> tensor<8x16xf32>
    %l = attn.matmul %m, %wt : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
    return %l : tensor<?x?x16xf32>
  }
}

// CHECK-LABEL: func.func @forward(
// CHECK-NOT: kv_cache
// CHECK-LABEL: func.func @prefill(
// CHECK-SAME: %[[TOK:.*]]: tensor<?x?xi32>
// CHECK-SAME: -> tensor<?x16xf32>
// CHECK: %[[LEN:.*]] = attn.kv_cache_length : index
// CHECK: attn.positions %{{.*}} start %[[LEN]]
// CHECK: %[[K:.*]], %[[V:.*]] = attn.kv_cache_append %[[Q:.*]], %[[Q]] slot 0
// CHECK: attn.sdpa %[[Q]], %[[K]], %[[V]] mask causal
// CHECK: %[[LAST:.*]] = attn.take %{{.*}} axis 1 index -1 : (tensor<?x?x16xf32>) -> tensor<?x16xf32>
// CHECK: return %[[LAST]]
// CHECK-LABEL: func.func @decode_step(
// CHECK-SAME: tensor<?x1xi32> {attn.dims = ["B", ""]
// CHECK: attn.gather %{{.*}} : (tensor<16x8xf32>, tensor<?x1xi32>) -> tensor<?x1x8xf32>
// CHECK: attn.kv_cache_append {{.*}} slot 0

// -----

// Tests that a model mixing positions outside causal attention (here a mean
// over the sequence) gets no incremental entry points.
module {
  func.func @forward(%tokens: tensor<?x?xi32>, %x: tensor<?x?x8xf32>) -> tensor<?x8xf32> {
    %m = attn.reduce mean %x axis 1 : (tensor<?x?x8xf32>) -> tensor<?x8xf32>
    return %m : tensor<?x8xf32>
  }
}
// CHECK-LABEL: func.func @forward(
// CHECK-NOT: func.func @prefill

// -----

// Tests that non-causal attention disqualifies a model.
module {
  func.func @forward(%tokens: tensor<?x?xi32>) -> tensor<?x?x4xf32> {
    %c = arith.constant dense<1.0> : tensor<4x4xf32>
    %x = attn.gather %c, %tokens : (tensor<4x4xf32>, tensor<?x?xi32>) -> tensor<?x?x4xf32>
    %q = attn.split_heads %x, 1 : (tensor<?x?x4xf32>) -> tensor<?x1x?x4xf32>
    %o = attn.sdpa %q, %q, %q : (tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>) -> tensor<?x1x?x4xf32>
    %m = attn.merge_heads %o : (tensor<?x1x?x4xf32>) -> tensor<?x?x4xf32>
    return %m : tensor<?x?x4xf32>
  }
}
// CHECK-LABEL: func.func @forward(
// CHECK-NOT: func.func @prefill

// -----

// Tests that rope at positions(T) is position-wise: the model gets prefill
// and decode_step, whose rotations take the positions numbered from the
// cache length.
module {
  attn.param @wte : tensor<16x8xf32> init normal [0.0, 1.0]
  func.func @forward(%tokens: tensor<?x?xi32> {attn.dims = ["B", "T"], attn.name = "tokens"}) -> tensor<?x?x16xf32> {
    %w = attn.get_param @wte : tensor<16x8xf32>
    %x = attn.gather %w, %tokens : (tensor<16x8xf32>, tensor<?x?xi32>) -> tensor<?x?x8xf32>
    %t = attn.dim %tokens, 1 : tensor<?x?xi32>
    %p = attn.positions %t : tensor<?xi32>
    %h = attn.split_heads %x, 2 : (tensor<?x?x8xf32>) -> tensor<?x2x?x4xf32>
    %q = attn.rope %h, %p base 1.000000e+04 : (tensor<?x2x?x4xf32>, tensor<?xi32>) -> tensor<?x2x?x4xf32>
    %o = attn.sdpa %q, %q, %h mask causal : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
    %m = attn.merge_heads %o : (tensor<?x2x?x4xf32>) -> tensor<?x?x8xf32>
    %wt = attn.transpose %w, [1, 0] : (tensor<16x8xf32>) -> tensor<8x16xf32>
    %l = attn.matmul %m, %wt : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
    return %l : tensor<?x?x16xf32>
  }
}

// CHECK-LABEL: func.func @prefill(
// CHECK: %[[LEN:.*]] = attn.kv_cache_length : index
// CHECK: %[[P:.*]] = attn.positions %{{.*}} start %[[LEN]]
// CHECK: %[[Q:.*]] = attn.rope %{{.*}}, %[[P]] base
// CHECK: attn.kv_cache_append %[[Q]], %{{.*}} slot 0
// CHECK-LABEL: func.func @decode_step(
// CHECK: %[[LEN:.*]] = attn.kv_cache_length : index
// CHECK: %[[P:.*]] = attn.positions %{{.*}} start %[[LEN]]
// CHECK: attn.rope %{{.*}}, %[[P]] base {{.*}} : (tensor<?x2x1x4xf32>, tensor<?xi32>) -> tensor<?x2x1x4xf32>

// -----

// Tests that rope at positions that do not follow the tokens (a constant
// table) disqualifies a model: they would not be renumbered in decode_step.
module {
  func.func @forward(%tokens: tensor<?x?xi32>) -> tensor<?x?x4xf32> {
    %c = arith.constant dense<1.0> : tensor<4x4xf32>
    %x = attn.gather %c, %tokens : (tensor<4x4xf32>, tensor<?x?xi32>) -> tensor<?x?x4xf32>
    %h = attn.split_heads %x, 1 : (tensor<?x?x4xf32>) -> tensor<?x1x?x4xf32>
    %p = arith.constant dense<[3, 1, 4, 1]> : tensor<4xi32>
    %q = attn.rope %h, %p base 1.000000e+04 : (tensor<?x1x?x4xf32>, tensor<4xi32>) -> tensor<?x1x?x4xf32>
    %o = attn.sdpa %q, %q, %q mask causal : (tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>) -> tensor<?x1x?x4xf32>
    %m = attn.merge_heads %o : (tensor<?x1x?x4xf32>) -> tensor<?x?x4xf32>
    return %m : tensor<?x?x4xf32>
  }
}
// CHECK-LABEL: func.func @forward(
// CHECK-NOT: func.func @prefill

// -----

// Tests that grouped-query attention caches the key/value heads only: 4
// query heads share 2 key/value heads, and the cache slot appends and
// returns [B, 2, S, 4] keys and values.
module {
  attn.param @wte : tensor<16x16xf32> init normal [0.0, 1.0]
  func.func @forward(%tokens: tensor<?x?xi32> {attn.dims = ["B", "T"], attn.name = "tokens"}) -> tensor<?x?x16xf32> {
    %w = attn.get_param @wte : tensor<16x16xf32>
    %x = attn.gather %w, %tokens : (tensor<16x16xf32>, tensor<?x?xi32>) -> tensor<?x?x16xf32>
    %q = attn.split_heads %x, 4 : (tensor<?x?x16xf32>) -> tensor<?x4x?x4xf32>
    %kv = attn.slice %x axis 2 [0, 8] : (tensor<?x?x16xf32>) -> tensor<?x?x8xf32>
    %k = attn.split_heads %kv, 2 : (tensor<?x?x8xf32>) -> tensor<?x2x?x4xf32>
    %o = attn.sdpa %q, %k, %k mask causal : (tensor<?x4x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x4x?x4xf32>
    %m = attn.merge_heads %o : (tensor<?x4x?x4xf32>) -> tensor<?x?x16xf32>
    return %m : tensor<?x?x16xf32>
  }
}

// CHECK-LABEL: func.func @prefill(
// CHECK: %[[K:.*]], %[[V:.*]] = attn.kv_cache_append %[[NK:.*]], %[[NK]] slot 0 : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>)
// CHECK: attn.sdpa %{{.*}}, %[[K]], %[[V]] mask causal : (tensor<?x4x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x4x?x4xf32>
// CHECK-LABEL: func.func @decode_step(
// CHECK: attn.kv_cache_append {{.*}} slot 0 : (tensor<?x2x1x4xf32>, tensor<?x2x1x4xf32>) -> (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>)
