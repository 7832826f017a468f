//===- LowerDynamicReshapes.cpp - expand_shape as reinterpret_cast --------===//
//
// `attn-lower-dynamic-reshapes`: a memref.expand_shape that splits one
// dynamic dim into several dynamic ones ([B * T, d] -> [B, T, d], as the
// matrix products' results are read back) becomes a memref.reinterpret_cast
// of the source's base buffer with the sizes and strides written out.
// MLIR 22's expand-strided-metadata crashes on such expand_shapes (in
// dispatchIndexOpFoldResult); every other expand_shape is left to it.
//
//===----------------------------------------------------------------------===//

#include "attn/Codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNLOWERDYNAMICRESHAPES
#include "attn/Codegen/Passes.h.inc"

namespace {

struct ExpandShapeToReinterpretCast
    : OpRewritePattern<memref::ExpandShapeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(memref::ExpandShapeOp op,
                                PatternRewriter &rewriter) const override {
    MemRefType resultType = op.getResultType();
    bool splitsDynamic = llvm::any_of(
        op.getReassociationIndices(), [&](const ReassociationIndices &group) {
          return llvm::count_if(group, [&](int64_t d) {
                   return resultType.isDynamicDim(d);
                 }) > 1;
        });
    if (!splitsDynamic)
      return failure();
    SmallVector<int64_t> resultStrides;
    int64_t resultOffset;
    if (failed(resultType.getStridesAndOffset(resultStrides, resultOffset)))
      return failure();
    Location loc = op.getLoc();
    auto metadata =
        memref::ExtractStridedMetadataOp::create(rewriter, loc, op.getSrc());
    SmallVector<OpFoldResult> sizes = op.getMixedOutputShape();
    SmallVector<OpFoldResult> strides(resultType.getRank());
    auto value = [&](OpFoldResult v) {
      return getValueOrCreateConstantIndexOp(rewriter, loc, v);
    };
    for (auto [srcDim, group] : llvm::enumerate(op.getReassociationIndices())) {
      // The innermost dim of a group keeps the source's stride; each outer
      // one is the next one's stride times its size.
      Value stride = metadata.getStrides()[srcDim];
      for (int64_t i = group.size() - 1; i >= 0; --i) {
        int64_t d = group[i];
        if (!ShapedType::isDynamic(resultStrides[d]))
          strides[d] = rewriter.getIndexAttr(resultStrides[d]);
        else
          strides[d] = stride;
        if (i > 0)
          stride = arith::MulIOp::create(rewriter, loc, stride, value(sizes[d]));
      }
    }
    OpFoldResult offset =
        ShapedType::isDynamic(resultOffset)
            ? OpFoldResult(metadata.getOffset())
            : OpFoldResult(rewriter.getIndexAttr(resultOffset));
    rewriter.replaceOpWithNewOp<memref::ReinterpretCastOp>(
        op, resultType, metadata.getBaseBuffer(), offset, sizes, strides);
    return success();
  }
};

struct LowerDynamicReshapesPass
    : impl::AttnLowerDynamicReshapesBase<LowerDynamicReshapesPass> {
  using Base::Base;


  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ExpandShapeToReinterpretCast>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

} // namespace attn
