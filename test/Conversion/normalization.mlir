// RUN: attnc-opt %s --convert-attn-to-linalg | FileCheck %s --implicit-check-not=attn.

// layer_norm: mean, then the biased variance of x - mean (two passes, not
// E[x^2] - E[x]^2), then (x - mean) * rsqrt(var + eps) * weight + bias.
// softmax and cross_entropy subtract the row max before exp.

// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x32xf32>, %[[W:[^:]+]]: tensor<32xf32>, %[[B:[^:]+]]: tensor<32xf32>)
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[X]] :
// CHECK: %[[MEAN:.*]] = linalg.generic {{.*}} ins(%[[SUM]] :
// CHECK: arith.divf
// CHECK: %[[SQ:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[MEAN]] :
// CHECK: %[[D:.*]] = arith.subf
// CHECK: arith.mulf %[[D]], %[[D]]
// CHECK: %[[SSQ:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[SQ]] :
// CHECK: %[[VAR:.*]] = linalg.generic {{.*}} ins(%[[SSQ]] :
// CHECK: linalg.generic {{.*}} ins(%[[X]], %[[MEAN]], %[[VAR]], %[[W]], %[[B]] :
// CHECK: %[[EPS:.*]] = arith.constant 9.99999974E-6 : f32
// CHECK: %[[VE:.*]] = arith.addf %{{.*}}, %[[EPS]] : f32
// CHECK: math.rsqrt %[[VE]] : f32
func.func @layer_norm(%x: tensor<?x?x32xf32>, %w: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<?x?x32xf32> {
  %0 = attn.layer_norm %x, %w, %b eps 1.0e-05 : (tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x32xf32>)
// CHECK: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[NEGINF]] : f32)
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<?x?x32xf32>) outs(%[[INIT]] :
// CHECK: arith.maximumf
// CHECK: %[[EXP:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[MAX]] :
// CHECK: arith.subf
// CHECK: math.exp
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[EXP]] :
// CHECK: linalg.generic {{.*}} ins(%[[EXP]], %[[SUM]] :
// CHECK: arith.divf
func.func @softmax(%x: tensor<?x?x32xf32>) -> tensor<?x?x32xf32> {
  %0 = attn.softmax %x axis 2 : tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// CHECK-LABEL: func.func @cross_entropy
// CHECK-SAME: (%[[L:[^:]+]]: tensor<?x?x256xf32>, %[[T:[^:]+]]: tensor<?x?xi32>) -> tensor<f32>
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}} ins(%[[L]] :
// CHECK: arith.maximumf
// CHECK: linalg.generic {{.*}} ins(%[[L]], %[[MAX]] :
// CHECK: math.exp
// CHECK: math.log
// CHECK: return %{{.*}} : tensor<f32>
func.func @cross_entropy(%l: tensor<?x?x256xf32>, %t: tensor<?x?xi32>) -> tensor<f32> {
  %0 = attn.cross_entropy %l, %t ignore_index 0 label_smoothing 0.1 : (tensor<?x?x256xf32>, tensor<?x?xi32>) -> tensor<f32>
  return %0 : tensor<f32>
}
