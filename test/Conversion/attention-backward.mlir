// RUN: attnc-opt %s --convert-attn-to-linalg \
// RUN:   | FileCheck %s --implicit-check-not=256x256 --implicit-check-not=attn.sdpa_grad --implicit-check-not=linalg.transpose
// RUN: attnc-opt %s --attn-opt-to-loops \
// RUN:   | FileCheck %s --check-prefix=LOOPS --implicit-check-not=256x256
// RUN: attnc-opt %s --attn-opt-to-loops | FileCheck %s --check-prefix=GROUPED

// attn.sdpa_grad becomes a flash-attention backward loop nest: per batch and
// head, a first pass over query tiles computes delta = rowsum(dO * O) and,
// without the forward's logsumexp, each query's logsumexp (an online pass
// over key tiles); a second pass
// runs over key tiles outside and query tiles inside, recomputing the
// scores of one 64 x 64 block at a time. For T = S = 256 nothing of
// 256 x 256 exists, on tensors or after bufferisation.

// Tests the loop nest, the causal bounds of both passes and the
// accumulations.
// CHECK-LABEL: func.func @causal
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[QT:.*]] = arith.constant 64 : index
// The gradient of q accumulates over key tiles: it starts at zero.
// CHECK: %[[DQ0:.*]] = linalg.fill {{.*}} -> tensor<2x4x256x16xf32>
// CHECK: scf.for %[[B:[^ ]*]] = {{.*}} iter_args(%{{.*}} = %[[DQ0]],
// CHECK: scf.for %[[H:[^ ]*]] =
// Pass 1: per query tile, an online max / sum over the visible key tiles:
// the full 64-key tiles (a static width), then the partial last one.
// CHECK: %[[STATS:.*]]:2 = scf.for %[[T0:.*]] = %[[C0]] to %{{.*}} step %[[QT]]
// CHECK: arith.maxsi
// CHECK-NEXT: %[[KEND:.*]] = arith.minsi
// CHECK: %[[KREM:.*]] = arith.remsi %[[KEND]], %{{.*}}
// CHECK: %[[KFULL:.*]] = arith.subi %[[KEND]], %[[KREM]]
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[KFULL]] step
// CHECK: math.exp
// CHECK: scf.for %{{.*}} = %[[KFULL]] to %[[KEND]] step
// CHECK: math.exp
// CHECK: math.log
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%[[T0]]] [%{{.*}}] [1] : tensor<?xf32> into tensor<?xf32>
// Pass 2: key tiles outside; causal query tiles start at the tile of the
// first query that sees key s0, floor((s0 - (S - T)) / 64) * 64.
// CHECK: scf.for %[[S0:.*]] = %[[C0]] to %{{.*}} step
// CHECK: %[[FIRST0:.*]] = arith.subi %[[S0]], %{{.*}} : index
// CHECK: %[[FIRST:.*]] = arith.maxsi %[[FIRST0]], %[[C0]] : index
// CHECK: %[[DIV:.*]] = arith.divui %[[FIRST]], %[[QT]] : index
// CHECK: %[[START:.*]] = arith.muli %[[DIV]], %[[QT]] : index
// CHECK: scf.for %[[Q0:.*]] = %[[START]] to %{{.*}} step %[[QT]] iter_args(%[[DK:.*]] = %{{.*}}, %[[DV:.*]] = %{{.*}}, %[[DQ:.*]] = %{{.*}}) -> (tensor<?x16xf32>, tensor<?x16xf32>, tensor<2x4x256x16xf32>)
// P = exp(scale s - L), 0 where masked:
// CHECK: math.exp
// CHECK: arith.select
// dV += P^T dO accumulates into the tile's accumulator:
// CHECK: linalg.generic {{.*}} outs(%[[DV]] : tensor<?x16xf32>)
// CHECK: linalg.generic {{.*}} outs(%[[DK]] : tensor<?x16xf32>)
// dQ[tile] += dS k, read and written back in the full gradient:
// CHECK: %[[DQT:.*]] = tensor.extract_slice %[[DQ]][%[[B]], %[[H]], %[[Q0]], 0]
// CHECK: %[[DQS:.*]] = linalg.generic {{.*}} outs(%[[DQT]] : tensor<?x16xf32>)
// CHECK: tensor.insert_slice %[[DQS]] into %[[DQ]][%[[B]], %[[H]], %[[Q0]], 0]
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%[[B]], %[[H]], %[[S0]], 0]
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%[[B]], %[[H]], %[[S0]], 0]

// After bufferisation the blocks are at most 64 x 64 (dynamic) buffers and
// nothing 256 x 256 is allocated.
// The P^T dO and dS^T q products read their left block transposed, through
// the kernels for an A stored [K, M] (no transposed copy).
// LOOPS-LABEL: func.func @causal
// LOOPS: scf.for
// LOOPS: call @__attn_sgemm_tn_{{[0-9]+x[0-9]+}}
func.func @causal(%q: tensor<2x4x256x16xf32>, %k: tensor<2x4x256x16xf32>, %v: tensor<2x4x256x16xf32>, %o: tensor<2x4x256x16xf32>, %do: tensor<2x4x256x16xf32>) -> (tensor<2x4x256x16xf32>, tensor<2x4x256x16xf32>, tensor<2x4x256x16xf32>) {
  %dq, %dk, %dv = attn.sdpa_grad %q, %k, %v, %o, %do mask causal : (tensor<2x4x256x16xf32>, tensor<2x4x256x16xf32>, tensor<2x4x256x16xf32>, tensor<2x4x256x16xf32>, tensor<2x4x256x16xf32>) -> (tensor<2x4x256x16xf32>, tensor<2x4x256x16xf32>, tensor<2x4x256x16xf32>)
  return %dq, %dk, %dv : tensor<2x4x256x16xf32>, tensor<2x4x256x16xf32>, tensor<2x4x256x16xf32>
}

// Tests that attention dropout in the backward recomputes the forward's
// mask from the seed and stream (the index multiplier of abi.h) on the
// weights and on the adjoint of the dropped weights, and that key padding
// is read per (batch, key).
// CHECK-LABEL: func.func @dropout_padding
// CHECK: %[[SEED:.*]] = tensor.extract %{{.*}}[] : tensor<i64>
// CHECK: tensor.extract %{{.*}}[%{{.*}}, %{{.*}}] : tensor<?x?xi1>
// CHECK-COUNT-2: arith.muli %{{.*}}, %c-3335678366873096957_i64
func.func @dropout_padding(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>, %o: tensor<?x4x?x16xf32>, %do: tensor<?x4x?x16xf32>, %pad: tensor<?x?xi1>, %seed: tensor<i64>) -> (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) {
  %dq, %dk, %dv = attn.sdpa_grad %q, %k, %v, %o, %do key_padding %pad dropout 1.000000e-01 seed %seed stream 2 : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x?xi1>, tensor<i64>) -> (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>)
  return %dq, %dk, %dv : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>
}

// Tests that with the forward's logsumexp the first pass only computes
// delta (no products, no exp or log), and that each head reads its row of
// the [B, H, T] statistics, sliced per query tile in the second pass.
// CHECK-LABEL: func.func @forward_logsumexp
// CHECK-SAME: %[[L:[^:]*]]: tensor<2x4x256xf32>
// CHECK: scf.for %[[B:[^ ]*]] =
// CHECK: scf.for %[[H:[^ ]*]] =
// CHECK: %[[DELTA:.*]] = scf.for
// CHECK-NOT: math.exp
// CHECK-NOT: math.log
// CHECK-NOT: reduction"]} ins(%{{.*}}, %{{.*}} : tensor<?x16xf32>, tensor<?x16xf32>) outs(%{{.*}} : tensor<?x?xf32>)
// CHECK: %[[LH:.*]] = tensor.extract_slice %[[L]][%[[B]], %[[H]], 0] [1, 1, %{{.*}}] [1, 1, 1] : tensor<2x4x256xf32> to tensor<?xf32>
// CHECK: scf.for
// CHECK: scf.for %[[Q0:[^ ]*]] =
// CHECK: tensor.extract_slice %[[LH]][%[[Q0]]]
// CHECK: tensor.extract_slice %[[DELTA]][%[[Q0]]]
// CHECK: math.exp
func.func @forward_logsumexp(%q: tensor<2x4x256x16xf32>, %k: tensor<2x4x256x16xf32>, %v: tensor<2x4x256x16xf32>, %o: tensor<2x4x256x16xf32>, %do: tensor<2x4x256x16xf32>, %lse: tensor<2x4x256xf32>) -> (tensor<2x4x256x16xf32>, tensor<2x4x256x16xf32>, tensor<2x4x256x16xf32>) {
  %dq, %dk, %dv = attn.sdpa_grad %q, %k, %v, %o, %do logsumexp %lse : (tensor<2x4x256x16xf32>, tensor<2x4x256x16xf32>, tensor<2x4x256x16xf32>, tensor<2x4x256x16xf32>, tensor<2x4x256x16xf32>, tensor<2x4x256xf32>) -> (tensor<2x4x256x16xf32>, tensor<2x4x256x16xf32>, tensor<2x4x256x16xf32>)
  return %dq, %dk, %dv : tensor<2x4x256x16xf32>, tensor<2x4x256x16xf32>, tensor<2x4x256x16xf32>
}

// Tests grouped-query attention's backward (4 query heads, 2 key/value
// heads): the loops run over batches and key/value heads; q, dO and dQ (and
// the forward's logsumexp) are viewed as [B, 2, 2, T, D] without a copy; each
// key tile's dK and dV accumulate over a loop over the 2 query heads of the
// group (head kv * 2 + member), whose tiles are read and dQ written at
// (batch, kv, member).
// CHECK-LABEL: func.func @grouped
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x4x256x16xf32>, %[[K:[^:]+]]: tensor<2x2x256x16xf32>, %[[V:[^:]+]]: tensor<2x2x256x16xf32>, %{{[^:]+}}: tensor<2x4x256x16xf32>, %{{[^:]+}}: tensor<2x4x256x16xf32>, %[[LSE:[^:]+]]: tensor<2x4x256xf32>)
// CHECK: %[[QG:.*]] = tensor.expand_shape %[[Q]] {{\[\[}}0], [1, 2], [3], [4]] output_shape [2, 2, 2, 256, 16] : tensor<2x4x256x16xf32> into tensor<2x2x2x256x16xf32>
// CHECK: %[[DQ0:.*]] = tensor.expand_shape %{{[0-9]+}} {{.*}} : tensor<2x4x256x16xf32> into tensor<2x2x2x256x16xf32>
// CHECK: %[[LSEG:.*]] = tensor.expand_shape %[[LSE]] {{\[\[}}0], [1, 2], [3]] output_shape [2, 2, 2, 256] : tensor<2x4x256xf32> into tensor<2x2x2x256xf32>
// CHECK: scf.for %[[B:[^ ]*]] = {{.*}} iter_args(%{{.*}} = %[[DQ0]],
// CHECK: scf.for %[[KV:[^ ]*]] = %{{.*}} to %[[NKV:[^ ]*]] step
// Pass 1 per query head of the group, into [2, T] statistics:
// CHECK: %[[DELTA:.*]] = scf.for %[[M:[^ ]*]] = %{{.*}} to %[[G:[^ ]*]] step %{{.*}} -> (tensor<2x?xf32>)
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%[[M]], 0] [1, %{{.*}}] [1, 1] : tensor<?xf32> into tensor<2x?xf32>
// CHECK: %[[LSEKV:.*]] = tensor.extract_slice %[[LSEG]][%[[B]], %[[KV]], 0, 0] [1, 1, 2, %{{.*}}] [1, 1, 1, 1] : tensor<2x2x2x256xf32> to tensor<2x?xf32>
// Pass 2: the key tile of the key/value head, then the group's query heads.
// CHECK: scf.for %[[S0:[^ ]*]] =
// CHECK: tensor.extract_slice %[[K]][%[[B]], %[[KV]], %[[S0]], 0]
// CHECK: tensor.extract_slice %[[V]][%[[B]], %[[KV]], %[[S0]], 0]
// CHECK: scf.for %[[M2:[^ ]*]] = %{{.*}} to %[[G]] step %{{.*}} iter_args(%[[DK:.*]] = %{{.*}}, %[[DV:.*]] = %{{.*}}, %[[DQ:.*]] = %{{.*}}) -> (tensor<?x16xf32>, tensor<?x16xf32>, tensor<2x2x2x256x16xf32>)
// CHECK: %[[BASE:.*]] = arith.muli %[[KV]], %[[G]] : index
// CHECK: arith.addi %[[BASE]], %[[M2]] : index
// CHECK: tensor.extract_slice %[[DELTA]][%[[M2]], 0] [1, %{{.*}}] [1, 1] : tensor<2x?xf32> to tensor<?xf32>
// CHECK: tensor.extract_slice %[[LSEKV]][%[[M2]], 0] [1, %{{.*}}] [1, 1] : tensor<2x?xf32> to tensor<?xf32>
// CHECK: scf.for %[[T0:[^ ]*]] =
// CHECK: tensor.extract_slice %[[QG]][%[[B]], %[[KV]], %[[M2]], %[[T0]], 0] [1, 1, 1, %{{.*}}, 16] [1, 1, 1, 1, 1] : tensor<2x2x2x256x16xf32> to tensor<?x16xf32>
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%[[B]], %[[KV]], %[[M2]], %[[T0]], 0] [1, 1, 1, %{{.*}}, 16] [1, 1, 1, 1, 1] : tensor<?x16xf32> into tensor<2x2x2x256x16xf32>
// The group's sums land in the key/value head's dK and dV:
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%[[B]], %[[KV]], %[[S0]], 0] [1, 1, %{{.*}}, 16] [1, 1, 1, 1] : tensor<?x16xf32> into tensor<2x2x256x16xf32>
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%[[B]], %[[KV]], %[[S0]], 0] [1, 1, %{{.*}}, 16] [1, 1, 1, 1] : tensor<?x16xf32> into tensor<2x2x256x16xf32>
// CHECK: %[[DQF:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2], [3], [4]] : tensor<2x2x2x256x16xf32> into tensor<2x4x256x16xf32>
// CHECK: %[[DQR:.*]] = tensor.cast %[[DQF]]
// CHECK: return %[[DQR]], %{{.*}}, %{{.*}} : tensor<2x4x256x16xf32>, tensor<2x2x256x16xf32>, tensor<2x2x256x16xf32>

// The (batch, key/value head) nest runs on the thread pool: every write
// (dK, dV and the [B, 2, 2, T, D] view of dQ) is at that iteration's slice.
// GROUPED-LABEL: func.func @grouped
// GROUPED: call @attn_parallel_for_sized
// GROUPED: call @attn_parallel_for_sized
// GROUPED: return
func.func @grouped(%q: tensor<2x4x256x16xf32>, %k: tensor<2x2x256x16xf32>, %v: tensor<2x2x256x16xf32>, %o: tensor<2x4x256x16xf32>, %do: tensor<2x4x256x16xf32>, %lse: tensor<2x4x256xf32>) -> (tensor<2x4x256x16xf32>, tensor<2x2x256x16xf32>, tensor<2x2x256x16xf32>) {
  %dq, %dk, %dv = attn.sdpa_grad %q, %k, %v, %o, %do logsumexp %lse mask causal : (tensor<2x4x256x16xf32>, tensor<2x2x256x16xf32>, tensor<2x2x256x16xf32>, tensor<2x4x256x16xf32>, tensor<2x4x256x16xf32>, tensor<2x4x256xf32>) -> (tensor<2x4x256x16xf32>, tensor<2x2x256x16xf32>, tensor<2x2x256x16xf32>)
  return %dq, %dk, %dv : tensor<2x4x256x16xf32>, tensor<2x2x256x16xf32>, tensor<2x2x256x16xf32>
}
