// attn-gpu-libdevice-intrinsics: the libdevice functions convert-gpu-to-nvvm
// calls get a body of one LLVM intrinsic each (rsqrt: 1 / sqrt), internal,
// so that the PTX needs no libdevice at compile time; one it has no body
// for is an error.
// RUN: attnc-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(gpu.module(attn-gpu-libdevice-intrinsics))' | FileCheck %s
//
// The models' PTX calls none, with no CUDA toolkit in sight (MLIR links
// libdevice where it finds one, which would hide the calls):
// RUN: env -u CUDA_HOME -u CUDA_ROOT -u CUDA_PATH attnc emit %models/char_gpt.tfm \
// RUN:   --target cuda --entry loss_grad --stage ptx -o %t.ptx
// RUN: not grep -c __nv_ %t.ptx
// RUN: grep -c 'sqrt.rn.f32' %t.ptx

// CHECK-LABEL: gpu.module @kernels
// CHECK: llvm.func internal @__nv_fmaf(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[C:.*]]: f32) -> f32
// CHECK-NEXT: %[[R:.*]] = llvm.intr.fma(%[[A]], %[[B]], %[[C]])
// CHECK-NEXT: llvm.return %[[R]]
// CHECK: llvm.func internal @__nv_rsqrtf(%[[X:.*]]: f32) -> f32
// CHECK-DAG: %[[ONE:.*]] = llvm.mlir.constant(1.000000e+00 : f32)
// CHECK-DAG: %[[S:.*]] = llvm.intr.sqrt(%[[X]])
// CHECK: %[[Q:.*]] = llvm.fdiv %[[ONE]], %[[S]]
// CHECK-NEXT: llvm.return %[[Q]]
// CHECK: llvm.func internal @__nv_floorf
// CHECK-NEXT: llvm.intr.floor
// CHECK: llvm.func internal @__nv_sqrt(%{{.*}}: f64) -> f64
// CHECK-NEXT: llvm.intr.sqrt
// CHECK: llvm.func @kernel_helper
gpu.module @kernels {
  llvm.func @__nv_fmaf(f32, f32, f32) -> f32
  llvm.func @__nv_rsqrtf(f32) -> f32
  llvm.func @__nv_floorf(f32) -> f32
  llvm.func @__nv_sqrt(f64) -> f64
  llvm.func @kernel_helper(%x: f32) -> f32 {
    %r = llvm.call @__nv_floorf(%x) : (f32) -> f32
    llvm.return %r : f32
  }
}

// -----

gpu.module @needs_libdevice {
  // expected-error @below {{the kernels call libdevice's __nv_expf, which attnc has no instruction for}}
  llvm.func @__nv_expf(f32) -> f32
}
