// RUN: attnc-opt %s --convert-attn-to-linalg="attention=rows" --canonicalize --cse | FileCheck %s

// Attention as loops over rows (the GPU target's lowering): each iteration
// of an scf.forall keeps one query's (or key's) row and accumulators in
// scalars and walks the keys (or queries) it meets in an scf.for; no
// [B, H, T, S] tensor exists. 4 query heads read 2 key/value heads (head
// floordiv 2).

// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x4x8x16xf32>, %[[K:[^:]+]]: tensor<2x2x8x16xf32>, %[[V:[^:]+]]: tensor<2x2x8x16xf32>)
// CHECK-NOT: tensor<2x4x8x8xf32>
// One chunk of keys per query (64 queries need no split): the running
// maximum, sum and 16 output elements.
// CHECK: scf.forall (%[[B:.*]], %[[H:.*]], %[[T:.*]]) in (2, 4, 8) shared_outs({{.*}}) -> (tensor<2x4x8x1xf32>, tensor<2x4x8x1xf32>, tensor<2x4x8x1x16xf32>)
// CHECK: %[[KV:.*]] = arith.divui %[[H]], %c2
// CHECK-COUNT-16: tensor.extract %[[Q]][%[[B]], %[[H]], %[[T]], %{{.*}}]
// Causal: the keys up to query t.
// CHECK: %[[END:.*]] = arith.addi %[[T]], %c1
// CHECK: scf.for %[[S:.*]] = %c0 to %{{.*}} step %c1 iter_args(%[[MAX:[^ ]*]] = %cst{{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK: tensor.extract %[[K]][%[[B]], %[[KV]], %[[S]], %c0]
// CHECK: %[[NEWMAX:.*]] = arith.maximumf %[[MAX]],
// CHECK: math.exp
// CHECK: math.exp
// CHECK: tensor.extract %[[V]][%[[B]], %[[KV]], %[[S]], %c0]
// CHECK: scf.forall.in_parallel
// The chunks combined, one output element per iteration (here one chunk
// per query, the loops over them folded): normalised by the sum.
// CHECK: scf.forall ({{.*}}) in (2, 4, 8, 16) shared_outs({{.*}}) -> (tensor<2x4x8x16xf32>)
// CHECK: math.exp
// CHECK: arith.divf
// CHECK-NOT: tensor<2x4x8x8xf32>
// CHECK: return
func.func @forward(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %o = attn.sdpa %q, %k, %v mask causal : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// A decoding step: one query over S keys. The keys split into
// max(1, min(ceil(16384 / (B H T)), ceil(S / 32))) chunks of ceil(S /
// chunks) keys, each an iteration (the unit loops folded away).
// CHECK-LABEL: func.func @decode
// CHECK: %[[S:.*]] = tensor.dim %{{.*}}, %c2 : tensor<1x4x?x16xf32>
// CHECK: %[[MOST:.*]] = arith.ceildivsi %[[S]], %c32
// CHECK: %[[FEW:.*]] = arith.minsi %[[MOST]], %c4096
// CHECK: %[[CHUNKS:.*]] = arith.maxsi %[[FEW]], %c1
// CHECK: %[[WIDTH:.*]] = arith.ceildivsi %[[S]], %[[CHUNKS]]
// CHECK: scf.forall (%{{.*}}, %[[C:.*]]) in (4, %[[CHUNKS]])
// CHECK: %[[START:.*]] = arith.muli %[[C]], %[[WIDTH]]
// CHECK: %[[STOP:.*]] = arith.addi %[[START]], %[[WIDTH]]
// CHECK: scf.for %{{.*}} = %[[START]] to
// The combination, one output element per iteration: the chunks'
// maximum, then their weighted sums.
// CHECK: scf.forall ({{.*}}) in (4, 16) shared_outs
// CHECK: scf.for %{{.*}} = %c0 to %[[CHUNKS]]
// CHECK: arith.maximumf
// CHECK: scf.for %{{.*}} = %c0 to %[[CHUNKS]]
// CHECK: math.exp
func.func @decode(%q: tensor<1x4x1x16xf32>, %k: tensor<1x4x?x16xf32>, %v: tensor<1x4x?x16xf32>) -> tensor<1x4x1x16xf32> {
  %o = attn.sdpa %q, %k, %v mask causal : (tensor<1x4x1x16xf32>, tensor<1x4x?x16xf32>, tensor<1x4x?x16xf32>) -> tensor<1x4x1x16xf32>
  return %o : tensor<1x4x1x16xf32>
}

// The adjoints with the forward's logsumexp: delta = rowsum(dO O), then
// dQ one query per iteration over its keys, and dK, then dV, one key per
// iteration over the query heads of its group and the queries from the
// first one that sees the first key of its warp (keys 32 i to 32 i + 31:
// the warp's threads walk the same queries), hiding the earlier ones; each
// of the two loops carries one row of sums.
// CHECK-LABEL: func.func @backward
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x4x8x16xf32>, %[[K:[^:]+]]: tensor<2x2x8x16xf32>, %[[V:[^:]+]]: tensor<2x2x8x16xf32>, %{{[^:]+}}: tensor<2x4x8x16xf32>, %[[DO:[^:]+]]: tensor<2x4x8x16xf32>, %[[LSE:[^:]+]]: tensor<2x4x8xf32>)
// CHECK-NOT: tensor<2x4x8x8xf32>
// CHECK: %[[DELTA:.*]] = linalg.generic {{.*}} ins(%[[DO]], %{{.*}} : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) outs(%{{.*}} : tensor<2x4x8xf32>)
// CHECK: %[[DQ:.*]] = scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (2, 4, 8) shared_outs({{.*}}) -> (tensor<2x4x8x16xf32>)
// CHECK: tensor.extract %[[LSE]]
// CHECK: tensor.extract %[[DELTA]]
// CHECK: scf.for {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK: %[[DK:.*]] = scf.forall (%{{.*}}, %[[KH:.*]], %[[S:.*]]) in (2, 2, 8) shared_outs({{.*}}) -> (tensor<2x2x8x16xf32>)
// CHECK: %[[WARP:.*]] = arith.divui %[[S]], %c32
// CHECK: %[[WARPSTART:.*]] = arith.muli %[[WARP]], %c32
// CHECK: %[[FIRSTQ:.*]] = arith.maxsi %[[WARPSTART]], %c0
// CHECK: %[[HEAD0:.*]] = arith.muli %[[KH]], %c2
// CHECK: %[[HEADS:.*]] = arith.addi %[[HEAD0]], %c2
// CHECK: scf.for %[[HEAD:.*]] = %[[HEAD0]] to %[[HEADS]] step %c1 iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK: scf.for %[[TQ:.*]] = %[[FIRSTQ]] to %c8
// CHECK: tensor.extract %[[Q]][%{{.*}}, %[[HEAD]], %[[TQ]], %c0]
// CHECK: %[[HIDDEN:.*]] = arith.cmpi sgt, %[[S]], %[[TQ]]
// CHECK: arith.select %[[HIDDEN]], %cst
// CHECK: tensor.extract %[[DELTA]]
// CHECK: %[[DV:.*]] = scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (2, 2, 8) shared_outs({{.*}}) -> (tensor<2x2x8x16xf32>)
// CHECK-NOT: tensor.extract %[[DELTA]]
// CHECK: return %[[DQ]], %[[DK]], %[[DV]]
func.func @backward(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x8x16xf32>, %o: tensor<2x4x8x16xf32>, %do: tensor<2x4x8x16xf32>, %lse: tensor<2x4x8xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) {
  %dq, %dk, %dv = attn.sdpa_grad %q, %k, %v, %o, %do logsumexp %lse mask causal : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>)
  return %dq, %dk, %dv : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
}

// A dynamic head dimension: the whole score matrix instead (a thread
// cannot hold a row of unknown length in scalars).
// CHECK-LABEL: func.func @dynamic_head_dim
// CHECK-NOT: scf.forall
// CHECK: linalg.generic
// CHECK-NOT: scf.forall
// CHECK: return
func.func @dynamic_head_dim(%q: tensor<2x4x8x?xf32>, %k: tensor<2x4x8x?xf32>, %v: tensor<2x4x8x?xf32>) -> tensor<2x4x8x?xf32> {
  %o = attn.sdpa %q, %k, %v : (tensor<2x4x8x?xf32>, tensor<2x4x8x?xf32>, tensor<2x4x8x?xf32>) -> tensor<2x4x8x?xf32>
  return %o : tensor<2x4x8x?xf32>
}
