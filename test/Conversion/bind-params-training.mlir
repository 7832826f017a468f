// RUN: attnc-opt %s --attn-bind-params | FileCheck %s
// RUN: attnc-opt %s --attn-opt-to-loops | FileCheck %s --check-prefix=LOOPS

// attn-bind-params passes the gradient and moment buffers a function uses
// after the parameter buffer (same layout), as writable memrefs when the
// function writes them; set_param inserts into the buffer's current value
// and the last value goes back to the argument.

attn.param @w : tensor<2x8xf32> init normal [0.0, 1.0]
attn.param @b : tensor<8xf32> init zeros []

// Tests that a gradient entry point takes the parameters (read only) and
// the gradient buffer (written), inserts each gradient into the chain and
// materialises the chain's end into the argument.
// CHECK-LABEL: func.func @loss_grad
// CHECK-SAME: (%[[P:[^:]+]]: tensor<?xf32> {attn.params, bufferization.writable = false}, %[[G:[^:]+]]: memref<?xf32> {attn.grads}, %[[X:[^:]+]]: tensor<2x8xf32>)
// CHECK: %[[G0:.*]] = bufferization.to_tensor %[[G]] restrict writable
// CHECK: tensor.extract_slice %[[P]][0] [16] [1]
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<2x8xf32> into tensor<16xf32>
// CHECK: %[[G1:.*]] = tensor.insert_slice %[[FLAT]] into %[[G0]][0] [16] [1]
// CHECK: %[[G2:.*]] = tensor.insert_slice %{{.*}} into %[[G1]][16] [8] [1]
// CHECK: bufferization.materialize_in_destination %[[G2]] in writable %[[G]] : (tensor<?xf32>, memref<?xf32>) -> ()
// CHECK-NEXT: return
func.func @loss_grad(%x: tensor<2x8xf32>) -> tensor<f32> {
  %w = attn.get_param @w : tensor<2x8xf32>
  %b = attn.get_param @b : tensor<8xf32>
  %gw = attn.mul %w, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %gb = attn.mul %b, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  attn.set_param @w grad, %gw : tensor<2x8xf32>
  attn.set_param @b grad, %gb : tensor<8xf32>
  %n = attn.global_norm %gw : tensor<2x8xf32>
  return %n : tensor<f32>
}

// Tests that train_step writes the parameters and both moments in place:
// buffers in the order params, first_moment, second_moment; each update
// reads its slot from the buffer value current at the update, and each
// write is hoisted to just after its value.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[P:[^:]+]]: memref<?xf32> {attn.params}, %[[M:[^:]+]]: memref<?xf32> {attn.first_moment}, %[[V:[^:]+]]: memref<?xf32> {attn.second_moment}, %{{[^:]+}}: tensor<2x8xf32>, %{{[^:]+}}: tensor<f32>)
// CHECK-DAG: %[[P0:.*]] = bufferization.to_tensor %[[P]] restrict writable
// CHECK-DAG: %[[M0:.*]] = bufferization.to_tensor %[[M]] restrict writable
// CHECK-DAG: %[[V0:.*]] = bufferization.to_tensor %[[V]] restrict writable
// CHECK: attn.adam_update
// CHECK-DAG: %[[P1:.*]] = tensor.insert_slice %{{.*}} into %[[P0]][0] [16] [1]
// CHECK-DAG: %[[M1:.*]] = tensor.insert_slice %{{.*}} into %[[M0]][0] [16] [1]
// CHECK-DAG: %[[V1:.*]] = tensor.insert_slice %{{.*}} into %[[V0]][0] [16] [1]
// The second update reads b from the parameters as written so far.
// CHECK: tensor.extract_slice %[[P1]][16] [8] [1]
// CHECK: attn.adam_update
// CHECK: %[[P2:.*]] = tensor.insert_slice %{{.*}} into %[[P1]][16] [8] [1]
// CHECK-DAG: bufferization.materialize_in_destination %[[P2]] in writable %[[P]]
// CHECK-DAG: bufferization.materialize_in_destination %{{.*}} in writable %[[M]]
// CHECK-DAG: bufferization.materialize_in_destination %{{.*}} in writable %[[V]]

// After bufferisation, nothing copies a buffer or a slot: the Adam update
// writes the parameter and both moments into their slots of the arguments
// (subviews at offset 0 and 16), and the final write-backs vanish.
// LOOPS-LABEL: func.func @train_step
// LOOPS-SAME: (%[[P:[^:]+]]: memref<?xf32>, %[[M:[^:]+]]: memref<?xf32>, %[[V:[^:]+]]: memref<?xf32>,
// LOOPS-NOT: memref.copy
// LOOPS-DAG: memref.subview %[[P]][0] [16] [1]
// LOOPS-DAG: memref.subview %[[M]][0] [16] [1]
// LOOPS-DAG: memref.subview %[[V]][0] [16] [1]
// LOOPS-DAG: memref.subview %[[P]][16] [8] [1]
// LOOPS-NOT: memref.copy
// LOOPS: return
func.func @train_step(%x: tensor<2x8xf32>, %lr: tensor<f32>) -> tensor<f32> {
  %w = attn.get_param @w : tensor<2x8xf32>
  %b = attn.get_param @b : tensor<8xf32>
  %gw = attn.mul %w, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %gb = attn.mul %b, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %n = attn.global_norm %gw, %gb : tensor<2x8xf32>, tensor<8xf32>
  %mw = attn.get_param @w first_moment : tensor<2x8xf32>
  %vw = attn.get_param @w second_moment : tensor<2x8xf32>
  %w1, %mw1, %vw1 = attn.adam_update %w, %gw, %mw, %vw, %lr, %lr, %lr, %lr, %lr, %lr decoupled : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>)
  %mb = attn.get_param @b first_moment : tensor<8xf32>
  %vb = attn.get_param @b second_moment : tensor<8xf32>
  %b1, %mb1, %vb1 = attn.adam_update %b, %gb, %mb, %vb, %lr, %lr, %lr, %lr, %lr, %lr : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  attn.set_param @w value, %w1 : tensor<2x8xf32>
  attn.set_param @w first_moment, %mw1 : tensor<2x8xf32>
  attn.set_param @w second_moment, %vw1 : tensor<2x8xf32>
  attn.set_param @b value, %b1 : tensor<8xf32>
  attn.set_param @b first_moment, %mb1 : tensor<8xf32>
  attn.set_param @b second_moment, %vb1 : tensor<8xf32>
  return %n : tensor<f32>
}

// Tests that a use of a parameter read after the parameter was written
// reads the value from before the write (the buffer's first value, which
// bufferisation then copies), not the new one.
// CHECK-LABEL: func.func @read_after_write
// CHECK: %[[P0:.*]] = bufferization.to_tensor
// CHECK: %[[P1:.*]] = tensor.insert_slice %{{.*}} into %[[P0]][16] [8] [1]
// CHECK: tensor.extract_slice %[[P0]][16] [8] [1]
// CHECK: tensor.extract_slice %[[P0]][16] [8] [1]
// CHECK: attn.add
func.func @read_after_write(%x: tensor<8xf32>) -> tensor<8xf32> {
  %b = attn.get_param @b : tensor<8xf32>
  attn.set_param @b value, %x : tensor<8xf32>
  %0 = attn.add %b, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
