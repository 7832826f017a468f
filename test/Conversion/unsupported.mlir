// RUN: attnc-opt %s --split-input-file --verify-diagnostics --convert-attn-to-linalg
// RUN: not attnc-opt %s --split-input-file --convert-attn-to-linalg 2>&1 | FileCheck %s

// convert-attn-to-linalg fails, with a diagnostic at the op, on attn ops it
// does not lower: the key/value cache ops (bound to buffers by
// attn-bind-kv-cache, not by this pass) and the parameter buffer reads and
// writes (bound by attn-bind-params). Nothing is silently left behind.

// CHECK: error: failed to legalize operation 'attn.kv_cache_append'
func.func @kv_cache_append(%k: tensor<?x6x1x32xf32>, %v: tensor<?x6x1x32xf32>) -> (tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>) {
  // expected-error @+1 {{failed to legalize operation 'attn.kv_cache_append'}}
  %ks, %vs = attn.kv_cache_append %k, %v slot 0 : (tensor<?x6x1x32xf32>, tensor<?x6x1x32xf32>) -> (tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>)
  return %ks, %vs : tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>
}

// -----

// A parameter write that attn-bind-params has not replaced.
attn.param @w : tensor<4xf32> init zeros []
// CHECK: error: failed to legalize operation 'attn.set_param'
func.func @set_param(%g: tensor<4xf32>) {
  // expected-error @+1 {{failed to legalize operation 'attn.set_param'}}
  attn.set_param @w grad, %g : tensor<4xf32>
  return
}

// -----

// A parameter read that attn-bind-params has not replaced is not lowered
// either.
attn.param @w : tensor<4xf32> init zeros []
// CHECK: error: failed to legalize operation 'attn.get_param'
func.func @get_param() -> tensor<4xf32> {
  // expected-error @+1 {{failed to legalize operation 'attn.get_param'}}
  %0 = attn.get_param @w : tensor<4xf32>
  return %0 : tensor<4xf32>
}
