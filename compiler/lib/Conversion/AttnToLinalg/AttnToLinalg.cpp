//===- AttnToLinalg.cpp - The attn to linalg conversion pass --------------===//
//
// Collects the patterns of every op family and converts every attn op inside
// functions; module-level declarations (attn.param, attn.train) stay.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilders.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_CONVERTATTNTOLINALG
#include "attn/Conversion/Passes.h.inc"

void populateAttnToLinalgPatterns(RewritePatternSet &patterns,
                                  bool materializeAttention) {
  populateElementwisePatterns(patterns);
  populateShapePatterns(patterns);
  populateContractionPatterns(patterns);
  populateNormalizationPatterns(patterns);
  populateLossPatterns(patterns);
  populateDropoutPatterns(patterns);
  populateGradientPatterns(patterns);
  populateOptimizerPatterns(patterns);
  if (materializeAttention) {
    populateMaterializedAttentionPatterns(patterns);
  } else {
    populateAttentionPatterns(patterns);
    populateAttentionBackwardPatterns(patterns);
  }
}

namespace {

struct ConvertAttnToLinalgPass
    : impl::ConvertAttnToLinalgBase<ConvertAttnToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *context = &getContext();
    ConversionTarget target(*context);
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect,
                           math::MathDialect, scf::SCFDialect,
                           tensor::TensorDialect, func::FuncDialect>();
    target.addIllegalDialect<AttnDialect>();
    target.addLegalOp<ParamOp, TrainOp>();
    RewritePatternSet patterns(context);
    populateAttnToLinalgPatterns(patterns, materializeAttention);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace attn
