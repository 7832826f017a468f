// RUN: attnc-opt %s --attn-select-entry-points="entries=train_step" | FileCheck %s
// RUN: attnc-opt %s --attn-select-entry-points | FileCheck %s --check-prefix=ALL

// Tests that an entry point asked for stays with the entry points it calls,
// directly or not (train_step calls loss_grad, which calls loss), that one
// nothing calls is erased and that one still called becomes private;
// without entries the module is unchanged.
// CHECK-LABEL: func.func private @embed(
// CHECK-NOT: func.func @forward
// CHECK-LABEL: func.func @loss(
// CHECK-LABEL: func.func @loss_grad(
// CHECK-LABEL: func.func @train_step(
// CHECK: call @loss_grad
// ALL-LABEL: func.func @embed(
// ALL-LABEL: func.func @forward(
// ALL-LABEL: func.func @loss(
// ALL-LABEL: func.func @loss_grad(
// ALL-LABEL: func.func @train_step(
module {
  func.func @embed(%x: tensor<f32>) -> tensor<f32> {
    return %x : tensor<f32>
  }
  func.func @forward(%x: tensor<f32>) -> tensor<f32> {
    %0 = call @embed(%x) : (tensor<f32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
  func.func @loss(%x: tensor<f32>) -> tensor<f32> {
    return %x : tensor<f32>
  }
  func.func @loss_grad(%x: tensor<f32>) -> tensor<f32> {
    %0 = call @loss(%x) : (tensor<f32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
  func.func @train_step(%x: tensor<f32>) -> tensor<f32> {
    %0 = call @loss_grad(%x) : (tensor<f32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}
