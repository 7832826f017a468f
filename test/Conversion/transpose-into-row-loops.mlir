// RUN: attnc-opt %s --convert-attn-to-linalg="attention=rows" | FileCheck %s
// RUN: attnc-opt %s --convert-attn-to-linalg="attention=tiles" | FileCheck %s --check-prefix=TILES

// Attention's output read back into rows (merge_heads: [B, H, T, Dv] to
// [B, T, H, Dv]) is written in that order by the row loop that combines
// it: no transpose, so no kernel that only copies on the GPU.

// CHECK-LABEL: func.func @merged_output
// CHECK-NOT: linalg.transpose
// The combining loop, one output element per iteration (b, h, t, e),
// stored at [b, t, h, e].
// CHECK: scf.forall (%[[B:.*]], %[[H:.*]], %[[T:.*]], %[[E:.*]]) in ({{.*}}, 32)
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%[[B]], %[[T]], %[[H]], %[[E]]] [1, 1, 1, 1] [1, 1, 1, 1]
// CHECK-NOT: linalg.transpose
// CHECK: tensor.collapse_shape
// TILES-LABEL: func.func @merged_output
// TILES: linalg.transpose
func.func @merged_output(%q: tensor<?x6x?x32xf32>, %k: tensor<?x6x?x32xf32>, %v: tensor<?x6x?x32xf32>) -> tensor<?x?x192xf32> {
  %r = attn.sdpa %q, %k, %v mask causal : (tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>) -> tensor<?x6x?x32xf32>
  %m = attn.merge_heads %r : (tensor<?x6x?x32xf32>) -> tensor<?x?x192xf32>
  return %m : tensor<?x?x192xf32>
}

// The output read twice (here returned too; training keeps it for the
// adjoint): it stays in [B, H, T, Dv] and the transpose copies it.
// CHECK-LABEL: func.func @output_read_twice
// CHECK: scf.forall (%[[B:.*]], %[[H:.*]], %[[T:.*]], %[[E:.*]]) in ({{.*}}, 32)
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%[[B]], %[[H]], %[[T]], %[[E]]] [1, 1, 1, 1] [1, 1, 1, 1]
// CHECK: linalg.transpose
func.func @output_read_twice(%q: tensor<?x6x?x32xf32>, %k: tensor<?x6x?x32xf32>, %v: tensor<?x6x?x32xf32>) -> (tensor<?x?x192xf32>, tensor<?x6x?x32xf32>) {
  %r = attn.sdpa %q, %k, %v mask causal : (tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>) -> tensor<?x6x?x32xf32>
  %m = attn.merge_heads %r : (tensor<?x6x?x32xf32>) -> tensor<?x?x192xf32>
  return %m, %r : tensor<?x?x192xf32>, tensor<?x6x?x32xf32>
}
