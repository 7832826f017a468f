// RUN: attnc-opt %s --attn-reuse-buffers | FileCheck %s

// Deallocations move up to just after the last use; temporaries of the same
// type and sizes whose lifetimes no longer overlap share one buffer.

// CHECK-LABEL: func.func @chain
// CHECK:         %[[A:.*]] = memref.alloc(%{{.*}}) {alignment = 64 : i64} : memref<?x64xf32>
// CHECK:         linalg.copy ins(%{{.*}} : memref<?x64xf32>) outs(%[[A]] : memref<?x64xf32>)
// CHECK:         %[[B:.*]] = memref.alloc(%{{.*}}) {alignment = 64 : i64} : memref<?x64xf32>
// CHECK:         linalg.copy ins(%[[A]] : memref<?x64xf32>) outs(%[[B]] : memref<?x64xf32>)
// The third temporary is the first one's buffer:
// CHECK-NOT:     memref.alloc
// CHECK:         linalg.copy ins(%[[B]] : memref<?x64xf32>) outs(%[[A]] : memref<?x64xf32>)
// CHECK-NEXT:    memref.dealloc %[[B]]
// CHECK-NEXT:    memref.load %[[A]]
// CHECK-NEXT:    memref.dealloc %[[A]]
// CHECK-NEXT:    return

// CHECK-LABEL: func.func @escapes
// CHECK:         %[[A:.*]] = memref.alloc
// CHECK:         call @use(%[[A]])
// CHECK:         %[[B:.*]] = memref.alloc
// CHECK-NEXT:    linalg.copy {{.*}} outs(%[[B]]
// CHECK-NEXT:    memref.dealloc %[[B]]
// CHECK-NEXT:    %[[C:.*]] = memref.alloc
// CHECK-NEXT:    linalg.copy {{.*}} outs(%[[C]]
// CHECK-NEXT:    memref.dealloc %[[C]]
// CHECK-NEXT:    memref.dealloc %[[A]]
func.func private @use(memref<?x64xf32>)
func.func @chain(%x: memref<?x64xf32>, %n: index) -> f32 {
  %c0 = arith.constant 0 : index
  %a = memref.alloc(%n) {alignment = 64 : i64} : memref<?x64xf32>
  linalg.copy ins(%x : memref<?x64xf32>) outs(%a : memref<?x64xf32>)
  %b = memref.alloc(%n) {alignment = 64 : i64} : memref<?x64xf32>
  linalg.copy ins(%a : memref<?x64xf32>) outs(%b : memref<?x64xf32>)
  %c = memref.alloc(%n) {alignment = 64 : i64} : memref<?x64xf32>
  linalg.copy ins(%b : memref<?x64xf32>) outs(%c : memref<?x64xf32>)
  %v = memref.load %c[%c0, %c0] : memref<?x64xf32>
  memref.dealloc %a : memref<?x64xf32>
  memref.dealloc %b : memref<?x64xf32>
  memref.dealloc %c : memref<?x64xf32>
  return %v : f32
}
func.func @escapes(%x: memref<?x64xf32>, %n: index, %m: index) {
  %a = memref.alloc(%n) {alignment = 64 : i64} : memref<?x64xf32>
  linalg.copy ins(%x : memref<?x64xf32>) outs(%a : memref<?x64xf32>)
  func.call @use(%a) : (memref<?x64xf32>) -> ()
  %b = memref.alloc(%n) {alignment = 64 : i64} : memref<?x64xf32>
  linalg.copy ins(%x : memref<?x64xf32>) outs(%b : memref<?x64xf32>)
  %c = memref.alloc(%m) {alignment = 64 : i64} : memref<?x64xf32>
  linalg.copy ins(%x : memref<?x64xf32>) outs(%c : memref<?x64xf32>)
  memref.dealloc %a : memref<?x64xf32>
  memref.dealloc %b : memref<?x64xf32>
  memref.dealloc %c : memref<?x64xf32>
  return
}
