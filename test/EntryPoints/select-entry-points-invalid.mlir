// RUN: attnc-opt %s --verify-diagnostics --attn-select-entry-points="entries=train_step"

// Tests that a name that is not an entry point is an error listing those
// there are (a private function is not one).
// expected-error @below {{the model has no entry point 'train_step'; it has forward}}
module {
  func.func @forward(%x: tensor<f32>) -> tensor<f32> {
    return %x : tensor<f32>
  }
  func.func private @helper(%x: tensor<f32>) -> tensor<f32> {
    return %x : tensor<f32>
  }
}
