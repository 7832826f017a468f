//===- GpuLoopsOnHost.cpp - The GPU mapping's loops on the host -----------===//
//
// `attn-gpu-loops-on-host`: after attn-gpu-map-loops, the device's
// allocations, frees and copies become the host's, so that the CPU's
// lowering runs the mapped loops in order (a kernel written per warp with
// one lane, GpuWarpTiles.h). Used by the `cuda-on-host` target, which tests
// the GPU target's loop structure on any machine.
//
//===----------------------------------------------------------------------===//

#include "attn/Codegen/Passes.h"

#include "GpuSharedTiles.h"
#include "GpuWarpTiles.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNGPULOOPSONHOST
#include "attn/Codegen/Passes.h.inc"

namespace {

struct GpuLoopsOnHostPass : impl::AttnGpuLoopsOnHostBase<GpuLoopsOnHostPass> {
  /// A block's threads run one after the other here, so a thread reading a
  /// shared tile must have copied all of it itself (GpuSharedTiles.h): each
  /// block copy runs whole, the barriers go, and each tile is allocated
  /// once, before its kernel's loop (an alloca in a loop's body would take
  /// more stack at every iteration).
  void runSharedTilesInOrder(RewriterBase &rewriter) {
    SmallVector<Operation *> marked;
    getOperation().walk([&](Operation *op) {
      if (isa<gpu::BarrierOp>(op) || op->hasAttr(kBlockCopyAttr) ||
          op->hasAttr(kSharedTileAttr))
        marked.push_back(op);
    });
    for (Operation *op : marked) {
      if (isa<gpu::BarrierOp>(op)) {
        rewriter.eraseOp(op);
      } else if (auto copy = dyn_cast<scf::ForOp>(op)) {
        rewriter.setInsertionPoint(copy);
        Location loc = copy.getLoc();
        copy.setLowerBound(arith::ConstantIndexOp::create(rewriter, loc, 0));
        copy.setStep(arith::ConstantIndexOp::create(rewriter, loc, 1));
      } else {
        Operation *kernel = op->getParentOfType<scf::ParallelOp>();
        while (auto outer = kernel->getParentOfType<scf::ParallelOp>())
          kernel = outer;
        op->moveBefore(kernel);
      }
    }
  }

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<gpu::AllocOp, gpu::DeallocOp, gpu::MemcpyOp>(op))
        ops.push_back(op);
    });
    // A kernel written per warp does the warp's work in each lane's
    // iteration (convert-vector-to-gpu divides it between the lanes only on
    // the GPU): one iteration of the lanes does it once.
    getOperation().walk([&](scf::ParallelOp loop) {
      auto processors = warpTileProcessors(loop);
      if (!processors)
        return;
      auto lanes = llvm::find(*processors, gpu::Processor::ThreadX);
      rewriter.setInsertionPoint(loop);
      Value one = arith::ConstantIndexOp::create(rewriter, loop.getLoc(), 1);
      loop.getUpperBoundMutable()
          .slice(lanes - processors->begin(), 1)
          .assign(one);
    });
    runSharedTilesInOrder(rewriter);
    for (Operation *op : ops) {
      rewriter.setInsertionPoint(op);
      if (auto alloc = dyn_cast<gpu::AllocOp>(op)) {
        // 64-byte aligned, as the CPU target's buffers are.
        rewriter.replaceOpWithNewOp<memref::AllocOp>(
            alloc, alloc.getMemref().getType(), alloc.getDynamicSizes(),
            alloc.getSymbolOperands(), rewriter.getI64IntegerAttr(64));
      } else if (auto dealloc = dyn_cast<gpu::DeallocOp>(op)) {
        rewriter.replaceOpWithNewOp<memref::DeallocOp>(dealloc,
                                                       dealloc.getMemref());
      } else {
        auto copy = cast<gpu::MemcpyOp>(op);
        rewriter.replaceOpWithNewOp<memref::CopyOp>(copy, copy.getSrc(),
                                                    copy.getDst());
      }
    }
  }
};

} // namespace

} // namespace attn
