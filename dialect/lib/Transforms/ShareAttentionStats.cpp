//===- ShareAttentionStats.cpp - sdpa_grad reads the forward's logsumexp --===//
//
// `attn-share-attention-stats`: the backward of attention needs each query's
// logsumexp L, which the forward's online softmax computes on its way. An
// `attn.sdpa_grad` without one recomputes it in a pass over all keys of its
// own (a sixth product and one exp per score). When the sdpa_grad's output
// operand is the result of an `attn.sdpa` with the same operands and
// attributes, that sdpa is rebuilt with its `logsumexp` result and the
// sdpa_grad takes it: FlashAttention-2's backward.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/Transforms/Passes.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNSHAREATTENTIONSTATS
#include "attn/Dialect/Transforms/Passes.h.inc"

namespace {

/// Whether `forward` computes the attention whose adjoints `grad` takes.
bool sameAttention(SdpaOp forward, SdpaGradOp grad) {
  return forward.getQuery() == grad.getQuery() &&
         forward.getKey() == grad.getKey() &&
         forward.getValue() == grad.getValue() &&
         forward.getKeyPadding() == grad.getKeyPadding() &&
         forward.getSeed() == grad.getSeed() &&
         forward.getMask() == grad.getMask() &&
         forward.getScaleAttr() == grad.getScaleAttr() &&
         forward.getDropout() == grad.getDropout() &&
         forward.getStreamAttr() == grad.getStreamAttr();
}

/// `forward`, or a copy of it with the logsumexp result that replaces it.
SdpaOp withLogsumexp(SdpaOp forward) {
  if (forward.getLogsumexp())
    return forward;
  OpBuilder b(forward);
  auto rebuilt = SdpaOp::create(
      b, forward.getLoc(), forward.getQuery(), forward.getKey(),
      forward.getValue(), forward.getKeyPadding(), forward.getSeed(),
      forward.getMaskAttr(), forward.getScaleAttr(), forward.getDropoutAttr(),
      forward.getStreamAttr(), b.getUnitAttr());
  forward.getResult().replaceAllUsesWith(rebuilt.getResult());
  forward.erase();
  return rebuilt;
}

struct AttnShareAttentionStatsPass
    : impl::AttnShareAttentionStatsBase<AttnShareAttentionStatsPass> {
  void runOnOperation() override {
    SmallVector<SdpaGradOp> grads;
    getOperation()->walk([&](SdpaGradOp grad) {
      if (!grad.getLogsumexp())
        grads.push_back(grad);
    });
    for (SdpaGradOp grad : grads) {
      auto forward = grad.getOutput().getDefiningOp<SdpaOp>();
      if (!forward || forward.getResult() != grad.getOutput() ||
          !sameAttention(forward, grad))
        continue;
      grad.getLogsumexpMutable().assign(withLogsumexp(forward).getLogsumexp());
    }
  }
};

} // namespace
} // namespace attn
