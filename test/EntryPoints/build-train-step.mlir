// RUN: attnc-opt %s --split-input-file --attn-build-train-step | FileCheck %s

// Tests that train_step is built around an existing gradient entry point:
// the loss's arguments, then the hyperparameters and the seed; the call of
// loss_grad; Adam (not decoupled) with one update per parameter when the
// parameters are not all f32, the scale cast to each one's element type.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[T:.*]]: tensor<2xi32> {attn.name = "t"}, %[[H:.*]]: tensor<7xf32> {attn.hyper}, %[[SEED:.*]]: tensor<i64> {attn.seed}) -> (tensor<f32>, tensor<f32>)
// CHECK-NEXT: %[[L:.*]] = call @loss_grad(%[[T]], %[[SEED]])
// CHECK-DAG: %[[GW:.*]] = attn.get_param @w grad : tensor<4xbf16>
// CHECK-DAG: %[[GB:.*]] = attn.get_param @b grad : tensor<4xf32>
// CHECK: %[[N:.*]] = attn.global_norm %[[GW]], %[[GB]]
// CHECK: attn.cast %{{.*}} : tensor<f32> to tensor<bf16>
// CHECK: attn.adam_update
// CHECK-NOT: decoupled
// CHECK: attn.set_param @w value
// CHECK: attn.adam_update
// CHECK: attn.set_param @b value
// CHECK: return %[[L]], %[[N]]
module {
  attn.param @w : tensor<4xbf16> init zeros []
  attn.param @b : tensor<4xf32> init zeros []
  attn.train loss @loss optimizer adam {} schedule constant {} clip_norm 0.0
  func.func @loss(%t: tensor<2xi32> {attn.name = "t"}) -> tensor<f32> {
    %0 = arith.constant dense<0.0> : tensor<f32>
    return %0 : tensor<f32>
  }
  func.func @loss_grad(%t: tensor<2xi32> {attn.name = "t"}, %seed: tensor<i64> {attn.seed}) -> tensor<f32> {
    %0 = arith.constant dense<0.0> : tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

// Tests that a module without a gradient entry point is left unchanged.
// CHECK-LABEL: func.func @loss
// CHECK-NOT: train_step
module {
  attn.param @w : tensor<4xf32> init zeros []
  attn.train loss @loss optimizer adam {} schedule constant {} clip_norm 0.0
  func.func @loss() -> tensor<f32> {
    %0 = arith.constant dense<0.0> : tensor<f32>
    return %0 : tensor<f32>
  }
}
