//===- GpuWarpLanes.cpp - The lane count of loops written for a warp ------===//
//
// `attn-gpu-warp-lanes`: gives `gpu.subgroup_size` its value in loops
// written for a warp's lanes, and settles what their XOR shuffles across
// the subgroup return for that count: a shuffle from a lane within it is
// valid (the GPU does it), one from past it returns the lane's own value
// (one lane, the `cuda-on-host` target: every shuffle). See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "attn/Codegen/Passes.h"

#include "GpuWarpTiles.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNGPUWARPLANES
#include "attn/Codegen/Passes.h.inc"

namespace {

/// Whether `width` is the subgroup's size (as the i32 a shuffle takes).
bool isSubgroupSize(Value width) {
  auto cast = width.getDefiningOp<arith::IndexCastOp>();
  return cast && cast.getIn().getDefiningOp<gpu::SubgroupSizeOp>();
}

struct GpuWarpLanesPass : impl::AttnGpuWarpLanesBase<GpuWarpLanesPass> {
  using Base::Base;

  void runOnOperation() override {
    if (lanes != 1 && lanes != kWarpSize) {
      emitError(getOperation().getLoc())
          << "attn-gpu-warp-lanes: lanes must be 1 or " << kWarpSize
          << " (got " << static_cast<int64_t>(lanes) << ")";
      return signalPassFailure();
    }
    IRRewriter rewriter(&getContext());
    WalkResult shuffles = getOperation().walk<WalkOrder::PreOrder>([&](gpu::ShuffleOp shuffle) {
      APInt offset;
      if (!isSubgroupSize(shuffle.getWidth()))
        return WalkResult::advance();
      if (shuffle.getMode() != gpu::ShuffleMode::XOR ||
          !matchPattern(shuffle.getOffset(), m_ConstantInt(&offset))) {
        shuffle.emitError("attn-gpu-warp-lanes: a shuffle across the "
                          "subgroup must be XOR by a constant");
        return WalkResult::interrupt();
      }
      // lane XOR offset < lanes for every lane < lanes exactly when
      // offset < lanes (lanes a power of two).
      bool valid = offset.getZExtValue() < static_cast<uint64_t>(lanes);
      rewriter.setInsertionPoint(shuffle);
      Value constant =
          arith::ConstantIntOp::create(rewriter, shuffle.getLoc(), valid, 1);
      rewriter.replaceAllUsesWith(shuffle.getValid(), constant);
      if (!valid)
        rewriter.replaceOp(shuffle, {shuffle.getValue(), constant});
      return WalkResult::advance();
    });
    if (shuffles.wasInterrupted())
      return signalPassFailure();
    getOperation().walk([&](gpu::SubgroupSizeOp size) {
      rewriter.setInsertionPoint(size);
      rewriter.replaceOpWithNewOp<arith::ConstantIndexOp>(size, lanes);
    });
  }
};

} // namespace

} // namespace attn
