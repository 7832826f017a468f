//===- NormalizationRows.cpp - Layer and RMS norms, one warp per row ------===//
//
// `attn.layer_norm` and `attn.rms_norm` (with their residual) as one
// parallel loop over the rows and the lanes of a warp: the lowering of the
// GPU target (`convert-attn-to-linalg{warp-norms}`). As linalg ops, a layer
// norm is two reductions and the element-wise ops between them, which the
// GPU target runs as five kernels (each sum's partial sums, their total,
// the normalised row); here it is one.
//
// Iteration (row, lane) of L lanes walks the row's elements lane, lane + L,
// ... (consecutive lanes read consecutive elements), and a butterfly of
// `gpu.shuffle xor` gives every lane the row's sum of what the lanes read;
// each lane then writes its own elements of the normalised row. The sums
// are in the lanes' order, then the butterfly's, not the CPU's.
//
// L is `gpu.subgroup_size` here; attn-gpu-warp-lanes fixes it for the
// target: 32 on the GPU, where the loop's lanes become a warp's threads,
// and 1 under cuda-on-host, where each row is one sequential pass and every
// shuffle is from a lane past the count, which adds nothing. (Shuffles, not
// `gpu.subgroup_reduce`: bufferisation refuses an op with unknown memory
// effects, which that one is.)
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;

namespace attn {
namespace {

/// One iteration of the loop over rows and lanes: what its body reads.
struct WarpRow {
  Value input, residual; // residual may be null
  SmallVector<Value> row; // the row's indices, all but the last dim
  Value lane, lanes;
  Value width;       // the row's length
  Value widthFloat;  // the same as a float, for means
  Type element;

  /// Element `column` of the row: input plus residual.
  Value at(OpBuilder &b, Location loc, Value column) const {
    SmallVector<Value> indices(row);
    indices.push_back(column);
    Value value = tensor::ExtractOp::create(b, loc, input, indices);
    if (!residual)
      return value;
    return arith::AddFOp::create(
        b, loc, value, tensor::ExtractOp::create(b, loc, residual, indices));
  }

  /// The sum over the row of `term(column)`: this lane's elements in
  /// order, then the lanes' sums combined, the same value in every lane.
  Value sum(OpBuilder &b, Location loc,
            function_ref<Value(OpBuilder &, Location, Value)> term) const {
    Value zero = floatConstant(b, loc, element, 0);
    auto loop = scf::ForOp::create(
        b, loc, lane, width, lanes, ValueRange{zero},
        [&](OpBuilder &nb, Location l, Value column, ValueRange acc) {
          Value next = arith::AddFOp::create(nb, l, acc[0], term(nb, l, column));
          scf::YieldOp::create(nb, l, next);
        });
    return sumOverLanes(b, loc, loop.getResult(0));
  }

  /// `value` summed over the lanes by a butterfly of XOR shuffles: after
  /// the step of distance d each lane holds the sum of its group of 2d
  /// lanes, a + b in one lane and b + a in its partner, the same float. A
  /// shuffle from a lane past the count is invalid and adds -0, which
  /// changes no sum (one lane: the value itself).
  Value sumOverLanes(OpBuilder &b, Location loc, Value value) const {
    Value width = arith::IndexCastOp::create(b, loc, b.getI32Type(), lanes);
    Value negativeZero = floatConstant(b, loc, element, -0.0);
    for (int32_t distance = 1; distance < kWarpSize; distance *= 2) {
      Value offset = arith::ConstantIntOp::create(b, loc, distance, 32);
      auto shuffle = gpu::ShuffleOp::create(b, loc, value, offset, width,
                                            gpu::ShuffleMode::XOR);
      Value other =
          arith::SelectOp::create(b, loc, shuffle.getValid(),
                                  shuffle.getShuffleResult(), negativeZero);
      value = arith::AddFOp::create(b, loc, value, other);
    }
    return value;
  }

  /// The row's mean of `term`.
  Value mean(OpBuilder &b, Location loc,
             function_ref<Value(OpBuilder &, Location, Value)> term) const {
    return arith::DivFOp::create(b, loc, sum(b, loc, term), widthFloat);
  }
};

/// One output element from its column, given the row's statistics.
using RowOutputFn = std::function<Value(OpBuilder &, Location, Value column)>;
using RowStatisticsFn =
    function_ref<RowOutputFn(OpBuilder &, Location, const WarpRow &)>;

/// The loop over rows and lanes whose iteration computes its row's
/// statistics (`statistics`, which returns the function of one output
/// element) and writes the lane's elements of the result.
Value buildWarpRows(OpBuilder &b, Location loc, Value input, Value residual,
                    RowStatisticsFn statistics) {
  auto type = cast<RankedTensorType>(input.getType());
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, input);
  Value width = getValueOrCreateConstantIndexOp(b, loc, sizes.back());
  Value lanes = gpu::SubgroupSizeOp::create(b, loc, /*upper_bound=*/nullptr);
  Value output = tensor::EmptyOp::create(b, loc, sizes, type.getElementType());
  SmallVector<OpFoldResult> loopSizes(sizes.begin(), sizes.end() - 1);
  loopSizes.push_back(lanes);
  auto loop = scf::ForallOp::create(b, loc, loopSizes, ValueRange{output},
                                    std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(loop.getTerminator());
  SmallVector<Value> ivs = loop.getInductionVars();
  WarpRow row{input,
              residual,
              SmallVector<Value>(ivs.begin(), ivs.end() - 1),
              ivs.back(),
              lanes,
              width,
              arith::SIToFPOp::create(
                  b, loc, type.getElementType(),
                  arith::IndexCastOp::create(b, loc, b.getI64Type(), width)),
              type.getElementType()};
  RowOutputFn outputAt = statistics(b, loc, row);
  // The lane's elements lane, lane + L, ... as a strided slice of its row:
  // ceil((width - lane) / L) of them (lane < L, so the dividend is not
  // negative).
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value count = arith::DivUIOp::create(
      b, loc,
      arith::SubIOp::create(
          b, loc,
          arith::AddIOp::create(b, loc, width,
                                arith::SubIOp::create(b, loc, lanes, one)),
          row.lane),
      lanes);
  SmallVector<OpFoldResult> offsets(ivs.begin(), ivs.end());
  SmallVector<OpFoldResult> extents(rank - 1, b.getIndexAttr(1));
  extents.push_back(count);
  SmallVector<OpFoldResult> strides(rank - 1, b.getIndexAttr(1));
  strides.push_back(lanes);
  Value shared = loop.getRegionIterArgs()[0];
  Value slice = tensor::ExtractSliceOp::create(b, loc, shared, offsets, extents,
                                               strides);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  auto fill = scf::ForOp::create(
      b, loc, zero, count, one, ValueRange{slice},
      [&](OpBuilder &nb, Location l, Value k, ValueRange acc) {
        Value column = arith::AddIOp::create(
            nb, l, row.lane, arith::MulIOp::create(nb, l, k, lanes));
        SmallVector<Value> at(rank - 1, zero);
        at.push_back(k);
        Value inserted = tensor::InsertOp::create(
            nb, l, outputAt(nb, l, column), acc[0], at);
        scf::YieldOp::create(nb, l, inserted);
      });
  b.setInsertionPointToEnd(loop.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(b, loc, fill.getResult(0), shared,
                                        offsets, extents, strides);
  return loop.getResult(0);
}

/// Whether the warp form applies: a residual, if any, of the input's type.
bool warpRowsApply(Value input, Value residual) {
  return !residual || residual.getType() == input.getType();
}

struct LayerNormWarpRows : OpConversionPattern<LayerNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LayerNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value input = adaptor.getInput(), residual = adaptor.getResidual();
    if (!warpRowsApply(input, residual))
      return failure();
    Value weight = adaptor.getWeight(), bias = adaptor.getBias();
    double eps = op.getEps().convertToDouble();
    Value result = buildWarpRows(
        rewriter, op.getLoc(), input, residual,
        [&](OpBuilder &b, Location loc, const WarpRow &row) -> RowOutputFn {
          Value mean = row.mean(b, loc, [&](OpBuilder &nb, Location l, Value c) {
            return row.at(nb, l, c);
          });
          Value var = row.mean(b, loc, [&](OpBuilder &nb, Location l, Value c) {
            Value centred = arith::SubFOp::create(nb, l, row.at(nb, l, c), mean);
            return arith::MulFOp::create(nb, l, centred, centred).getResult();
          });
          Value inv = math::RsqrtOp::create(
              b, loc,
              arith::AddFOp::create(b, loc, var,
                                    floatConstant(b, loc, row.element, eps)));
          // As the linalg form computes it: (y - mean) inv w + b.
          return [=, &row](OpBuilder &nb, Location l, Value c) {
            Value centred = arith::SubFOp::create(nb, l, row.at(nb, l, c), mean);
            Value normalized = arith::MulFOp::create(nb, l, centred, inv);
            Value w = tensor::ExtractOp::create(nb, l, weight, c);
            Value shift = tensor::ExtractOp::create(nb, l, bias, c);
            return arith::AddFOp::create(
                       nb, l, arith::MulFOp::create(nb, l, normalized, w), shift)
                .getResult();
          };
        });
    rewriter.replaceOpWithNewOp<tensor::CastOp>(op, op.getType(), result);
    return success();
  }
};

struct RmsNormWarpRows : OpConversionPattern<RmsNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RmsNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value input = adaptor.getInput(), residual = adaptor.getResidual();
    if (!warpRowsApply(input, residual))
      return failure();
    Value weight = adaptor.getWeight();
    double eps = op.getEps().convertToDouble();
    Value result = buildWarpRows(
        rewriter, op.getLoc(), input, residual,
        [&](OpBuilder &b, Location loc, const WarpRow &row) -> RowOutputFn {
          Value meanSquare =
              row.mean(b, loc, [&](OpBuilder &nb, Location l, Value c) {
                Value y = row.at(nb, l, c);
                return arith::MulFOp::create(nb, l, y, y).getResult();
              });
          Value inv = math::RsqrtOp::create(
              b, loc,
              arith::AddFOp::create(b, loc, meanSquare,
                                    floatConstant(b, loc, row.element, eps)));
          // As the linalg form computes it: y inv w.
          return [=, &row](OpBuilder &nb, Location l, Value c) {
            Value normalized =
                arith::MulFOp::create(nb, l, row.at(nb, l, c), inv);
            Value w = tensor::ExtractOp::create(nb, l, weight, c);
            return arith::MulFOp::create(nb, l, normalized, w).getResult();
          };
        });
    rewriter.replaceOpWithNewOp<tensor::CastOp>(op, op.getType(), result);
    return success();
  }
};

} // namespace

void populateWarpNormPatterns(RewritePatternSet &patterns) {
  // Ahead of the linalg patterns of the same ops, which remain for the
  // shapes these refuse.
  patterns.add<LayerNormWarpRows, RmsNormWarpRows>(patterns.getContext(),
                                                   /*benefit=*/2);
}

} // namespace attn
