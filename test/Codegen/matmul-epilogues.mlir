// RUN: attnc-opt %s --split-input-file --attn-group-matmul-epilogues | FileCheck %s --check-prefix=GROUP
// RUN: attnc-opt %s --split-input-file --attn-group-matmul-epilogues --attn-matmul-to-vector --canonicalize | FileCheck %s

// attn-group-matmul-epilogues moves a product next to the zero fill of C and
// to the element-wise op reading C, marking that op; attn-matmul-to-vector
// then calls a kernel that starts from zeros (`_z`) and applies the epilogue
// to its tiles (`_e<N>`), writing the epilogue's output.

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// GROUP-LABEL: func.func @fused
// GROUP:         linalg.fill
// GROUP-NEXT:    linalg.matmul
// GROUP-NEXT:    linalg.generic {{.*}} attrs = {attn.matmul_epilogue}
// CHECK-LABEL: func.func @fused
// CHECK-SAME:    (%[[A:[^:]+]]: memref<?x192xf32>, %[[W:[^:]+]]: memref<576x192xf32>, %[[BIAS:[^:]+]]: memref<576xf32>, %[[R:[^:]+]]: memref<?x576xf32>, %[[OUT:[^:]+]]: memref<?x576xf32>)
// CHECK-NOT:     linalg.
// CHECK-DAG:     %[[A2:.*]] = memref.cast %[[A]]
// CHECK-DAG:     %[[W2:.*]] = memref.cast %[[W]]
// CHECK-DAG:     %[[ROW:.*]] = memref.expand_shape %[[BIAS]] {{\[}}[0, 1]] output_shape [1, 576]
// CHECK-DAG:     %[[B2:.*]] = memref.cast %[[ROW]]
// CHECK-DAG:     %[[R2:.*]] = memref.cast %[[R]]
// CHECK-DAG:     %[[O2:.*]] = memref.cast %[[OUT]]
// CHECK:         call @__attn_sgemm_nt_16x32_z_e0_parallel(%[[A2]], %[[W2]], %{{[^,]+}}, %[[B2]], %[[R2]], %[[O2]])
// CHECK-NOT:     linalg.
// CHECK:         return
func.func @fused(%a: memref<?x192xf32>, %w: memref<576x192xf32>,
                 %bias: memref<576xf32>, %r: memref<?x576xf32>,
                 %out: memref<?x576xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %m = memref.dim %a, %c0 : memref<?x192xf32>
  %c = memref.alloc(%m) : memref<?x576xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<?x576xf32>)
  %other = memref.alloc(%m) : memref<?x576xf32>
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                 affine_map<(m, n, k) -> (n, k)>,
                                 affine_map<(m, n, k) -> (m, n)>]
    ins(%a, %w : memref<?x192xf32>, memref<576x192xf32>) outs(%c : memref<?x576xf32>)
  %unused = memref.alloc(%m) : memref<?x576xf32>
  linalg.generic {indexing_maps = [#id, #row, #id, #id],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c, %bias, %r : memref<?x576xf32>, memref<576xf32>, memref<?x576xf32>)
      outs(%out : memref<?x576xf32>) {
  ^bb0(%p: f32, %b: f32, %res: f32, %o: f32):
    %y = arith.addf %p, %b : f32
    %t = math.tanh %y : f32
    %z = arith.addf %t, %res : f32
    linalg.yield %z : f32
  }
  memref.dealloc %c : memref<?x576xf32>
  memref.dealloc %other : memref<?x576xf32>
  memref.dealloc %unused : memref<?x576xf32>
  return
}

// The kernel: accumulators from zeros on the first K block; on the last one
// the epilogue on vectors (the bias read once per column vector), stored to
// the output; otherwise the partial sums to C.
// CHECK-LABEL: func.func private @__attn_sgemm_nt_16x32_z_e0(
// CHECK-SAME:    %{{[^:]+}}: memref<?x?xf32, strided<[?, 1], offset: ?>>, %{{[^:]+}}: memref<?x?xf32, strided<[?, 1], offset: ?>>, %[[C:[^:]+]]: memref<?x?xf32, strided<[?, 1], offset: ?>>, %{{[^:]+}}: index, %{{[^:]+}}: index, %[[EB:[^:]+]]: memref<?x?xf32, strided<[?, 1], offset: ?>>, %[[ER:[^:]+]]: memref<?x?xf32, strided<[?, 1], offset: ?>>, %[[EO:[^:]+]]: memref<?x?xf32, strided<[?, 1], offset: ?>>)
// The dot-product path (fewer rows than a tile): the sums to C, then the
// epilogue over those rows.
// CHECK:         memref.store %{{.*}}, %[[C]]
// CHECK:         %[[V:.*]] = vector.transfer_read %[[C]]
// CHECK:         vector.transfer_read %[[EB]][%c0
// CHECK:         arith.addf %[[V]]
// CHECK:         math.tanh {{.*}} : vector<16xf32>
// CHECK:         vector.transfer_read %[[ER]]
// CHECK:         vector.transfer_write %{{.*}}, %[[EO]]
// The packed path.
// CHECK:         scf.if %{{.*}} -> (vector<16xf32>, vector<16xf32>) {
// CHECK-NEXT:      scf.yield %[[Z:[^,]+]], %[[Z]] :
// CHECK-NEXT:    } else {
// CHECK:           vector.transfer_read %[[C]]
// CHECK:         vector.fma
// CHECK:         scf.if
// CHECK:           vector.transfer_read %[[EB]][%c0
// CHECK:           math.tanh {{.*}} : vector<16xf32>
// CHECK:           vector.transfer_read %[[ER]]
// CHECK:           vector.transfer_write %{{.*}}, %[[EO]]
// CHECK:         } else {
// CHECK:           vector.transfer_write %{{.*}}, %[[C]]

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// Not fused: a write between the product and the element-wise op (the zero
// fill is still folded), C read again afterwards, the output in A's buffer.
// GROUP-LABEL: func.func @write_between
// GROUP-NOT:     attn.matmul_epilogue
// CHECK-LABEL: func.func @write_between
// CHECK:         call @__attn_sgemm_nn_16x32_z_parallel
// CHECK-NEXT:    linalg.fill
// CHECK-NEXT:    linalg.generic
func.func @write_between(%a: memref<64x64xf32>, %b: memref<64x64xf32>,
    %d: memref<64x64xf32>, %out: memref<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %c = memref.alloc() : memref<64x64xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<64x64xf32>)
  linalg.matmul ins(%a, %b : memref<64x64xf32>, memref<64x64xf32>) outs(%c : memref<64x64xf32>)
  linalg.fill ins(%one : f32) outs(%d : memref<64x64xf32>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<64x64xf32>) outs(%out : memref<64x64xf32>) {
  ^bb0(%p: f32, %o: f32):
    %t = math.tanh %p : f32
    linalg.yield %t : f32
  }
  memref.dealloc %c : memref<64x64xf32>
  return
}

// GROUP-LABEL: func.func @read_later
// GROUP-NOT:     attn.matmul_epilogue
// CHECK-LABEL: func.func @read_later
// CHECK:         call @__attn_sgemm_nn_16x32_z_parallel
// CHECK-NEXT:    linalg.generic
// CHECK:         linalg.copy
func.func @read_later(%a: memref<64x64xf32>, %b: memref<64x64xf32>,
    %d: memref<64x64xf32>, %out: memref<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %c = memref.alloc() : memref<64x64xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<64x64xf32>)
  linalg.matmul ins(%a, %b : memref<64x64xf32>, memref<64x64xf32>) outs(%c : memref<64x64xf32>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<64x64xf32>) outs(%out : memref<64x64xf32>) {
  ^bb0(%p: f32, %o: f32):
    %t = math.tanh %p : f32
    linalg.yield %t : f32
  }
  linalg.copy ins(%c : memref<64x64xf32>) outs(%d : memref<64x64xf32>)
  memref.dealloc %c : memref<64x64xf32>
  return
}

// GROUP-LABEL: func.func @out_is_a
// GROUP-NOT:     attn.matmul_epilogue
// CHECK-LABEL: func.func @out_is_a
// CHECK:         call @__attn_sgemm_nn_16x32_z_parallel
// CHECK-NEXT:    linalg.generic
func.func @out_is_a(%a: memref<64x64xf32>, %b: memref<64x64xf32>,
    %d: memref<64x64xf32>, %out: memref<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %c = memref.alloc() : memref<64x64xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<64x64xf32>)
  linalg.matmul ins(%a, %b : memref<64x64xf32>, memref<64x64xf32>) outs(%c : memref<64x64xf32>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<64x64xf32>) outs(%a : memref<64x64xf32>) {
  ^bb0(%p: f32, %o: f32):
    %t = math.tanh %p : f32
    linalg.yield %t : f32
  }
  memref.dealloc %c : memref<64x64xf32>
  return
}

// C read twice by the element-wise op: the second read would be C's
// memory, which the fused kernel does not fill.
// GROUP-LABEL: func.func @c_twice
// GROUP-NOT:     attn.matmul_epilogue
// CHECK-LABEL: func.func @c_twice
// CHECK:         call @__attn_sgemm_nn_16x32_z_parallel
// CHECK-NEXT:    linalg.generic
func.func @c_twice(%a: memref<64x64xf32>, %b: memref<64x64xf32>,
    %d: memref<64x64xf32>, %out: memref<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<64x64xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<64x64xf32>)
  linalg.matmul ins(%a, %b : memref<64x64xf32>, memref<64x64xf32>) outs(%c : memref<64x64xf32>)
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %c : memref<64x64xf32>, memref<64x64xf32>) outs(%out : memref<64x64xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %t = arith.mulf %p, %q : f32
    linalg.yield %t : f32
  }
  memref.dealloc %c : memref<64x64xf32>
  return
}

// A fill that is not zero stays (the kernel reads C), the epilogue in place
// in C is fused.
// GROUP-LABEL: func.func @ones_in_place
// GROUP:         attrs = {attn.matmul_epilogue}
// CHECK-LABEL: func.func @ones_in_place
// CHECK:         linalg.fill
// CHECK:         call @__attn_sgemm_nn_16x32_e0_parallel(%{{[^,]+}}, %{{[^,]+}}, %[[C:[^,]+]], %[[C]])
// CHECK-NOT:     linalg.generic
func.func @ones_in_place(%a: memref<64x64xf32>, %b: memref<64x64xf32>,
    %d: memref<64x64xf32>, %out: memref<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %c = memref.alloc() : memref<64x64xf32>
  linalg.fill ins(%one : f32) outs(%c : memref<64x64xf32>)
  linalg.matmul ins(%a, %b : memref<64x64xf32>, memref<64x64xf32>) outs(%c : memref<64x64xf32>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<64x64xf32>) outs(%c : memref<64x64xf32>) {
  ^bb0(%p: f32, %o: f32):
    %t = math.tanh %p : f32
    linalg.yield %t : f32
  }
  memref.dealloc %c : memref<64x64xf32>
  return
}

// -----

// A tile loop's zero init that CSE merged with one outside the loop, copied
// at every tile by bufferisation: the copy becomes a fill, so the product
// starts from zeros.
// GROUP-LABEL: func.func @copied_zeros
// GROUP:         scf.for
// GROUP-NEXT:      %[[T:.*]] = memref.alloc
// GROUP-NOT:       memref.copy
// GROUP:           linalg.fill ins(%{{.*}} : f32) outs(%[[T]] :
// GROUP-NEXT:      linalg.matmul
// CHECK-LABEL: func.func @copied_zeros
// CHECK:         scf.for
// CHECK-NOT:       memref.copy
// CHECK:           call @__attn_sgemm_nn_16x32_z_parallel(
func.func @copied_zeros(%a: memref<64x64xf32>, %b: memref<64x64xf32>,
                        %out: memref<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zeros = memref.alloc() : memref<64x64xf32>
  linalg.fill ins(%zero : f32) outs(%zeros : memref<64x64xf32>)
  scf.for %i = %c0 to %c4 step %c1 {
    %t = memref.alloc() : memref<64x64xf32>
    memref.copy %zeros, %t : memref<64x64xf32> to memref<64x64xf32>
    linalg.matmul ins(%a, %b : memref<64x64xf32>, memref<64x64xf32>) outs(%t : memref<64x64xf32>)
    linalg.add ins(%t, %out : memref<64x64xf32>, memref<64x64xf32>) outs(%out : memref<64x64xf32>)
    memref.dealloc %t : memref<64x64xf32>
  }
  linalg.copy ins(%zeros : memref<64x64xf32>) outs(%out : memref<64x64xf32>)
  memref.dealloc %zeros : memref<64x64xf32>
  return
}
