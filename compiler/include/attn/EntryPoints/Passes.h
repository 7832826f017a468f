//===- Passes.h - Entry-point ABI passes of attnc ---------------*- C++ -*-===//
//
// Declarations of the passes that bind entry points to the runtime's
// interface (runtime/include/attn/abi.h), and the layouts they share with
// the code generator and the model's metadata.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_ENTRYPOINTS_PASSES_H
#define ATTN_ENTRYPOINTS_PASSES_H

#include "attn/EntryPoints/ArgAttributes.h"

#include "attn/Dialect/IR/AttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace attn {

#define GEN_PASS_DECL
#include "attn/EntryPoints/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "attn/EntryPoints/Passes.h.inc"

/// The name of the argument attribute marking the flat buffer `buffer` of
/// every parameter (`attn.params`, `attn.grads`, `attn.first_moment`,
/// `attn.second_moment`, `attn.weights`, `attn.weight_scales`).
llvm::StringRef paramBufferArgAttr(ParamBuffer buffer);

/// Which parameter buffers a function reads (`attn.get_param`) and writes
/// (`attn.set_param`), indexed by `ParamBuffer`. Every function reads the
/// parameter values; a function calling an entry point reads the buffers
/// that entry point uses.
inline constexpr int kNumParamBuffers = 6;
struct ParamBufferUse {
  bool read[kNumParamBuffers] = {};
  bool written[kNumParamBuffers] = {};
};
ParamBufferUse paramBuffersOf(mlir::func::FuncOp func);

/// The callee of `call` when it is an entry point (a public function with a
/// body), else null. `train_step` calls `<loss>_grad`.
mlir::func::FuncOp calledEntryPoint(mlir::func::CallOp call);

/// The buffers `attn-bind-params` passes to a function with `use`, in
/// argument order: the parameter values first, then the gradients, the first
/// and the second moments, the low-precision weights and their scales, each
/// only when used.
llvm::SmallVector<ParamBuffer> paramBufferArgs(const ParamBufferUse &use);

/// One slot of the key/value cache: per position and batch row, `heads *
/// (keyDim + valueDim)` floats starting at `offset` floats per position.
/// A memory slot (an encoder-decoder's cross-attention keys and values, or
/// its key padding) counts its positions separately from the target's.
struct KVCacheSlot {
  int64_t slot;
  int64_t heads, keyDim, valueDim;
  int64_t offset; // floats per position before this slot
  bool memory;
};

/// The cache slots used anywhere in `module`, by slot number, and the
/// floats one position of one batch row takes in all of them; every entry
/// point lays the cache out the same way. Fails with a diagnostic on a slot
/// whose head count or head sizes are not static, or that two ops use with
/// different shapes or kinds.
mlir::FailureOr<llvm::SmallVector<KVCacheSlot>>
computeKVCacheLayout(mlir::ModuleOp module, int64_t &floatsPerPosition);

/// Whether `func` uses the key/value cache (and so takes the cache and its
/// state as arguments after `attn-bind-kv-cache`).
bool usesKVCache(mlir::func::FuncOp func);

} // namespace attn

#endif // ATTN_ENTRYPOINTS_PASSES_H
