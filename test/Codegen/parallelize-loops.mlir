// RUN: attnc-opt %s --attn-parallelize-loops --canonicalize | FileCheck %s
// RUN: attnc-opt %s --attn-parallelize-loops --canonicalize | FileCheck %s --check-prefix=DEDUP

// Outermost loops whose iterations provably touch disjoint memory run on the
// runtime's pool through attn_parallel_for_sized(n, work, min_work, task,
// arg), which uses the pool when n >= 2 and work >= min_work; the body is
// outlined into `void task(void *arg, int64_t begin, int64_t end)` and the
// values it uses travel in a stack struct.

// A [b, t] nest of row operations: flattened to b * t iterations, on the
// pool when they write 2^16 elements or more (the runtime compares the
// elements written, passed as work, with min_work).
// CHECK-LABEL: func.func @rows
// CHECK-SAME:    (%[[X:[^:]+]]: memref<?x?x64xf32>, %[[Y:[^:]+]]: memref<?x?x64xf32>)
// CHECK-DAG:     %[[MIN:.*]] = llvm.mlir.constant(65536 : i64) : i64
// CHECK-DAG:     %[[F:.*]] = constant @rows_par0 : (!llvm.ptr, i64, i64) -> ()
// CHECK-DAG:     %[[B:.*]] = memref.dim %[[X]], %c0
// CHECK-DAG:     %[[T:.*]] = memref.dim %[[X]], %c1
// CHECK:         %[[N:.*]] = arith.muli %[[B]], %[[T]] : index
// CHECK:         %[[ARG:.*]] = llvm.alloca
// CHECK:         builtin.unrealized_conversion_cast %[[X]] : memref<?x?x64xf32> to !llvm.struct<(ptr, ptr, i64, array<3 x i64>, array<3 x i64>)>
// CHECK:         builtin.unrealized_conversion_cast %[[Y]]
// CHECK:         %[[N64:.*]] = arith.index_cast %[[N]] : index to i64
// The elements of y, the buffer written:
// CHECK:         %[[Y0:.*]] = memref.dim %[[Y]], %c0
// CHECK:         %[[Y1:.*]] = memref.dim %[[Y]], %c1
// CHECK:         %[[Y01:.*]] = arith.muli %[[Y0]], %[[Y1]] : index
// CHECK:         %[[E:.*]] = arith.muli %[[Y01]], %c64 : index
// CHECK:         %[[E64:.*]] = arith.index_cast %[[E]] : index to i64
// CHECK:         call @attn_parallel_for_sized(%[[N64]], %[[E64]], %[[MIN]], %[[F]], %[[ARG]])
// CHECK-NOT:     scf.if
// CHECK-NOT:     scf.for
// CHECK:         return

// Loops that share memory across iterations stay serial: outlined too (so
// that what is left of the entry point is glue LLVM need not optimise), but
// the task is called directly on the whole range.
// CHECK-LABEL: func.func @shared_accumulator
// CHECK-SAME:    passthrough = ["noinline", "optnone"]
// CHECK-NOT:     attn_parallel_for
// CHECK:         call @shared_accumulator_par0(%{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NOT:     attn_parallel_for
// CHECK:         return
// CHECK-LABEL: func.func @reads_neighbour
// CHECK-NOT:     attn_parallel_for
// CHECK:         call @reads_neighbour_par0(
// CHECK-NOT:     attn_parallel_for
// CHECK:         return

// Iterations holding a loop of dynamic trip count (attention's tiles) go to
// the pool from 2^12 elements written; the temporary allocated inside stays
// private to an iteration.
// CHECK-LABEL: func.func @tiles
// CHECK:         %[[MIN:.*]] = llvm.mlir.constant(4096 : i64) : i64
// CHECK:         call @attn_parallel_for_sized(%{{.*}}, %{{.*}}, %[[MIN]],

// The task: the struct's fields loaded back, the flat index split into b, t.
// CHECK-LABEL: func.func private @rows_par0(
// CHECK-SAME:      %[[A:[^:]+]]: !llvm.ptr, %[[BEGIN:[^:]+]]: i64, %[[END:[^:]+]]: i64)
// CHECK-SAME:      attributes {llvm.linkage = #llvm.linkage<internal>}
// CHECK:         %[[T:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK:         %[[XS:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64, array<3 x i64>, array<3 x i64>)> to memref<?x?x64xf32>
// CHECK:         %[[LO:.*]] = arith.index_cast %[[BEGIN]] : i64 to index
// CHECK:         %[[HI:.*]] = arith.index_cast %[[END]] : i64 to index
// CHECK:         scf.for %[[I:.*]] = %[[LO]] to %[[HI]] step %c1 {
// CHECK:           %[[BI:.*]] = arith.divui %[[I]], %[[T]] : index
// CHECK:           %[[TI:.*]] = arith.remui %[[I]], %[[T]] : index
// CHECK:           memref.subview %[[XS]][%[[BI]], %[[TI]], 0] [1, 1, 64]
// CHECK:           vector.transfer_write
// CHECK:       func.func private @attn_parallel_for_sized(i64, i64, i64, (!llvm.ptr, i64, i64) -> (), !llvm.ptr)
// CHECK-LABEL: func.func private @shared_accumulator_par0(
// CHECK:         scf.for
// CHECK:           memref.store
// CHECK-LABEL: func.func private @reads_neighbour_par0(
// CHECK:         scf.for
// CHECK-LABEL: func.func private @tiles_par0(
// CHECK:         scf.for
// CHECK:           memref.alloc(%{{.*}}) : memref<?x64xf32>
// CHECK:           scf.for
// CHECK:           memref.copy
// CHECK:           memref.dealloc

func.func @rows(%x: memref<?x?x64xf32>, %y: memref<?x?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cst = arith.constant 0.0 : f32
  %b = memref.dim %x, %c0 : memref<?x?x64xf32>
  %t = memref.dim %x, %c1 : memref<?x?x64xf32>
  scf.for %i = %c0 to %b step %c1 {
    scf.for %j = %c0 to %t step %c1 {
      %in = memref.subview %x[%i, %j, 0] [1, 1, 64] [1, 1, 1] : memref<?x?x64xf32> to memref<64xf32, strided<[1], offset: ?>>
      %out = memref.subview %y[%i, %j, 0] [1, 1, 64] [1, 1, 1] : memref<?x?x64xf32> to memref<64xf32, strided<[1], offset: ?>>
      %v = vector.transfer_read %in[%c0], %cst {in_bounds = [true]} : memref<64xf32, strided<[1], offset: ?>>, vector<64xf32>
      %w = arith.addf %v, %v : vector<64xf32>
      vector.transfer_write %w, %out[%c0] {in_bounds = [true]} : vector<64xf32>, memref<64xf32, strided<[1], offset: ?>>
    }
  }
  return
}
func.func @shared_accumulator(%x: memref<?xf32>, %acc: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %x[%i] : memref<?xf32>
    %a = memref.load %acc[%c0] : memref<1xf32>
    %s = arith.addf %a, %v : f32
    memref.store %s, %acc[%c0] : memref<1xf32>
  }
  return
}
func.func @reads_neighbour(%y: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cst = arith.constant 0.0 : f32
  %n = memref.dim %y, %c0 : memref<?x64xf32>
  %m = arith.subi %n, %c1 : index
  scf.for %i = %c0 to %m step %c1 {
    %ip = arith.addi %i, %c1 : index
    %prev = memref.subview %y[%ip, 0] [1, 64] [1, 1] : memref<?x64xf32> to memref<64xf32, strided<[1], offset: ?>>
    %out = memref.subview %y[%i, 0] [1, 64] [1, 1] : memref<?x64xf32> to memref<64xf32, strided<[1], offset: ?>>
    %v = vector.transfer_read %prev[%c0], %cst {in_bounds = [true]} : memref<64xf32, strided<[1], offset: ?>>, vector<64xf32>
    vector.transfer_write %v, %out[%c0] {in_bounds = [true]} : vector<64xf32>, memref<64xf32, strided<[1], offset: ?>>
  }
  return
}
func.func @tiles(%q: memref<?x?x64xf32>, %o: memref<?x?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cst = arith.constant 0.0 : f32
  %b = memref.dim %q, %c0 : memref<?x?x64xf32>
  %rows = memref.dim %q, %c1 : memref<?x?x64xf32>
  scf.for %i = %c0 to %b step %c1 {
    %tmp = memref.alloc(%rows) : memref<?x64xf32>
    scf.for %r = %c0 to %rows step %c1 {
      %in = memref.subview %q[%i, %r, 0] [1, 1, 64] [1, 1, 1] : memref<?x?x64xf32> to memref<64xf32, strided<[1], offset: ?>>
      %v = vector.transfer_read %in[%c0], %cst {in_bounds = [true]} : memref<64xf32, strided<[1], offset: ?>>, vector<64xf32>
      vector.transfer_write %v, %tmp[%r, %c0] {in_bounds = [true]} : vector<64xf32>, memref<?x64xf32>
    }
    %out = memref.subview %o[%i, 0, 0] [1, %rows, 64] [1, 1, 1] : memref<?x?x64xf32> to memref<?x64xf32, strided<[64, 1], offset: ?>>
    memref.copy %tmp, %out : memref<?x64xf32> to memref<?x64xf32, strided<[64, 1], offset: ?>>
    memref.dealloc %tmp : memref<?x64xf32>
  }
  return
}
// Loops with the same body on other buffers (a model's layers) share one
// task: the second call reuses the first loop's task, the third (another
// body) gets its own, and no function is made for the second.
// DEDUP-LABEL: func.func @layers
// DEDUP-DAG:     %[[T0:.*]] = constant @layers_par0
// DEDUP-DAG:     %[[T2:.*]] = constant @layers_par2
// DEDUP:         call @attn_parallel_for_sized(%{{.*}}, %{{.*}}, %{{.*}}, %[[T0]],
// DEDUP:         call @attn_parallel_for_sized(%{{.*}}, %{{.*}}, %{{.*}}, %[[T0]],
// DEDUP:         call @attn_parallel_for_sized(%{{.*}}, %{{.*}}, %{{.*}}, %[[T2]],
// DEDUP-NOT:   func.func private @layers_par1(
// DEDUP:       func.func private @layers_par0(
// DEDUP-NOT:   func.func private @layers_par1(
// DEDUP:       func.func private @layers_par2(
// DEDUP:         arith.mulf
// DEDUP-NOT:   func.func private @layers_par1(

func.func @layers(%x: memref<?x64xf32>, %y: memref<?x64xf32>, %z: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cst = arith.constant 0.0 : f32
  %n = memref.dim %x, %c0 : memref<?x64xf32>
  scf.for %i = %c0 to %n step %c1 {
    %in = memref.subview %x[%i, 0] [1, 64] [1, 1] : memref<?x64xf32> to memref<64xf32, strided<[1], offset: ?>>
    %out = memref.subview %y[%i, 0] [1, 64] [1, 1] : memref<?x64xf32> to memref<64xf32, strided<[1], offset: ?>>
    %v = vector.transfer_read %in[%c0], %cst {in_bounds = [true]} : memref<64xf32, strided<[1], offset: ?>>, vector<64xf32>
    %w = arith.addf %v, %v : vector<64xf32>
    vector.transfer_write %w, %out[%c0] {in_bounds = [true]} : vector<64xf32>, memref<64xf32, strided<[1], offset: ?>>
  }
  scf.for %i = %c0 to %n step %c1 {
    %in = memref.subview %y[%i, 0] [1, 64] [1, 1] : memref<?x64xf32> to memref<64xf32, strided<[1], offset: ?>>
    %out = memref.subview %z[%i, 0] [1, 64] [1, 1] : memref<?x64xf32> to memref<64xf32, strided<[1], offset: ?>>
    %v = vector.transfer_read %in[%c0], %cst {in_bounds = [true]} : memref<64xf32, strided<[1], offset: ?>>, vector<64xf32>
    %w = arith.addf %v, %v : vector<64xf32>
    vector.transfer_write %w, %out[%c0] {in_bounds = [true]} : vector<64xf32>, memref<64xf32, strided<[1], offset: ?>>
  }
  scf.for %i = %c0 to %n step %c1 {
    %in = memref.subview %z[%i, 0] [1, 64] [1, 1] : memref<?x64xf32> to memref<64xf32, strided<[1], offset: ?>>
    %out = memref.subview %x[%i, 0] [1, 64] [1, 1] : memref<?x64xf32> to memref<64xf32, strided<[1], offset: ?>>
    %v = vector.transfer_read %in[%c0], %cst {in_bounds = [true]} : memref<64xf32, strided<[1], offset: ?>>, vector<64xf32>
    %w = arith.mulf %v, %v : vector<64xf32>
    vector.transfer_write %w, %out[%c0] {in_bounds = [true]} : vector<64xf32>, memref<64xf32, strided<[1], offset: ?>>
  }
  return
}
