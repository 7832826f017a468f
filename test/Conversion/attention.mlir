// RUN: attnc-opt %s --split-input-file --convert-attn-to-linalg \
// RUN:   | FileCheck %s --implicit-check-not=256x256 --implicit-check-not=attn.sdpa
// RUN: attnc-opt %s --split-input-file --attn-opt-to-loops \
// RUN:   | FileCheck %s --check-prefix=LOOPS --implicit-check-not=256x256

// attn.sdpa becomes a flash-attention loop nest: scf.for over batches,
// heads, query tiles of 64 and key tiles of 64, with the running max, sum
// and accumulator as loop-carried tensors (online softmax). For T = S = 256
// nothing of 256 x 256 (the full score matrix) exists at any stage: on
// tensors, nor after bufferisation.

// CHECK-LABEL: func.func @causal
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x4x256x16xf32>, %[[K:[^:]+]]: tensor<2x4x256x16xf32>, %[[V:[^:]+]]: tensor<2x4x256x16xf32>)
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG: %[[T:.*]] = arith.constant 256 : index
// CHECK-DAG: %[[S:.*]] = arith.constant 256 : index
// CHECK-DAG: %[[QT:.*]] = arith.constant 64 : index
// CHECK-DAG: %[[KT:.*]] = arith.constant 64 : index
// Queries see keys up to t + (S - T):
// CHECK-DAG: %[[OFF:.*]] = arith.subi %[[S]], %[[T]] : index
// The default scale is 1/sqrt(head size):
// CHECK-DAG: %[[SCALE:.*]] = math.rsqrt
// CHECK: scf.for %[[B:.*]] = %[[C0]] to %[[C2]] step %[[C1]]
// CHECK: scf.for %[[H:.*]] = %[[C0]] to %[[C4]] step %[[C1]]
// CHECK: scf.for %[[T0:.*]] = %[[C0]] to %[[T]] step %[[QT]]
// CHECK: %[[LEFT:.*]] = arith.subi %[[T]], %[[T0]] : index
// CHECK: %[[ROWS:.*]] = arith.minsi %[[QT]], %[[LEFT]] : index
// CHECK: tensor.extract_slice %[[Q]][%[[B]], %[[H]], %[[T0]], 0] [1, 1, %[[ROWS]], 16] [1, 1, 1, 1] : tensor<2x4x256x16xf32> to tensor<?x16xf32>
// The key loop stops at the last key the tile's last query sees, clamped to
// [0, S]: it depends on the query tile.
// CHECK: %[[E0:.*]] = arith.addi %[[T0]], %[[ROWS]] : index
// CHECK: %[[E1:.*]] = arith.addi %[[E0]], %[[OFF]] : index
// CHECK: %[[E2:.*]] = arith.maxsi %[[E1]], %[[C0]] : index
// CHECK: %[[KEND:.*]] = arith.minsi %[[E2]], %[[S]] : index
// The full key tiles first, 64 keys each (the constant width makes their
// shapes static once canonicalised), then the partial last tile:
// CHECK: %[[KREM:.*]] = arith.remsi %[[KEND]], %[[KT]] : index
// CHECK: %[[KFULL:.*]] = arith.subi %[[KEND]], %[[KREM]] : index
// CHECK: scf.for %[[S0:.*]] = %{{.*}} to %[[KFULL]] step %[[KT]] iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (tensor<?xf32>, tensor<?xf32>, tensor<?x16xf32>)
// CHECK: tensor.extract_slice %[[K]][%[[B]], %[[H]], %[[S0]], 0] [1, 1, %[[KT]], 16]
// CHECK: tensor.extract_slice %[[V]][%[[B]], %[[H]], %[[S0]], 0] [1, 1, %[[KT]], 16]
// The score block is at most 64 x 64:
// CHECK: tensor.empty(%[[ROWS]], %[[KT]]) : tensor<?x?xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]
// Scale, then mask key s0 + j above query t0 + i + (S - T) with -inf:
// CHECK: linalg.generic
// CHECK: arith.mulf %{{.*}}, %[[SCALE]]
// CHECK: %[[J:.*]] = linalg.index 1 : index
// CHECK: %[[KEY:.*]] = arith.addi %[[S0]], %[[J]] : index
// CHECK: %[[I:.*]] = linalg.index 0 : index
// CHECK: %[[QUERY:.*]] = arith.addi %[[T0]], %[[I]] : index
// CHECK: %[[LIMIT:.*]] = arith.addi %[[QUERY]], %[[OFF]] : index
// CHECK: %[[HIDDEN:.*]] = arith.cmpi sgt, %[[KEY]], %[[LIMIT]] : index
// CHECK: arith.select %[[HIDDEN]], %{{.*}}, %{{.*}} : f32
// Online softmax: the tile's row max, exp of the shifted scores, the
// correction exp(m_old - m_new):
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.exp
// CHECK: scf.yield
// The partial tile: the keys left, the same steps.
// CHECK: scf.for %[[S1:.*]] = %[[KFULL]] to %[[KEND]] step %[[KT]]
// CHECK: %[[COLS:.*]] = arith.subi %[[KEND]], %[[S1]] : index
// CHECK: tensor.extract_slice %[[K]][%[[B]], %[[H]], %[[S1]], 0] [1, 1, %[[COLS]], 16]
// CHECK: tensor.empty(%[[ROWS]], %[[COLS]]) : tensor<?x?xf32>
// CHECK: math.exp
// CHECK: scf.yield
// The output tile: acc / sum, 0 for a row with no visible key:
// CHECK: linalg.generic
// CHECK: arith.cmpf oeq
// CHECK: arith.divf
// CHECK: arith.select
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%[[B]], %[[H]], %[[T0]], 0] [1, 1, %[[ROWS]], 16] [1, 1, 1, 1]

// LOOPS-LABEL: func.func @causal
// LOOPS-SAME: memref<2x4x256x16xf32>
// LOOPS-NOT: tensor<
// LOOPS: scf.for
// LOOPS: scf.for
// LOOPS: scf.for
func.func @causal(%q: tensor<2x4x256x16xf32>, %k: tensor<2x4x256x16xf32>, %v: tensor<2x4x256x16xf32>) -> tensor<2x4x256x16xf32> {
  %0 = attn.sdpa %q, %k, %v mask causal : (tensor<2x4x256x16xf32>, tensor<2x4x256x16xf32>, tensor<2x4x256x16xf32>) -> tensor<2x4x256x16xf32>
  return %0 : tensor<2x4x256x16xf32>
}

// -----

// Without a causal mask every query tile runs over all S keys, and masks
// nothing but padded keys: key_padding[b, s0 + j], read in the mask
// generic. Cross-attention: S and T differ, dv (8) differs from dk (16); a
// given scale replaces 1/sqrt(dk).

// CHECK-LABEL: func.func @cross_padded
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x4x?x16xf32>, %[[K:[^:]+]]: tensor<?x4x?x16xf32>, %[[V:[^:]+]]: tensor<?x4x?x8xf32>, %[[P:[^:]+]]: tensor<?x?xi1>)
// CHECK-NOT: math.rsqrt
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[T:.*]] = tensor.dim %[[Q]], %[[C2]]
// CHECK-DAG: %[[S:.*]] = tensor.dim %[[K]], %{{.*}} : tensor<?x4x?x16xf32>
// CHECK-DAG: %[[SCALE:.*]] = arith.constant 1.250000e-01 : f32
// CHECK: scf.for %[[B:.*]] = %{{.*}} to %{{.*}} step
// CHECK: scf.for %[[T0:.*]] = %{{.*}} to %[[T]] step
// CHECK-NOT: arith.maxsi
// CHECK: scf.for %[[S0:.*]] = %{{.*}} to %[[S]] step %{{.*}} iter_args({{.*}}) -> (tensor<?xf32>, tensor<?xf32>, tensor<?x8xf32>)
// CHECK: tensor.extract_slice %[[V]][%[[B]], %{{.*}}, %[[S0]], 0] [1, 1, %{{.*}}, 8]
// CHECK: linalg.generic
// CHECK: arith.mulf %{{.*}}, %[[SCALE]]
// CHECK: %[[J:.*]] = linalg.index 1 : index
// CHECK: %[[KEY:.*]] = arith.addi %[[S0]], %[[J]] : index
// CHECK-NOT: arith.cmpi
// CHECK: %[[PADDED:.*]] = tensor.extract %[[P]][%[[B]], %[[KEY]]] : tensor<?x?xi1>
// CHECK: %[[HIDDEN:.*]] = arith.ori %{{.*}}, %[[PADDED]] : i1
// CHECK: arith.select %[[HIDDEN]]
// CHECK: tensor.insert_slice %{{.*}} [1, 1, %{{.*}}, 8] [1, 1, 1, 1] : tensor<?x8xf32> into tensor<?x?x?x8xf32>
// CHECK: return
// LOOPS-LABEL: func.func @cross_padded
// LOOPS-NOT: tensor<
// LOOPS: return
func.func @cross_padded(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x8xf32>, %p: tensor<?x?xi1>) -> tensor<?x4x?x8xf32> {
  %0 = attn.sdpa %q, %k, %v key_padding %p scale 0.125 : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x8xf32>, tensor<?x?xi1>) -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

// With `logsumexp`, each query tile also writes m + log(l), 0 for a query
// that sees no key, into the [B, H, T] second result.
// CHECK-LABEL: func.func @logsumexp
// CHECK: scf.for %[[B:[^ ]*]] = {{.*}} -> (tensor<?x?x?x16xf32>, tensor<?x?x?xf32>)
// CHECK: scf.for %[[H:[^ ]*]] =
// CHECK: scf.for %[[T0:[^ ]*]] =
// CHECK: %[[ROWS:.*]] = arith.minsi
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%[[B]], %[[H]], %[[T0]], 0]
// CHECK: linalg.generic
// CHECK: arith.cmpf oeq
// CHECK: math.log
// CHECK: arith.addf
// CHECK: arith.select
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%[[B]], %[[H]], %[[T0]]] [1, 1, %[[ROWS]]] [1, 1, 1] : tensor<?xf32> into tensor<?x?x?xf32>
// CHECK: return %{{.*}}, %{{.*}} : tensor<2x4x256x16xf32>, tensor<2x4x256xf32>
func.func @logsumexp(%q: tensor<2x4x256x16xf32>, %k: tensor<2x4x256x16xf32>, %v: tensor<2x4x256x16xf32>) -> (tensor<2x4x256x16xf32>, tensor<2x4x256xf32>) {
  %o, %lse = attn.sdpa %q, %k, %v mask causal logsumexp : (tensor<2x4x256x16xf32>, tensor<2x4x256x16xf32>, tensor<2x4x256x16xf32>) -> (tensor<2x4x256x16xf32>, tensor<2x4x256xf32>)
  return %o, %lse : tensor<2x4x256x16xf32>, tensor<2x4x256xf32>
}

// -----

// Grouped-query attention: 4 query heads read 2 key/value heads. Query head
// h reads the key and value tiles of head h floordiv 2 in place; the loops
// run over the query heads as without groups.
// CHECK-LABEL: func.func @grouped
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x4x256x16xf32>, %[[K:[^:]+]]: tensor<2x2x256x16xf32>, %[[V:[^:]+]]: tensor<2x2x256x16xf32>)
// CHECK-NOT: tensor.expand_shape
// CHECK: scf.for %[[B:.*]] = %{{.*}} to %{{.*}} step
// CHECK: scf.for %[[H:.*]] = %{{.*}} to %[[C4:.*]] step
// CHECK: scf.for %[[T0:.*]] = %{{.*}} to %{{.*}} step
// CHECK: tensor.extract_slice %[[Q]][%[[B]], %[[H]], %[[T0]], 0]
// CHECK: %[[KVH:.*]] = arith.divui %[[H]], %[[C2:.*]] : index
// CHECK: scf.for %[[S0:.*]] = %{{.*}} to %{{.*}} step
// CHECK: tensor.extract_slice %[[K]][%[[B]], %[[KVH]], %[[S0]], 0] [1, 1, %{{.*}}, 16] [1, 1, 1, 1] : tensor<2x2x256x16xf32> to tensor<?x16xf32>
// CHECK: tensor.extract_slice %[[V]][%[[B]], %[[KVH]], %[[S0]], 0] [1, 1, %{{.*}}, 16] [1, 1, 1, 1] : tensor<2x2x256x16xf32> to tensor<?x16xf32>
// CHECK: scf.for %[[S1:.*]] = %{{.*}} to %{{.*}} step
// CHECK: tensor.extract_slice %[[K]][%[[B]], %[[KVH]], %[[S1]], 0]
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%[[B]], %[[H]], %[[T0]], 0]
// CHECK: return %{{.*}} : tensor<2x4x256x16xf32>
// LOOPS-LABEL: func.func @grouped
// LOOPS-NOT: tensor<
// LOOPS: return
func.func @grouped(%q: tensor<2x4x256x16xf32>, %k: tensor<2x2x256x16xf32>, %v: tensor<2x2x256x16xf32>) -> tensor<2x4x256x16xf32> {
  %0 = attn.sdpa %q, %k, %v mask causal : (tensor<2x4x256x16xf32>, tensor<2x2x256x16xf32>, tensor<2x2x256x16xf32>) -> tensor<2x4x256x16xf32>
  return %0 : tensor<2x4x256x16xf32>
}
