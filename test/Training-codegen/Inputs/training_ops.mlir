// Every training op of the attn dialect, one function per op family, with
// named arguments and symbolic dims so that `attnc build` makes a binary
// whose `forward --fn NAME` runs it, and `attn-ref` runs the same IR.

func.func @activations(%x: tensor<?x37xf32> {attn.name = "x", attn.dims = ["N", ""]}, %dy: tensor<?x37xf32> {attn.name = "dy", attn.dims = ["N", ""]}) -> (tensor<?x37xf32>, tensor<?x37xf32>, tensor<?x37xf32>, tensor<?x37xf32>, tensor<?x37xf32>, tensor<?x37xf32>) {
  %0 = attn.activation_grad relu %x, %dy : tensor<?x37xf32>
  %1 = attn.activation_grad gelu %x, %dy : tensor<?x37xf32>
  %2 = attn.activation_grad gelu_tanh %x, %dy : tensor<?x37xf32>
  %3 = attn.activation_grad silu %x, %dy : tensor<?x37xf32>
  %4 = attn.activation_grad tanh %x, %dy : tensor<?x37xf32>
  %5 = attn.activation_grad sigmoid %x, %dy : tensor<?x37xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<?x37xf32>, tensor<?x37xf32>, tensor<?x37xf32>, tensor<?x37xf32>, tensor<?x37xf32>, tensor<?x37xf32>
}

func.func @softmaxes(%x: tensor<?x3x37xf32> {attn.name = "x", attn.dims = ["N", "", ""]}, %dy: tensor<?x3x37xf32> {attn.name = "dy", attn.dims = ["N", "", ""]}) -> (tensor<?x3x37xf32>, tensor<?x3x37xf32>, tensor<?x3x37xf32>) {
  %y = attn.softmax %x axis 2 : tensor<?x3x37xf32>
  %0 = attn.softmax_grad %y, %dy axis 2 : tensor<?x3x37xf32>
  %ly = attn.log_softmax %x axis 2 : tensor<?x3x37xf32>
  %1 = attn.log_softmax_grad %ly, %dy axis 2 : tensor<?x3x37xf32>
  %y1 = attn.softmax %x axis 1 : tensor<?x3x37xf32>
  %2 = attn.softmax_grad %y1, %dy axis 1 : tensor<?x3x37xf32>
  return %0, %1, %2 : tensor<?x3x37xf32>, tensor<?x3x37xf32>, tensor<?x3x37xf32>
}

func.func @norms(%x: tensor<?x?x48xf32> {attn.name = "x", attn.dims = ["B", "T", ""]}, %w: tensor<48xf32> {attn.name = "w"}, %dy: tensor<?x?x48xf32> {attn.name = "dy", attn.dims = ["B", "T", ""]}) -> (tensor<?x?x48xf32>, tensor<48xf32>, tensor<48xf32>, tensor<?x?x48xf32>, tensor<48xf32>) {
  %dx, %dw, %db = attn.layer_norm_grad %x, %w, %dy eps 1.000000e-05 : (tensor<?x?x48xf32>, tensor<48xf32>, tensor<?x?x48xf32>) -> (tensor<?x?x48xf32>, tensor<48xf32>, tensor<48xf32>)
  %rx, %rw = attn.rms_norm_grad %x, %w, %dy eps 9.9999999999999995E-7 : (tensor<?x?x48xf32>, tensor<48xf32>, tensor<?x?x48xf32>) -> (tensor<?x?x48xf32>, tensor<48xf32>)
  return %dx, %dw, %db, %rx, %rw : tensor<?x?x48xf32>, tensor<48xf32>, tensor<48xf32>, tensor<?x?x48xf32>, tensor<48xf32>
}

func.func @cross_entropy(%logits: tensor<?x?x37xf32> {attn.name = "logits", attn.dims = ["B", "T", ""]}, %t: tensor<?x?xi32> {attn.name = "targets", attn.dims = ["B", "T"]}, %g: tensor<f32> {attn.name = "g"}) -> (tensor<?x?x37xf32>, tensor<?x?x37xf32>, tensor<?x?x37xf32>) {
  %0 = attn.cross_entropy_grad %logits, %t, %g : (tensor<?x?x37xf32>, tensor<?x?xi32>, tensor<f32>) -> tensor<?x?x37xf32>
  %1 = attn.cross_entropy_grad %logits, %t, %g ignore_index 0 label_smoothing 1.000000e-01 : (tensor<?x?x37xf32>, tensor<?x?xi32>, tensor<f32>) -> tensor<?x?x37xf32>
  // An ignore_index no target has, with more smoothing.
  %2 = attn.cross_entropy_grad %logits, %t, %g ignore_index 1000 label_smoothing 2.000000e-01 : (tensor<?x?x37xf32>, tensor<?x?xi32>, tensor<f32>) -> tensor<?x?x37xf32>
  return %0, %1, %2 : tensor<?x?x37xf32>, tensor<?x?x37xf32>, tensor<?x?x37xf32>
}

func.func @gather_grad(%ids: tensor<?x?xi32> {attn.name = "ids", attn.dims = ["B", "T"]}, %dx: tensor<?x?x40xf32> {attn.name = "dx", attn.dims = ["B", "T", ""]}) -> tensor<6x40xf32> {
  %0 = attn.gather_grad %ids, %dx : (tensor<?x?xi32>, tensor<?x?x40xf32>) -> tensor<6x40xf32>
  return %0 : tensor<6x40xf32>
}

func.func @global_norm(%a: tensor<?x37xf32> {attn.name = "a", attn.dims = ["N", ""]}, %b: tensor<5xf32> {attn.name = "b"}, %c: tensor<f32> {attn.name = "c"}) -> tensor<f32> {
  %0 = attn.global_norm %a, %b, %c : tensor<?x37xf32>, tensor<5xf32>, tensor<f32>
  return %0 : tensor<f32>
}

func.func @adam(%p: tensor<?x33xf32> {attn.name = "p", attn.dims = ["N", ""]}, %g: tensor<?x33xf32> {attn.name = "g", attn.dims = ["N", ""]}, %m: tensor<?x33xf32> {attn.name = "m", attn.dims = ["N", ""]}, %v: tensor<?x33xf32> {attn.name = "v", attn.dims = ["N", ""]}, %lr: tensor<f32> {attn.name = "lr"}, %step: tensor<f32> {attn.name = "step"}, %b1: tensor<f32> {attn.name = "b1"}, %b2: tensor<f32> {attn.name = "b2"}, %eps: tensor<f32> {attn.name = "eps"}, %wd: tensor<f32> {attn.name = "wd"}) -> (tensor<?x33xf32>, tensor<?x33xf32>, tensor<?x33xf32>, tensor<?x33xf32>, tensor<?x33xf32>, tensor<?x33xf32>) {
  %v2 = attn.mul %v, %v : (tensor<?x33xf32>, tensor<?x33xf32>) -> tensor<?x33xf32>
  %p1, %m1, %v1 = attn.adam_update %p, %g, %m, %v2, %lr, %step, %b1, %b2, %eps, %wd : (tensor<?x33xf32>, tensor<?x33xf32>, tensor<?x33xf32>, tensor<?x33xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<?x33xf32>, tensor<?x33xf32>, tensor<?x33xf32>)
  %p2, %m2, %w2 = attn.adam_update %p, %g, %m, %v2, %lr, %step, %b1, %b2, %eps, %wd decoupled : (tensor<?x33xf32>, tensor<?x33xf32>, tensor<?x33xf32>, tensor<?x33xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<?x33xf32>, tensor<?x33xf32>, tensor<?x33xf32>)
  return %p1, %m1, %v1, %p2, %m2, %w2 : tensor<?x33xf32>, tensor<?x33xf32>, tensor<?x33xf32>, tensor<?x33xf32>, tensor<?x33xf32>, tensor<?x33xf32>
}

func.func @attention_causal(%q: tensor<?x2x?x16xf32> {attn.name = "q", attn.dims = ["B", "", "T", ""]}, %k: tensor<?x2x?x16xf32> {attn.name = "k", attn.dims = ["B", "", "S", ""]}, %v: tensor<?x2x?x16xf32> {attn.name = "v", attn.dims = ["B", "", "S", ""]}, %do: tensor<?x2x?x16xf32> {attn.name = "do", attn.dims = ["B", "", "T", ""]}) -> (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) {
  %o = attn.sdpa %q, %k, %v mask causal : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
  %dq, %dk, %dv = attn.sdpa_grad %q, %k, %v, %o, %do mask causal : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>)
  return %dq, %dk, %dv : tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>
}

func.func @attention_padding(%q: tensor<?x2x?x16xf32> {attn.name = "q", attn.dims = ["B", "", "T", ""]}, %k: tensor<?x2x?x16xf32> {attn.name = "k", attn.dims = ["B", "", "S", ""]}, %v: tensor<?x2x?x8xf32> {attn.name = "v", attn.dims = ["B", "", "S", ""]}, %do: tensor<?x2x?x8xf32> {attn.name = "do", attn.dims = ["B", "", "T", ""]}, %pad: tensor<?x?xi1> {attn.name = "pad", attn.dims = ["B", "S"]}) -> (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x8xf32>) {
  %o = attn.sdpa %q, %k, %v key_padding %pad scale 3.000000e-01 : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x8xf32>, tensor<?x?xi1>) -> tensor<?x2x?x8xf32>
  %dq, %dk, %dv = attn.sdpa_grad %q, %k, %v, %o, %do key_padding %pad scale 3.000000e-01 : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x?xi1>) -> (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x8xf32>)
  return %dq, %dk, %dv : tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x8xf32>
}

// sdpa's logsumexp result, with fully padded rows (0) and causal rows.
func.func @attention_logsumexp(%q: tensor<?x2x?x16xf32> {attn.name = "q", attn.dims = ["B", "", "T", ""]}, %k: tensor<?x2x?x16xf32> {attn.name = "k", attn.dims = ["B", "", "S", ""]}, %v: tensor<?x2x?x8xf32> {attn.name = "v", attn.dims = ["B", "", "S", ""]}, %pad: tensor<?x?xi1> {attn.name = "pad", attn.dims = ["B", "S"]}) -> (tensor<?x2x?x8xf32>, tensor<?x2x?xf32>) {
  %o, %lse = attn.sdpa %q, %k, %v key_padding %pad mask causal logsumexp : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x8xf32>, tensor<?x?xi1>) -> (tensor<?x2x?x8xf32>, tensor<?x2x?xf32>)
  return %o, %lse : tensor<?x2x?x8xf32>, tensor<?x2x?xf32>
}

// attn-share-attention-stats gives an sdpa_grad its forward's logsumexp only
// when both ops have the same attributes. Here sdpa states the default scale
// 1/sqrt(16) and sdpa_grad leaves it implicit, so the backward recomputes
// the statistics itself: its other path.
func.func @attention_recomputed_stats(%q: tensor<?x2x?x16xf32> {attn.name = "q", attn.dims = ["B", "", "T", ""]}, %k: tensor<?x2x?x16xf32> {attn.name = "k", attn.dims = ["B", "", "S", ""]}, %v: tensor<?x2x?x16xf32> {attn.name = "v", attn.dims = ["B", "", "S", ""]}, %do: tensor<?x2x?x16xf32> {attn.name = "do", attn.dims = ["B", "", "T", ""]}, %pad: tensor<?x?xi1> {attn.name = "pad", attn.dims = ["B", "S"]}) -> (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) {
  %o = attn.sdpa %q, %k, %v key_padding %pad mask causal scale 2.500000e-01 : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x?xi1>) -> tensor<?x2x?x16xf32>
  %dq, %dk, %dv = attn.sdpa_grad %q, %k, %v, %o, %do key_padding %pad mask causal : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x?xi1>) -> (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>)
  return %dq, %dk, %dv : tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>
}

func.func @attention_causal_padding(%q: tensor<?x2x?x16xf32> {attn.name = "q", attn.dims = ["B", "", "T", ""]}, %k: tensor<?x2x?x16xf32> {attn.name = "k", attn.dims = ["B", "", "S", ""]}, %v: tensor<?x2x?x16xf32> {attn.name = "v", attn.dims = ["B", "", "S", ""]}, %do: tensor<?x2x?x16xf32> {attn.name = "do", attn.dims = ["B", "", "T", ""]}, %pad: tensor<?x?xi1> {attn.name = "pad", attn.dims = ["B", "S"]}) -> (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) {
  %o = attn.sdpa %q, %k, %v key_padding %pad mask causal : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x?xi1>) -> tensor<?x2x?x16xf32>
  %dq, %dk, %dv = attn.sdpa_grad %q, %k, %v, %o, %do key_padding %pad mask causal : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x?xi1>) -> (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>)
  return %dq, %dk, %dv : tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>
}

// Grouped-query attention: 4 query heads read 2 key/value heads (the
// forward's logsumexp shared with the backward).
func.func @attention_grouped(%q: tensor<?x4x?x16xf32> {attn.name = "q", attn.dims = ["B", "", "T", ""]}, %k: tensor<?x2x?x16xf32> {attn.name = "k", attn.dims = ["B", "", "S", ""]}, %v: tensor<?x2x?x16xf32> {attn.name = "v", attn.dims = ["B", "", "S", ""]}, %do: tensor<?x4x?x16xf32> {attn.name = "do", attn.dims = ["B", "", "T", ""]}) -> (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) {
  %o = attn.sdpa %q, %k, %v mask causal : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32>
  %dq, %dk, %dv = attn.sdpa_grad %q, %k, %v, %o, %do mask causal : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) -> (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>)
  return %o, %dq, %dk, %dv : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>
}

// Groups of 3 query heads, key padding, Dv != D, and statistics the
// backward recomputes (the scales are spelled differently).
func.func @attention_grouped_padding(%q: tensor<?x6x?x16xf32> {attn.name = "q", attn.dims = ["B", "", "T", ""]}, %k: tensor<?x2x?x16xf32> {attn.name = "k", attn.dims = ["B", "", "S", ""]}, %v: tensor<?x2x?x8xf32> {attn.name = "v", attn.dims = ["B", "", "S", ""]}, %do: tensor<?x6x?x8xf32> {attn.name = "do", attn.dims = ["B", "", "T", ""]}, %pad: tensor<?x?xi1> {attn.name = "pad", attn.dims = ["B", "S"]}) -> (tensor<?x6x?x8xf32>, tensor<?x6x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x8xf32>) {
  %o = attn.sdpa %q, %k, %v key_padding %pad mask causal scale 2.500000e-01 : (tensor<?x6x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x8xf32>, tensor<?x?xi1>) -> tensor<?x6x?x8xf32>
  %dq, %dk, %dv = attn.sdpa_grad %q, %k, %v, %o, %do key_padding %pad mask causal : (tensor<?x6x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x8xf32>, tensor<?x6x?x8xf32>, tensor<?x6x?x8xf32>, tensor<?x?xi1>) -> (tensor<?x6x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x8xf32>)
  return %o, %dq, %dk, %dv : tensor<?x6x?x8xf32>, tensor<?x6x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x8xf32>
}
