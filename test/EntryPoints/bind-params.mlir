// RUN: attnc-opt %s --attn-bind-params | FileCheck %s

// attn-bind-params gives every defined function the parameter buffer as a
// new first argument and reads each parameter as a slice of it, at offsets
// that are multiples of 16 elements (64 bytes) in declaration order:
//   a: 3x5 = 15 elements at 0   (next at 16, not 15)
//   b: 7            at 16       (next at 32)
//   c: 2x3x4 = 24   at 32       (next at 64)
//   s: scalar, 1    at 64       (next at 80)
//   e: 16           at 80       (exactly one alignment unit: next at 96)
//   f: 1x1          at 96
// The declarations stay for the code generator.

// CHECK: attn.param @a : tensor<3x5xf32>
// CHECK: attn.param @b : tensor<7xf32>
// CHECK: attn.param @f : tensor<1x1xf32>
attn.param @a : tensor<3x5xf32> init normal [0.0, 1.0]
attn.param @b : tensor<7xf32> init zeros []
attn.param @c : tensor<2x3x4xf32> init ones []
attn.param @s : tensor<f32> init zeros []
attn.param @e : tensor<16xf32> init zeros []
attn.param @f : tensor<1x1xf32> init zeros []

// CHECK-LABEL: func.func @reads_all
// CHECK-SAME: (%[[P:[^:]+]]: tensor<?xf32> {attn.params, bufferization.writable = false}, %[[X:[^:]+]]: tensor<3x5xf32>)
// CHECK-NOT: attn.get_param
// CHECK-DAG: %[[A1:.*]] = tensor.extract_slice %[[P]][0] [15] [1] : tensor<?xf32> to tensor<15xf32>
// CHECK-DAG: %[[A:.*]] = tensor.expand_shape %[[A1]] {{\[\[}}0, 1]] output_shape [3, 5] : tensor<15xf32> into tensor<3x5xf32>
// CHECK-DAG: %[[B:.*]] = tensor.extract_slice %[[P]][16] [7] [1] : tensor<?xf32> to tensor<7xf32>
// CHECK-DAG: %[[C1:.*]] = tensor.extract_slice %[[P]][32] [24] [1] : tensor<?xf32> to tensor<24xf32>
// CHECK-DAG: %[[C:.*]] = tensor.expand_shape %[[C1]] {{\[\[}}0, 1, 2]] output_shape [2, 3, 4] : tensor<24xf32> into tensor<2x3x4xf32>
// CHECK-DAG: %[[S1:.*]] = tensor.extract_slice %[[P]][64] [1] [1] : tensor<?xf32> to tensor<1xf32>
// CHECK-DAG: %[[S:.*]] = tensor.collapse_shape %[[S1]] [] : tensor<1xf32> into tensor<f32>
// CHECK-DAG: %[[E:.*]] = tensor.extract_slice %[[P]][80] [16] [1] : tensor<?xf32> to tensor<16xf32>
// CHECK-DAG: %[[F1:.*]] = tensor.extract_slice %[[P]][96] [1] [1] : tensor<?xf32> to tensor<1xf32>
// CHECK-DAG: %[[F:.*]] = tensor.expand_shape %[[F1]] {{\[\[}}0, 1]] output_shape [1, 1] : tensor<1xf32> into tensor<1x1xf32>
// CHECK: attn.add %[[X]], %[[A]]
// CHECK: return %[[A]], %[[B]], %[[C]], %[[S]], %[[E]], %[[F]]
func.func @reads_all(%x: tensor<3x5xf32>) -> (tensor<3x5xf32>, tensor<7xf32>, tensor<2x3x4xf32>, tensor<f32>, tensor<16xf32>, tensor<1x1xf32>) {
  %a = attn.get_param @a : tensor<3x5xf32>
  %b = attn.get_param @b : tensor<7xf32>
  %c = attn.get_param @c : tensor<2x3x4xf32>
  %s = attn.get_param @s : tensor<f32>
  %e = attn.get_param @e : tensor<16xf32>
  %f = attn.get_param @f : tensor<1x1xf32>
  %0 = attn.add %x, %a : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  return %a, %b, %c, %s, %e, %f : tensor<3x5xf32>, tensor<7xf32>, tensor<2x3x4xf32>, tensor<f32>, tensor<16xf32>, tensor<1x1xf32>
}

// A function reading one parameter twice gets two slices at the same
// offset; a function reading none still takes the buffer, so that every
// entry point has the same calling convention.
// CHECK-LABEL: func.func @reads_twice
// CHECK-SAME: (%[[P:[^:]+]]: tensor<?xf32> {attn.params, bufferization.writable = false})
// CHECK-COUNT-2: tensor.extract_slice %[[P]][64] [1] [1]
func.func @reads_twice() -> (tensor<f32>, tensor<f32>) {
  %0 = attn.get_param @s : tensor<f32>
  %1 = attn.get_param @s : tensor<f32>
  return %0, %1 : tensor<f32>, tensor<f32>
}

// CHECK-LABEL: func.func @reads_none
// CHECK-SAME: (%{{[^:]+}}: tensor<?xf32> {attn.params, bufferization.writable = false}, %{{[^:]+}}: tensor<2xf32> {attn.name = "x"}) -> tensor<2xf32>
func.func @reads_none(%x: tensor<2xf32> {attn.name = "x"}) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}

// A declaration has no body to read parameters in: it is left as it is.
// CHECK-LABEL: func.func private @external(tensor<2xf32>) -> tensor<2xf32>
func.func private @external(tensor<2xf32>) -> tensor<2xf32>
