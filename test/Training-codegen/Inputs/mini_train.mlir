// A hand-written training module in the form the autodiff pass produces:
// `loss_grad` writes the gradient buffer, `train_step` reads the run-time
// hyperparameters, clips by the global norm and runs AdamW on every
// parameter, updating the parameters and both moments in place.
// "Gradients" are simple functions of the parameters and the input (2 w x
// and b + 1), so that NumPy can recompute every step exactly.

module attributes {attn.model = "mini"} {
  attn.param @w : tensor<3x5xf32> init normal [0.0, 1.0]
  attn.param @b : tensor<7xf32> init zeros []
  attn.param @s : tensor<f32> init ones []
  attn.train loss @loss optimizer adamw {beta2 = 9.900000e-01 : f64, lr = 2.000000e-02 : f64} schedule cosine {steps = 100 : i64, warmup = 10 : i64} clip_norm 1.000000e+00

  func.func @loss(%x: tensor<3x5xf32> {attn.name = "x"}) -> tensor<f32> {
    %w = attn.get_param @w : tensor<3x5xf32>
    %0 = attn.global_norm %w, %x : tensor<3x5xf32>, tensor<3x5xf32>
    return %0 : tensor<f32>
  }

  func.func @loss_grad(%x: tensor<3x5xf32> {attn.name = "x"}, %seed: tensor<i64> {attn.seed}) -> tensor<f32> {
    %w = attn.get_param @w : tensor<3x5xf32>
    %b = attn.get_param @b : tensor<7xf32>
    %s = attn.get_param @s : tensor<f32>
    %gw0 = attn.mul %w, %x : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
    %gw = attn.add %gw0, %gw0 : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
    %one = arith.constant dense<1.0> : tensor<f32>
    %gb = attn.add %b, %one : (tensor<7xf32>, tensor<f32>) -> tensor<7xf32>
    %gs = attn.mul %s, %s : (tensor<f32>, tensor<f32>) -> tensor<f32>
    attn.set_param @w grad, %gw : tensor<3x5xf32>
    attn.set_param @b grad, %gb : tensor<7xf32>
    attn.set_param @s grad, %gs : tensor<f32>
    %n = attn.global_norm %w, %x : tensor<3x5xf32>, tensor<3x5xf32>
    return %n : tensor<f32>
  }

  func.func @train_step(%x: tensor<3x5xf32> {attn.name = "x"}, %hyper: tensor<7xf32> {attn.hyper}, %seed: tensor<i64> {attn.seed}) -> (tensor<f32>, tensor<f32>) {
    %w = attn.get_param @w : tensor<3x5xf32>
    %b = attn.get_param @b : tensor<7xf32>
    %s = attn.get_param @s : tensor<f32>
    %gw0 = attn.mul %w, %x : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
    %gw1 = attn.add %gw0, %gw0 : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
    %one = arith.constant dense<1.0> : tensor<f32>
    %gb1 = attn.add %b, %one : (tensor<7xf32>, tensor<f32>) -> tensor<7xf32>
    %gs1 = attn.mul %s, %s : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %norm = attn.global_norm %gw1, %gb1, %gs1 : tensor<3x5xf32>, tensor<7xf32>, tensor<f32>
    %l = attn.global_norm %w, %x : tensor<3x5xf32>, tensor<3x5xf32>
    // Clip: g * min(1, clip / (norm + 1e-6)) when clip > 0.
    %h = attn.reshape %hyper : tensor<7xf32> -> tensor<7x1xf32>
    %lr1 = attn.slice %h axis 0 [0, 1] : (tensor<7x1xf32>) -> tensor<1x1xf32>
    %lr = attn.reshape %lr1 : tensor<1x1xf32> -> tensor<f32>
    %b11 = attn.slice %h axis 0 [1, 2] : (tensor<7x1xf32>) -> tensor<1x1xf32>
    %b1 = attn.reshape %b11 : tensor<1x1xf32> -> tensor<f32>
    %b21 = attn.slice %h axis 0 [2, 3] : (tensor<7x1xf32>) -> tensor<1x1xf32>
    %b2 = attn.reshape %b21 : tensor<1x1xf32> -> tensor<f32>
    %eps1 = attn.slice %h axis 0 [3, 4] : (tensor<7x1xf32>) -> tensor<1x1xf32>
    %eps = attn.reshape %eps1 : tensor<1x1xf32> -> tensor<f32>
    %wd1 = attn.slice %h axis 0 [4, 5] : (tensor<7x1xf32>) -> tensor<1x1xf32>
    %wd = attn.reshape %wd1 : tensor<1x1xf32> -> tensor<f32>
    %clip1 = attn.slice %h axis 0 [5, 6] : (tensor<7x1xf32>) -> tensor<1x1xf32>
    %clip = attn.reshape %clip1 : tensor<1x1xf32> -> tensor<f32>
    %step1 = attn.slice %h axis 0 [6, 7] : (tensor<7x1xf32>) -> tensor<1x1xf32>
    %step = attn.reshape %step1 : tensor<1x1xf32> -> tensor<f32>
    %tiny = arith.constant dense<1.0e-06> : tensor<f32>
    %zero = arith.constant dense<0.0> : tensor<f32>
    %den = attn.add %norm, %tiny : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %ratio = attn.div %clip, %den : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %small = attn.compare lt, %ratio, %one : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %on = attn.compare gt, %clip, %zero : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %r1 = attn.select %small, %ratio, %one : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
    %factor = attn.select %on, %r1, %one : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
    %gw = attn.mul %gw1, %factor : (tensor<3x5xf32>, tensor<f32>) -> tensor<3x5xf32>
    %gb = attn.mul %gb1, %factor : (tensor<7xf32>, tensor<f32>) -> tensor<7xf32>
    %gs = attn.mul %gs1, %factor : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %mw = attn.get_param @w first_moment : tensor<3x5xf32>
    %vw = attn.get_param @w second_moment : tensor<3x5xf32>
    %w1, %mw1, %vw1 = attn.adam_update %w, %gw, %mw, %vw, %lr, %step, %b1, %b2, %eps, %wd decoupled : (tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>)
    attn.set_param @w value, %w1 : tensor<3x5xf32>
    attn.set_param @w first_moment, %mw1 : tensor<3x5xf32>
    attn.set_param @w second_moment, %vw1 : tensor<3x5xf32>
    %mb = attn.get_param @b first_moment : tensor<7xf32>
    %vb = attn.get_param @b second_moment : tensor<7xf32>
    %bb1, %mb1, %vb1 = attn.adam_update %b, %gb, %mb, %vb, %lr, %step, %b1, %b2, %eps, %wd decoupled : (tensor<7xf32>, tensor<7xf32>, tensor<7xf32>, tensor<7xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<7xf32>, tensor<7xf32>, tensor<7xf32>)
    attn.set_param @b value, %bb1 : tensor<7xf32>
    attn.set_param @b first_moment, %mb1 : tensor<7xf32>
    attn.set_param @b second_moment, %vb1 : tensor<7xf32>
    %ms = attn.get_param @s first_moment : tensor<f32>
    %vs = attn.get_param @s second_moment : tensor<f32>
    %s1, %ms1, %vs1 = attn.adam_update %s, %gs, %ms, %vs, %lr, %step, %b1, %b2, %eps, %wd decoupled : (tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<f32>)
    attn.set_param @s value, %s1 : tensor<f32>
    attn.set_param @s first_moment, %ms1 : tensor<f32>
    attn.set_param @s second_moment, %vs1 : tensor<f32>
    return %l, %norm : tensor<f32>, tensor<f32>
  }
}
