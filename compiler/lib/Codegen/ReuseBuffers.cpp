//===- ReuseBuffers.cpp - One buffer for temporaries of the same shape ----===//
//
// `attn-reuse-buffers`: after bufferisation every intermediate tensor of an
// entry point is its own malloc'ed buffer, and the deallocation pipeline
// frees them all at the end of the function, so a forward pass holds every
// activation at once and the kernel zero-fills every page of them on each
// call. This pass
//  1. moves each such deallocation up to just after the buffer's last use;
//  2. lets temporaries of the same type and the same dynamic sizes (the
//     [B, T, d] activations of successive layers) whose lifetimes no longer
//     overlap share one buffer: the later allocation is replaced by the
//     earlier buffer, whose deallocation moves to the later one's.
//
// Only plain cases are touched: a memref.alloc directly in a function body
// (not in a loop), deallocated exactly once in the same block, and otherwise
// used only by ops nested between the two that do not let the buffer escape
// (no return, call, yield, or pointer extraction, directly or through
// views).
//
//===----------------------------------------------------------------------===//

#include "BufferUses.h"
#include "attn/Codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNREUSEBUFFERS
#include "attn/Codegen/Passes.h.inc"

namespace {

struct Candidate {
  memref::AllocOp alloc;
  memref::DeallocOp dealloc;
  unsigned begin, end; // positions in the block
};

struct ReuseBuffersPass : impl::AttnReuseBuffersBase<ReuseBuffersPass> {
  using Base::Base;


  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    for (Block &block : func.getBody())
      reuseIn(block);
  }

  void reuseIn(Block &block) {
    DenseMap<Operation *, unsigned> position;
    unsigned i = 0;
    for (Operation &op : block)
      position[&op] = i++;
    // Slots keyed by (type, alignment, dynamic sizes); each holds the
    // candidate currently owning the buffer.
    using Key = std::tuple<Type, Attribute, SmallVector<Value, 4>>;
    SmallVector<std::pair<Key, Candidate>> slots;
    for (Operation &op : llvm::make_early_inc_range(block)) {
      auto alloc = dyn_cast<memref::AllocOp>(&op);
      if (!alloc)
        continue;
      memref::DeallocOp dealloc;
      if (!staysLocal(alloc.getResult(), dealloc) || !dealloc ||
          dealloc->getBlock() != &block)
        continue;
      // Free right after the last op of the block that uses the buffer.
      SmallVector<Operation *> users;
      collectUsers(alloc.getResult(), users);
      Operation *last = alloc;
      for (Operation *user : users) {
        if (isa<memref::DeallocOp>(user))
          continue;
        Operation *top = block.findAncestorOpInBlock(*user);
        if (top && position[top] > position[last])
          last = top;
      }
      if (position[last] + 1 < position[dealloc]) {
        dealloc->moveAfter(last);
        position[dealloc] = position[last]; // ties break by block order
      }
      Candidate c{alloc, dealloc, position[alloc], position[dealloc]};
      SmallVector<Value, 4> sizes;
      for (Value size : alloc.getDynamicSizes())
        sizes.push_back(canonicalSize(size));
      Key key{alloc.getType(), alloc.getAlignmentAttr(), sizes};
      Candidate *owner = nullptr;
      for (auto &[k, slot] : slots)
        if (k == key && slot.end < c.begin) {
          owner = &slot;
          break;
        }
      if (!owner) {
        slots.push_back({key, c});
        continue;
      }
      // The earlier buffer lives on until this one's dealloc.
      owner->dealloc->erase();
      alloc.getResult().replaceAllUsesWith(owner->alloc.getResult());
      alloc->erase();
      owner->dealloc = c.dealloc;
      owner->end = c.end;
    }
  }
};

} // namespace

} // namespace attn
