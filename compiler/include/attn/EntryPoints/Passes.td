//===- Passes.td - Entry-point ABI passes of attnc ---------*- tablegen -*-===//
//
// The passes that give a model's entry points the interface the runtime
// calls (runtime/include/attn/abi.h): which entry points there are, the
// optimizer step, parameter buffers, the key/value cache, the arena and the
// C interface.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_ENTRYPOINTS_PASSES_TD
#define ATTN_ENTRYPOINTS_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttnSelectEntryPoints
    : Pass<"attn-select-entry-points", "::mlir::ModuleOp"> {
  let summary = "Keeps only the entry points asked for";
  let description = [{
    Input: any module. With `entries` (`attnc --entry`), the public
    functions with a body named there and those they call (`train_step`
    calls `<loss>_grad`) stay entry points; the other public functions
    become private, and are erased when nothing calls them. Without
    `entries` the module is unchanged. A name that is not an entry point of
    the module is an error listing those it has.
  }];
  let options = [
    ListOption<"entries", "entries", "std::string",
               "The entry points to keep (default: all)">
  ];
}

def AttnBuildTrainStep : Pass<"attn-build-train-step", "::mlir::ModuleOp"> {
  let summary = "Builds the optimizer step entry point of `attn.train`";
  let description = [{
    Input: an attn module after `attn-autodiff`. With an `attn.train loss @F
    ...` op and `@F_grad`, the pass adds

    - `@train_step(<F's arguments>, %hyper: tensor<7xf32> {attn.hyper},
      %seed: tensor<i64> {attn.seed}) -> (tensor<f32>, tensor<f32>)`, and
      `%row: tensor<i64> {attn.dropout_row}` last when `@F_grad` has it: a
      call of `@F_grad` (which stores the gradients), the global norm of the
      gradients, clipping by `hyper[ATTN_HYPER_CLIP_NORM]` as
      `torch.nn.utils.clip_grad_norm_` (off when it is 0), and an
      `attn.adam_update` (`decoupled` for `adamw`) whose new values and
      moments are written with `attn.set_param`: one over the whole flat
      buffers when every parameter is f32, else one per parameter; returns
      the loss and the norm before clipping.

    `%hyper` is laid out as runtime/include/attn/abi.h's `attn_hyper_index`:
    this pass is where the compiler binds that part of the ABI. Modules
    without `attn.train`, or without `@F_grad` (hand-written IR that defines
    its own training entry points), are left unchanged; a module that
    already defines `train_step` next to a derived `@F_grad` is an error.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect"];
}

def AttnQuantizeWeights
    : Pass<"attn-quantize-weights", "::mlir::ModuleOp"> {
  let summary = "Products of the inference entry points read low-precision "
                "weights";
  let description = [{
    Input: an attn module before `attn-bind-params`, without training entry
    points. With `format` bf16 or int8 (`attnc --weights`), every matrix
    product of a parameter stored `[N, K]` (a linear layer's weight, or
    `matmul(x, transpose(W))` such as a tied output embedding) whose rows
    are whole blocks (K divisible by `block`) reads it as

    ```mlir
    %q = attn.get_param @W weights : tensor<NxKxi8>
    %s = attn.get_param @W weight_scales : tensor<NxK/blockxf32>
    %w = attn.dequantize %q, %s : (...) -> tensor<NxKxf32>
    ```

    (bf16: no scales), marks the parameter `attn.low_precision` and the
    module with `attn.weight_format` and `attn.weight_block`. Other reads of
    the parameter (a tied embedding's gather) stay f32. With format f32 the
    module is unchanged.
  }];
  let options = [
    Option<"format", "format", "std::string", "\"f32\"",
           "The weights' format: f32, bf16 or int8">,
    Option<"block", "block", "int64_t", "32",
           "Consecutive elements of a row per int8 scale; the rows of "
           "a weight read in bf16 or int8 are whole blocks">
  ];
}

def AttnBindParams : Pass<"attn-bind-params", "::mlir::ModuleOp"> {
  let summary = "Reads and writes parameters in flat buffers passed in";
  let description = [{
    Input: a verified attn module. Output: every `func.func` takes a new first
    argument, `%params` (arg attribute `attn.params`), the buffer holding
    every parameter at the offsets of `attn::computeParamLayout` (in
    declaration order, each 16-element aligned), then, when it uses them, the
    gradient (`attn.grads`), first-moment (`attn.first_moment`) and
    second-moment (`attn.second_moment`) buffers of the same layout
    (`attn::paramBufferArgs`). A buffer the function only reads is a
    `tensor<?xf32>` marked `bufferization.writable = false`; each
    `attn.get_param` of it becomes a slice reshaped to the parameter's shape.
    A buffer the function writes is a `memref<?xf32>`; each slot of it the
    function accesses is a `memref.subview` read as its own
    `bufferization.to_tensor restrict writable` (slots are disjoint); an
    `attn.set_param` makes its value the slot's current value, an
    `attn.get_param` is the slot's value current at the read, and each
    written slot's last value is stored back into its subview with
    `bufferization.materialize_in_destination`.
    Reads and writes of a written buffer must be at the top level of the
    function. `attn.get_param_buffer` and `attn.set_param_buffer` access a
    whole buffer (the argument, or one slot spanning it); a function may not
    access a written buffer both whole and per parameter. A call of another
    entry point (`train_step` calling `<loss>_grad`) is taken out: its
    results become arguments marked `attn.entry_call_result`, and the
    caller's `attn.entry_call` attribute records the callee and, per callee
    argument, the caller's argument passed, for attn-compose-entry-calls to
    put the call back on buffers; the caller also takes the buffers the
    callee uses. The `attn.param` and `attn.train` ops stay for the code
    generator to describe the model.
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::bufferization::BufferizationDialect"];
}

def AttnParamWritesInPlace
    : Pass<"attn-param-writes-in-place", "::mlir::ModuleOp"> {
  let summary = "Computes values stored into parameter buffers in place";
  let description = [{
    Input: a module on tensors after `attn-bind-params` and
    `convert-attn-to-linalg`. For each
    `bufferization.materialize_in_destination` into a slot of a parameter
    buffer the function writes (a subview that a writable
    `bufferization.to_tensor` also reads), the `tensor.empty` that the stored
    value's producer computes into (found through reshapes, casts,
    destination-style ops and `scf.for` inits) is replaced by that slot's
    tensor, reshaped to its type. Output: the same values; one-shot bufferisation then computes
    them directly in the buffer. Upstream `eliminate-empty-tensors` does the
    same but stops at reshapes.
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

def AttnBindKVCache : Pass<"attn-bind-kv-cache", "::mlir::ModuleOp"> {
  let summary = "Keeps the key/value cache in buffers the runtime passes in";
  let description = [{
    Input: a module after `attn-bind-params`. Each function using
    `attn.kv_cache_append`, `attn.kv_cache_read` or `attn.kv_cache_length`
    takes two more arguments: `%cache: memref<?xf32>`, the cache of the model
    context, and `%state: memref<3xi64>`, holding the number of (target)
    positions cached, the capacity in positions, and the number of memory
    positions cached. Slot `s` of a batch of `B` is a `[B, H, cap, D]` key
    block then a `[B, H, cap, Dv]` value block, the slots one after the
    other by slot number, the same in every function of the module
    (`attn::computeKVCacheLayout`). An append writes the new keys and values
    at position `len` and reads the first `len + t` positions back; the
    function ends by storing `len + t` into the state. Memory slots (ops
    marked `attn.kv_memory`: an encoder-decoder's cross-attention keys and
    values and its key padding) are written from position 0 by an append,
    which stores their count into `state[2]`, and read as positions
    `[0, state[2])` by `attn.kv_cache_read`. Fails with a diagnostic on a
    slot with a dynamic head count or head size, or used with two shapes.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::bufferization::BufferizationDialect",
    "::mlir::memref::MemRefDialect", "::mlir::tensor::TensorDialect"
  ];
}

def AttnFinalizeEntryPoints
    : Pass<"attn-finalize-entry-points", "::mlir::ModuleOp"> {
  let summary = "Drops the model declarations and exports C interfaces";
  let description = [{
    Input: a module whose functions no longer read parameters by name (after
    `attn-bind-params`); the code generator has already read the
    `attn.param` and `attn.train` declarations into the model's metadata.
    Output: those declarations and the `attn.*` argument attributes are
    erased; every public function (an entry point) takes two more
    arguments, last, the caller's activation arena `memref<?xi8>
    {attn.arena}` and `memref<i64> {attn.arena_need}` for the bytes it
    needs (abi.h ATTN_ARG_ARENA and ATTN_ARG_ARENA_NEED; `attn-plan-arena`
    uses them), and is marked `llvm.emit_c_interface`, so lowering to LLVM
    gives it the `_mlir_ciface_NAME` entry the runtime calls (see
    runtime/include/attn/abi.h).

    With `mark-host-memory` (the GPU target), the arguments the runtime
    passes in host memory whatever the target, the key/value cache's state
    and the arena's need, are marked `attn.host_memory` for
    `attn-gpu-map-loops`.
  }];
  let options = [
    Option<"markHostMemory", "mark-host-memory", "bool", /*default=*/"false",
           "Mark the arguments passed in host memory (attn.host_memory)">
  ];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

#endif // ATTN_ENTRYPOINTS_PASSES_TD
