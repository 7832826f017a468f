//===- LowerVector.cpp - Progressive lowering of the vector ops -----------===//
//
// `attn-lower-vector`: after attn-vectorize-linalg and attn-matmul-to-vector
// (and `lower-vector-mask`, which turns vector.mask regions into masked
// transfers), brings the vector ops down to what convert-vector-to-llvm and
// convert-vector-to-scf take: unit dims of the 1 x ... x 1 x W tiles dropped,
// transfers with permutation maps made minor-identity plus transposes or
// broadcasts, multi-reductions as 1-D vector.reduction (reassociated later
// by convert-vector-to-llvm), transposes as 16 x 16 shuffles, contractions
// as outer products.
//
//===----------------------------------------------------------------------===//

#include "attn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace attn {
namespace {

struct LowerVectorPass
    : PassWrapper<LowerVectorPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LowerVectorPass)

  StringRef getArgument() const override { return "attn-lower-vector"; }
  StringRef getDescription() const override {
    return "Lowers the vectorised code's vector ops to 1-D vector ops";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, memref::MemRefDialect,
                    vector::VectorDialect>();
  }

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
  }
};

} // namespace

std::unique_ptr<Pass> createLowerVectorPass() {
  return std::make_unique<LowerVectorPass>();
}

void registerLowerVectorPass() { PassRegistration<LowerVectorPass>(); }

} // namespace attn
