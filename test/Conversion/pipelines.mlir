// RUN: attnc-opt %s --attn-opt-to-loops | FileCheck %s --check-prefix=LOOPS
// RUN: attnc-opt %s --attn-opt-to-loops | attnc-opt --attn-loops-to-llvm \
// RUN:   | FileCheck %s --check-prefix=LLVM
// RUN: attnc-opt %s --attn-opt-to-loops --attn-loops-to-llvm \
// RUN:   | mlir-translate --mlir-to-llvmir | llc -O0 -o /dev/null

// The registered pipelines from the attn-opt stage: --attn-opt-to-loops
// binds the parameters, finalises the entry points, lowers to linalg,
// bufferises (the result allocated, temporaries in the caller's arena) and
// lowers to loops;
// --attn-loops-to-llvm gives the LLVM dialect with a C interface per entry
// point, which translates to LLVM IR that llc accepts.

attn.param @w : tensor<8x4xf32> init normal [0.0, 0.02]
attn.param @b : tensor<8xf32> init zeros []
attn.train loss @loss optimizer adam {} schedule constant {} clip_norm 1.0

// LOOPS-NOT: attn.
// LOOPS-LABEL: func.func @forward
// LOOPS-SAME: (%[[P:[^:]+]]: memref<?xf32>, %[[X:[^:]+]]: memref<?x4xf32>, %[[ARENA:[^:]+]]: memref<?xi8>, %[[NEED:[^:]+]]: memref<i64>) -> memref<?x8xf32>
// LOOPS-SAME: attributes {llvm.emit_c_interface, passthrough = ["noinline", "optnone"]}
// LOOPS-NOT: tensor
// LOOPS: memref.store %{{.*}}, %[[NEED]][] : memref<i64>
// LOOPS: scf.if %{{.*}} -> (memref<?xi8>)
// LOOPS: scf.yield %[[ARENA]] : memref<?xi8>
// The weight is the first 32 floats of the buffer, the bias the 8 at 32:
// LOOPS-DAG: memref.subview %[[P]][0] [32] [1]
// LOOPS-DAG: memref.subview %[[P]][32] [8] [1]
// LOOPS: %[[OUT:.*]] = memref.alloc(%{{.*}}) {{.*}}: memref<?x8xf32>
// LOOPS: call @attn_parallel_for_sized
// LOOPS: memref.dealloc %{{.*}} : memref<?xi8>
// LOOPS-NOT: memref.dealloc %[[OUT]] :
// LOOPS: return %[[OUT]] : memref<?x8xf32>
// LOOPS-NOT: attn.

// LLVM-NOT: attn.
// LLVM-NOT: memref.
// LLVM-NOT: scf.
// LLVM-DAG: llvm.func @aligned_alloc
// LLVM-DAG: llvm.func @free
// LLVM-DAG: llvm.func @forward(
// LLVM-DAG: llvm.func @_mlir_ciface_forward(%{{[^:]+}}: !llvm.ptr, %{{[^:]+}}: !llvm.ptr, %{{[^:]+}}: !llvm.ptr, %{{[^:]+}}: !llvm.ptr, %{{[^:]+}}: !llvm.ptr)
func.func @forward(%x: tensor<?x4xf32> {attn.dims = ["B", ""], attn.name = "x"}) -> tensor<?x8xf32> {
  %w = attn.get_param @w : tensor<8x4xf32>
  %b = attn.get_param @b : tensor<8xf32>
  %0 = attn.linear %x, %w, %b activation gelu : (tensor<?x4xf32>, tensor<8x4xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %1 = attn.softmax %0 axis 1 : tensor<?x8xf32>
  return %1 : tensor<?x8xf32>
}

// LOOPS-LABEL: func.func @loss
// LOOPS-SAME: (%{{[^:]+}}: memref<?xf32>, %{{[^:]+}}: memref<?x4xf32>, %{{[^:]+}}: memref<?xi8>, %{{[^:]+}}: memref<i64>) -> memref<f32>
// LLVM-DAG: llvm.func @_mlir_ciface_loss(
func.func @loss(%x: tensor<?x4xf32> {attn.dims = ["B", ""], attn.name = "x"}) -> tensor<f32> {
  %0 = attn.reduce sum %x axis 1 : (tensor<?x4xf32>) -> tensor<?xf32>
  %1 = attn.reduce mean %0 axis 0 : (tensor<?xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}
