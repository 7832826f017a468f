module {
  attn.param @w : tensor<4xf32> init normal [0.0, 1.0]
  attn.train loss @loss optimizer adam {} schedule constant {} clip_norm 0.0
  func.func @loss() -> tensor<f32> {
    %w = attn.get_param @w : tensor<4xf32>
    %d = attn.dropout %w rate 1.000000e-01 : tensor<4xf32>
    %l = attn.reduce sum %d axis 0 : (tensor<4xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}
