// RUN: attnc-opt %s --split-input-file \
// RUN:   --convert-attn-to-linalg="query-tile=16 key-tile=32" | FileCheck %s
// RUN: not attnc-opt %s --convert-attn-to-linalg="query-tile=0" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=ERROR

// The tile sizes of the attention loop nests are the pass's options
// (64 x 64 by default, attention.mlir); a tile below 1 is an error.

// ERROR: error: convert-attn-to-linalg: query-tile and key-tile must be at least 1 (got 0 and 64)

// Tests that the forward's query loop steps by query-tile and its key tiles
// are key-tile wide.
// CHECK-LABEL: func.func @forward
// CHECK-DAG: %[[QT:.*]] = arith.constant 16 : index
// CHECK-DAG: %[[KT:.*]] = arith.constant 32 : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[QT]]
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[KT]]
func.func @forward(%q: tensor<1x2x128x8xf32>, %k: tensor<1x2x128x8xf32>, %v: tensor<1x2x128x8xf32>) -> tensor<1x2x128x8xf32> {
  %0 = attn.sdpa %q, %k, %v mask causal : (tensor<1x2x128x8xf32>, tensor<1x2x128x8xf32>, tensor<1x2x128x8xf32>) -> tensor<1x2x128x8xf32>
  return %0 : tensor<1x2x128x8xf32>
}

// -----

// Tests that the backward's key loop steps by key-tile and its query loop
// by query-tile.
// CHECK-LABEL: func.func @backward
// CHECK-DAG: %[[QT:.*]] = arith.constant 16 : index
// CHECK-DAG: %[[KT:.*]] = arith.constant 32 : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[QT]]
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[KT]]
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[QT]]
func.func @backward(%q: tensor<1x2x128x8xf32>, %k: tensor<1x2x128x8xf32>, %v: tensor<1x2x128x8xf32>, %o: tensor<1x2x128x8xf32>, %do: tensor<1x2x128x8xf32>) -> (tensor<1x2x128x8xf32>, tensor<1x2x128x8xf32>, tensor<1x2x128x8xf32>) {
  %dq, %dk, %dv = attn.sdpa_grad %q, %k, %v, %o, %do mask causal : (tensor<1x2x128x8xf32>, tensor<1x2x128x8xf32>, tensor<1x2x128x8xf32>, tensor<1x2x128x8xf32>, tensor<1x2x128x8xf32>) -> (tensor<1x2x128x8xf32>, tensor<1x2x128x8xf32>, tensor<1x2x128x8xf32>)
  return %dq, %dk, %dv : tensor<1x2x128x8xf32>, tensor<1x2x128x8xf32>, tensor<1x2x128x8xf32>
}
