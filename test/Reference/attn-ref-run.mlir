// Tests running functions from the command line (--entry NAME, or its
// other name --fn NAME): arguments by name, by position and in order,
// integer files converted to the argument's type, printed results, several
// results written to numbered files, f64 output, and gradients by finite
// differences.

// RUN: %python %S/Inputs/npy.py make %t.x.npy f4 2,3 1,2,3,4,5,6
// RUN: %python %S/Inputs/npy.py make %t.ids.npy i8 2 2,0
// RUN: %python %S/Inputs/npy.py safetensors %t.w.safetensors "emb.weight=3,2=1,2,3,4,5,6"

// RUN: attn-ref %s --entry softmax --in arg0=%t.x.npy | FileCheck %s --check-prefix=PRINT
// RUN: attn-ref %s --fn softmax --in arg0=%t.x.npy | FileCheck %s --check-prefix=PRINT
// PRINT: result 0: tensor<2x3xf32>
// PRINT-NEXT: {{\[\[}}0.09003057317, 0.2447284711, 0.6652409558], [0.09003057317, 0.2447284711, 0.6652409558]]

// RUN: attn-ref %s --fn embed -w %t.w.safetensors --in 0=%t.ids.npy --in arg1=%t.x.npy -o %t.out.npy
// RUN: %python %S/Inputs/npy.py dump %t.out.0.npy | FileCheck %s --check-prefix=OUT0
// RUN: %python %S/Inputs/npy.py dump %t.out.1.npy | FileCheck %s --check-prefix=OUT1
// OUT0: <f4 [2, 2] 5 6 1 2
// OUT1: <f4 [] 21

// RUN: attn-ref %s --fn softmax --in %t.x.npy -o %t.f64.npy --f64
// RUN: %python %S/Inputs/npy.py dump %t.f64.npy | FileCheck %s --check-prefix=F64
// F64: <f8 [2, 3] 0.09003057317 0.2447284711 0.6652409558

// sum(w[ids] * w[ids]) has gradient 2 w[i] times the count of id i: rows 0
// and 2 once, row 1 never.
// RUN: attn-ref %s --fn loss -w %t.w.safetensors --in %t.ids.npy --fd-grad -o %t.grads.safetensors --f64
// RUN: %python %S/Inputs/npy.py dump-safetensors %t.grads.safetensors | FileCheck %s --check-prefix=GRAD
// GRAD: emb.weight F64 [3, 2] 2 4 0 0 10 12

// RUN: not attn-ref %s --fn softmax --in %t.x.npy --fd-grad 2>&1 | FileCheck %s --check-prefix=GRAD-NO-OUT
// GRAD-NO-OUT: attn-ref: error: --fd-grad needs -o FILE.safetensors
// RUN: not attn-ref %s --fn softmax -w %t.w.safetensors --in %t.x.npy --fd-grad -o %t.bad.safetensors 2>&1 | FileCheck %s --check-prefix=GRAD-NOT-SCALAR
// GRAD-NOT-SCALAR: error: 'softmax' must return one float scalar to be differentiated

attn.param @"emb.weight" : tensor<3x2xf32> init normal [0.0, 1.0]

func.func @softmax(%x: tensor<?x3xf32>) -> tensor<?x3xf32> {
  %0 = attn.softmax %x axis 1 : tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

func.func @embed(%ids: tensor<?xi32>, %x: tensor<2x3xf32>) -> (tensor<?x2xf32>, tensor<f32>) {
  %w = attn.get_param @"emb.weight" : tensor<3x2xf32>
  %0 = attn.gather %w, %ids : (tensor<3x2xf32>, tensor<?xi32>) -> tensor<?x2xf32>
  %1 = attn.reduce sum %x axis 1 : (tensor<2x3xf32>) -> tensor<2xf32>
  %2 = attn.reduce sum %1 axis 0 : (tensor<2xf32>) -> tensor<f32>
  return %0, %2 : tensor<?x2xf32>, tensor<f32>
}

func.func @loss(%ids: tensor<?xi32>) -> tensor<f32> {
  %w = attn.get_param @"emb.weight" : tensor<3x2xf32>
  %0 = attn.gather %w, %ids : (tensor<3x2xf32>, tensor<?xi32>) -> tensor<?x2xf32>
  %1 = attn.mul %0, %0 : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  %2 = attn.reduce sum %1 axis 1 : (tensor<?x2xf32>) -> tensor<?xf32>
  %3 = attn.reduce sum %2 axis 0 : (tensor<?xf32>) -> tensor<f32>
  return %3 : tensor<f32>
}
