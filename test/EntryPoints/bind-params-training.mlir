// RUN: attnc-opt %s --attn-bind-params | FileCheck %s
// RUN: attnc-opt %s --attn-opt-to-loops | FileCheck %s --check-prefix=LOOPS

// attn-bind-params passes the gradient and moment buffers a function uses
// after the parameter buffer (same layout), as writable memrefs when the
// function writes them; each slot of a written buffer is a subview read as
// its own tensor, set_param replaces the slot's value and the last value
// goes back to the subview.

attn.param @w : tensor<2x8xf32> init normal [0.0, 1.0]
attn.param @b : tensor<8xf32> init zeros []

// Tests that a gradient entry point takes the parameters (read only) and
// the gradient buffer (written), sees each gradient slot as a tensor of its
// own and materialises each gradient into its slot.
// CHECK-LABEL: func.func @loss_grad
// CHECK-SAME: (%[[P:[^:]+]]: tensor<?xf32> {attn.params, bufferization.writable = false}, %[[G:[^:]+]]: memref<?xf32> {attn.grads}, %[[X:[^:]+]]: tensor<2x8xf32>)
// CHECK: %[[GW:.*]] = memref.subview %[[G]][0] [16] [1] : memref<?xf32> to memref<16xf32, strided<[1]>>
// CHECK: bufferization.to_tensor %[[GW]] restrict writable : memref<16xf32, strided<[1]>> to tensor<16xf32>
// CHECK: %[[GB:.*]] = memref.subview %[[G]][16] [8] [1] : memref<?xf32> to memref<8xf32, strided<[1], offset: 16>>
// CHECK: bufferization.to_tensor %[[GB]] restrict writable
// CHECK: tensor.extract_slice %[[P]][0] [16] [1]
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<2x8xf32> into tensor<16xf32>
// CHECK: bufferization.materialize_in_destination %[[FLAT]] in writable %[[GW]] : (tensor<16xf32>, memref<16xf32, strided<[1]>>) -> ()
// CHECK-NEXT: bufferization.materialize_in_destination %{{.*}} in writable %[[GB]] : (tensor<8xf32>, memref<8xf32, strided<[1], offset: 16>>) -> ()
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
// buffers in the order params, first_moment, second_moment; each slot a
// subview seen as one tensor, which the update reads, and into which its
// result is materialised.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[P:[^:]+]]: memref<?xf32> {attn.params}, %[[M:[^:]+]]: memref<?xf32> {attn.first_moment}, %[[V:[^:]+]]: memref<?xf32> {attn.second_moment}, %{{[^:]+}}: tensor<2x8xf32>, %{{[^:]+}}: tensor<f32>)
// CHECK-DAG: %[[PW:.*]] = memref.subview %[[P]][0] [16] [1]
// CHECK-DAG: %[[PB:.*]] = memref.subview %[[P]][16] [8] [1]
// CHECK-DAG: %[[MW:.*]] = memref.subview %[[M]][0] [16] [1]
// CHECK-DAG: %[[VW:.*]] = memref.subview %[[V]][0] [16] [1]
// CHECK-DAG: %[[W0:.*]] = bufferization.to_tensor %[[PW]] restrict writable
// CHECK-DAG: %[[B0:.*]] = bufferization.to_tensor %[[PB]] restrict writable
// CHECK-DAG: %[[MW0:.*]] = bufferization.to_tensor %[[MW]] restrict writable
// CHECK: %[[W:.*]] = tensor.expand_shape %[[W0]]
// CHECK: %[[MW1:.*]] = tensor.expand_shape %[[MW0]]
// CHECK: %[[NW:.*]], %{{.*}}, %{{.*}} = attn.adam_update %[[W]], %{{.*}}, %[[MW1]],
// CHECK: attn.adam_update %[[B0]],
// CHECK-DAG: %[[FW:.*]] = tensor.collapse_shape %[[NW]]
// CHECK-DAG: bufferization.materialize_in_destination %[[FW]] in writable %[[PW]]
// CHECK-DAG: bufferization.materialize_in_destination %{{.*}} in writable %[[PB]]
// CHECK-DAG: bufferization.materialize_in_destination %{{.*}} in writable %[[MW]]
// CHECK-DAG: bufferization.materialize_in_destination %{{.*}} in writable %[[VW]]

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

// Tests that a use of a parameter read before the parameter was written,
// used after the write, reads the value from before the write (the slot's
// tensor, which bufferisation then copies), not the new one, and that the
// new value is stored at the end.
// CHECK-LABEL: func.func @read_after_write
// CHECK-SAME: (%[[P:[^:]+]]: memref<?xf32> {attn.params}, %[[X:[^:]+]]: tensor<8xf32>)
// CHECK: %[[PB:.*]] = memref.subview %[[P]][16] [8] [1]
// CHECK: %[[B:.*]] = bufferization.to_tensor %[[PB]] restrict writable
// CHECK: attn.add %[[B]], %[[B]]
// CHECK: bufferization.materialize_in_destination %[[X]] in writable %[[PB]]
func.func @read_after_write(%x: tensor<8xf32>) -> tensor<8xf32> {
  %b = attn.get_param @b : tensor<8xf32>
  attn.set_param @b value, %x : tensor<8xf32>
  %0 = attn.add %b, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
