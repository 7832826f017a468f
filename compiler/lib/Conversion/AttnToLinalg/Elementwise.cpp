//===- Elementwise.cpp - Lowering element-wise attn ops -------------------===//
//
// Every op of ElementwiseOpInterface (unary functions, broadcasting
// arithmetic, comparisons, selects, casts) as one element-wise
// `linalg.generic` around the op's scalar body; dropout, whose elements
// depend on their index, is in Dropout.cpp.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilders.h"

using namespace mlir;

namespace attn {
namespace {

struct ElementwiseLowering
    : OpInterfaceConversionPattern<ElementwiseOpInterface> {
  using OpInterfaceConversionPattern::OpInterfaceConversionPattern;

  LogicalResult
  matchAndRewrite(ElementwiseOpInterface op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    Type element = type.getElementType();
    rewriter.replaceOp(
        op, buildElementwise(rewriter, op.getLoc(), type, operands,
                             [&](OpBuilder &b, Location loc, ValueRange args) {
                               return op.buildScalar(b, loc, args, element);
                             }));
    return success();
  }
};

} // namespace

void populateElementwisePatterns(RewritePatternSet &patterns) {
  patterns.add<ElementwiseLowering>(patterns.getContext());
}

} // namespace attn
