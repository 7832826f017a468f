// Tests that every error attn-ref can report names its cause: ops it does not
// implement (with their location), run-time range errors, weight files that
// do not match the model, and arguments that do not match the function.

// RUN: %python %S/Inputs/npy.py make %t.x.npy f4 2 1,2
// RUN: %python %S/Inputs/npy.py make %t.ids.npy i4 2 1,0
// RUN: %python %S/Inputs/npy.py make %t.bad-ids.npy i4 1 5
// RUN: %python %S/Inputs/npy.py make %t.huge.npy i8 1 1099511627776
// RUN: %python %S/Inputs/npy.py safetensors %t.w.safetensors "emb.weight=3,2=1,2,3,4,5,6"
// RUN: %python %S/Inputs/npy.py safetensors %t.extra.safetensors "emb.weight=3,2=1,2,3,4,5,6" "extra=1=0"
// RUN: %python %S/Inputs/npy.py safetensors %t.missing.safetensors
// RUN: %python %S/Inputs/npy.py safetensors %t.shape.safetensors "emb.weight=2,3=1,2,3,4,5,6"

// RUN: not attn-ref %s --fn unsupported --in %t.x.npy 2>&1 | FileCheck %s --check-prefix=UNKNOWN-OP
// UNKNOWN-OP: attn-ref-errors.mlir:[[#@LINE+44]]:8: error: unsupported op 'tensor.empty': the reference evaluator does not implement it

// RUN: not attn-ref %s --fn embed --in %t.ids.npy 2>&1 | FileCheck %s --check-prefix=NO-WEIGHTS
// NO-WEIGHTS: error: 'attn.get_param' parameter 'emb.weight' has no value

// RUN: not attn-ref %s --fn embed -w %t.w.safetensors --in %t.bad-ids.npy 2>&1 | FileCheck %s --check-prefix=RANGE
// RANGE: error: 'attn.gather' id 5 at position 0 is out of range for a table of 3 rows

// RUN: not attn-ref %s --fn embed -w %t.extra.safetensors --in %t.ids.npy 2>&1 | FileCheck %s --check-prefix=EXTRA
// EXTRA: attn-ref: error: {{.*}}extra.safetensors: tensor 'extra' is not a parameter of the model

// RUN: not attn-ref %s --fn embed -w %t.missing.safetensors --in %t.ids.npy 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: attn-ref: error: {{.*}}missing.safetensors: no tensor for parameter 'emb.weight'

// RUN: not attn-ref %s --fn embed -w %t.shape.safetensors --in %t.ids.npy 2>&1 | FileCheck %s --check-prefix=SHAPE
// SHAPE: error: parameter 'emb.weight' is 'tensor<3x2xf32>', got a value of type tensor<2x3xf32>

// RUN: not attn-ref %s --fn embed -w %t.w.safetensors 2>&1 | FileCheck %s --check-prefix=NO-ARG
// NO-ARG: attn-ref: error: no value for argument 0 of 'embed' (pass --in arg0=FILE.npy)

// RUN: not attn-ref %s --fn embed -w %t.w.safetensors --in tokens=%t.ids.npy 2>&1 | FileCheck %s --check-prefix=ARG-NAME
// ARG-NAME: attn-ref: error: 'embed' has no argument 'tokens' (it has 1)

// RUN: not attn-ref %s --fn embed -w %t.w.safetensors --in %t.x.npy 2>&1 | FileCheck %s --check-prefix=DTYPE
// DTYPE: attn-ref: error: {{.*}}x.npy: holds f32 elements, the argument is tensor<?xi32>

// RUN: not attn-ref %s --fn embed -w %t.w.safetensors --in %t.huge.npy 2>&1 | FileCheck %s --check-prefix=HUGE
// HUGE: attn-ref: error: {{.*}}huge.npy: value 1099511627776 does not fit in i32

// RUN: not attn-ref %s --fn nope 2>&1 | FileCheck %s --check-prefix=NO-FN
// NO-FN: attn-ref: error: the module has no function 'nope'

// RUN: not attn-ref %s --fn embed -w %t.w.safetensors --in %t.missing-file.npy 2>&1 | FileCheck %s --check-prefix=NO-FILE
// NO-FILE: attn-ref: error: {{.*}}missing-file.npy: {{[Nn]}}o such file or directory

attn.param @"emb.weight" : tensor<3x2xf32> init normal [0.0, 1.0]

func.func @embed(%ids: tensor<?xi32>) -> tensor<?x2xf32> {
  %w = attn.get_param @"emb.weight" : tensor<3x2xf32>
  %0 = attn.gather %w, %ids : (tensor<3x2xf32>, tensor<?xi32>) -> tensor<?x2xf32>
  return %0 : tensor<?x2xf32>
}

func.func @unsupported(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = tensor.empty() : tensor<2xf32>
  return %0 : tensor<2xf32>
}
