// RUN: attnc-opt %s --attn-lower-vector | FileCheck %s

// A max or min over 2^n lanes becomes a halving tree of element-wise ops
// (LLVM would expand it into one scalar step per lane); a masked one first
// sets its masked-off lanes to the neutral element. Sums are left to
// convert-vector-to-llvm, which reassociates them.

// CHECK-LABEL: func.func @row_max
// CHECK-SAME:    (%[[V:[^:]+]]: vector<64xf32>, %[[ACC:[^:]+]]: f32)
// CHECK:         %[[L0:.*]] = vector.extract_strided_slice %[[V]] {offsets = [0], sizes = [32], strides = [1]}
// CHECK:         %[[H0:.*]] = vector.extract_strided_slice %[[V]] {offsets = [32], sizes = [32], strides = [1]}
// CHECK:         %[[M0:.*]] = arith.maximumf %[[L0]], %[[H0]] : vector<32xf32>
// CHECK:         arith.maximumf {{.*}} : vector<16xf32>
// CHECK:         arith.maximumf {{.*}} : vector<8xf32>
// CHECK:         arith.maximumf {{.*}} : vector<4xf32>
// CHECK:         arith.maximumf {{.*}} : vector<2xf32>
// CHECK:         %[[M5:.*]] = arith.maximumf {{.*}} : vector<1xf32>
// CHECK:         %[[E:.*]] = vector.extract %[[M5]][0]
// CHECK:         %[[R:.*]] = arith.maximumf %[[E]], %[[ACC]] : f32
// CHECK-NOT:     vector.reduction
// CHECK:         return %[[R]]
func.func @row_max(%v: vector<64xf32>, %acc: f32) -> f32 {
  %0 = vector.reduction <maximumf>, %v, %acc : vector<64xf32> into f32
  return %0 : f32
}

// CHECK-LABEL: func.func @masked_min
// CHECK-SAME:    (%[[V:[^:]+]]: vector<16xf32>, %[[M:[^:]+]]: vector<16xi1>)
// CHECK:         %[[INF:.*]] = arith.constant dense<0x7F800000> : vector<16xf32>
// CHECK:         %[[S:.*]] = arith.select %[[M]], %[[V]], %[[INF]]
// CHECK:         vector.extract_strided_slice %[[S]]
// CHECK:         arith.minimumf {{.*}} : vector<8xf32>
// CHECK-NOT:     vector.mask
// CHECK-NOT:     vector.reduction
func.func @masked_min(%v: vector<16xf32>, %m: vector<16xi1>) -> f32 {
  %0 = vector.mask %m { vector.reduction <minimumf>, %v : vector<16xf32> into f32 } : vector<16xi1> -> f32
  return %0 : f32
}

// Sums and non-power-of-two widths stay reductions.
// CHECK-LABEL: func.func @left
// CHECK:         vector.reduction <add>
// CHECK:         vector.reduction <maximumf>, %{{.*}} : vector<12xf32>
func.func @left(%v: vector<64xf32>, %w: vector<12xf32>) -> (f32, f32) {
  %0 = vector.reduction <add>, %v : vector<64xf32> into f32
  %1 = vector.reduction <maximumf>, %w : vector<12xf32> into f32
  return %0, %1 : f32, f32
}
