//===- BufferUses.h - How a temporary buffer is used ------------*- C++ -*-===//
//
// Helpers shared by the passes that rearrange the temporaries bufferisation
// creates (attn-reuse-buffers, attn-plan-arena, attn-group-matmul-
// epilogues): what a buffer is a view of, whether it stays local to its
// function, who uses it, and a canonical form of its sizes.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_LIB_TRANSFORMS_BUFFERUSES_H
#define ATTN_LIB_TRANSFORMS_BUFFERUSES_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace attn {

/// Whether `value` (a buffer or a view of it) only ever reaches ops that
/// read or write through it, and is deallocated once (`dealloc`, directly,
/// not through a view); false if it escapes (returned, passed to a call,
/// its pointer taken, yielded).
bool staysLocal(mlir::Value value, mlir::memref::DeallocOp &dealloc,
                int depth = 0);

/// Whether `op`'s results view its first operand's memory: subviews, views,
/// casts and reshapes.
bool isBufferView(mlir::Operation *op);

/// The buffer `value` is a view of (through isBufferView ops), or `value`
/// itself. With `arenaSlots`, a memref.view (a slice of the arena, which
/// attn-plan-arena keeps apart from every other live one) counts as a buffer
/// of its own.
mlir::Value rootBuffer(mlir::Value value, bool arenaSlots = false);

/// Every op using `value` or a view of it.
void collectUsers(mlir::Value value,
                  llvm::SmallVectorImpl<mlir::Operation *> &users);

/// The op before `op` in its block, past side-effect-free ops without
/// regions (views, sizes, constants); null at the block's start.
mlir::Operation *previousWithEffects(mlir::Operation *op);

/// A size value traced back through memref.dim of reshapes and allocations
/// to where it was first computed, so that equal sizes compare equal.
mlir::Value canonicalSize(mlir::Value size);

} // namespace attn

#endif // ATTN_LIB_TRANSFORMS_BUFFERUSES_H
