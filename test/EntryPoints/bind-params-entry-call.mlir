// RUN: attnc-opt %s --split-input-file --verify-diagnostics --attn-bind-params | FileCheck %s
// RUN: attnc-opt %s --split-input-file --verify-diagnostics --attn-opt-to-loops | FileCheck %s --check-prefix=LOOPS

// An entry point calling another (train_step calls <loss>_grad) and the
// whole-buffer accesses of the optimizer. attn-bind-params takes the call
// out: its result becomes an argument marked attn.entry_call_result, the
// caller records the callee and, per callee argument, its own argument
// passed (attn.entry_call); the caller takes the buffers the callee uses
// (here the gradients, read only). A whole buffer read only is the
// argument itself; a whole buffer written is one slot of all of it.
// attn-compose-entry-calls (in attn-opt-to-loops) puts the call back at
// the top on buffers, passing the caller's arena and a need slot of its
// own, and stores the larger need at the end.

// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[P:[^:]+]]: memref<?xf32> {attn.params}, %[[G:[^:]+]]: tensor<?xf32> {attn.grads, bufferization.writable = false}, %{{[^:]+}}: tensor<2x8xf32> {attn.name = "x"}, %{{[^:]+}}: tensor<i64> {attn.seed}, %[[L:[^:]+]]: tensor<f32> {attn.entry_call_result = 0 : i64, bufferization.writable = false})
// CHECK-SAME: attributes {attn.entry_call = {args = array<i64: 0, 1, 2, 3>, callee = @loss_grad}}
// CHECK-NOT: call @loss_grad
// CHECK: %[[VIEW:.*]] = memref.subview %[[P]][0] [32] [1]
// CHECK: %[[SLOT:.*]] = bufferization.to_tensor %[[VIEW]] restrict writable
// CHECK: %[[GRADS:.*]] = tensor.cast %[[G]] : tensor<?xf32> to tensor<32xf32>
// CHECK: %[[N:.*]] = attn.global_norm %[[GRADS]]
// CHECK: %[[NEW:.*]] = attn.sub %[[SLOT]], %[[GRADS]]
// CHECK: bufferization.materialize_in_destination %[[NEW]] in writable %[[VIEW]]
// CHECK: return %[[L]], %[[N]]

// LOOPS-LABEL: func.func @train_step
// LOOPS-SAME: (%[[P:[^:]+]]: memref<?xf32>, %[[G:[^:]+]]: memref<?xf32>, %[[X:[^:]+]]: memref<2x8xf32>, %[[S:[^:]+]]: memref<i64>, %[[A:[^:]+]]: memref<?xi8>, %[[NEED:[^:]+]]: memref<i64>) -> (memref<f32>, memref<f32>)
// LOOPS: %[[INNER:.*]] = memref.alloca() : memref<i64>
// LOOPS-NEXT: %[[LOSS:.*]] = call @loss_grad(%[[P]], %[[G]], %[[X]], %[[S]], %[[A]], %[[INNER]])
// LOOPS: %[[OWN:.*]] = memref.load %[[NEED]][]
// LOOPS-NEXT: %[[THEIRS:.*]] = memref.load %[[INNER]][]
// LOOPS-NEXT: %[[MAX:.*]] = arith.maxsi %[[OWN]], %[[THEIRS]]
// LOOPS-NEXT: memref.store %[[MAX]], %[[NEED]][]
// LOOPS: return %[[LOSS]],
attn.param @w : tensor<2x8xf32> init normal [0.0, 1.0]
attn.param @b : tensor<8xf32> init zeros []

func.func @loss_grad(%x: tensor<2x8xf32> {attn.name = "x"}, %seed: tensor<i64> {attn.seed}) -> tensor<f32> {
  %w = attn.get_param @w : tensor<2x8xf32>
  %b = attn.get_param @b : tensor<8xf32>
  %gw = attn.mul %w, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %gb = attn.mul %b, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  attn.set_param @w grad, %gw : tensor<2x8xf32>
  attn.set_param @b grad, %gb : tensor<8xf32>
  %n = attn.global_norm %gw : tensor<2x8xf32>
  return %n : tensor<f32>
}

func.func @train_step(%x: tensor<2x8xf32> {attn.name = "x"}, %seed: tensor<i64> {attn.seed}) -> (tensor<f32>, tensor<f32>) {
  %loss = call @loss_grad(%x, %seed) : (tensor<2x8xf32>, tensor<i64>) -> tensor<f32>
  %g = attn.get_param_buffer grad : tensor<32xf32>
  %n = attn.global_norm %g : tensor<32xf32>
  %p = attn.get_param_buffer value : tensor<32xf32>
  %q = attn.sub %p, %g : (tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32>
  attn.set_param_buffer value, %q : tensor<32xf32>
  return %loss, %n : tensor<f32>, tensor<f32>
}

// -----

// Tests that the call must be given the caller's own arguments.
attn.param @w : tensor<16xf32> init zeros []
func.func @loss_grad(%x: tensor<16xf32>) -> tensor<f32> {
  %n = attn.global_norm %x : tensor<16xf32>
  return %n : tensor<f32>
}
func.func @train_step(%x: tensor<16xf32>) -> tensor<f32> {
  %y = attn.neg %x : tensor<16xf32>
  // expected-error @below {{an entry point can be called only with the caller's own arguments}}
  %l = call @loss_grad(%y) : (tensor<16xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests that nothing the caller writes may come before the call.
attn.param @w : tensor<16xf32> init zeros []
func.func @loss_grad(%x: tensor<16xf32>) -> tensor<f32> {
  %n = attn.global_norm %x : tensor<16xf32>
  return %n : tensor<f32>
}
func.func @train_step(%x: tensor<16xf32>) -> tensor<f32> {
  attn.set_param @w first_moment, %x : tensor<16xf32>
  // expected-error @below {{an entry point can be called only before the caller writes anything}}
  %l = call @loss_grad(%x) : (tensor<16xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests that a written buffer is accessed whole or per parameter, not both
// (its slots must be disjoint).
attn.param @w : tensor<16xf32> init zeros []
func.func @step(%x: tensor<16xf32>) {
  %m = attn.get_param @w first_moment : tensor<16xf32>
  // expected-error @below {{a function cannot access a parameter buffer it writes both whole and per parameter}}
  attn.set_param_buffer first_moment, %x : tensor<16xf32>
  return
}

// -----

// Tests that a whole buffer has the module's layout size.
attn.param @w : tensor<20xf32> init zeros []
func.func @step() -> tensor<20xf32> {
  // expected-error @below {{type 'tensor<20xf32>' is not the module's parameter buffer, tensor<32xf32>}}
  %g = attn.get_param_buffer grad : tensor<20xf32>
  return %g : tensor<20xf32>
}
