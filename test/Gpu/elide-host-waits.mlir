// attn-gpu-elide-host-waits keeps the host's waits for the device only
// where the host then touches memory device work uses, calls something or
// returns: all device work is on one in-order stream.
// RUN: attnc-opt %s --pass-pipeline='builtin.module(func.func(attn-gpu-elide-host-waits))' | FileCheck %s

// The waits gpu-async-region puts before an scf.if and at the end of its
// branches go when both branches and what follows queue more work; the
// last one, before the return, stays.
// CHECK-LABEL: func.func @branches
// CHECK-NOT: gpu.wait [
// CHECK: scf.if
// CHECK-NOT: gpu.wait [
// CHECK: } else {
// CHECK-NOT: gpu.wait [
// CHECK: }
// CHECK-NOT: gpu.wait [
// CHECK: gpu.memset async
// CHECK-NEXT: gpu.wait [
// CHECK-NEXT: return
func.func @branches(%d: memref<4xf32>, %few: i1, %x: f32) {
  %t0 = gpu.wait async
  %t1 = gpu.memset async [%t0] %d, %x : memref<4xf32>, f32
  gpu.wait [%t1]
  scf.if %few {
    %t2 = gpu.wait async
    %t3 = gpu.memset async [%t2] %d, %x : memref<4xf32>, f32
    gpu.wait [%t3]
  } else {
    %t2 = gpu.wait async
    %t3 = gpu.memset async [%t2] %d, %x : memref<4xf32>, f32
    gpu.wait [%t3]
  }
  %t4 = gpu.wait async
  %t5 = gpu.memset async [%t4] %d, %x : memref<4xf32>, f32
  gpu.wait [%t5]
  return
}

// The host reads a value copied back from the device: that wait stays.
// A read of host memory no device work touches needs no wait.
// CHECK-LABEL: func.func @host_reads
// CHECK: gpu.memcpy async
// CHECK-NEXT: gpu.wait [
// CHECK-NEXT: memref.load %arg1
// CHECK: gpu.memset async
// CHECK-NEXT: memref.load %arg2
// CHECK: gpu.memset async
// CHECK-NEXT: gpu.wait [
// CHECK-NEXT: return
func.func @host_reads(%d: memref<4xf32>, %h: memref<4xf32>, %shape: memref<2xi64>) -> f32 {
  %c0 = arith.constant 0 : index
  %t0 = gpu.wait async
  %t1 = gpu.memcpy async [%t0] %h, %d : memref<4xf32>, memref<4xf32>
  gpu.wait [%t1]
  %v = memref.load %h[%c0] : memref<4xf32>
  %t2 = gpu.wait async
  %t3 = gpu.memset async [%t2] %d, %v : memref<4xf32>, f32
  gpu.wait [%t3]
  %n = memref.load %shape[%c0] : memref<2xi64>
  %t4 = gpu.wait async
  %t5 = gpu.memset async [%t4] %d, %v : memref<4xf32>, f32
  gpu.wait [%t5]
  return %v : f32
}

// A loop's body goes back to its start or leaves: the wait at its end stays
// when either way reaches a host access first.
// CHECK-LABEL: func.func @loops
// CHECK: gpu.memcpy async
// CHECK-NEXT: gpu.wait [
// CHECK-NEXT: scf.for
// CHECK-NEXT: gpu.wait async
// CHECK-NEXT: gpu.memset async
// CHECK-NEXT: gpu.wait [
// CHECK-NEXT: }
// CHECK-NEXT: memref.load %arg1
// CHECK-NEXT: scf.for
// CHECK-NEXT: memref.load %arg1
// CHECK-NEXT: gpu.wait async
// CHECK-NEXT: gpu.memset async
// CHECK-NEXT: gpu.wait [
// CHECK-NEXT: }
// CHECK-NEXT: gpu.wait async
// CHECK-NEXT: gpu.memset async
// CHECK-NEXT: scf.for
// CHECK-NEXT: gpu.wait async
// CHECK-NEXT: gpu.memset async
// CHECK-NEXT: }
// CHECK-NEXT: gpu.wait async
// CHECK-NEXT: gpu.memset async
// CHECK-NEXT: gpu.wait [
// CHECK-NEXT: return
func.func @loops(%d: memref<4xf32>, %h: memref<4xf32>, %n: index, %x: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t0 = gpu.wait async
  %t1 = gpu.memcpy async [%t0] %h, %d : memref<4xf32>, memref<4xf32>
  gpu.wait [%t1]
  // After the loop, a host read.
  scf.for %i = %c0 to %n step %c1 {
    %t2 = gpu.wait async
    %t3 = gpu.memset async [%t2] %d, %x : memref<4xf32>, f32
    gpu.wait [%t3]
  }
  %v = memref.load %h[%c0] : memref<4xf32>
  // At the loop's start, a host read (its wait before the memset goes: the
  // next iteration's read is after the kept wait at the end).
  scf.for %i = %c0 to %n step %c1 {
    %u = memref.load %h[%c0] : memref<4xf32>
    gpu.wait [%t1]
    %t2 = gpu.wait async
    %t3 = gpu.memset async [%t2] %d, %u : memref<4xf32>, f32
    gpu.wait [%t3]
  }
  // Neither: the loop's waits go.
  %t4 = gpu.wait async
  %t5 = gpu.memset async [%t4] %d, %x : memref<4xf32>, f32
  gpu.wait [%t5]
  scf.for %i = %c0 to %n step %c1 {
    %t6 = gpu.wait async
    %t7 = gpu.memset async [%t6] %d, %x : memref<4xf32>, f32
    gpu.wait [%t7]
  }
  %t8 = gpu.wait async
  %t9 = gpu.memset async [%t8] %d, %x : memref<4xf32>, f32
  gpu.wait [%t9]
  return
}

func.func private @callee(memref<4xf32>)

// A call may do anything: the wait before it stays.
// CHECK-LABEL: func.func @calls
// CHECK: gpu.memset async
// CHECK-NEXT: gpu.wait [
// CHECK-NEXT: call @callee
func.func @calls(%d: memref<4xf32>, %h: memref<4xf32>, %x: f32) {
  %t0 = gpu.wait async
  %t1 = gpu.memset async [%t0] %d, %x : memref<4xf32>, f32
  gpu.wait [%t1]
  call @callee(%h) : (memref<4xf32>) -> ()
  %t2 = gpu.wait async
  %t3 = gpu.memset async [%t2] %d, %x : memref<4xf32>, f32
  gpu.wait [%t3]
  return
}
