// RUN: attnc-opt --attn-autodiff --attn-build-train-step --split-input-file --verify-diagnostics %s | FileCheck %s

// Tests that every dropout of the loss gets the seed and a stream of its own
// in <loss>_grad, that the adjoint of a dropout is the same dropout (same
// seed, same stream), that every parameter gets a gradient (zeros for one
// the loss does not read), and that the loss itself is left unchanged.
// CHECK-LABEL: func.func @loss()
// CHECK: attn.dropout %{{.*}} rate 5.000000e-01 :
// CHECK-NOT: seed
// CHECK: return
// CHECK-LABEL: func.func @loss_grad
// CHECK-SAME: (%[[SEED:[^:]*]]: tensor<i64> {attn.seed}, %{{[^:]*}}: tensor<i64> {attn.dropout_row}) -> tensor<f32>
// CHECK: %[[X:.*]] = attn.get_param @x
// CHECK: %[[D0:.*]] = attn.dropout %[[X]] rate 5.000000e-01 seed %[[SEED]] stream 0
// CHECK: %[[T:.*]] = attn.tanh %[[D0]]
// CHECK: attn.dropout %[[T]] rate 2.500000e-01 seed %[[SEED]] stream 1
// CHECK: %[[G1:.*]] = attn.dropout %{{.*}} rate 2.500000e-01 seed %[[SEED]] stream 1
// CHECK: %[[G2:.*]] = attn.activation_grad tanh %[[D0]], %[[G1]]
// CHECK: %[[G3:.*]] = attn.dropout %[[G2]] rate 5.000000e-01 seed %[[SEED]] stream 0
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<3xf32>
// CHECK: attn.set_param @x grad, %[[G3]]
// CHECK: attn.set_param @unused grad, %[[ZERO]]
// CHECK: return
// CHECK-LABEL: func.func @train_step
module {
  attn.param @x : tensor<4x8xf32> init normal [0.0, 1.0]
  attn.param @unused : tensor<3xf32> init zeros []
  attn.train loss @loss optimizer adam {} schedule constant {} clip_norm 0.0
  func.func @loss() -> tensor<f32> {
    %x = attn.get_param @x : tensor<4x8xf32>
    %0 = attn.dropout %x rate 5.000000e-01 : tensor<4x8xf32>
    %1 = attn.tanh %0 : tensor<4x8xf32>
    %2 = attn.dropout %1 rate 2.500000e-01 : tensor<4x8xf32>
    %s = attn.reduce sum %2 axis 0 : (tensor<4x8xf32>) -> tensor<8xf32>
    %l = attn.reduce sum %s axis 0 : (tensor<8xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Tests train_step: the loss's arguments then the hyperparameters, the
// seed and the dropout row; first a call of loss_grad with the loss's
// arguments, the seed and the row (it stores the gradients), then the norm
// of the stored gradients;
// clipping; the value and moments read before any write of them, one
// adam_update (decoupled for adamw) with the hyperparameters taken from
// attn_hyper_index's slots, and the three writes; the loss and the norm
// returned. Every parameter being f32, the optimizer works on the whole
// flat buffers (4x5 = 20 elements padded to 32). The adjoint of a slice is
// the slice's adjoint padded with zeros.
// CHECK-LABEL: func.func @loss_grad
// CHECK: %[[CE:.*]] = attn.cross_entropy_grad
// CHECK: %[[DW:.*]] = attn.concat %[[CE]], %{{.*}} axis 0
// CHECK: attn.set_param @w grad, %[[DW]]
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[T:[^:]*]]: tensor<2xi32> {attn.name = "t"}, %[[H:[^:]*]]: tensor<7xf32> {attn.hyper}, %[[SEED:[^:]*]]: tensor<i64> {attn.seed}, %[[ROW:[^:]*]]: tensor<i64> {attn.dropout_row}) -> (tensor<f32>, tensor<f32>)
// CHECK-NEXT: %[[L:.*]] = call @loss_grad(%[[T]], %[[SEED]], %[[ROW]]) : (tensor<2xi32>, tensor<i64>, tensor<i64>) -> tensor<f32>
// CHECK-NEXT: %[[GW:.*]] = attn.get_param_buffer grad : tensor<32xf32>
// CHECK-NEXT: %[[N:.*]] = attn.global_norm %[[GW]] :
// CHECK-NOT: attn.cross_entropy
// CHECK: %[[CLIP:.*]] = attn.take %[[H]] axis 0 index 5
// CHECK: attn.div %[[CLIP]]
// CHECK: attn.select
// CHECK: attn.compare gt, %[[CLIP]]
// CHECK: %[[SCALE:.*]] = attn.select
// CHECK-DAG: %[[LR:.*]] = attn.take %[[H]] axis 0 index 0
// CHECK-DAG: %[[STEP:.*]] = attn.take %[[H]] axis 0 index 6
// CHECK-DAG: %[[B1:.*]] = attn.take %[[H]] axis 0 index 1
// CHECK-DAG: %[[B2:.*]] = attn.take %[[H]] axis 0 index 2
// CHECK-DAG: %[[EPS:.*]] = attn.take %[[H]] axis 0 index 3
// CHECK-DAG: %[[WD:.*]] = attn.take %[[H]] axis 0 index 4
// CHECK: %[[G:.*]] = attn.mul %[[GW]], %[[SCALE]]
// CHECK: %[[P:.*]] = attn.get_param_buffer value :
// CHECK: %[[M:.*]] = attn.get_param_buffer first_moment
// CHECK: %[[V:.*]] = attn.get_param_buffer second_moment
// CHECK: %[[NP:.*]], %[[NM:.*]], %[[NV:.*]] = attn.adam_update %[[P]], %[[G]], %[[M]], %[[V]], %[[LR]], %[[STEP]], %[[B1]], %[[B2]], %[[EPS]], %[[WD]] decoupled
// CHECK: attn.set_param_buffer value, %[[NP]]
// CHECK: attn.set_param_buffer first_moment, %[[NM]]
// CHECK: attn.set_param_buffer second_moment, %[[NV]]
// CHECK: return %[[L]], %[[N]]
module {
  attn.param @w : tensor<4x5xf32> init normal [0.0, 1.0]
  attn.train loss @loss optimizer adamw {} schedule constant {} clip_norm 1.0
  func.func @loss(%t: tensor<2xi32> {attn.name = "t"}) -> tensor<f32> {
    %w = attn.get_param @w : tensor<4x5xf32>
    %x = attn.slice %w axis 0 [0, 2] : (tensor<4x5xf32>) -> tensor<2x5xf32>
    %l = attn.cross_entropy %x, %t : (tensor<2x5xf32>, tensor<2xi32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Tests that a parameter read twice (tied embeddings) accumulates both
// adjoints, and that a linear with an activation is split in the forward
// pass into the product and the activation op, so that activation_grad
// reads the pre-activation the forward computed: one product, not a second
// one in the reverse pass.
// CHECK-LABEL: func.func @loss_grad
// CHECK: %[[E:.*]] = attn.get_param @emb : tensor<6x4xf32>
// CHECK: attn.gather %[[E]]
// CHECK: %[[Z:.*]] = attn.linear %{{.*}}, %[[E]] : (tensor<3x4xf32>, tensor<6x4xf32>) -> tensor<3x6xf32>
// CHECK: %[[Y:.*]] = attn.gelu %[[Z]] : tensor<3x6xf32>
// CHECK: attn.cross_entropy %[[Y]]
// CHECK-NOT: attn.linear
// CHECK: attn.activation_grad gelu %[[Z]],
// CHECK: %[[DW:.*]] = attn.matmul {{.*}} -> tensor<6x4xf32>
// CHECK: %[[DG:.*]] = attn.gather_grad
// CHECK: %[[SUM:.*]] = attn.add %[[DW]], %[[DG]] : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x4xf32>
// CHECK: attn.set_param @emb grad, %[[SUM]]
// CHECK-LABEL: func.func @train_step
module {
  attn.param @emb : tensor<6x4xf32> init normal [0.0, 1.0]
  attn.train loss @loss optimizer adam {} schedule constant {} clip_norm 0.0
  func.func @loss(%ids: tensor<3xi32>) -> tensor<f32> {
    %e = attn.get_param @emb : tensor<6x4xf32>
    %x = attn.gather %e, %ids : (tensor<6x4xf32>, tensor<3xi32>) -> tensor<3x4xf32>
    %y = attn.linear %x, %e activation gelu : (tensor<3x4xf32>, tensor<6x4xf32>) -> tensor<3x6xf32>
    %l = attn.cross_entropy %y, %ids : (tensor<3x6xf32>, tensor<3xi32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Tests that a module without attn.train is left unchanged.
// CHECK-LABEL: func.func @forward
// CHECK-NOT: func.func
module {
  func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}

// -----

// Tests that an op of the loss without a gradient rule is an error naming it.
module {
  attn.param @w : tensor<1x2x3x4xf32> init normal [0.0, 1.0]
  attn.train loss @loss optimizer adam {} schedule constant {} clip_norm 0.0
  func.func @loss() -> tensor<f32> {
    %w = attn.get_param @w : tensor<1x2x3x4xf32>
    // expected-error @below {{'attn.kv_cache_append' has no gradient rule}}
    %k, %v = attn.kv_cache_append %w, %w slot 0 : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> (tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>)
    %s = attn.reduce sum %k axis 0 : (tensor<1x2x?x4xf32>) -> tensor<2x?x4xf32>
    %s1 = attn.reduce sum %s axis 0 : (tensor<2x?x4xf32>) -> tensor<?x4xf32>
    %s2 = attn.reduce sum %s1 axis 0 : (tensor<?x4xf32>) -> tensor<4xf32>
    %l = attn.reduce sum %s2 axis 0 : (tensor<4xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Tests that a loss that reads sdpa's logsumexp result is an error: only its
// output has an adjoint rule.
module {
  attn.param @w : tensor<1x2x3x4xf32> init normal [0.0, 1.0]
  attn.train loss @loss optimizer adam {} schedule constant {} clip_norm 0.0
  func.func @loss() -> tensor<f32> {
    %w = attn.get_param @w : tensor<1x2x3x4xf32>
    // expected-error @below {{'attn.sdpa' op cannot be differentiated through its logsumexp result}}
    %o, %lse = attn.sdpa %w, %w, %w logsumexp : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x3xf32>)
    %s = attn.reduce sum %lse axis 0 : (tensor<1x2x3xf32>) -> tensor<2x3xf32>
    %s1 = attn.reduce sum %s axis 0 : (tensor<2x3xf32>) -> tensor<3xf32>
    %l = attn.reduce sum %s1 axis 0 : (tensor<3xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Tests that a module defining train_step itself is an error.
// expected-error @below {{the module already defines 'train_step', which the autodiff pass derives}}
module {
  attn.train loss @loss optimizer adam {} schedule constant {} clip_norm 0.0
  func.func @loss(%x: tensor<f32>) -> tensor<f32> {
    return %x : tensor<f32>
  }
  func.func @train_step() {
    return
  }
}

// -----

// Tests that without attn.train the public fn @loss returning tensor<f32> is
// differentiated (gradients need no optimizer), and no train_step is built.
// CHECK-LABEL: func.func @loss(
// CHECK-LABEL: func.func @loss_grad
// CHECK-SAME: (%{{.*}}: tensor<4xf32> {attn.name = "x"}, %{{.*}}: tensor<i64> {attn.seed}, %{{.*}}: tensor<i64> {attn.dropout_row}) -> tensor<f32>
// CHECK: attn.set_param @w grad
// CHECK-NOT: train_step
module {
  attn.param @w : tensor<4xf32> init normal [0.0, 1.0]
  func.func @loss(%x: tensor<4xf32> {attn.name = "x"}) -> tensor<f32> {
    %w = attn.get_param @w : tensor<4xf32>
    %p = attn.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %l = attn.reduce sum %p axis 0 : (tensor<4xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Tests that without attn.train a @loss of another type is left alone.
// CHECK-LABEL: func.func @loss(
// CHECK-NOT: loss_grad
module {
  func.func @loss(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}
