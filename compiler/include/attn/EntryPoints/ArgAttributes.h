//===- ArgAttributes.h - Attributes of entry-point arguments ----*- C++ -*-===//
//
// The attributes by which the entry-point passes tell the code generator
// what an entry point's arguments are for the runtime (abi.h's
// attn_arg_kind), and how one entry point's call of another is carried
// through bufferisation.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_ENTRYPOINTS_ARGATTRIBUTES_H
#define ATTN_ENTRYPOINTS_ARGATTRIBUTES_H

#include "llvm/ADT/StringRef.h"

namespace attn {

/// The argument attributes of an entry point's arena (`memref<?xi8>`, abi.h
/// ATTN_ARG_ARENA) and of the bytes it needs (`memref<i64>`,
/// ATTN_ARG_ARENA_NEED), added by `attn-finalize-entry-points` and consumed
/// (removed) by `attn-plan-arena`.
inline constexpr llvm::StringLiteral kArenaArgAttr = "attn.arena";
inline constexpr llvm::StringLiteral kArenaNeedArgAttr = "attn.arena_need";

/// The mark `attn-plan-arena` puts on a function's own arena allocation
/// (its slot count), which attnc reads the arena's size from
/// (Target/ArenaSize.cpp); `attn-gpu-map-loops` keeps it on the device's.
inline constexpr llvm::StringLiteral kArenaAllocAttr = "attn.arena";

/// The argument attribute marking an entry point's buffers that the runtime
/// passes in host memory on every target (`attn-finalize-entry-points`
/// with `mark-host-memory`; read and removed by `attn-gpu-map-loops`).
inline constexpr llvm::StringLiteral kHostMemoryArgAttr = "attn.host_memory";

/// An entry point calling another (`train_step` calls `<loss>_grad`) is
/// lowered without the call until both are on buffers: `attn-bind-params`
/// takes the call out, each of its results becoming an argument of the
/// caller marked `kEntryCallResultAttr` (the result's index), and records
/// it in the caller's `kEntryCallAttr` (`{callee = @f, args = array<i64:
/// ...>}`, the caller's argument passed as each argument of the bound
/// callee); `attn-compose-entry-calls` puts the call back at the top of the
/// caller after bufferisation, passing the arena on as well.
inline constexpr llvm::StringLiteral kEntryCallAttr = "attn.entry_call";
inline constexpr llvm::StringLiteral kEntryCallResultAttr =
    "attn.entry_call_result";

} // namespace attn

#endif // ATTN_ENTRYPOINTS_ARGATTRIBUTES_H
