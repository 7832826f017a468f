// attn-gpu-map-loops turns sequential host loops around device work into
// kernels where that is legal (GpuLoopRestructure.h): row loops around a
// parallel loop become one kernel whose threads walk the rows, a full
// reduction into one element becomes partial sums across threads, and a
// reduction over many rows into few columns partial sums over slices of
// the rows.
// RUN: attnc-opt %s --pass-pipeline='builtin.module(func.func(attn-gpu-map-loops))' | FileCheck %s

// A column sum (a bias's gradient): 192 columns, so 256 slices of the rows.
// Kernel 1, thread (s, j) with j the fastest: rows s, s + 256, ... of
// column j; kernel 2, thread j: acc[j] plus the 256 partial sums in order.
// CHECK-LABEL: func.func @column_sum
// CHECK: %[[P:.*]] = gpu.alloc () : memref<256x192xf32>
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: %[[S:.*]] = arith.divsi %{{.*}}, %c192
// CHECK: %[[FIRST:.*]] = arith.addi %c0, %{{.*}}
// CHECK: %[[STEP:.*]] = arith.muli %c1, %c256
// CHECK: scf.for %{{.*}} = %[[FIRST]] to %arg2 step %[[STEP]] iter_args
// CHECK: memref.load %arg0
// CHECK: memref.store %{{.*}}, %[[P]][%[[S]], %{{.*}}]
// CHECK: mapping = [#gpu.loop_dim_map<processor = thread_x
// CHECK: mapping = [#gpu.loop_dim_map<processor = block_x
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: %[[ACC:.*]] = memref.load %arg1[%[[J:.*]]]
// CHECK: scf.for %{{.*}} = %{{.*}} to %c256{{.*}} iter_args(%{{.*}} = %[[ACC]])
// CHECK: memref.load %[[P]]
// CHECK: memref.store %{{.*}}, %arg1[%[[J]]]
// CHECK: gpu.dealloc %[[P]]
// CHECK-NEXT: return
func.func @column_sum(%x: memref<?x192xf32>, %acc: memref<192xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c192 = arith.constant 192 : index
  scf.for %i = %c0 to %n step %c1 {
    scf.parallel (%j) = (%c0) to (%c192) step (%c1) {
      %a = memref.load %x[%i, %j] : memref<?x192xf32>
      %b = memref.load %acc[%j] : memref<192xf32>
      %s = arith.addf %a, %b : f32
      memref.store %s, %acc[%j] : memref<192xf32>
      scf.reduce
    }
  }
  return
}

// Rows of a [B, T, D] tensor: both row loops inside the one kernel, the
// inner one sliced.
// CHECK-LABEL: func.func @nested_rows
// CHECK: gpu.alloc () : memref<256x64xf32>
// CHECK: scf.for %{{.*}} = %c0 to %arg2 step %c1 iter_args
// CHECK-NEXT: scf.for %{{.*}} to %arg3 step %{{.*}} iter_args
// CHECK: scf.for %{{.*}} to %c256
// CHECK-NOT: scf.for
// CHECK: return
func.func @nested_rows(%x: memref<?x?x64xf32>, %acc: memref<64xf32>, %b: index, %t: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  scf.for %i = %c0 to %b step %c1 {
    scf.for %k = %c0 to %t step %c1 {
      scf.parallel (%j) = (%c0) to (%c64) step (%c1) {
        %a = memref.load %x[%i, %k, %j] : memref<?x?x64xf32>
        %v = memref.load %acc[%j] : memref<64xf32>
        %s = arith.addf %a, %v : f32
        memref.store %s, %acc[%j] : memref<64xf32>
        scf.reduce
      }
    }
  }
  return
}

// The embedding gradient's scatter-add: row ids[i] of the table gets row i
// of the gradient; the columns are independent, so each thread owns one
// column of the table and adds the rows in id order (no atomics).
// CHECK-LABEL: func.func @scatter_add
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: scf.for
// CHECK: memref.load %arg0
// CHECK: memref.subview %arg2
// CHECK: memref.store
// CHECK: return
func.func @scatter_add(%ids: memref<?xi32>, %grad: memref<?x8xf32>, %table: memref<16x8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %n step %c1 {
    %id = memref.load %ids[%i] : memref<?xi32>
    %row = arith.index_cast %id : i32 to index
    %dest = memref.subview %table[%row, 0] [1, 8] [1, 1] : memref<16x8xf32> to memref<1x8xf32, strided<[8, 1], offset: ?>>
    %src = memref.subview %grad[%i, 0] [1, 8] [1, 1] : memref<?x8xf32> to memref<1x8xf32, strided<[8, 1], offset: ?>>
    scf.parallel (%r, %j) = (%c0, %c0) to (%c1, %c8) step (%c1, %c1) {
      %a = memref.load %src[%r, %j] : memref<1x8xf32, strided<[8, 1], offset: ?>>
      %b = memref.load %dest[%r, %j] : memref<1x8xf32, strided<[8, 1], offset: ?>>
      %s = arith.addf %b, %a : f32
      memref.store %s, %dest[%r, %j] : memref<1x8xf32, strided<[8, 1], offset: ?>>
      scf.reduce
    }
  }
  return
}

// Iterations that write the same element (every column into acc[0]) would
// race: the row loop keeps its kernel per row, in an alloca scope, so that
// each launch's argument arrays leave the host's stack with its iteration.
// CHECK-LABEL: func.func @same_element
// CHECK: scf.for
// CHECK-NEXT: memref.alloca_scope
// CHECK: scf.parallel
// CHECK: return
func.func @same_element(%x: memref<?x4xf32>, %acc: memref<4xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %n step %c1 {
    scf.parallel (%j) = (%c0) to (%c4) step (%c1) {
      %a = memref.load %x[%i, %j] : memref<?x4xf32>
      %b = memref.load %acc[%c0] : memref<4xf32>
      %s = arith.addf %a, %b : f32
      memref.store %s, %acc[%c0] : memref<4xf32>
      scf.reduce
    }
  }
  return
}

// A sum of squares over a flat buffer (the gradient norm): 4096 threads'
// partial sums, thread p taking elements p, p + 4096, ..., then their sum
// on one thread.
// CHECK-LABEL: func.func @sum_of_squares
// CHECK: %[[P:.*]] = gpu.alloc () : memref<4096xf64>
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: scf.for {{.*}} iter_args(%[[S:.*]] = %{{.*}}) -> (f64)
// CHECK: arith.mulf
// CHECK: arith.addf %[[S]]
// CHECK: memref.store %{{.*}}, %[[P]]
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c1{{.*}})
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c4096
// CHECK: memref.load %[[P]]
// CHECK: gpu.dealloc %[[P]]
func.func @sum_of_squares(%x: memref<?xf32>, %acc: memref<f64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %x[%i] : memref<?xf32>
    %a = memref.load %acc[] : memref<f64>
    %w = arith.extf %v : f32 to f64
    %sq = arith.mulf %w, %w : f64
    %s = arith.addf %a, %sq : f64
    memref.store %s, %acc[] : memref<f64>
  }
  return
}

// A column maximum combines with maximumf from -inf; static rows cap the
// slices at a quarter of them (64 rows: 16 slices).
// CHECK-LABEL: func.func @column_max
// CHECK: gpu.alloc () : memref<16x32xf32>
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: arith.maximumf
// CHECK: scf.for %{{.*}} to %c16
// CHECK: arith.maximumf
func.func @column_max(%x: memref<64x32xf32>, %acc: memref<32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%j) = (%c0) to (%c32) step (%c1) {
    scf.for %i = %c0 to %c64 step %c1 {
      %a = memref.load %x[%i, %j] : memref<64x32xf32>
      %b = memref.load %acc[%j] : memref<32xf32>
      %m = arith.maximumf %b, %a : f32
      memref.store %m, %acc[%j] : memref<32xf32>
    }
    scf.reduce
  }
  return
}

// Left as one kernel: rows too few to slice (8: at most 2 slices), columns
// too many (a row reduction over 65,537 rows), and a product (the combine
// of a subtraction is no accumulation).
// CHECK-LABEL: func.func @not_split
// CHECK-NOT: gpu.alloc
// CHECK: return
func.func @not_split(%x: memref<8x32xf32>, %acc: memref<32xf32>, %y: memref<65537x4xf32>, %rows: memref<65537xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %c65537 = arith.constant 65537 : index
  scf.parallel (%j) = (%c0) to (%c32) step (%c1) {
    scf.for %i = %c0 to %c8 step %c1 {
      %a = memref.load %x[%i, %j] : memref<8x32xf32>
      %b = memref.load %acc[%j] : memref<32xf32>
      %s = arith.addf %b, %a : f32
      memref.store %s, %acc[%j] : memref<32xf32>
    }
    scf.reduce
  }
  scf.parallel (%r) = (%c0) to (%c65537) step (%c1) {
    scf.for %k = %c0 to %c4 step %c1 {
      %a = memref.load %y[%r, %k] : memref<65537x4xf32>
      %b = memref.load %rows[%r] : memref<65537xf32>
      %s = arith.addf %b, %a : f32
      memref.store %s, %rows[%r] : memref<65537xf32>
    }
    scf.reduce
  }
  scf.parallel (%j) = (%c0) to (%c32) step (%c1) {
    scf.for %i = %c0 to %c32 step %c1 {
      %a = memref.load %acc[%j] : memref<32xf32>
      %b = memref.load %x[%c0, %j] : memref<8x32xf32>
      %s = arith.subf %a, %b : f32
      memref.store %s, %acc[%j] : memref<32xf32>
    }
    scf.reduce
  }
  return
}

// A row's sum over 1,024 static elements (a softmax's over a vocabulary),
// rows dynamic: a warp's 32 lanes per row, lane s taking elements s, s + 32,
// ... (the slice the fastest dimension, so that a warp reads consecutive
// elements), then the row's 32 partial sums in order.
// CHECK-LABEL: func.func @row_sum
// CHECK: %[[P:.*]] = gpu.alloc (%arg2) : memref<?x32xf32>
// CHECK: %[[S:.*]] = arith.remsi %{{.*}}, %c32
// CHECK: %[[R:.*]] = arith.divsi %{{.*}}, %c32
// CHECK: scf.for %{{.*}} = %{{.*}} to %c1024 step %{{.*}} iter_args
// CHECK: memref.load %arg0[%[[R]], %{{.*}}]
// CHECK: memref.store %{{.*}}, %[[P]][%[[R]], %[[S]]]
// CHECK: scf.for %{{.*}} to %c32
// CHECK: gpu.dealloc %[[P]]
func.func @row_sum(%x: memref<?x1024xf32>, %acc: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c1024 = arith.constant 1024 : index
  scf.parallel (%r) = (%c0) to (%n) step (%c1) {
    scf.for %k = %c0 to %c1024 step %c1 {
      %a = memref.load %x[%r, %k] : memref<?x1024xf32>
      %b = memref.load %acc[%r] : memref<?xf32>
      %s = arith.addf %b, %a : f32
      memref.store %s, %acc[%r] : memref<?xf32>
    }
    scf.reduce
  }
  return
}

// A matrix product's terms are no rows of their own (each row of A is read
// for every column of C): one kernel, a thread per element of C.
// CHECK-LABEL: func.func @product
// CHECK-NOT: gpu.alloc
// CHECK: return
func.func @product(%a: memref<?x512xf32>, %b: memref<64x512xf32>, %c: memref<?x64xf32>, %m: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c512 = arith.constant 512 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%m, %c64) step (%c1, %c1) {
    scf.for %k = %c0 to %c512 step %c1 {
      %x = memref.load %a[%i, %k] : memref<?x512xf32>
      %y = memref.load %b[%j, %k] : memref<64x512xf32>
      %z = memref.load %c[%i, %j] : memref<?x64xf32>
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %z, %p : f32
      memref.store %s, %c[%i, %j] : memref<?x64xf32>
    }
    scf.reduce
  }
  return
}

// A layer norm's weight and bias gradients in one loop: two accumulators,
// each with its partial results, carried together and combined together.
// CHECK-LABEL: func.func @two_accumulators
// CHECK: %[[PW:.*]] = gpu.alloc () : memref<256x192xf32>
// CHECK: %[[PB:.*]] = gpu.alloc () : memref<256x192xf32>
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (f32, f32)
// CHECK: scf.for {{.*}} iter_args(%[[W:.*]] = %{{.*}}, %[[B:.*]] = %{{.*}}) -> (f32, f32)
// CHECK: arith.mulf
// CHECK: arith.addf %[[W]]
// CHECK: arith.addf %[[B]]
// CHECK: memref.store %{{.*}}, %[[PW]]
// CHECK: memref.store %{{.*}}, %[[PB]]
// CHECK: scf.for %{{.*}} to %c256{{.*}} iter_args
// CHECK: memref.load %[[PW]]
// CHECK: memref.load %[[PB]]
// CHECK: gpu.dealloc %[[PW]]
// CHECK: gpu.dealloc %[[PB]]
func.func @two_accumulators(%dy: memref<?x?x192xf32>, %xhat: memref<?x?x192xf32>, %dw: memref<192xf32>, %db: memref<192xf32>, %b: index, %t: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c192 = arith.constant 192 : index
  scf.for %i = %c0 to %b step %c1 {
    scf.for %k = %c0 to %t step %c1 {
      scf.parallel (%j) = (%c0) to (%c192) step (%c1) {
        %g = memref.load %dy[%i, %k, %j] : memref<?x?x192xf32>
        %x = memref.load %xhat[%i, %k, %j] : memref<?x?x192xf32>
        %w = memref.load %dw[%j] : memref<192xf32>
        %v = memref.load %db[%j] : memref<192xf32>
        %gx = arith.mulf %g, %x : f32
        %w2 = arith.addf %w, %gx : f32
        %v2 = arith.addf %v, %g : f32
        memref.store %w2, %dw[%j] : memref<192xf32>
        memref.store %v2, %db[%j] : memref<192xf32>
        scf.reduce
      }
    }
  }
  return
}

// A fill right before the reduction into the same elements (a softmax's
// row maximum starting from -inf) becomes the reduction's first store, in
// its kernel: one kernel, not two. The bounds are other values of the same
// sizes (the reduction's come through a reshape).
// CHECK-LABEL: func.func @fill_then_max
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: memref.store %[[NINF:.*]], %arg1[%[[I:.*]], %[[J:.*]], %[[K:.*]]]
// CHECK-NEXT: scf.for
// CHECK: arith.maximumf
// CHECK: memref.store %{{.*}}, %arg1[%[[I]], %[[J]], %[[K]]]
// CHECK: mapping = [#gpu.loop_dim_map<processor = block_x
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @fill_then_max(%s: memref<?x12x?x?xf32>, %m: memref<?x12x?xf32>, %flat: memref<?x768xf32>, %b: index, %t: index, %u: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c12 = arith.constant 12 : index
  %ninf = arith.constant 0xFF800000 : f32
  %rows = memref.expand_shape %flat [[0, 1], [2]] output_shape [%b, %t, 768] : memref<?x768xf32> into memref<?x?x768xf32>
  %rb = memref.dim %rows, %c0 : memref<?x?x768xf32>
  %rt = memref.dim %rows, %c1 : memref<?x?x768xf32>
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%b, %c12, %t) step (%c1, %c1, %c1) {
    memref.store %ninf, %m[%i, %j, %k] : memref<?x12x?xf32>
    scf.reduce
  }
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%rb, %c12, %rt) step (%c1, %c1, %c1) {
    scf.for %l = %c0 to %u step %c1 {
      %x = memref.load %s[%i, %j, %k, %l] : memref<?x12x?x?xf32>
      %a = memref.load %m[%i, %j, %k] : memref<?x12x?xf32>
      %y = arith.maximumf %x, %a : f32
      memref.store %y, %m[%i, %j, %k] : memref<?x12x?xf32>
    }
    scf.reduce
  }
  return
}

// A fill before a column sum that is split: the combining kernel starts
// from the fill's value instead of reading the accumulator; two kernels.
// CHECK-LABEL: func.func @fill_then_column_sum
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[P:.*]] = gpu.alloc () : memref<256x192xf32>
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: memref.store %{{.*}}, %[[P]]
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK-NOT: memref.load %arg1
// CHECK: scf.for %{{.*}} = %{{.*}} to %c256{{.*}} iter_args(%{{.*}} = %[[ZERO]])
// CHECK: memref.load %[[P]]
// CHECK: memref.store %{{.*}}, %arg1
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @fill_then_column_sum(%x: memref<?x192xf32>, %acc: memref<192xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c192 = arith.constant 192 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%j) = (%c0) to (%c192) step (%c1) {
    memref.store %zero, %acc[%j] : memref<192xf32>
    scf.reduce
  }
  scf.parallel (%j) = (%c0) to (%c192) step (%c1) {
    scf.for %i = %c0 to %n step %c1 {
      %a = memref.load %x[%i, %j] : memref<?x192xf32>
      %b = memref.load %acc[%j] : memref<192xf32>
      %s = arith.addf %a, %b : f32
      memref.store %s, %acc[%j] : memref<192xf32>
    }
    scf.reduce
  }
  return
}

// A fill over other columns than the reduction's stays a kernel of its own.
// CHECK-LABEL: func.func @fill_of_other_columns
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: memref.store %{{.*}}, %arg1
// CHECK-NOT: scf.for
// CHECK: mapping = [#gpu.loop_dim_map<processor = block_x
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: scf.for
func.func @fill_of_other_columns(%x: memref<?x?xf32>, %acc: memref<?xf32>, %n: index, %cols: index, %fewer: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%j) = (%c0) to (%fewer) step (%c1) {
    memref.store %zero, %acc[%j] : memref<?xf32>
    scf.reduce
  }
  scf.parallel (%j) = (%c0) to (%cols) step (%c1) {
    scf.for %i = %c0 to %n step %c1 {
      %a = memref.load %x[%j, %i] : memref<?x?xf32>
      %b = memref.load %acc[%j] : memref<?xf32>
      %s = arith.addf %a, %b : f32
      memref.store %s, %acc[%j] : memref<?xf32>
    }
    scf.reduce
  }
  return
}

// A layer norm's statistics as bufferisation leaves them: one zero fill
// that both sums start from, copied for the first. The copy of the filled
// buffer becomes a fill of its target, the first fill moves down to the
// second sum past loops that touch other buffers, and each sum (split over
// a warp's lanes) starts from zero in its combining kernel, and the mean
// is taken in the first sum's combining kernel: four kernels, not seven.
// CHECK-LABEL: func.func @layer_norm_statistics
// CHECK-COUNT-4: processor = block_x
// CHECK-NOT: processor = block_x
// CHECK: return
func.func @layer_norm_statistics(%x: memref<?x768xf32>, %arena: memref<?xi8>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c768 = arith.constant 768 : index
  %c4096 = arith.constant 4096 : index
  %c8192 = arith.constant 8192 : index
  %zero = arith.constant 0.0 : f32
  %width = arith.constant 768.0 : f32
  %a = memref.view %arena[%c0][%n] : memref<?xi8> to memref<?xf32>
  %b = memref.view %arena[%c4096][%n] : memref<?xi8> to memref<?xf32>
  %mean = memref.view %arena[%c8192][%n] : memref<?xi8> to memref<?xf32>
  scf.parallel (%j) = (%c0) to (%n) step (%c1) {
    memref.store %zero, %a[%j] : memref<?xf32>
    scf.reduce
  }
  memref.copy %a, %b : memref<?xf32> to memref<?xf32>
  scf.parallel (%j) = (%c0) to (%n) step (%c1) {
    scf.for %i = %c0 to %c768 step %c1 {
      %v = memref.load %x[%j, %i] : memref<?x768xf32>
      %s = memref.load %b[%j] : memref<?xf32>
      %t = arith.addf %v, %s : f32
      memref.store %t, %b[%j] : memref<?xf32>
    }
    scf.reduce
  }
  scf.parallel (%j) = (%c0) to (%n) step (%c1) {
    %s = memref.load %b[%j] : memref<?xf32>
    %m = arith.divf %s, %width : f32
    memref.store %m, %mean[%j] : memref<?xf32>
    scf.reduce
  }
  scf.parallel (%j) = (%c0) to (%n) step (%c1) {
    scf.for %i = %c0 to %c768 step %c1 {
      %v = memref.load %x[%j, %i] : memref<?x768xf32>
      %m = memref.load %mean[%j] : memref<?xf32>
      %d = arith.subf %v, %m : f32
      %q = arith.mulf %d, %d : f32
      %s = memref.load %a[%j] : memref<?xf32>
      %t = arith.addf %q, %s : f32
      memref.store %t, %a[%j] : memref<?xf32>
    }
    scf.reduce
  }
  return
}

// The same statistics of [B, T] rows as the models have them: each row's
// statistic at [i, 0] of a [rows, 1] buffer, the loops' own index with a
// constant beside it. Four kernels again.
// CHECK-LABEL: func.func @layer_norm_statistics_of_rows
// CHECK-COUNT-4: processor = block_x
// CHECK-NOT: processor = block_x
// CHECK: return
func.func @layer_norm_statistics_of_rows(%x: memref<?x1x768xf32>, %arena: memref<?xi8>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c768 = arith.constant 768 : index
  %c4096 = arith.constant 4096 : index
  %c8192 = arith.constant 8192 : index
  %zero = arith.constant 0.0 : f32
  %width = arith.constant 768.0 : f32
  %a = memref.view %arena[%c0][%n] : memref<?xi8> to memref<?x1xf32>
  %b = memref.view %arena[%c4096][%n] : memref<?xi8> to memref<?x1xf32>
  %mean = memref.view %arena[%c8192][%n] : memref<?xi8> to memref<?x1xf32>
  scf.parallel (%j) = (%c0) to (%n) step (%c1) {
    memref.store %zero, %a[%j, %c0] : memref<?x1xf32>
    scf.reduce
  }
  memref.copy %a, %b : memref<?x1xf32> to memref<?x1xf32>
  scf.parallel (%j) = (%c0) to (%n) step (%c1) {
    scf.for %i = %c0 to %c768 step %c1 {
      %v = memref.load %x[%j, %c0, %i] : memref<?x1x768xf32>
      %s = memref.load %b[%j, %c0] : memref<?x1xf32>
      %t = arith.addf %v, %s : f32
      memref.store %t, %b[%j, %c0] : memref<?x1xf32>
    }
    scf.reduce
  }
  scf.parallel (%j) = (%c0) to (%n) step (%c1) {
    %s = memref.load %b[%j, %c0] : memref<?x1xf32>
    %m = arith.divf %s, %width : f32
    memref.store %m, %mean[%j, %c0] : memref<?x1xf32>
    scf.reduce
  }
  scf.parallel (%j) = (%c0) to (%n) step (%c1) {
    scf.for %i = %c0 to %c768 step %c1 {
      %v = memref.load %x[%j, %c0, %i] : memref<?x1x768xf32>
      %m = memref.load %mean[%j, %c0] : memref<?x1xf32>
      %d = arith.subf %v, %m : f32
      %q = arith.mulf %d, %d : f32
      %s = memref.load %a[%j, %c0] : memref<?x1xf32>
      %t = arith.addf %q, %s : f32
      memref.store %t, %a[%j, %c0] : memref<?x1xf32>
    }
    scf.reduce
  }
  return
}

// A bias after a product's branch on its rows whose tiles' way ends with
// a product on a view of C (which it cannot join) and whose other way is
// the few-row branch: it moves into both ways, and into both ways of the
// inner branch, where it joins the loops over C. Four kernels: the view's
// and the bias in the first way, one in each inner way.
// CHECK-LABEL: func.func @bias_after_nested_branch
// CHECK: scf.if
// CHECK: processor = block_x
// CHECK: arith.addf
// CHECK: processor = block_x
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.if
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: processor = block_x
// CHECK-NEXT: } else {
// CHECK: arith.subf
// CHECK: arith.addf
// CHECK: processor = block_x
// CHECK-NEXT: {{^ *}}}
// CHECK-NEXT: {{^ *}}}
// CHECK-NEXT: return
func.func @bias_after_nested_branch(%x: memref<?x64xf32>, %bias: memref<64xf32>, %y: memref<?x64xf32>, %many: i1, %few: i1, %n: index, %part: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  scf.if %many {
    %view = memref.subview %y[0, 0] [%part, 64] [1, 1] : memref<?x64xf32> to memref<?x64xf32, strided<[64, 1]>>
    scf.parallel (%i, %j) = (%c0, %c0) to (%part, %c64) step (%c1, %c1) {
      %v = memref.load %x[%i, %j] : memref<?x64xf32>
      memref.store %v, %view[%i, %j] : memref<?x64xf32, strided<[64, 1]>>
      scf.reduce
    }
  } else {
    scf.if %few {
      scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c64) step (%c1, %c1) {
        %v = memref.load %x[%i, %j] : memref<?x64xf32>
        %w = arith.mulf %v, %v : f32
        memref.store %w, %y[%i, %j] : memref<?x64xf32>
        scf.reduce
      }
    } else {
      scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c64) step (%c1, %c1) {
        %v = memref.load %x[%i, %j] : memref<?x64xf32>
        %w = arith.subf %v, %v : f32
        memref.store %w, %y[%i, %j] : memref<?x64xf32>
        scf.reduce
      }
    }
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c64) step (%c1, %c1) {
    %v = memref.load %y[%i, %j] : memref<?x64xf32>
    %b = memref.load %bias[%j] : memref<64xf32>
    %s = arith.addf %v, %b : f32
    memref.store %s, %y[%i, %j] : memref<?x64xf32>
    scf.reduce
  }
  return
}

// Loops over the same columns touching shared memory at their own index
// only run as one kernel: a product's combining loop and its bias, moved
// into both ways of the branch on the rows first.
// CHECK-LABEL: func.func @bias_after_branch
// CHECK: scf.if
// CHECK: arith.mulf
// CHECK: memref.store
// CHECK: arith.addf
// CHECK: memref.store
// CHECK: processor = block_x
// CHECK-NEXT: } else {
// CHECK: arith.subf
// CHECK: memref.store
// CHECK: arith.addf
// CHECK: memref.store
// CHECK: processor = block_x
// CHECK-NEXT: {{^ *}}}
// CHECK-NEXT: return
func.func @bias_after_branch(%x: memref<?x64xf32>, %bias: memref<64xf32>, %y: memref<?x64xf32>, %few: i1, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  scf.if %few {
    scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c64) step (%c1, %c1) {
      %v = memref.load %x[%i, %j] : memref<?x64xf32>
      %w = arith.mulf %v, %v : f32
      memref.store %w, %y[%i, %j] : memref<?x64xf32>
      scf.reduce
    }
  } else {
    scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c64) step (%c1, %c1) {
      %v = memref.load %x[%i, %j] : memref<?x64xf32>
      %w = arith.subf %v, %v : f32
      memref.store %w, %y[%i, %j] : memref<?x64xf32>
      scf.reduce
    }
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c64) step (%c1, %c1) {
    %v = memref.load %y[%i, %j] : memref<?x64xf32>
    %b = memref.load %bias[%j] : memref<64xf32>
    %w = arith.addf %v, %b : f32
    memref.store %w, %y[%i, %j] : memref<?x64xf32>
    scf.reduce
  }
  return
}

// Not one kernel: the second loop reads what another iteration of the
// first writes.
// CHECK-LABEL: func.func @reads_another_iteration
// CHECK-COUNT-2: processor = block_x
// CHECK-NOT: processor = block_x
// CHECK: return
func.func @reads_another_iteration(%a: memref<?xf32>, %b: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%j) = (%c0) to (%n) step (%c1) {
    memref.store %one, %a[%j] : memref<?xf32>
    scf.reduce
  }
  scf.parallel (%j) = (%c0) to (%n) step (%c1) {
    %k = arith.subi %n, %j : index
    %last = arith.subi %k, %c1 : index
    %v = memref.load %a[%last] : memref<?xf32>
    memref.store %v, %b[%j] : memref<?xf32>
    scf.reduce
  }
  return
}

// Not one kernel: two arena slots that may be one slot's memory reused,
// the first read for the last time by the first loop, the second written
// for the first time by the second.
// CHECK-LABEL: func.func @slot_reused
// CHECK-COUNT-2: processor = block_x
// CHECK-NOT: processor = block_x
// CHECK: return
func.func @slot_reused(%arena: memref<?xi8>, %out: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  %old = memref.view %arena[%c0][%n] : memref<?xi8> to memref<?xf32>
  %new = memref.view %arena[%c0][%n] : memref<?xi8> to memref<?xf32>
  scf.parallel (%j) = (%c0) to (%n) step (%c1) {
    %v = memref.load %old[%j] : memref<?xf32>
    memref.store %v, %out[%j] : memref<?xf32>
    scf.reduce
  }
  scf.parallel (%j) = (%c0) to (%n) step (%c1) {
    %v = memref.load %out[%j] : memref<?xf32>
    memref.store %v, %new[%j] : memref<?xf32>
    scf.reduce
  }
  return
}

// Not one kernel either when the first slot was written before the first
// loop and the second is read after the second loop: each is still live
// on one side only, and the arena may give them the same memory (dK's
// loop reading v, then dV's loop writing dV, in attention's adjoint).
// CHECK-LABEL: func.func @slot_reused_live_outside
// CHECK: %[[OLD:.*]] = memref.view %arg0
// CHECK: memref.load %[[OLD]][
// CHECK: processor = block_x
// CHECK: memref.load %arg1[
// CHECK: return
func.func @slot_reused_live_outside(%arena: memref<?xi8>, %out: memref<?xf32>, %res: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  %old = memref.view %arena[%c0][%n] : memref<?xi8> to memref<?xf32>
  %new = memref.view %arena[%c0][%n] : memref<?xi8> to memref<?xf32>
  memref.store %one, %old[%c0] : memref<?xf32>
  scf.parallel (%j) = (%c0) to (%n) step (%c1) {
    %v = memref.load %old[%j] : memref<?xf32>
    memref.store %v, %out[%j] : memref<?xf32>
    scf.reduce
  }
  scf.parallel (%j) = (%c0) to (%n) step (%c1) {
    %v = memref.load %out[%j] : memref<?xf32>
    memref.store %v, %new[%j] : memref<?xf32>
    scf.reduce
  }
  %last = memref.load %new[%c0] : memref<?xf32>
  memref.store %last, %res[%c0] : memref<?xf32>
  return
}

// A product of few rows written for a warp's lanes (m, n, lane: lane 0
// stores C[m, n]) and its bias after it: one kernel, the bias in lane 0.
// CHECK-LABEL: func.func @bias_after_warp_product
// CHECK-NOT: processor = block_x
// CHECK: gpu.shuffle  xor
// CHECK: %[[FIRST:.*]] = arith.cmpi eq
// CHECK-NEXT: scf.if %[[FIRST]] {
// CHECK-NEXT: memref.store %{{.*}}, %arg2
// CHECK-NOT: processor = block_x
// CHECK: %[[BIAS:.*]] = arith.cmpi eq
// CHECK-NEXT: scf.if %[[BIAS]] {
// CHECK-NEXT: memref.load %arg2
// CHECK-NEXT: memref.load %arg3
// CHECK: memref.store %{{.*}}, %arg2
// CHECK: processor = block_x
// CHECK-NOT: processor = block_x
// CHECK: return
func.func @bias_after_warp_product(%x: memref<?x64xf32>, %w: memref<128x64xf32>, %y: memref<?x128xf32>, %bias: memref<128xf32>, %m: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c1_i32 = arith.constant 1 : i32
  %c32_i32 = arith.constant 32 : i32
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i, %j, %lane) = (%c0, %c0, %c0) to (%m, %c128, %c32) step (%c1, %c1, %c1) {
    %s = scf.for %k = %lane to %c64 step %c32 iter_args(%acc = %zero) -> (f32) {
      %a = memref.load %x[%i, %k] : memref<?x64xf32>
      %b = memref.load %w[%j, %k] : memref<128x64xf32>
      %p = arith.mulf %a, %b : f32
      %t = arith.addf %acc, %p : f32
      scf.yield %t : f32
    }
    %o, %valid = gpu.shuffle xor %s, %c1_i32, %c32_i32 : f32
    %total = arith.addf %s, %o : f32
    %first = arith.cmpi eq, %lane, %c0 : index
    scf.if %first {
      memref.store %total, %y[%i, %j] : memref<?x128xf32>
    }
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%m, %c128) step (%c1, %c1) {
    %v = memref.load %y[%i, %j] : memref<?x128xf32>
    %b = memref.load %bias[%j] : memref<128xf32>
    %t = arith.addf %v, %b : f32
    memref.store %t, %y[%i, %j] : memref<?x128xf32>
    scf.reduce
  }
  return
}

// Not one kernel: the loop after the warp loop writes what the warp loop
// reads at other elements than its own (x, read along k).
// CHECK-LABEL: func.func @writes_warp_loop_input
// CHECK-COUNT-2: processor = block_x
// CHECK-NOT: processor = block_x
// CHECK: return
func.func @writes_warp_loop_input(%x: memref<?x128xf32>, %w: memref<128x128xf32>, %y: memref<?x128xf32>, %m: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %c1_i32 = arith.constant 1 : i32
  %c32_i32 = arith.constant 32 : i32
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i, %j, %lane) = (%c0, %c0, %c0) to (%m, %c128, %c32) step (%c1, %c1, %c1) {
    %s = scf.for %k = %lane to %c128 step %c32 iter_args(%acc = %zero) -> (f32) {
      %a = memref.load %x[%i, %k] : memref<?x128xf32>
      %b = memref.load %w[%j, %k] : memref<128x128xf32>
      %p = arith.mulf %a, %b : f32
      %t = arith.addf %acc, %p : f32
      scf.yield %t : f32
    }
    %o, %valid = gpu.shuffle xor %s, %c1_i32, %c32_i32 : f32
    %total = arith.addf %s, %o : f32
    %first = arith.cmpi eq, %lane, %c0 : index
    scf.if %first {
      memref.store %total, %y[%i, %j] : memref<?x128xf32>
    }
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%m, %c128) step (%c1, %c1) {
    %v = memref.load %y[%i, %j] : memref<?x128xf32>
    memref.store %v, %x[%i, %j] : memref<?x128xf32>
    scf.reduce
  }
  return
}

// Not one kernel: every lane of the warp loop stores C[m, n] (the same
// value), and the loop after it would run in lane 0 alone, unordered with
// the other lanes' stores.
// CHECK-LABEL: func.func @warp_loop_stores_from_every_lane
// CHECK-COUNT-2: processor = block_x
// CHECK-NOT: processor = block_x
// CHECK: return
func.func @warp_loop_stores_from_every_lane(%x: memref<?x64xf32>, %y: memref<?x128xf32>, %bias: memref<128xf32>, %m: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c1_i32 = arith.constant 1 : i32
  %c32_i32 = arith.constant 32 : i32
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i, %j, %lane) = (%c0, %c0, %c0) to (%m, %c128, %c32) step (%c1, %c1, %c1) {
    %s = scf.for %k = %lane to %c64 step %c32 iter_args(%acc = %zero) -> (f32) {
      %a = memref.load %x[%i, %k] : memref<?x64xf32>
      %t = arith.addf %acc, %a : f32
      scf.yield %t : f32
    }
    %o, %valid = gpu.shuffle xor %s, %c1_i32, %c32_i32 : f32
    %total = arith.addf %s, %o : f32
    memref.store %total, %y[%i, %j] : memref<?x128xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%m, %c128) step (%c1, %c1) {
    %v = memref.load %y[%i, %j] : memref<?x128xf32>
    %b = memref.load %bias[%j] : memref<128xf32>
    %t = arith.addf %v, %b : f32
    memref.store %t, %y[%i, %j] : memref<?x128xf32>
    scf.reduce
  }
  return
}
