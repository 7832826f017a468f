// RUN: attnc-opt %s | attnc-opt | FileCheck %s
// RUN: attnc-opt %s --mlir-print-op-generic | attnc-opt | FileCheck %s

// Round trips of the normalisations: layer_norm and rms_norm.

// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x192xf32>, %[[W:[^:]+]]: tensor<192xf32>, %[[B:[^:]+]]: tensor<192xf32>)
// CHECK: %[[R:.*]] = attn.layer_norm %[[X]], %[[W]], %[[B]] eps 1.000000e-05 : (tensor<?x?x192xf32>, tensor<192xf32>, tensor<192xf32>) -> tensor<?x?x192xf32>
// CHECK: return %[[R]]
// Tests layer_norm without a residual.
func.func @layer_norm(%x: tensor<?x?x192xf32>, %w: tensor<192xf32>, %b: tensor<192xf32>) -> tensor<?x?x192xf32> {
  %0 = attn.layer_norm %x, %w, %b eps 1.0e-05 : (tensor<?x?x192xf32>, tensor<192xf32>, tensor<192xf32>) -> tensor<?x?x192xf32>
  return %0 : tensor<?x?x192xf32>
}

// CHECK-LABEL: func.func @layer_norm_residual
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x192xf32>, %[[W:[^:]+]]: tensor<192xf32>, %[[B:[^:]+]]: tensor<192xf32>, %[[H:[^:]+]]: tensor<?x?x192xf32>)
// CHECK: %[[R:.*]] = attn.layer_norm %[[X]], %[[W]], %[[B]] residual %[[H]] eps 0.000000e+00 : (tensor<?x?x192xf32>, tensor<192xf32>, tensor<192xf32>, tensor<?x?x192xf32>) -> tensor<?x?x192xf32>
// Tests layer_norm with a residual and eps 0.
func.func @layer_norm_residual(%x: tensor<?x?x192xf32>, %w: tensor<192xf32>, %b: tensor<192xf32>, %h: tensor<?x?x192xf32>) -> tensor<?x?x192xf32> {
  %0 = attn.layer_norm %x, %w, %b residual %h eps 0.0 : (tensor<?x?x192xf32>, tensor<192xf32>, tensor<192xf32>, tensor<?x?x192xf32>) -> tensor<?x?x192xf32>
  return %0 : tensor<?x?x192xf32>
}

// CHECK-LABEL: func.func @layer_norm_dynamic_features
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?xf16>, %[[W:[^:]+]]: tensor<64xf16>, %[[B:[^:]+]]: tensor<?xf16>)
// CHECK: attn.layer_norm %[[X]], %[[W]], %[[B]] eps 1.000000e-05 : (tensor<?x?xf16>, tensor<64xf16>, tensor<?xf16>) -> tensor<?x64xf16>
// Tests dynamic features against a static weight, with a stated result more
// static than the inferred one.
func.func @layer_norm_dynamic_features(%x: tensor<?x?xf16>, %w: tensor<64xf16>, %b: tensor<?xf16>) -> tensor<?x64xf16> {
  %0 = attn.layer_norm %x, %w, %b eps 1.0e-05 : (tensor<?x?xf16>, tensor<64xf16>, tensor<?xf16>) -> tensor<?x64xf16>
  return %0 : tensor<?x64xf16>
}

// CHECK-LABEL: func.func @rms_norm
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x192xf32>, %[[W:[^:]+]]: tensor<192xf32>)
// CHECK: %[[R:.*]] = attn.rms_norm %[[X]], %[[W]] eps 9.9999999999999995E-7 : (tensor<?x?x192xf32>, tensor<192xf32>) -> tensor<?x?x192xf32>
// CHECK: return %[[R]]
// Tests rms_norm without a residual.
func.func @rms_norm(%x: tensor<?x?x192xf32>, %w: tensor<192xf32>) -> tensor<?x?x192xf32> {
  %0 = attn.rms_norm %x, %w eps 1.0e-06 : (tensor<?x?x192xf32>, tensor<192xf32>) -> tensor<?x?x192xf32>
  return %0 : tensor<?x?x192xf32>
}

// CHECK-LABEL: func.func @rms_norm_residual
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x8xbf16>, %[[W:[^:]+]]: tensor<8xbf16>, %[[H:[^:]+]]: tensor<?x8xbf16>)
// CHECK: %[[R:.*]] = attn.rms_norm %[[X]], %[[W]] residual %[[H]] eps 1.000000e-05 : (tensor<2x8xbf16>, tensor<8xbf16>, tensor<?x8xbf16>) -> tensor<2x8xbf16>
// Tests rms_norm with a residual less static than the input.
func.func @rms_norm_residual(%x: tensor<2x8xbf16>, %w: tensor<8xbf16>, %h: tensor<?x8xbf16>) -> tensor<2x8xbf16> {
  %0 = attn.rms_norm %x, %w residual %h eps 1.0e-05 : (tensor<2x8xbf16>, tensor<8xbf16>, tensor<?x8xbf16>) -> tensor<2x8xbf16>
  return %0 : tensor<2x8xbf16>
}
