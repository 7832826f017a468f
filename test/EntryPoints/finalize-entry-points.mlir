// RUN: attnc-opt %s --attn-bind-params --attn-finalize-entry-points \
// RUN:   | FileCheck %s --implicit-check-not=attn.param \
// RUN:       --implicit-check-not=attn.train --implicit-check-not=attn.dims \
// RUN:       --implicit-check-not=attn.name
// RUN: attnc-opt %s --attn-bind-params --attn-finalize-entry-points \
// RUN:   --attn-finalize-entry-points | FileCheck %s --check-prefix=TWICE
// RUN: attnc-opt %s --attn-bind-params --attn-finalize-entry-points \
// RUN:   --convert-attn-to-linalg \
// RUN:   | FileCheck %s --check-prefix=LOWERED \
// RUN:       --implicit-check-not='{{attn\.[a-z_]+ }}'

// attn-finalize-entry-points erases the model declarations (attn.param,
// attn.train), drops the attn.* argument attributes (bufferisation's
// `writable = false` on a buffer only read stays), gives every public
// function with a body the caller's activation arena as its last two
// arguments (abi.h ATTN_ARG_ARENA, ATTN_ARG_ARENA_NEED; once, however often
// it runs) and marks it llvm.emit_c_interface; private functions and
// declarations are not entry points.

attn.param @w : tensor<4x4xf32> init normal [0.0, 0.02]
attn.param @b : tensor<4xf32> init zeros []
attn.train loss @loss optimizer adam {} schedule constant {} clip_norm 1.0

// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%{{[^:]+}}: tensor<?xf32> {bufferization.writable = false}, %{{[^:]+}}: tensor<?x4xf32>,
// CHECK-SAME:  %{{[^:]+}}: memref<?xi8> {attn.arena}, %{{[^:]+}}: memref<i64> {attn.arena_need}) -> tensor<?x4xf32>
// CHECK-SAME: attributes {llvm.emit_c_interface}
// CHECK: tensor.extract_slice
// TWICE-LABEL: func.func @forward
// TWICE-SAME: tensor<?x4xf32>, %{{[^:]+}}: memref<?xi8> {attn.arena}, %{{[^:]+}}: memref<i64> {attn.arena_need}) -> tensor<?x4xf32>
func.func @forward(%x: tensor<?x4xf32> {attn.dims = ["B", ""], attn.name = "x"}) -> tensor<?x4xf32> {
  %w = attn.get_param @w : tensor<4x4xf32>
  %b = attn.get_param @b : tensor<4xf32>
  %0 = attn.linear %x, %w, %b : (tensor<?x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// CHECK-LABEL: func.func @loss
// CHECK-SAME: memref<?xi8> {attn.arena}, %{{[^:]+}}: memref<i64> {attn.arena_need}) -> tensor<f32>
// CHECK-SAME: attributes {llvm.emit_c_interface}
func.func @loss(%x: tensor<?x4xf32> {attn.dims = ["B", ""], attn.name = "x"}) -> tensor<f32> {
  %0 = attn.reduce sum %x axis 1 : (tensor<?x4xf32>) -> tensor<?xf32>
  %1 = attn.reduce mean %0 axis 0 : (tensor<?xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// CHECK-LABEL: func.func private @helper
// CHECK-SAME: (%{{[^:]+}}: tensor<?xf32> {bufferization.writable = false}, %{{[^:]+}}: tensor<?x4xf32>) -> tensor<?x4xf32> {
func.func private @helper(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = attn.relu %x : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// With the declarations gone nothing of attn is left after the lowering
// (no op, declaration or other attribute) but the arena arguments'
// attributes, which attn-plan-arena consumes.
// LOWERED: func.func @forward
// LOWERED-SAME: memref<?xi8> {attn.arena}, %{{[^:]+}}: memref<i64> {attn.arena_need})
// LOWERED: linalg.generic
