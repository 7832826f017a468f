// attn-gpu-map-loops keeps host buffers on the host and gives kernels
// device copies of what lives in the host's memory.
// RUN: attnc-opt %s --pass-pipeline='builtin.module(func.func(attn-gpu-map-loops))' | FileCheck %s

memref.global "private" constant @zeros : memref<4xf32> = dense<0.0>

// A constant (a bufferised dense tensor) is read through a device copy,
// freed at the end of its block.
// CHECK-LABEL: func.func @constant
// CHECK: %[[G:.*]] = memref.get_global @zeros
// CHECK: %[[D:.*]] = gpu.alloc () : memref<4xf32>
// CHECK: gpu.memcpy %[[D]], %[[G]]
// CHECK: scf.parallel
// CHECK: memref.load %[[D]]
// CHECK: gpu.dealloc %[[D]]
// CHECK-NEXT: return
func.func @constant(%out: memref<4xf32>) {
  %g = memref.get_global @zeros : memref<4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    %v = memref.load %g[%i] : memref<4xf32>
    memref.store %v, %out[%i] : memref<4xf32>
  }
  return
}

func.func private @callee(memref<i64>)

// The host's stack (here the arena need a called entry point reports, as
// train_step's call of <loss>_grad has it) is read on the host, not by a
// kernel.
// CHECK-LABEL: func.func @host_stack
// CHECK: %[[A:.*]] = memref.alloca() : memref<i64>
// CHECK: call @callee(%[[A]])
// CHECK-NOT: scf.parallel
// CHECK: %[[V:.*]] = memref.load %[[A]][]
// CHECK-NOT: scf.parallel
// CHECK: memref.store %[[V]], %arg0[]
// CHECK-NEXT: return
func.func @host_stack(%need: memref<i64> {attn.host_memory}) {
  %a = memref.alloca() : memref<i64>
  call @callee(%a) : (memref<i64>) -> ()
  %v = memref.load %a[] : memref<i64>
  memref.store %v, %need[] : memref<i64>
  return
}
