// RUN: attnc-opt %s --attn-vectorize-linalg --canonicalize --cse | FileCheck %s
// RUN: attnc-opt %s --attn-vectorize-linalg --canonicalize --attn-math-approximation \
// RUN:   --lower-vector-mask --attn-lower-vector --canonicalize | FileCheck %s --check-prefix=LOWERED

// Linalg ops on buffers are tiled to 1 along every loop but the innermost
// and vectorised along it: 16 lanes (1 AVX-512 register) for a parallel
// loop, the whole row for a static reduction, 64 lanes (4 registers) for a
// dynamic reduction, a mask for a dynamic size.

// A bias + tanh epilogue on [B, T, 192]: 12 vectors of 16 per row.
// CHECK-LABEL: func.func @elementwise
// CHECK-NOT:     linalg.generic
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:             scf.for {{.*}} = %c0 to %c192 step %c16
// CHECK:               %[[X:.*]] = vector.transfer_read {{.*}} {in_bounds = [true, true, true]} : memref<1x1x16xf32, strided<[?, 192, 1], offset: ?>>, vector<1x1x16xf32>
// CHECK:               %[[B:.*]] = vector.transfer_read {{.*}} : memref<16xf32, strided<[1], offset: ?>>, vector<1x1x16xf32>
// CHECK:               %[[S:.*]] = arith.addf %[[X]], %[[B]] : vector<1x1x16xf32>
// CHECK:               %[[T:.*]] = math.tanh %[[S]] : vector<1x1x16xf32>
// CHECK:               vector.transfer_write %[[T]]
// After lowering: 1-D vectors (the unit dims dropped), tanh as a
// polynomial (no call, no math op).
// LOWERED-LABEL: func.func @elementwise
// LOWERED-NOT:     math.tanh
// LOWERED:         vector.transfer_read {{.*}} {in_bounds = [true]} : memref<16xf32, {{.*}}>, vector<16xf32>
// LOWERED:         arith.addf {{.*}} : vector<16xf32>
// LOWERED-NOT:     math.tanh
// LOWERED:         vector.transfer_write {{.*}} : vector<16xf32>, memref<16xf32
func.func @elementwise(%x: memref<?x?x192xf32>, %b: memref<192xf32>, %y: memref<?x?x192xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %b : memref<?x?x192xf32>, memref<192xf32>) outs(%y : memref<?x?x192xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %0 = arith.addf %in, %bias : f32
    %1 = math.tanh %0 : f32
    linalg.yield %1 : f32
  }
  return
}

// A sum over the last axis (layer norm's mean): one vector of the row, one
// reduction per row, no scalar loop over the axis.
// CHECK-LABEL: func.func @row_sum
// CHECK-NOT:     linalg.generic
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK-NOT:         scf.for
// CHECK:             vector.transfer_read {{.*}} vector<1x1x192xf32>
// CHECK:             vector.multi_reduction <add>, {{.*}} [2] : vector<1x1x192xf32> to vector<1x1xf32>
// LOWERED-LABEL: func.func @row_sum
// LOWERED:         vector.reduction <add>, {{.*}} : vector<192xf32> into f32
func.func @row_sum(%x: memref<?x?x192xf32>, %o: memref<?x?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : memref<?x?x192xf32>) outs(%o : memref<?x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %2 = arith.addf %in, %out : f32
    linalg.yield %2 : f32
  }
  return
}

// exp(s - max) on an attention tile of dynamic width: masked vectors of 16.
// CHECK-LABEL: func.func @dynamic_inner
// CHECK:         scf.for
// CHECK:           scf.for {{.*}} step %c16
// CHECK:             %[[N:.*]] = affine.min
// CHECK:             %[[M:.*]] = vector.create_mask %c1, %[[N]] : vector<1x16xi1>
// CHECK:             vector.mask %[[M]] { vector.transfer_read
// CHECK:             math.exp {{.*}} : vector<1x16xf32>
// CHECK:             vector.mask %[[M]] { vector.transfer_write
// LOWERED-LABEL: func.func @dynamic_inner
// LOWERED:         %[[M:.*]] = vector.create_mask {{.*}} : vector<16xi1>
// LOWERED:         vector.transfer_read {{.*}}, %[[M]] {in_bounds = [true]} : memref<1x?xf32, {{.*}}>, vector<16xf32>
// LOWERED-NOT:     math.exp
// LOWERED:         vector.transfer_write {{.*}}, %{{.*}} {in_bounds = [true]} : vector<16xf32>, memref<1x?xf32
func.func @dynamic_inner(%s: memref<?x?xf32>, %m: memref<?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%m : memref<?xf32>) outs(%s : memref<?x?xf32>) {
  ^bb0(%max: f32, %out: f32):
    %0 = arith.subf %out, %max : f32
    %1 = math.exp %0 : f32
    linalg.yield %1 : f32
  }
  return
}

// A row max over an attention tile of dynamic width: masked tiles of 64,
// one horizontal reduction each.
// CHECK-LABEL: func.func @dynamic_row_max
// CHECK:         scf.for
// CHECK:           scf.for {{.*}} step %c64
// CHECK:             vector.create_mask {{.*}} : vector<1x64xi1>
// CHECK:             vector.multi_reduction <maximumf>, {{.*}} [1] : vector<1x64xf32> to vector<1xf32>
func.func @dynamic_row_max(%s: memref<?x?xf32>, %m: memref<?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%s : memref<?x?xf32>) outs(%m : memref<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %in, %out : f32
    linalg.yield %0 : f32
  }
  return
}

// An embedding lookup (a load from the table inside the body) is tiled but
// not vectorised: it stays a linalg.generic for convert-linalg-to-loops.
// CHECK-LABEL: func.func @gather
// CHECK:         scf.for
// CHECK:           scf.for {{.*}} step %c16
// CHECK:             linalg.generic
// CHECK:               memref.load
func.func @gather(%table: memref<256x192xf32>, %ids: memref<?xi32>, %out: memref<?x192xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%ids : memref<?xi32>) outs(%out : memref<?x192xf32>) {
  ^bb0(%id: i32, %o: f32):
    %i = arith.index_cast %id : i32 to index
    %j = linalg.index 1 : index
    %v = memref.load %table[%i, %j] : memref<256x192xf32>
    linalg.yield %v : f32
  }
  return
}
