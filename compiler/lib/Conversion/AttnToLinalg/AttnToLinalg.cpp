//===- AttnToLinalg.cpp - The attn to linalg conversion pass --------------===//
//
// Collects the patterns of every op family and converts every attn op inside
// functions; module-level declarations (attn.param, attn.train) stay.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilders.h"

#include "attn/Dialect/Transforms/EntryPoints.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_CONVERTATTNTOLINALG
#include "attn/Conversion/Passes.h.inc"

void populateAttnToLinalgPatterns(RewritePatternSet &patterns,
                                  const ConvertAttnToLinalgOptions &options) {
  populateElementwisePatterns(patterns);
  populateShapePatterns(patterns);
  populateRotaryPatterns(patterns);
  populateContractionPatterns(patterns);
  populateDequantizePatterns(patterns);
  populateNormalizationPatterns(patterns);
  populateLossPatterns(patterns);
  populateDropoutPatterns(patterns);
  populateGradientPatterns(patterns);
  populateOptimizerPatterns(patterns);
  if (options.warpNorms)
    populateWarpNormPatterns(patterns);
  if (options.attention == "rows")
    populateRowAttentionPatterns(patterns);
  if (options.attention != "tiles") {
    populateMaterializedAttentionPatterns(patterns);
    return;
  }
  AttentionTiles tiles{options.queryTile, options.keyTile};
  populateAttentionPatterns(patterns, tiles);
  populateAttentionBackwardPatterns(patterns, tiles);
}

namespace {

struct ConvertAttnToLinalgPass
    : impl::ConvertAttnToLinalgBase<ConvertAttnToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    if (attention != "tiles" && attention != "rows" &&
        attention != "materialized") {
      emitError(getOperation().getLoc())
          << "convert-attn-to-linalg: attention must be tiles, rows or "
             "materialized (got '"
          << attention << "')";
      return signalPassFailure();
    }
    if (queryTile < 1 || keyTile < 1) {
      emitError(getOperation().getLoc())
          << "convert-attn-to-linalg: query-tile and key-tile must be at "
             "least 1 (got "
          << static_cast<int64_t>(queryTile) << " and "
          << static_cast<int64_t>(keyTile) << ")";
      return signalPassFailure();
    }
    MLIRContext *context = &getContext();
    ConversionTarget target(*context);
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect,
                           math::MathDialect, scf::SCFDialect,
                           tensor::TensorDialect, func::FuncDialect,
                           gpu::GPUDialect>();
    target.addIllegalDialect<AttnDialect>();
    target.addLegalOp<ParamOp, TrainOp>();
    RewritePatternSet patterns(context);
    ConvertAttnToLinalgOptions options;
    options.attention = attention;
    options.queryTile = queryTile;
    options.keyTile = keyTile;
    options.warpNorms = warpNorms;
    populateAttnToLinalgPatterns(patterns, options);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      return signalPassFailure();
    if (attention == "rows" &&
        failed(foldTransposesIntoRowLoops(getOperation())))
      return signalPassFailure();
    // The dropout lowering read the rows' argument (dropoutSeed); LLVM has
    // no use for its mark.
    getOperation().walk([](func::FuncOp func) {
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        func.removeArgAttr(i, entry::kDropoutRowAttr);
    });
  }
};

} // namespace
} // namespace attn
