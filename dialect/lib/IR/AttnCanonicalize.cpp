//===- AttnCanonicalize.cpp - Canonicalization patterns of the attn ops ---===//
//
// `attn.take` of one index of a leading axis sinks through the ops that
// treat every index of that axis alike, so that they run on the one slice
// that is kept instead of on all of them:
//
//   take(matmul(x, W), axis a, i)  ->  matmul(take(x, a, i), W)
//
// for products with a 2-D right-hand side, `linear`, `layer_norm`,
// `rms_norm` (all over the last axis, so a < rank - 1) and the element-wise
// ops (broadcast operands take index 0 of a size-1 dimension, or are kept
// when they lack the axis), when every use of the op is such a take (so
// nothing is computed twice). `prefill` returns the logits of the last
// position (attn-incremental-decoding); with this, the final norm, the
// head and the last block's feed-forward and attention projection run on
// that position only: about 30% of gpt2_small's prefill FLOPs (its
// 50,257-word head). The take stops at ops that mix positions (attention,
// reductions, reshapes), at dropout, whose mask depends on the element's
// index, and at values also used whole (the residual stream feeding the
// last block's attention).
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/IR/AttnOps.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace attn;

namespace {

struct SinkTake : OpRewritePattern<TakeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(TakeOp take,
                                PatternRewriter &rewriter) const override {
    Operation *producer = take.getInput().getDefiningOp();
    auto inputType = cast<RankedTensorType>(take.getInput().getType());
    int64_t rank = inputType.getRank();
    auto axis = static_cast<int64_t>(take.getAxis());
    auto index = static_cast<int64_t>(take.getIndex());
    // Leading axes only: every op below mixes the elements of the last one.
    if (!producer || axis < 0 || axis >= rank - 1)
      return failure();
    // Only when nothing else reads the full result (other takes of the same
    // slice aside): the op then moves instead of being duplicated, and a
    // chain of them (the last block's feed-forward) moves one by one.
    SmallVector<TakeOp> takes;
    for (Operation *user : take.getInput().getUsers()) {
      auto other = dyn_cast<TakeOp>(user);
      if (!other || static_cast<int64_t>(other.getAxis()) != axis ||
          static_cast<int64_t>(other.getIndex()) != index)
        return failure();
      takes.push_back(other);
    }
    Location loc = take.getLoc();
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointAfter(producer);
    SmallVector<Operation *> created;

    // The slice of operand `v` that the kept result slice reads: `v` itself
    // when it lacks the axis (aligned on the last dimension, as attn
    // broadcasts), index 0 when it is stretched along it (size 1); null for
    // an absent optional operand.
    auto sliceOf = [&](Value v) -> Value {
      if (!v)
        return v;
      auto type = cast<RankedTensorType>(v.getType());
      int64_t operandAxis = axis - (rank - type.getRank());
      if (operandAxis < 0)
        return v;
      bool stretched = type.getDimSize(operandAxis) == 1 &&
                       inputType.getDimSize(axis) != 1;
      auto slice = TakeOp::create(rewriter, loc, v, operandAxis,
                                  stretched ? 0 : index);
      created.push_back(slice);
      return slice;
    };

    Value replacement;
    if (auto matmul = dyn_cast<MatmulOp>(producer)) {
      auto rhsType = cast<RankedTensorType>(matmul.getRhs().getType());
      auto lhsType = cast<RankedTensorType>(matmul.getLhs().getType());
      if (rhsType.getRank() != 2 || lhsType.getRank() != rank)
        return failure();
      replacement = MatmulOp::create(rewriter, loc,
                                     sliceOf(matmul.getLhs()), matmul.getRhs());
    } else if (auto linear = dyn_cast<LinearOp>(producer)) {
      replacement = LinearOp::create(
          rewriter, loc, sliceOf(linear.getInput()), linear.getWeight(),
          linear.getBias(), sliceOf(linear.getResidual()),
          linear.getActivation());
    } else if (auto norm = dyn_cast<LayerNormOp>(producer)) {
      replacement = LayerNormOp::create(
          rewriter, loc, sliceOf(norm.getInput()), norm.getWeight(),
          norm.getBias(), sliceOf(norm.getResidual()), norm.getEpsAttr());
    } else if (auto norm = dyn_cast<RmsNormOp>(producer)) {
      replacement = RmsNormOp::create(
          rewriter, loc, sliceOf(norm.getInput()), norm.getWeight(),
          sliceOf(norm.getResidual()), norm.getEpsAttr());
    } else if (isa<ElementwiseOpInterface>(producer)) {
      // Element-wise: the same op on the operands' slices.
      OperationState state(loc, producer->getName());
      for (Value operand : producer->getOperands())
        state.addOperands(sliceOf(operand));
      state.addAttributes(producer->getAttrs());
      state.addTypes(take.getType());
      replacement = rewriter.create(state)->getResult(0);
    } else {
      return failure();
    }
    if (replacement.getType() != take.getType()) {
      // Not expected (the take's type is the producer's minus the axis), but
      // hand-written IR may carry less static shapes than inference gives.
      rewriter.eraseOp(replacement.getDefiningOp());
      for (Operation *op : llvm::reverse(created))
        rewriter.eraseOp(op);
      return rewriter.notifyMatchFailure(take, "the sliced op infers another type");
    }
    for (TakeOp other : takes)
      rewriter.replaceOp(other, replacement);
    return success();
  }
};

} // namespace

void TakeOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                         MLIRContext *context) {
  patterns.add<SinkTake>(context);
}
