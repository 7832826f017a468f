//===- GpuElideHostWaits.cpp - Host waits only where the host reads -------===//
//
// `attn-gpu-elide-host-waits`: gpu-async-region ends every block that
// launched work, and precedes every host op with memory effects (an scf.if
// around a product's branches), with a synchronous `gpu.wait`, so the host
// waits for the device there. The runtime queues all device work on one
// in-order stream (runtime/src/cuda.c, mgpuStreamCreate), so a wait is
// needed only where the host then touches memory the device uses or
// returns: this pass drops the waits after which every path reaches more
// stream work or another wait first. Each wait drains the GPU while the
// host queues the next kernel (docs/Codegen.md, GPU target, counts them).
//
//===----------------------------------------------------------------------===//

#include "attn/Codegen/Passes.h"

#include "BufferUses.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNGPUELIDEHOSTWAITS
#include "attn/Codegen/Passes.h.inc"

namespace {

/// What a path from a host wait meets first.
enum class Next {
  /// Stream work or another host wait: the wait is not needed on this path.
  Stream,
  /// A host access of memory the device uses, or the function's return.
  HostAccess,
  /// Nothing yet: the path goes on after the block.
  FallsThrough,
};

class WaitElider {
public:
  explicit WaitElider(func::FuncOp func) {
    // The buffers device work reads or writes: kernels' memref arguments,
    // copies' ends (a copy's host end is written by the device).
    func.walk([&](gpu::AsyncOpInterface op) {
      for (Value operand : op->getOperands())
        if (isa<MemRefType>(operand.getType()))
          deviceBuffers.insert(rootBuffer(operand));
    });
  }

  /// Whether every path from `wait` meets stream work or another wait
  /// before the host touches device memory or returns.
  bool isRedundant(gpu::WaitOp wait) {
    self = wait;
    return after(wait) == Next::Stream;
  }

private:
  /// The paths that start right after `op`, through the ends of the
  /// regions around it.
  Next after(Operation *op) {
    Block *block = op->getBlock();
    Next next = scan(std::next(op->getIterator()), block->end());
    if (next != Next::FallsThrough)
      return next;
    Operation *parent = block->getParentOp();
    if (isa<func::FuncOp>(parent))
      return Next::HostAccess;
    // A loop's body goes back to its start (up to this wait, which then
    // closes a cycle with no host access) or leaves the loop.
    if (isa<LoopLikeOpInterface>(parent) &&
        scanRegions(parent) == Next::HostAccess)
      return Next::HostAccess;
    return after(parent);
  }

  /// The first deciding op of [begin, end) on every path through it.
  Next scan(Block::iterator begin, Block::iterator end) {
    for (Operation &op : llvm::make_range(begin, end)) {
      if (&op == self.getOperation())
        return Next::Stream;
      if (auto wait = dyn_cast<gpu::WaitOp>(op)) {
        if (!wait.getAsyncToken())
          return Next::Stream;
        continue;
      }
      if (isa<gpu::AsyncOpInterface>(op))
        return Next::Stream;
      if (isa<func::ReturnOp>(op))
        return Next::HostAccess;
      if (op.getNumRegions() > 0) {
        Next inside = scanRegionOp(&op);
        if (inside != Next::FallsThrough)
          return inside;
        continue;
      }
      if (touchesDeviceMemory(&op))
        return Next::HostAccess;
    }
    return Next::FallsThrough;
  }

  /// An op with regions: an scf.if whose branches both meet stream work
  /// decides; any other op decides only on a host access in a region
  /// (which may run or not, or run repeatedly).
  Next scanRegionOp(Operation *op) {
    if (auto ifOp = dyn_cast<scf::IfOp>(op)) {
      Next thenNext = scanBlock(ifOp.thenBlock());
      Next elseNext =
          ifOp.elseBlock() ? scanBlock(ifOp.elseBlock()) : Next::FallsThrough;
      if (thenNext == Next::HostAccess || elseNext == Next::HostAccess)
        return Next::HostAccess;
      if (thenNext == Next::Stream && elseNext == Next::Stream)
        return Next::Stream;
      return Next::FallsThrough;
    }
    return scanRegions(op) == Next::HostAccess ? Next::HostAccess
                                               : Next::FallsThrough;
  }

  Next scanBlock(Block *block) { return scan(block->begin(), block->end()); }

  /// HostAccess if a path through any block of `op`'s regions meets one.
  Next scanRegions(Operation *op) {
    for (Region &region : op->getRegions())
      for (Block &block : region)
        if (scanBlock(&block) == Next::HostAccess)
          return Next::HostAccess;
    return Next::FallsThrough;
  }

  /// A host op that reads, writes or frees a buffer the device uses, or one
  /// whose effects are unknown (a call).
  bool touchesDeviceMemory(Operation *op) {
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (!effects)
      return !isMemoryEffectFree(op);
    SmallVector<MemoryEffects::EffectInstance> instances;
    effects.getEffects(instances);
    for (const MemoryEffects::EffectInstance &effect : instances) {
      if (isa<MemoryEffects::Allocate>(effect.getEffect()))
        continue;
      Value value = effect.getValue();
      if (!value || deviceBuffers.contains(rootBuffer(value)))
        return true;
    }
    return false;
  }

  llvm::DenseSet<Value> deviceBuffers;
  gpu::WaitOp self;
};

struct GpuElideHostWaitsPass
    : impl::AttnGpuElideHostWaitsBase<GpuElideHostWaitsPass> {
  void runOnOperation() override {
    SmallVector<gpu::WaitOp> waits;
    getOperation().walk([&](gpu::WaitOp wait) {
      if (!wait.getAsyncToken())
        waits.push_back(wait);
    });
    // One at a time, each decided on the IR the previous ones left: a wait
    // is dropped only where another wait or stream work that is kept
    // follows it.
    WaitElider elider(getOperation());
    for (gpu::WaitOp wait : waits)
      if (elider.isRedundant(wait))
        wait.erase();
  }
};

} // namespace
} // namespace attn
