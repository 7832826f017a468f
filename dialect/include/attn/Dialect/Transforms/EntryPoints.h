//===- EntryPoints.h - Entry points the dialect's passes derive -*- C++ -*-===//
//
// The names of the entry points that passes derive from a model (training,
// incremental decoding), which the runtime finds by name, and the helpers
// those passes share to build them. runtime/include/attn/abi.h spells the
// same names as ATTN_ENTRY_*; the dialect does not include the runtime's
// header, so compiler/lib/EntryPoints checks at build time that they agree.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_DIALECT_TRANSFORMS_ENTRYPOINTS_H
#define ATTN_DIALECT_TRANSFORMS_ENTRYPOINTS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <string>

namespace attn::entry {

/// A model's main function, written by the user.
inline constexpr llvm::StringLiteral kForward = "forward";
/// The fn differentiated without a `train { }` section, and `grad`'s default.
inline constexpr llvm::StringLiteral kLoss = "loss";
/// One optimizer step (attn-build-train-step).
inline constexpr llvm::StringLiteral kTrainStep = "train_step";
/// `<loss>_grad`, the gradients of the loss (attn-autodiff).
inline constexpr llvm::StringLiteral kGradSuffix = "_grad";
/// A decoder-only model's prompt and its one-position steps
/// (attn-incremental-decoding).
inline constexpr llvm::StringLiteral kPrefill = "prefill";
inline constexpr llvm::StringLiteral kDecodeStep = "decode_step";
/// An encoder-decoder's functions, written by the user, and the first call
/// of its incremental decoder (attn-incremental-decoding).
inline constexpr llvm::StringLiteral kEncode = "encode";
inline constexpr llvm::StringLiteral kDecode = "decode";
inline constexpr llvm::StringLiteral kDecodePrefill = "decode_prefill";
/// The attention probabilities of every layer of `forward`, stacked
/// (attn-attention-weights).
inline constexpr llvm::StringLiteral kAttentionWeights = "attention_weights";

/// The discardable attribute `attn-incremental-decoding` puts on the cache
/// ops of a memory slot: one holding what an encoder-decoder's `memory`
/// (not the target) determines, written from position 0 by each call that
/// appends to it and read whole by `attn.kv_cache_read`; `attn-bind-kv-cache`
/// counts its positions apart from the target's.
inline constexpr llvm::StringLiteral kKVMemoryAttr = "attn.kv_memory";

/// The mark of `<loss>_grad`'s argument (ATTN_ARG_DROPOUT_ROW, after its
/// dropout seed) that says which row of a larger batch the call's first row
/// is: the lowering of dropout numbers its elements as in that batch, so
/// that a process given some rows of a batch draws the masks one process
/// given all of them draws (data-parallel training). `train_step` passes 0.
inline constexpr llvm::StringLiteral kDropoutRowAttr = "attn.dropout_row";

/// `function`'s argument marked kDropoutRowAttr, or null.
inline mlir::BlockArgument dropoutRowArgument(mlir::func::FuncOp function) {
  if (!function || function.isExternal())
    return mlir::BlockArgument();
  for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i)
    if (function.getArgAttr(i, kDropoutRowAttr))
      return function.getArgument(i);
  return mlir::BlockArgument();
}

/// The gradient entry point of the loss function `loss`.
inline std::string gradName(llvm::StringRef loss) {
  return (loss + kGradSuffix).str();
}

/// Whether `name` is one of the training entry points (`train_step`, or a
/// gradient entry point).
inline bool isTrainingName(llvm::StringRef name) {
  return name == kTrainStep || name.ends_with(kGradSuffix);
}

/// A new function `name` at the builder's insertion point with `like`'s
/// first `numArgs` arguments (types and attributes), then `extra`
/// arguments, each with a unit argument attribute of the given name; its
/// entry block is empty.
mlir::func::FuncOp
create(mlir::OpBuilder &b, mlir::func::FuncOp like, unsigned numArgs,
       llvm::StringRef name,
       llvm::ArrayRef<std::pair<mlir::Type, llvm::StringRef>> extra,
       mlir::TypeRange results);

/// Erases the ops of `function`'s body whose results are unused and that
/// have no effect: what a builder made for a value nothing needed.
void eraseDeadOps(mlir::func::FuncOp function);

} // namespace attn::entry

#endif // ATTN_DIALECT_TRANSFORMS_ENTRYPOINTS_H
