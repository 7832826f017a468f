//===- LowerVector.cpp - Progressive lowering of the vector ops -----------===//
//
// `attn-lower-vector`: after attn-vectorize-linalg and attn-matmul-to-vector
// (and `lower-vector-mask`, which turns vector.mask regions into masked
// transfers), brings the vector ops down to what convert-vector-to-llvm and
// convert-vector-to-scf take: unit dims of the 1 x ... x 1 x W tiles dropped,
// transfers with permutation maps made minor-identity plus transposes or
// broadcasts, multi-reductions as 1-D vector.reduction (reassociated later
// by convert-vector-to-llvm; a max or min over 2^n lanes as a halving tree
// of element-wise ops), transposes as 16 x 16 shuffles, contractions as
// outer products.
//
//===----------------------------------------------------------------------===//

#include "attn/Codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Utils/VectorUtils.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNLOWERVECTOR
#include "attn/Codegen/Passes.h.inc"

namespace {

bool isFloatMax(vector::CombiningKind kind) {
  return kind == vector::CombiningKind::MAXIMUMF ||
         kind == vector::CombiningKind::MAXNUMF;
}

bool isFloatMin(vector::CombiningKind kind) {
  return kind == vector::CombiningKind::MINIMUMF ||
         kind == vector::CombiningKind::MINNUMF;
}

/// vector.reduction of a max or min over 2^n lanes as a halving tree of
/// element-wise ops on the two halves, then one extract. LLVM's x86 backend
/// expands llvm.vector.reduce.fmaximum into a chain of one scalar maximum
/// (a compare-and-select sequence for the NaN and signed-zero rules) per
/// lane: the row maxima of attention's 64-key score tiles took about as long
/// as the products. The tree gives the same result (the ops are associative
/// and commutative) in log2(lanes) vector ops.
struct ReductionAsTree : OpRewritePattern<vector::ReductionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::ReductionOp op,
                                PatternRewriter &rewriter) const override {
    vector::CombiningKind kind = op.getKind();
    if (!isFloatMax(kind) && !isFloatMin(kind))
      return failure();
    VectorType type = op.getSourceVectorType();
    int64_t lanes = type.getNumElements();
    if (type.getRank() != 1 || type.isScalable() || lanes < 2 ||
        !llvm::isPowerOf2_64(lanes) ||
        op->getParentOfType<vector::MaskOp>())
      return failure();
    Location loc = op.getLoc();
    Value v = op.getVector();
    for (int64_t half = lanes / 2; half >= 1; half /= 2) {
      Value low = vector::ExtractStridedSliceOp::create(
          rewriter, loc, v, ArrayRef<int64_t>{0}, ArrayRef<int64_t>{half},
          ArrayRef<int64_t>{1});
      Value high = vector::ExtractStridedSliceOp::create(
          rewriter, loc, v, ArrayRef<int64_t>{half}, ArrayRef<int64_t>{half},
          ArrayRef<int64_t>{1});
      v = vector::makeArithReduction(rewriter, loc, kind, low, high);
    }
    Value result = vector::ExtractOp::create(rewriter, loc, v, 0);
    if (Value acc = op.getAcc())
      result = vector::makeArithReduction(rewriter, loc, kind, result, acc);
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// A masked max or min reduction (a partial tile's row) as the unmasked
/// reduction of the vector with its masked-off lanes set to the neutral
/// element (-inf for a max, +inf for a min), which ReductionAsTree lowers.
struct MaskedReductionAsSelect : OpRewritePattern<vector::MaskOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::MaskOp op,
                                PatternRewriter &rewriter) const override {
    auto reduction =
        dyn_cast_or_null<vector::ReductionOp>(op.getMaskableOp());
    if (!reduction || op.hasPassthru())
      return failure();
    vector::CombiningKind kind = reduction.getKind();
    bool max = isFloatMax(kind);
    VectorType type = reduction.getSourceVectorType();
    if ((!max && !isFloatMin(kind)) || type.getRank() != 1 ||
        type.isScalable())
      return failure();
    auto element = cast<FloatType>(type.getElementType());
    Location loc = op.getLoc();
    Value neutral = arith::ConstantOp::create(
        rewriter, loc,
        DenseElementsAttr::get(
            type, rewriter.getFloatAttr(
                      element, APFloat::getInf(element.getFloatSemantics(),
                                               /*Negative=*/max))));
    Value lanes = arith::SelectOp::create(rewriter, loc, op.getMask(),
                                          reduction.getVector(), neutral);
    rewriter.replaceOpWithNewOp<vector::ReductionOp>(op, kind, lanes,
                                                     reduction.getAcc());
    return success();
  }
};

struct LowerVectorPass : impl::AttnLowerVectorBase<LowerVectorPass> {
  using Base::Base;


  void runOnOperation() override {
    MLIRContext *context = &getContext();
    // Unit dims first, so that the tiles of rank-N ops become 1-D vectors.
    {
      RewritePatternSet patterns(context);
      vector::populateCastAwayVectorLeadingOneDimPatterns(patterns);
      vector::populateVectorTransferDropUnitDimsPatterns(patterns);
      vector::populateDropUnitDimWithShapeCastPatterns(patterns);
      vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
      vector::populateVectorToVectorCanonicalizationPatterns(patterns);
      if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
        return signalPassFailure();
    }
    {
      RewritePatternSet patterns(context);
      vector::populateVectorMultiReductionLoweringPatterns(
          patterns, vector::VectorMultiReductionLowering::InnerReduction);
      vector::populateVectorContractLoweringPatterns(
          patterns, vector::VectorContractLowering::OuterProduct);
      vector::populateVectorTransposeLoweringPatterns(
          patterns, vector::VectorTransposeLowering::Shuffle16x16);
      vector::populateVectorBroadcastLoweringPatterns(patterns);
      vector::populateVectorShapeCastLoweringPatterns(patterns);
      vector::populateVectorOuterProductLoweringPatterns(patterns);
      vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
      vector::populateCastAwayVectorLeadingOneDimPatterns(patterns);
      vector::populateVectorToVectorCanonicalizationPatterns(patterns);
      if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
        return signalPassFailure();
    }
    {
      RewritePatternSet patterns(context);
      patterns.add<MaskedReductionAsSelect, ReductionAsTree>(context);
      if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
        return signalPassFailure();
    }
  }
};

} // namespace

} // namespace attn
