// RUN: attnc-opt %s --attn-math-approximation | FileCheck %s

// exp, tanh and erf on f32 vectors (and scalars) become polynomials: plain
// arithmetic that stays vectorised, no libm call per element.

// CHECK-LABEL: func.func @activations
// CHECK-NOT:     math.exp
// CHECK-NOT:     math.tanh
// CHECK-NOT:     math.erf
// CHECK:         math.fma {{.*}} : vector<16xf32>
// CHECK:         return
func.func @activations(%x: vector<16xf32>, %s: f32) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, f32) {
  %0 = math.exp %x : vector<16xf32>
  %1 = math.tanh %x : vector<16xf32>
  %2 = math.erf %x : vector<16xf32>
  %3 = math.exp %s : f32
  return %0, %1, %2, %3 : vector<16xf32>, vector<16xf32>, vector<16xf32>, f32
}
