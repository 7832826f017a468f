//===- ArenaSize.h - The activation arena's size at given dims --*- C++ -*-===//
//
// attn-plan-arena computes the size of an entry point's arena at run time
// from the call's dims. For the header and `info`, attnc evaluates the same
// computation at compile time at the model's bounds.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TARGET_ARENASIZE_H
#define ATTN_TARGET_ARENASIZE_H

#include "attn/Target/ModelInfo.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>

namespace attn {

/// The bytes of `func`'s arena (its memref.alloc marked `attn.arena`; 0
/// when it has none) when every run-time dim of its arguments is at the
/// largest size the model allows and the leading dim of each input (the
/// batch) is `batch`. `entry` describes `func`'s arguments in order.
/// nullopt when the size depends on anything else (a dim without a bound, a
/// cache length).
std::optional<int64_t> evaluateArenaBytes(mlir::func::FuncOp func,
                                          const EntryInfo &entry,
                                          int64_t batch);

/// The batches the per-sequence figure of collectArenaSizes holds for.
constexpr int64_t kArenaBatchRange = 1024;

/// Fills `arenaBytes` and `arenaBytesPerBatch` of every entry point of
/// `info` from the lowered module (after attn-plan-arena): the bytes at
/// batch 1 (exact), and bytes per further sequence such that `arenaBytes +
/// (B - 1) * arenaBytesPerBatch` is at least the arena of batch B for every
/// B up to kArenaBatchRange (an upper bound, as each temporary's size is
/// linear in the batch).
void collectArenaSizes(mlir::ModuleOp module, ModelInfo &info);

} // namespace attn

#endif // ATTN_TARGET_ARENASIZE_H
