// RUN: attnc-opt %s --split-input-file --attn-plan-arena --canonicalize --cse | FileCheck %s

// The temporaries of a function share one arena allocated at its entry:
// slots are assigned at compile time by lifetime (first fit), sizes are
// computed from the call's dims, 64-byte aligned.

// %a and %b live at the same time: two slots; %c is allocated after %a is
// freed and takes %a's slot, whose size is the larger of the two.
// CHECK-LABEL: func.func @slots
// CHECK-SAME:    (%[[X:[^:]+]]: memref<?x8xf32>
// CHECK-DAG:     %[[N:.*]] = memref.dim %[[X]], %c0
// The sizes of %a (32 * n bytes) and %b (128 * n), rounded up to 64:
// CHECK-DAG:     %[[A:.*]] = arith.muli %[[N]], %c32 : index
// CHECK-DAG:     %[[B:.*]] = arith.muli %[[N]], %c128 : index
// CHECK:         %[[SLOT0:.*]] = arith.maxui %{{.*}}, %c64 : index
// CHECK:         %[[TOTAL:.*]] = arith.addi %[[SLOT0]], %{{.*}} : index
// CHECK:         %[[ARENA:.*]] = memref.alloc(%[[TOTAL]]) {alignment = 64 : i64, attn.arena = 2 : i64} : memref<?xi8>
// CHECK:         %[[VA:.*]] = memref.view %[[ARENA]][%c0][%[[N]]] : memref<?xi8> to memref<?x8xf32>
// CHECK:         linalg.copy ins(%[[X]] : memref<?x8xf32>) outs(%[[VA]] : memref<?x8xf32>)
// CHECK:         %[[VB:.*]] = memref.view %[[ARENA]][%[[SLOT0]]][%[[N]]] : memref<?xi8> to memref<?x32xf32>
// CHECK:         %[[VC:.*]] = memref.view %[[ARENA]][%c0][] : memref<?xi8> to memref<4x4xf32>
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     memref.dealloc %{{.*}} : memref<?x
// CHECK:         memref.dealloc %[[ARENA]] : memref<?xi8>
// CHECK-NEXT:    return
func.func @slots(%x: memref<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %x, %c0 : memref<?x8xf32>
  %a = memref.alloc(%n) {alignment = 64 : i64} : memref<?x8xf32>
  linalg.copy ins(%x : memref<?x8xf32>) outs(%a : memref<?x8xf32>)
  %b = memref.alloc(%n) {alignment = 64 : i64} : memref<?x32xf32>
  linalg.fill ins(%zero : f32) outs(%b : memref<?x32xf32>)
  memref.dealloc %a : memref<?x8xf32>
  %c = memref.alloc() {alignment = 64 : i64} : memref<4x4xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x4xf32>)
  memref.dealloc %b : memref<?x32xf32>
  memref.dealloc %c : memref<4x4xf32>
  return
}

// -----

// A size computed in the body from an earlier buffer's reshape is
// recomputed at the entry from the function's own dims.
// CHECK-LABEL: func.func @size_through_reshape
// CHECK-SAME:    (%[[X:[^:]+]]: memref<?x?x8xf32>)
// CHECK-DAG:     %[[D0:.*]] = memref.dim %[[X]], %c0
// CHECK-DAG:     %[[D1:.*]] = memref.dim %[[X]], %c1
// CHECK:         arith.muli %[[D0]], %[[D1]]
// CHECK:         memref.alloc(%{{.*}}) {alignment = 64 : i64, attn.arena = 2 : i64}
// CHECK-NOT:     memref.alloc
// CHECK:         return
func.func @size_through_reshape(%x: memref<?x?x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %b = memref.dim %x, %c0 : memref<?x?x8xf32>
  %t = memref.dim %x, %c1 : memref<?x?x8xf32>
  %a = memref.alloc(%b, %t) {alignment = 64 : i64} : memref<?x?x8xf32>
  linalg.copy ins(%x : memref<?x?x8xf32>) outs(%a : memref<?x?x8xf32>)
  %flat = memref.collapse_shape %a [[0, 1], [2]] : memref<?x?x8xf32> into memref<?x8xf32>
  %rows = memref.dim %flat, %c0 : memref<?x8xf32>
  %h = memref.alloc(%rows) {alignment = 64 : i64} : memref<?x8xf32>
  linalg.copy ins(%flat : memref<?x8xf32>) outs(%h : memref<?x8xf32>)
  memref.dealloc %a : memref<?x?x8xf32>
  memref.dealloc %h : memref<?x8xf32>
  return
}

// -----

// A result (returned), a buffer passed to a call, and a size read from
// memory keep their own allocations.
// CHECK-LABEL: func.func @not_planned
// CHECK-NOT:     attn.arena
// CHECK:         memref.alloc(%{{.*}}) {alignment = 64 : i64} : memref<?xf32>
// CHECK:         memref.alloc(%{{.*}}) {alignment = 64 : i64} : memref<?xf32>
// CHECK-NOT:     attn.arena
// CHECK:         return
func.func private @use(memref<?xf32>)
func.func @not_planned(%n: memref<1xindex>) -> memref<?xf32> {
  %c0 = arith.constant 0 : index
  %size = memref.load %n[%c0] : memref<1xindex>
  %from_memory = memref.alloc(%size) {alignment = 64 : i64} : memref<?xf32>
  func.call @use(%from_memory) : (memref<?xf32>) -> ()
  memref.dealloc %from_memory : memref<?xf32>
  %result = memref.alloc(%size) {alignment = 64 : i64} : memref<?xf32>
  return %result : memref<?xf32>
}

// -----

// Tests that an entry point with the caller's arena (the arguments
// attn-finalize-entry-points adds) stores the bytes it needs, places its
// temporaries in the caller's arena when it is large enough and 64-byte
// aligned, and otherwise allocates one of its own, freed at the exit.
// CHECK-LABEL: func.func @callers_arena
// CHECK-SAME:    (%[[X:[^:]+]]: memref<?x8xf32>, %[[ARENA:[^:]+]]: memref<?xi8>, %[[NEED:[^:]+]]: memref<i64>)
// CHECK-NOT:     attn.arena_need
// CHECK:         %[[N:.*]] = memref.dim %[[X]], %c0
// CHECK:         %[[SIZE:.*]] = arith.muli %[[N]], %c32 : index
// CHECK:         %[[ROUND:.*]] = arith.addi %[[SIZE]], %c63 : index
// CHECK:         %[[BYTES:.*]] = arith.andi %[[ROUND]], %c-64 : index
// CHECK:         %[[BYTES_I64:.*]] = arith.index_cast %[[BYTES]] : index to i64
// CHECK:         memref.store %[[BYTES_I64]], %[[NEED]][] : memref<i64>
// CHECK:         %[[HAVE:.*]] = memref.dim %[[ARENA]], %c0 : memref<?xi8>
// CHECK:         %[[SMALL:.*]] = arith.cmpi ult, %[[HAVE]], %[[BYTES]] : index
// CHECK:         %[[PTR:.*]] = memref.extract_aligned_pointer_as_index %[[ARENA]]
// CHECK:         %[[LOW:.*]] = arith.andi %[[PTR]], %c63 : index
// CHECK:         %[[MISALIGNED:.*]] = arith.cmpi ne, %[[LOW]], %c0 : index
// CHECK:         %[[FALLBACK:.*]] = arith.ori %[[SMALL]], %[[MISALIGNED]] : i1
// CHECK:         %[[USED:.*]] = scf.if %[[FALLBACK]] -> (memref<?xi8>) {
// CHECK:           %[[OWN:.*]] = memref.alloc(%[[BYTES]]) {alignment = 64 : i64, attn.arena = 1 : i64} : memref<?xi8>
// CHECK:           scf.yield %[[OWN]] : memref<?xi8>
// CHECK:         } else {
// CHECK:           scf.yield %[[ARENA]] : memref<?xi8>
// CHECK:         }
// CHECK:         %[[VA:.*]] = memref.view %[[USED]][%c0][%[[N]]] : memref<?xi8> to memref<?x8xf32>
// CHECK:         linalg.copy ins(%[[X]] : memref<?x8xf32>) outs(%[[VA]] : memref<?x8xf32>)
// CHECK-NOT:     memref.alloc
// CHECK:         scf.if %[[FALLBACK]] {
// CHECK-NEXT:      memref.dealloc %[[USED]] : memref<?xi8>
// CHECK-NEXT:    }
// CHECK-NEXT:    return
func.func @callers_arena(%x: memref<?x8xf32>, %arena: memref<?xi8> {attn.arena},
                         %need: memref<i64> {attn.arena_need}) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x8xf32>
  %a = memref.alloc(%n) {alignment = 64 : i64} : memref<?x8xf32>
  linalg.copy ins(%x : memref<?x8xf32>) outs(%a : memref<?x8xf32>)
  memref.dealloc %a : memref<?x8xf32>
  return
}

// -----

// Tests that an entry point without temporaries still tells the caller
// what its arena needs: nothing.
// CHECK-LABEL: func.func @no_temporaries
// CHECK-SAME:    (%{{[^:]+}}: memref<?xi8>, %[[NEED:[^:]+]]: memref<i64>)
// CHECK:         %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK:         memref.store %[[ZERO]], %[[NEED]][] : memref<i64>
// CHECK-NOT:     memref.alloc
// CHECK:         return
func.func @no_temporaries(%arena: memref<?xi8> {attn.arena},
                          %need: memref<i64> {attn.arena_need}) {
  return
}
