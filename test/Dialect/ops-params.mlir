// RUN: attnc-opt %s | attnc-opt | FileCheck %s
// RUN: attnc-opt %s --mlir-print-op-generic | attnc-opt | FileCheck %s

// Round trips of the parameter table, the training configuration and
// attn.dim.

// Tests that a parameter with a dotted name and a normal initialiser prints
// its arguments as f64 values.
// CHECK: attn.param @h.0.attn.in_proj_weight : tensor<576x192xf32> init normal [0.000000e+00, 2.000000e-02]
attn.param @"h.0.attn.in_proj_weight" : tensor<576x192xf32> init normal [0.0, 0.02]

// Tests that a symbol that is not a bare identifier stays quoted.
// CHECK: attn.param @"0.bias" : tensor<192xf32> init zeros []
attn.param @"0.bias" : tensor<192xf32> init zeros []

// Tests the ones initialiser on a bf16 parameter.
// CHECK: attn.param @ln.weight : tensor<192xbf16> init ones []
attn.param @ln.weight : tensor<192xbf16> init ones []

// Tests the uniform initialiser with a negative lower bound.
// CHECK: attn.param @u : tensor<4x4xf32> init uniform [-1.000000e-01, 1.000000e-01]
attn.param @u : tensor<4x4xf32> init uniform [-0.1, 0.1]

// Tests the xavier_uniform initialiser on a rank-3 parameter.
// CHECK: attn.param @x3 : tensor<2x4x8xf16> init xavier_uniform [1.000000e+00]
attn.param @x3 : tensor<2x4x8xf16> init xavier_uniform [1.0]

// Tests that a parameter of rank 0 is allowed.
// CHECK: attn.param @temperature : tensor<f32> init ones []
attn.param @temperature : tensor<f32> init ones []

// CHECK-LABEL: func.func @get_param
// CHECK: %[[W:.*]] = attn.get_param @h.0.attn.in_proj_weight : tensor<576x192xf32>
// CHECK: %[[B:.*]] = attn.get_param @"0.bias" : tensor<192xf32>
// CHECK: return %[[W]], %[[B]] : tensor<576x192xf32>, tensor<192xf32>
// Tests that get_param reads parameters by plain and by quoted symbol.
func.func @get_param() -> (tensor<576x192xf32>, tensor<192xf32>) {
  %w = attn.get_param @"h.0.attn.in_proj_weight" : tensor<576x192xf32>
  %b = attn.get_param @"0.bias" : tensor<192xf32>
  return %w, %b : tensor<576x192xf32>, tensor<192xf32>
}

// CHECK-LABEL: func.func @loss
// Tests that a function returning tensor<f32> can be named as the loss.
func.func @loss(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}

// Tests adamw with a cosine schedule and every optimizer key.
// CHECK: attn.train loss @loss optimizer adamw {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, eps = 1.000000e-08 : f64, lr = 1.000000e-03 : f64, weight_decay = 1.000000e-01 : f64} schedule cosine {steps = 5000 : i64, warmup = 100 : i64} clip_norm 1.000000e+00
attn.train loss @loss optimizer adamw {lr = 1.0e-03 : f64, beta1 = 0.9 : f64, beta2 = 0.95 : f64, eps = 1.0e-08 : f64, weight_decay = 0.1 : f64} schedule cosine {warmup = 100 : i64, steps = 5000 : i64} clip_norm 1.0

// Tests adam with no hyperparameters, a constant schedule and clipping
// disabled.
// CHECK: attn.train loss @loss optimizer adam {} schedule constant {} clip_norm 0.000000e+00
attn.train loss @loss optimizer adam {} schedule constant {} clip_norm 0.0

// Tests the warmup_rsqrt schedule with integer and float hyperparameters.
// CHECK: attn.train loss @loss optimizer adam {lr = 1 : i64} schedule warmup_rsqrt {d_model = 5.120000e+02 : f64, warmup = 4000 : i64} clip_norm 5.000000e-01
attn.train loss @loss optimizer adam {lr = 1 : i64} schedule warmup_rsqrt {warmup = 4000 : i64, d_model = 512.0 : f64} clip_norm 0.5

// CHECK-LABEL: func.func @dim
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?xi32>)
// CHECK: %[[D0:.*]] = attn.dim %[[X]], 0 : tensor<?x?xi32>
// CHECK: %[[D1:.*]] = attn.dim %[[X]], 1 : tensor<?x?xi32>
// CHECK: return %[[D0]], %[[D1]] : index, index
// Tests dim on the dynamic dimensions of an integer tensor.
func.func @dim(%x: tensor<?x?xi32>) -> (index, index) {
  %b = attn.dim %x, 0 : tensor<?x?xi32>
  %t = attn.dim %x, 1 : tensor<?x?xi32>
  return %b, %t : index, index
}

// CHECK-LABEL: func.func @dim_static
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x3xi1>)
// CHECK: %[[D:.*]] = attn.dim %[[X]], 1 : tensor<2x3xi1>
// CHECK: return %[[D]] : index
// Tests that dim of a static dimension prints unfolded without -canonicalize.
func.func @dim_static(%x: tensor<2x3xi1>) -> index {
  %d = attn.dim %x, 1 : tensor<2x3xi1>
  return %d : index
}
