// RUN: attnc-opt %s --split-input-file --attn-gpu-warp-lanes --verify-diagnostics | FileCheck %s
// RUN: attnc-opt %s --split-input-file --attn-gpu-warp-lanes=lanes=1 --verify-diagnostics | FileCheck %s --check-prefix=ONE
// RUN: not attnc-opt %s --split-input-file --attn-gpu-warp-lanes=lanes=4 2>&1 | FileCheck %s --check-prefix=BADLANES

// Shuffles across the subgroup settled for the lane count: with 32 lanes
// the shuffle by 16 is valid and stays; with one lane it returns the
// lane's own value, invalid, and is gone. A shuffle of another width is
// not the pass's.

// CHECK-LABEL: func.func @butterfly_step
// CHECK: %[[TRUE:.*]] = arith.constant true
// CHECK: %[[S:.*]], %{{.*}} = gpu.shuffle  xor %[[V:[^,]*]], %c16_i32, %{{.*}} : f32
// CHECK: arith.select %[[TRUE]], %[[S]],
// CHECK: gpu.shuffle  xor %{{.*}}, %c16_i32, %c16_i32 : f32
// ONE-LABEL: func.func @butterfly_step
// ONE: arith.constant 1 : index
// ONE: %[[FALSE:.*]] = arith.constant false
// ONE: arith.select %[[FALSE]], %arg0,
// ONE: gpu.shuffle  xor %{{.*}}, %c16_i32, %c16_i32 : f32
// BADLANES: error: attn-gpu-warp-lanes: lanes must be 1 or 32 (got 4)
func.func @butterfly_step(%v: f32, %other: f32) -> (f32, f32, index) {
  %lanes = gpu.subgroup_size : index
  %width = arith.index_cast %lanes : index to i32
  %c16 = arith.constant 16 : i32
  %s, %valid = gpu.shuffle xor %v, %c16, %width : f32
  %picked = arith.select %valid, %s, %other : f32
  %t, %tvalid = gpu.shuffle xor %v, %c16, %c16 : f32
  return %picked, %t, %lanes : f32, f32, index
}

// -----

func.func @not_xor(%v: f32, %offset: i32) -> f32 {
  %lanes = gpu.subgroup_size : index
  %width = arith.index_cast %lanes : index to i32
  // expected-error @+1 {{attn-gpu-warp-lanes: a shuffle across the subgroup must be XOR by a constant}}
  %s, %valid = gpu.shuffle down %v, %offset, %width : f32
  return %s : f32
}
