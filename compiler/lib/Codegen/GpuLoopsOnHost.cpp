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

#include "GpuWarpTiles.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNGPULOOPSONHOST
#include "attn/Codegen/Passes.h.inc"

namespace {

struct GpuLoopsOnHostPass : impl::AttnGpuLoopsOnHostBase<GpuLoopsOnHostPass> {
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
