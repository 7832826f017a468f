// RUN: attnc-opt %s --attn-incremental-decoding --split-input-file | FileCheck %s

// Tests that an encoder-decoder's decode gets decode_prefill and
// decode_step: the target's self-attention keys and values go through
// target slots and its positions start at the cache length; decode_prefill
// caches the cross-attention keys and values of the memory, and the key
// padding as [B, 1, S, 1] floats, in memory slots; decode_step takes the
// new tokens only and reads them back.
module {
  attn.param @emb : tensor<16x8xf32> init normal [0.0, 1.0]
  func.func @encode(%src: tensor<?x?xi32> {attn.dims = ["B", "S"], attn.name = "src"}) -> tensor<?x?x8xf32> {
    %w = attn.get_param @emb : tensor<16x8xf32>
    %x = attn.gather %w, %src : (tensor<16x8xf32>, tensor<?x?xi32>) -> tensor<?x?x8xf32>
    return %x : tensor<?x?x8xf32>
  }
  func.func @decode(%tgt: tensor<?x?xi32> {attn.dims = ["B", "T"], attn.name = "tgt"}, %memory: tensor<?x?x8xf32> {attn.dims = ["B", "S", ""], attn.name = "memory"}, %src: tensor<?x?xi32> {attn.dims = ["B", "S"], attn.name = "src"}) -> tensor<?x?x16xf32> {
    %zero = arith.constant dense<0> : tensor<i32>
    %w = attn.get_param @emb : tensor<16x8xf32>
    %x = attn.gather %w, %tgt : (tensor<16x8xf32>, tensor<?x?xi32>) -> tensor<?x?x8xf32>
    %t = attn.dim %tgt, 1 : tensor<?x?xi32>
    %pe = attn.sinusoidal %t : tensor<?x8xf32>
    %y = attn.add %x, %pe : (tensor<?x?x8xf32>, tensor<?x8xf32>) -> tensor<?x?x8xf32>
    %q = attn.split_heads %y, 2 : (tensor<?x?x8xf32>) -> tensor<?x2x?x4xf32>
    %s = attn.sdpa %q, %q, %q mask causal : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
    %pad = attn.compare eq, %src, %zero : (tensor<?x?xi32>, tensor<i32>) -> tensor<?x?xi1>
    %m = attn.split_heads %memory, 2 : (tensor<?x?x8xf32>) -> tensor<?x2x?x4xf32>
    %c = attn.sdpa %s, %m, %m key_padding %pad : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x?xi1>) -> tensor<?x2x?x4xf32>
    %c2 = attn.sdpa %c, %m, %m key_padding %pad : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x?xi1>) -> tensor<?x2x?x4xf32>
    %o = attn.merge_heads %c2 : (tensor<?x2x?x4xf32>) -> tensor<?x?x8xf32>
    %wt = attn.transpose %w, [1, 0] : (tensor<16x8xf32>) -> tensor<8x16xf32>
    %l = attn.matmul %o, %wt : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
    return %l : tensor<?x?x16xf32>
  }
}

// CHECK-LABEL: func.func @decode(
// CHECK-NOT: kv_cache
// CHECK-LABEL: func.func @decode_prefill(
// CHECK-SAME: %[[TGT:.*]]: tensor<?x?xi32> {attn.dims = ["B", "T"], attn.name = "tgt"}
// CHECK-SAME: %[[MEM:.*]]: tensor<?x?x8xf32> {attn.dims = ["B", "S", ""], attn.name = "memory"}
// CHECK-SAME: %[[SRC:.*]]: tensor<?x?xi32> {attn.dims = ["B", "S"], attn.name = "src"}
// CHECK-SAME: -> tensor<?x16xf32>
// CHECK: %[[LEN:.*]] = attn.kv_cache_length : index
// CHECK: attn.sinusoidal %{{.*}} start %[[LEN]]
// CHECK: %[[K:.*]], %[[V:.*]] = attn.kv_cache_append %[[Q:.*]], %[[Q]] slot 0 :
// CHECK: %[[S:.*]] = attn.sdpa %[[Q]], %[[K]], %[[V]] mask causal
// CHECK: %[[PAD:.*]] = attn.compare eq, %[[SRC]]
// CHECK: %[[M:.*]] = attn.split_heads %[[MEM]], 2
// CHECK: %[[MK:.*]], %[[MV:.*]] = attn.kv_cache_append %[[M]], %[[M]] slot 1 {attn.kv_memory}
// CHECK: %[[PADF:.*]] = attn.cast %[[PAD]] : tensor<?x?xi1> to tensor<?x?xf32>
// CHECK: %[[B:.*]] = attn.dim %[[PAD]], 0
// CHECK: %[[SL:.*]] = attn.dim %[[PAD]], 1
// CHECK: %[[PAD4:.*]] = attn.reshape %[[PADF]] [%[[B]], %[[SL]]] : tensor<?x?xf32> -> tensor<?x1x?x1xf32>
// CHECK: attn.kv_cache_append %[[PAD4]], %[[PAD4]] slot 2 {attn.kv_memory} : (tensor<?x1x?x1xf32>, tensor<?x1x?x1xf32>)
// CHECK: %[[C:.*]] = attn.sdpa %[[S]], %[[MK]], %[[MV]] key_padding %[[PAD]] :
// CHECK: %[[MK2:.*]], %[[MV2:.*]] = attn.kv_cache_append %[[M]], %[[M]] slot 3 {attn.kv_memory}
// CHECK-NOT: kv_cache_append
// CHECK: attn.sdpa %[[C]], %[[MK2]], %[[MV2]] key_padding %[[PAD]] :
// CHECK: %[[LAST:.*]] = attn.take %{{.*}} axis 1 index -1 : (tensor<?x?x16xf32>) -> tensor<?x16xf32>
// CHECK: return %[[LAST]]

// CHECK-LABEL: func.func @decode_step(
// CHECK-SAME: %[[TOK:[^:]*]]: tensor<?x1xi32> {attn.dims = ["B", ""], attn.name = "tgt"}) -> tensor<?x16xf32>
// CHECK-NOT: kv_cache_append {{.*}} {attn.kv_memory}
// CHECK: %[[LEN:.*]] = attn.kv_cache_length : index
// CHECK: attn.gather %{{.*}}, %[[TOK]] : (tensor<16x8xf32>, tensor<?x1xi32>) -> tensor<?x1x8xf32>
// CHECK: attn.sinusoidal %{{.*}} start %[[LEN]]
// CHECK: attn.kv_cache_append %{{.*}} slot 0 :
// CHECK: %[[MK:.*]], %[[MV:.*]] = attn.kv_cache_read slot 1 {attn.kv_memory} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>
// CHECK: %[[PK:.*]], %{{.*}} = attn.kv_cache_read slot 2 {attn.kv_memory} : tensor<?x1x?x1xf32>, tensor<?x1x?x1xf32>
// CHECK: %[[B:.*]] = attn.dim %[[PK]], 0
// CHECK: %[[SL:.*]] = attn.dim %[[PK]], 2
// CHECK: %[[PADF:.*]] = attn.reshape %[[PK]] [%[[B]], %[[SL]]] : tensor<?x1x?x1xf32> -> tensor<?x?xf32>
// CHECK: %[[HALF:.*]] = arith.constant dense<5.000000e-01> : tensor<f32>
// CHECK: %[[PAD:.*]] = attn.compare gt, %[[PADF]], %[[HALF]]
// CHECK: %[[C:.*]] = attn.sdpa %{{.*}}, %[[MK]], %[[MV]] key_padding %[[PAD]] :
// CHECK: %[[MK2:.*]], %[[MV2:.*]] = attn.kv_cache_read slot 3 {attn.kv_memory}
// CHECK: attn.sdpa %[[C]], %[[MK2]], %[[MV2]] key_padding %[[PAD]] :
// CHECK-NOT: attn.compare eq
// CHECK: return

// -----

// Tests that a decode using the memory outside cross-attention (here its
// first position added to the target's features) gets no incremental entry
// points: decode_step would need the memory as well as the cache.
module {
  attn.param @emb : tensor<16x8xf32> init normal [0.0, 1.0]
  func.func @encode(%src: tensor<?x?xi32>) -> tensor<?x?x8xf32> {
    %w = attn.get_param @emb : tensor<16x8xf32>
    %x = attn.gather %w, %src : (tensor<16x8xf32>, tensor<?x?xi32>) -> tensor<?x?x8xf32>
    return %x : tensor<?x?x8xf32>
  }
  func.func @decode(%tgt: tensor<?x?xi32>, %memory: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
    %w = attn.get_param @emb : tensor<16x8xf32>
    %x = attn.gather %w, %tgt : (tensor<16x8xf32>, tensor<?x?xi32>) -> tensor<?x?x8xf32>
    %first = attn.slice %memory axis 1 [0, 1] : (tensor<?x?x8xf32>) -> tensor<?x1x8xf32>
    %y = attn.add %x, %first : (tensor<?x?x8xf32>, tensor<?x1x8xf32>) -> tensor<?x?x8xf32>
    %q = attn.split_heads %y, 2 : (tensor<?x?x8xf32>) -> tensor<?x2x?x4xf32>
    %m = attn.split_heads %memory, 2 : (tensor<?x?x8xf32>) -> tensor<?x2x?x4xf32>
    %c = attn.sdpa %q, %m, %m : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
    %o = attn.merge_heads %c : (tensor<?x2x?x4xf32>) -> tensor<?x?x8xf32>
    return %o : tensor<?x?x8xf32>
  }
}
// CHECK-LABEL: func.func @decode(
// CHECK-NOT: func.func @decode_prefill
// CHECK-NOT: func.func @decode_step

// -----

// Tests that a cross-attention with a causal mask gets no incremental entry
// points.
module {
  attn.param @emb : tensor<16x8xf32> init normal [0.0, 1.0]
  func.func @encode(%src: tensor<?x?xi32>) -> tensor<?x?x8xf32> {
    %w = attn.get_param @emb : tensor<16x8xf32>
    %x = attn.gather %w, %src : (tensor<16x8xf32>, tensor<?x?xi32>) -> tensor<?x?x8xf32>
    return %x : tensor<?x?x8xf32>
  }
  func.func @decode(%tgt: tensor<?x?xi32>, %memory: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
    %w = attn.get_param @emb : tensor<16x8xf32>
    %x = attn.gather %w, %tgt : (tensor<16x8xf32>, tensor<?x?xi32>) -> tensor<?x?x8xf32>
    %q = attn.split_heads %x, 2 : (tensor<?x?x8xf32>) -> tensor<?x2x?x4xf32>
    %m = attn.split_heads %memory, 2 : (tensor<?x?x8xf32>) -> tensor<?x2x?x4xf32>
    %c = attn.sdpa %q, %m, %m mask causal : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
    %o = attn.merge_heads %c : (tensor<?x2x?x4xf32>) -> tensor<?x?x8xf32>
    return %o : tensor<?x?x8xf32>
  }
}
// CHECK-LABEL: func.func @decode(
// CHECK-NOT: func.func @decode_prefill
// CHECK-NOT: func.func @decode_step

// -----

// Tests that a decode without an `encode` beside it gets no incremental
// entry points.
module {
  attn.param @emb : tensor<16x8xf32> init normal [0.0, 1.0]
  func.func @decode(%tgt: tensor<?x?xi32>, %memory: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
    %w = attn.get_param @emb : tensor<16x8xf32>
    %x = attn.gather %w, %tgt : (tensor<16x8xf32>, tensor<?x?xi32>) -> tensor<?x?x8xf32>
    %q = attn.split_heads %x, 2 : (tensor<?x?x8xf32>) -> tensor<?x2x?x4xf32>
    %m = attn.split_heads %memory, 2 : (tensor<?x?x8xf32>) -> tensor<?x2x?x4xf32>
    %c = attn.sdpa %q, %m, %m : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
    %o = attn.merge_heads %c : (tensor<?x2x?x4xf32>) -> tensor<?x?x8xf32>
    return %o : tensor<?x?x8xf32>
  }
}
// CHECK-LABEL: func.func @decode(
// CHECK-NOT: func.func @decode_prefill
// CHECK-NOT: func.func @decode_step
