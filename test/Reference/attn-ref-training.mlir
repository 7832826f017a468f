// REQUIRES: numpy
// Tests what attn-ref runs of the training entry points: seeded dropout
// draws exactly abi.h's mask (checked against an independent Python
// implementation of attn_dropout_bits, with a seed above 2^53 that a double
// cannot hold), the parameter buffers and their command-line options, and
// their errors.
// RUN: rm -rf %t && mkdir -p %t && split-file %s %t
// RUN: %python -c "import numpy; numpy.save('%t/ones.npy', numpy.ones((4, 8), numpy.float32))"
// RUN: attn-ref %t/drop.mlir --fn drop --in %t/ones.npy --seed 18446744073709551557 --f64 -o %t/drop.npy
// RUN: %python %S/dropout_mask.py %t/drop.npy 18446744073709551557 3 0.25 | FileCheck %s --check-prefix=MASK
// MASK: match: {{[0-9]+}} of 32 kept
// RUN: not %python %S/dropout_mask.py %t/drop.npy 18446744073709551556 3 0.25

// A function with a seed argument needs --seed.
// RUN: not attn-ref %t/drop.mlir --fn drop --in %t/ones.npy 2>&1 | FileCheck %s --check-prefix=NOSEED
// NOSEED: attn-ref: error: 'drop' takes a dropout seed: pass --seed N

// set_param writes the buffers --grads-out and --state-out write; unset
// gradients and moments read as zeros; --moments loads the moments.
// RUN: %python -c "import numpy; numpy.save('%t/g.npy', numpy.full((2,), 3.0, numpy.float32))"
// RUN: attn-ref %t/buffers.mlir --fn write --in %t/g.npy -w %S/Inputs/w2.safetensors --grads-out %t/grads.safetensors --state-out %t/state.safetensors
// RUN: %python %S/compare.py %t/grads.safetensors %S/Inputs/grads3.safetensors | FileCheck %s --check-prefix=GRADS
// GRADS: match: 1 tensors
// RUN: attn-ref %t/buffers.mlir --fn moments -w %S/Inputs/w2.safetensors --moments %t/state.safetensors | FileCheck %s --check-prefix=MOMENTS
// MOMENTS: result 0: tensor<2xf32>
// MOMENTS-NEXT: [6, 9]

// Reading a buffer after writing it breaks the op contract.
// RUN: not attn-ref %t/buffers.mlir --fn bad -w %S/Inputs/w2.safetensors 2>&1 | FileCheck %s --check-prefix=ORDER
// ORDER: error: 'attn.get_param' reads grad of 'w' after this call wrote it

// --hyper names the keys of attn_hyper_index.
// RUN: not attn-ref %t/buffers.mlir --fn hyper -w %S/Inputs/w2.safetensors --hyper lr=1,foo=2 2>&1 | FileCheck %s --check-prefix=HYPER
// HYPER: attn-ref: error: --hyper: expected KEY=NUMBER with KEY one of lr, beta1, beta2, eps, weight_decay, clip_norm, step; got 'foo=2'
// RUN: attn-ref %t/buffers.mlir --fn hyper -w %S/Inputs/w2.safetensors --hyper step=4,lr=0.5 | FileCheck %s --check-prefix=VECTOR
// VECTOR: [0.5, 0.9800000191, 0.9499999881, 9.999999975e-07, 0, 2, 4]

//--- drop.mlir
module {
  func.func @drop(%x: tensor<4x8xf32>, %seed: tensor<i64> {attn.seed}) -> tensor<4x8xf32> {
    %0 = attn.dropout %x rate 2.500000e-01 seed %seed stream 3 : tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
}

//--- buffers.mlir
module {
  attn.param @w : tensor<2xf32> init zeros []
  attn.train loss @write optimizer adam {beta2 = 0.95 : f64, beta1 = 0.98 : f64, eps = 1.0e-6 : f64} schedule constant {} clip_norm 2.0
  func.func @write(%g: tensor<2xf32>) -> tensor<f32> {
    %w = attn.get_param @w : tensor<2xf32>
    %m = attn.get_param @w first_moment : tensor<2xf32>
    %m1 = attn.add %m, %g : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %v1 = attn.mul %m1, %w : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    attn.set_param @w grad, %g : tensor<2xf32>
    attn.set_param @w first_moment, %m1 : tensor<2xf32>
    attn.set_param @w second_moment, %v1 : tensor<2xf32>
    %l = attn.reduce sum %g axis 0 : (tensor<2xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
  func.func @moments() -> tensor<2xf32> {
    %m = attn.get_param @w first_moment : tensor<2xf32>
    %v = attn.get_param @w second_moment : tensor<2xf32>
    %s = attn.add %m, %v : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    return %s : tensor<2xf32>
  }
  func.func @bad() -> tensor<2xf32> {
    %w = attn.get_param @w : tensor<2xf32>
    attn.set_param @w grad, %w : tensor<2xf32>
    %g = attn.get_param @w grad : tensor<2xf32>
    return %g : tensor<2xf32>
  }
  func.func @hyper(%h: tensor<7xf32> {attn.hyper}) -> tensor<7xf32> {
    return %h : tensor<7xf32>
  }
}
