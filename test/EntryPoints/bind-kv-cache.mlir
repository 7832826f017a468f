// RUN: attnc-opt %s --split-input-file --verify-diagnostics --attn-bind-kv-cache | FileCheck %s

// Tests that a function using the cache takes the cache buffer and the
// 3-entry state (positions cached, capacity, memory positions cached); a
// target append writes at the cached length and reads [0, len + t); a
// memory append (attn.kv_memory) writes from position 0, is read as the new
// keys and values themselves, and stores its length into state[2].
// CHECK-LABEL: func.func @decode_prefill(
// CHECK-SAME: %[[K:[^:]*]]: tensor<?x2x?x4xf32>, %[[M:[^:]*]]: tensor<?x2x?x4xf32>,
// CHECK-SAME: %[[CACHE:[^:]*]]: memref<?xf32> {attn.kv_cache}, %[[STATE:[^:]*]]: memref<3xi64> {attn.kv_state})
// CHECK: %[[L0:.*]] = memref.load %[[STATE]][%{{.*}}] : memref<3xi64>
// CHECK: %[[LEN:.*]] = arith.index_cast %[[L0]]
// CHECK: %[[L1:.*]] = memref.load %[[STATE]][%{{.*}}] : memref<3xi64>
// CHECK: %[[CAP:.*]] = arith.index_cast %[[L1]]
// CHECK: memref.load %[[STATE]][%{{.*}}] : memref<3xi64>
// CHECK: tensor.dim %[[K]], %{{.*}} : tensor<?x2x?x4xf32>
// CHECK: %[[T:.*]] = tensor.dim %[[K]], %{{.*}} : tensor<?x2x?x4xf32>
// CHECK: %[[KB:.*]] = memref.reinterpret_cast %[[CACHE]] to offset: [%{{.*}}], sizes: [%{{.*}}, 2, %[[CAP]], 4]
// CHECK: %[[END:.*]] = arith.addi %[[LEN]], %[[T]]
// CHECK: %[[AT:.*]] = memref.subview %[[KB]][0, 0, %[[LEN]], 0] [%{{.*}}, 2, %[[T]], 4]
// CHECK: bufferization.materialize_in_destination %[[K]] in restrict writable %[[AT]]
// CHECK: memref.subview %[[KB]][0, 0, %{{.*}}, 0] [%{{.*}}, 2, %[[END]], 4]
// CHECK: tensor.dim %[[M]], %{{.*}} : tensor<?x2x?x4xf32>
// CHECK: %[[S:.*]] = tensor.dim %[[M]], %{{.*}} : tensor<?x2x?x4xf32>
// CHECK: %[[MB:.*]] = memref.reinterpret_cast %[[CACHE]]
// CHECK: %[[ZERO:.*]] = arith.constant 0 : index
// CHECK: %[[MAT:.*]] = memref.subview %[[MB]][0, 0, %[[ZERO]], 0] [%{{.*}}, 2, %[[S]], 4]
// CHECK: bufferization.materialize_in_destination %[[M]] in restrict writable %[[MAT]]
// CHECK: %[[MK:.*]] = tensor.cast %[[M]]
// CHECK: memref.store %{{.*}}, %[[STATE]][%{{.*}}] : memref<3xi64>
// CHECK: %[[SI:.*]] = arith.index_cast %[[S]] : index to i64
// CHECK: %[[TWO:.*]] = arith.constant 2 : index
// CHECK: memref.store %[[SI]], %[[STATE]][%[[TWO]]] : memref<3xi64>
// CHECK: return %{{.*}}, %[[MK]]
func.func @decode_prefill(%k: tensor<?x2x?x4xf32>, %m: tensor<?x2x?x4xf32>) -> (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) {
  %ks, %vs = attn.kv_cache_append %k, %k slot 0 : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>)
  %mk, %mv = attn.kv_cache_append %m, %m slot 1 {attn.kv_memory} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>)
  return %ks, %mk : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>
}

// Tests that kv_cache_read reads the memory positions [0, state[2]) of its
// slot, laid out as in every other function of the module (slot 1 after
// slot 0's 16 floats per position), for the batch the cache was sized for:
// cache size / (capacity * 32 floats per position).
// CHECK-LABEL: func.func @decode_step(
// CHECK-SAME: %[[CACHE:[^:]*]]: memref<?xf32> {attn.kv_cache}, %[[STATE:[^:]*]]: memref<3xi64> {attn.kv_state})
// CHECK: memref.load %[[STATE]]
// CHECK: %[[L1:.*]] = memref.load %[[STATE]][%{{.*}}] : memref<3xi64>
// CHECK: %[[CAP:.*]] = arith.index_cast %[[L1]]
// CHECK: %[[L2:.*]] = memref.load %[[STATE]][%{{.*}}] : memref<3xi64>
// CHECK: %[[MLEN:.*]] = arith.index_cast %[[L2]]
// CHECK: %[[FLOATS:.*]] = memref.dim %[[CACHE]]
// CHECK: %[[C32:.*]] = arith.constant 32 : index
// CHECK: %[[PER:.*]] = arith.muli %[[CAP]], %[[C32]]
// CHECK: %[[B:.*]] = arith.divui %[[FLOATS]], %[[PER]]
// CHECK: %[[ROWS:.*]] = arith.muli %[[B]], %[[CAP]]
// CHECK: %[[C16:.*]] = arith.constant 16 : index
// CHECK: %[[OFF:.*]] = arith.muli %[[ROWS]], %[[C16]]
// CHECK: %[[KB:.*]] = memref.reinterpret_cast %[[CACHE]] to offset: [%[[OFF]]]
// CHECK: %[[SV:.*]] = memref.subview %[[KB]][0, 0, %{{.*}}, 0] [%[[B]], 2, %[[MLEN]], 4]
// CHECK: bufferization.to_tensor %[[SV]] restrict
// CHECK-NOT: memref.store
// CHECK: return
func.func @decode_step() -> (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) {
  %mk, %mv = attn.kv_cache_read slot 1 {attn.kv_memory} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>
  return %mk, %mv : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>
}

// -----

// Tests that a slot used with two shapes is an error naming both uses.
func.func @first(%k: tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32> {
  // expected-note @+1 {{first used here}}
  %ks, %vs = attn.kv_cache_append %k, %k slot 0 : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>)
  return %ks : tensor<?x2x?x4xf32>
}
func.func @second() -> tensor<?x4x?x4xf32> {
  // expected-error @+1 {{cache slot 0 is used with another shape or kind here}}
  %mk, %mv = attn.kv_cache_read slot 0 : tensor<?x4x?x4xf32>, tensor<?x4x?x4xf32>
  return %mk : tensor<?x4x?x4xf32>
}

// -----

// Tests that a target slot read as memory is an error.
func.func @target(%k: tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32> {
  // expected-note @+1 {{first used here}}
  %ks, %vs = attn.kv_cache_append %k, %k slot 0 : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>)
  return %ks : tensor<?x2x?x4xf32>
}
func.func @memory() -> tensor<?x2x?x4xf32> {
  // expected-error @+1 {{cache slot 0 is used with another shape or kind here}}
  %mk, %mv = attn.kv_cache_read slot 0 : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>
  return %mk : tensor<?x2x?x4xf32>
}

// -----

// Tests that a cached attention with a dynamic head count is an error.
func.func @dynamic_heads(%k: tensor<?x?x?x4xf32>) -> tensor<?x?x?x4xf32> {
  // expected-error @+1 {{a cached attention needs static head count and head sizes, got keys 'tensor<?x?x?x4xf32>' and values 'tensor<?x?x?x4xf32>'}}
  %ks, %vs = attn.kv_cache_append %k, %k slot 0 : (tensor<?x?x?x4xf32>, tensor<?x?x?x4xf32>) -> (tensor<?x?x?x4xf32>, tensor<?x?x?x4xf32>)
  return %ks : tensor<?x?x?x4xf32>
}
