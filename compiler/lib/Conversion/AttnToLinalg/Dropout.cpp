//===- Dropout.cpp - Lowering seeded dropout ------------------------------===//
//
// Dropout draws its mask from the counter-based stream of abi.h
// (`attn_dropout_bits`): each element hashes (seed, stream, row-major index)
// with splitmix64 in wrapping i64 arithmetic, so the mask needs no state,
// vectorises (the hash is a chain of i64 multiplies, xors and shifts), and
// the backward pass and the runtime's tests draw exactly the same bits.
// Without a seed (inference) dropout is the identity.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilders.h"

#include "attn/Dialect/Transforms/EntryPoints.h"
#include "attn/abi.h"

using namespace mlir;

namespace attn {

static Value i64Constant(OpBuilder &b, Location loc, uint64_t value) {
  return arith::ConstantOp::create(
      b, loc, b.getI64IntegerAttr(static_cast<int64_t>(value)));
}

Value dropoutStreamBase(OpBuilder &b, Location loc, Value seed,
                        int64_t stream) {
  uint64_t offset =
      ATTN_DROPOUT_STREAM_STEP * (static_cast<uint64_t>(stream) + 1);
  return arith::AddIOp::create(b, loc, seed, i64Constant(b, loc, offset));
}

Value dropoutSeed(OpBuilder &b, Location loc, Operation *op, Value seed,
                  Value rowElements) {
  Value value = tensor::ExtractOp::create(b, loc, seed, ValueRange{});
  BlockArgument row =
      entry::dropoutRowArgument(op->getParentOfType<func::FuncOp>());
  if (!row)
    return value;
  Value first = tensor::ExtractOp::create(b, loc, row, ValueRange{});
  Value elements =
      arith::IndexCastOp::create(b, loc, b.getI64Type(), rowElements);
  Value skipped = arith::MulIOp::create(b, loc, first, elements);
  return arith::AddIOp::create(
      b, loc, value,
      arith::MulIOp::create(b, loc, skipped,
                            i64Constant(b, loc, ATTN_DROPOUT_INDEX_STEP)));
}

Value dropoutKeep(OpBuilder &b, Location loc, Value base, Value index,
                  double rate) {
  // x = base + C * index; splitmix64(x).
  Value x = arith::AddIOp::create(
      b, loc, base,
      arith::MulIOp::create(b, loc, index,
                            i64Constant(b, loc, ATTN_DROPOUT_INDEX_STEP)));
  auto mix = [&](Value v, int shift, uint64_t multiplier) -> Value {
    Value shifted = arith::ShRUIOp::create(b, loc, v, i64Constant(b, loc, shift));
    Value mixed = arith::XOrIOp::create(b, loc, v, shifted);
    return arith::MulIOp::create(b, loc, mixed, i64Constant(b, loc, multiplier));
  };
  x = mix(x, ATTN_SPLITMIX_SHIFT1, ATTN_SPLITMIX_MUL1);
  x = mix(x, ATTN_SPLITMIX_SHIFT2, ATTN_SPLITMIX_MUL2);
  x = arith::XOrIOp::create(
      b, loc, x,
      arith::ShRUIOp::create(b, loc, x,
                             i64Constant(b, loc, ATTN_SPLITMIX_SHIFT3)));
  // The top 24 bits against the threshold; both sides are below 2^24, so a
  // signed comparison is exact.
  Value top = arith::ShRUIOp::create(
      b, loc, x, i64Constant(b, loc, ATTN_DROPOUT_KEEP_SHIFT));
  auto threshold = static_cast<uint64_t>(rate * ATTN_DROPOUT_RATE_SCALE);
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, top,
                               i64Constant(b, loc, threshold));
}

Value linearIndexInBody(OpBuilder &b, Location loc, ArrayRef<Value> sizes) {
  Value index;
  for (auto [d, size] : llvm::enumerate(sizes)) {
    Value i = linalg::IndexOp::create(b, loc, d);
    index = index ? arith::AddIOp::create(
                        b, loc, arith::MulIOp::create(b, loc, index, size), i)
                  : i;
  }
  if (!index)
    index = arith::ConstantIndexOp::create(b, loc, 0);
  return arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
}

namespace {

struct DropoutLowering : OpConversionPattern<DropoutOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(DropoutOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    double rate = op.getRate().convertToDouble();
    Value seed = adaptor.getSeed();
    // Inference entry points (no seed) and rate 0 keep everything.
    if (!seed || rate == 0) {
      rewriter.replaceOp(op, adaptor.getInput());
      return success();
    }
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto type = cast<RankedTensorType>(op.getType());
    Type element = type.getElementType();
    SmallVector<Value> sizes;
    for (int64_t d = 0; d < type.getRank(); ++d)
      sizes.push_back(dimOf(rewriter, loc, input, d));
    // A row is everything after the batch dim (one element of a vector).
    Value rowElements = arith::ConstantIndexOp::create(rewriter, loc, 1);
    for (Value size : ArrayRef<Value>(sizes).drop_front())
      rowElements = arith::MulIOp::create(rewriter, loc, rowElements, size);
    Value seedValue = dropoutSeed(rewriter, loc, op, seed, rowElements);
    Value base = dropoutStreamBase(rewriter, loc, seedValue,
                                   op.getStream().value_or(0));
    Value scale = floatConstant(rewriter, loc, element, 1.0 / (1.0 - rate));
    Value zero = floatConstant(rewriter, loc, element, 0.0);
    rewriter.replaceOp(
        op, buildElementwise(rewriter, loc, type, input,
                             [&](OpBuilder &b, Location l, ValueRange a) {
                               Value index = linearIndexInBody(b, l, sizes);
                               Value keep = dropoutKeep(b, l, base, index, rate);
                               Value scaled =
                                   arith::MulFOp::create(b, l, a[0], scale);
                               return arith::SelectOp::create(b, l, keep,
                                                              scaled, zero)
                                   .getResult();
                             }));
    return success();
  }
};

} // namespace

void populateDropoutPatterns(RewritePatternSet &patterns) {
  patterns.add<DropoutLowering>(patterns.getContext());
}

} // namespace attn
