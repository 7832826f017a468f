// RUN: attnc-opt %s --attn-share-attention-stats --split-input-file | FileCheck %s

// An sdpa_grad whose output operand is an sdpa's result with the same
// operands and attributes takes that sdpa's logsumexp, which the sdpa is
// rebuilt to return; anything else is left alone.

// CHECK-LABEL: func.func @shared
// CHECK-SAME:    (%[[Q:[^:]+]]: tensor<?x4x?x16xf32>, %[[K:[^:]+]]: tensor<?x4x?x16xf32>, %[[V:[^:]+]]: tensor<?x4x?x16xf32>, %[[DO:[^:]+]]: tensor<?x4x?x16xf32>, %[[P:[^:]+]]: tensor<?x?xi1>, %[[SEED:[^:]+]]: tensor<i64>)
// CHECK:         %[[O:.+]], %[[L:.+]] = attn.sdpa %[[Q]], %[[K]], %[[V]] key_padding %[[P]] mask causal scale 3.000000e-01 dropout 1.000000e-01 seed %[[SEED]] stream 3 logsumexp : ({{.*}}) -> (tensor<?x4x?x16xf32>, tensor<?x4x?xf32>)
// CHECK:         %[[Y:.+]] = attn.relu %[[O]]
// CHECK:         %[[DQ:.+]], %{{.+}}, %{{.+}} = attn.sdpa_grad %[[Q]], %[[K]], %[[V]], %[[O]], %[[DO]] logsumexp %[[L]] key_padding %[[P]] mask causal scale 3.000000e-01 dropout 1.000000e-01 seed %[[SEED]] stream 3 :
// CHECK:         return %[[Y]], %[[DQ]] :
func.func @shared(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>, %do: tensor<?x4x?x16xf32>, %pad: tensor<?x?xi1>, %seed: tensor<i64>) -> (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) {
  %o = attn.sdpa %q, %k, %v key_padding %pad mask causal scale 3.000000e-01 dropout 1.000000e-01 seed %seed stream 3 : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x?xi1>, tensor<i64>) -> tensor<?x4x?x16xf32>
  %y = attn.relu %o : tensor<?x4x?x16xf32>
  %dq, %dk, %dv = attn.sdpa_grad %q, %k, %v, %o, %do key_padding %pad mask causal scale 3.000000e-01 dropout 1.000000e-01 seed %seed stream 3 : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x?xi1>, tensor<i64>) -> (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>)
  return %y, %dq : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>
}

// -----

// Two sdpa_grads of one sdpa (two adjoints) share one logsumexp.
// CHECK-LABEL: func.func @two_grads
// CHECK:         %[[O:.+]], %[[L:.+]] = attn.sdpa
// CHECK-NOT:     attn.sdpa
// CHECK:         attn.sdpa_grad {{.*}}, %[[O]], %{{.*}} logsumexp %[[L]] :
// CHECK:         attn.sdpa_grad {{.*}}, %[[O]], %{{.*}} logsumexp %[[L]] :
func.func @two_grads(%q: tensor<1x2x8x16xf32>, %do1: tensor<1x2x8x16xf32>, %do2: tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) {
  %o = attn.sdpa %q, %q, %q : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %a:3 = attn.sdpa_grad %q, %q, %q, %o, %do1 : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  %b:3 = attn.sdpa_grad %q, %q, %q, %o, %do2 : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  return %a#0, %b#0 : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
}

// -----

// Not the same attention: another mask, another key, another scale
// attribute (even of the default's value), another stream, and an output
// that no sdpa computed. Nothing changes.
// CHECK-LABEL: func.func @not_the_same
// CHECK-NOT:     logsumexp
// CHECK:         return
func.func @not_the_same(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %o: tensor<1x2x8x16xf32>, %do: tensor<1x2x8x16xf32>, %seed: tensor<i64>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) {
  %o1 = attn.sdpa %q, %q, %q mask causal : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %a:3 = attn.sdpa_grad %q, %q, %q, %o1, %do : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  %o2 = attn.sdpa %q, %q, %q : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %b:3 = attn.sdpa_grad %q, %k, %q, %o2, %do : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  %o3 = attn.sdpa %q, %k, %q scale 2.500000e-01 : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %c:3 = attn.sdpa_grad %q, %k, %q, %o3, %do : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  %o4 = attn.sdpa %k, %k, %k dropout 1.000000e-01 seed %seed stream 0 : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<i64>) -> tensor<1x2x8x16xf32>
  %d:3 = attn.sdpa_grad %k, %k, %k, %o4, %do dropout 1.000000e-01 seed %seed stream 1 : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<i64>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  %e:3 = attn.sdpa_grad %q, %q, %q, %o, %do : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  return %a#0, %b#0, %c#0, %d#0, %e#0 : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
}

// -----

// An sdpa that already returns its logsumexp is not rebuilt.
// CHECK-LABEL: func.func @already
// CHECK-SAME:    %[[DO:[^:]+]]: tensor<1x2x8x16xf32>)
// CHECK:         %[[O:.+]], %[[L:.+]] = attn.sdpa
// CHECK-NEXT:    attn.sdpa_grad {{.*}}, %[[O]], %[[DO]] logsumexp %[[L]] :
// CHECK-NEXT:    return %{{.*}}, %[[L]] :
func.func @already(%q: tensor<1x2x8x16xf32>, %do: tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>) {
  %o, %lse = attn.sdpa %q, %q, %q logsumexp : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  %a:3 = attn.sdpa_grad %q, %q, %q, %o, %do : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  return %a#0, %lse : tensor<1x2x8x16xf32>, tensor<1x2x8xf32>
}
