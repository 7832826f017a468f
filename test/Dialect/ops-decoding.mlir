// RUN: attnc-opt %s | attnc-opt | FileCheck %s
// RUN: attnc-opt %s --mlir-print-op-generic | attnc-opt | FileCheck %s

// Round trips of the key/value cache ops.

// CHECK-LABEL: func.func @kv_cache_append
// CHECK-SAME: (%[[K:[^:]+]]: tensor<?x6x1x32xf32>, %[[V:[^:]+]]: tensor<?x6x1x32xf32>)
// CHECK: %[[KS:.*]], %[[VS:.*]] = attn.kv_cache_append %[[K]], %[[V]] slot 0 : (tensor<?x6x1x32xf32>, tensor<?x6x1x32xf32>) -> (tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>)
// CHECK: return %[[KS]], %[[VS]]
// Tests that the appended cache has a dynamic sequence length.
func.func @kv_cache_append(%k: tensor<?x6x1x32xf32>, %v: tensor<?x6x1x32xf32>) -> (tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>) {
  %ks, %vs = attn.kv_cache_append %k, %v slot 0 : (tensor<?x6x1x32xf32>, tensor<?x6x1x32xf32>) -> (tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>)
  return %ks, %vs : tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>
}

// CHECK-LABEL: func.func @kv_cache_append_prefill
// CHECK-SAME: (%[[K:[^:]+]]: tensor<2x4x?x16xf16>, %[[V:[^:]+]]: tensor<2x4x?x8xf16>)
// CHECK: attn.kv_cache_append %[[K]], %[[V]] slot 11 : (tensor<2x4x?x16xf16>, tensor<2x4x?x8xf16>) -> (tensor<2x4x?x16xf16>, tensor<2x4x?x8xf16>)
// CHECK: attn.kv_cache_append %[[K]], %[[V]] slot 12 : (tensor<2x4x?x16xf16>, tensor<2x4x?x8xf16>) -> (tensor<2x4x20x16xf16>, tensor<2x4x20x8xf16>)
// Tests a prompt of dynamic length with different key and value head sizes,
// and a stated cache length more static than the inferred one.
func.func @kv_cache_append_prefill(%k: tensor<2x4x?x16xf16>, %v: tensor<2x4x?x8xf16>) {
  %0:2 = attn.kv_cache_append %k, %v slot 11 : (tensor<2x4x?x16xf16>, tensor<2x4x?x8xf16>) -> (tensor<2x4x?x16xf16>, tensor<2x4x?x8xf16>)
  %1:2 = attn.kv_cache_append %k, %v slot 12 : (tensor<2x4x?x16xf16>, tensor<2x4x?x8xf16>) -> (tensor<2x4x20x16xf16>, tensor<2x4x20x8xf16>)
  return
}

// CHECK-LABEL: func.func @kv_cache_read
// CHECK: %[[K:.*]], %[[V:.*]] = attn.kv_cache_read slot 1 : tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>
// CHECK: return %[[K]], %[[V]]
// Tests reading a slot without appending.
func.func @kv_cache_read() -> (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>) {
  %k, %v = attn.kv_cache_read slot 1 : tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>
  return %k, %v : tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>
}

// CHECK-LABEL: func.func @kv_cache_read_static
// CHECK: attn.kv_cache_read slot 0 : tensor<1x2x3x4xbf16>, tensor<1x2x3x5xbf16>
// Tests a read with static types and different key and value head sizes.
func.func @kv_cache_read_static() {
  %k, %v = attn.kv_cache_read slot 0 : tensor<1x2x3x4xbf16>, tensor<1x2x3x5xbf16>
  return
}
