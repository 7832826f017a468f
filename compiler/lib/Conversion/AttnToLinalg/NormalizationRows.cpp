//===- NormalizationRows.cpp - Layer and RMS norms, one warp per row ------===//
//
// `attn.layer_norm` and `attn.rms_norm` (with their residual) as one
// parallel loop over the rows and the lanes of a warp: the lowering of the
// GPU target (`convert-attn-to-linalg{warp-norms}`). As linalg ops, a layer
// norm is two reductions and the element-wise ops between them, which the
// GPU target runs as five kernels (each sum's partial sums, their total,
// the normalised row); here it is one. Their adjoints take the same loop
// for the input's adjoint, which also keeps each row's statistics for the
// weight's and bias's sums over the rows (linalg reductions).
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

#include "attn/Codegen/WarpLanes.h"

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

  /// Element `column` of `tensor`'s row (a tensor of the input's shape).
  Value of(OpBuilder &b, Location loc, Value tensor, Value column) const {
    SmallVector<Value> indices(row);
    indices.push_back(column);
    return tensor::ExtractOp::create(b, loc, tensor, indices);
  }

  /// `dy[column] w[column]`: the output's adjoint times the weight (dy of
  /// the input's shape, w a row).
  Value scaledGrad(OpBuilder &b, Location loc, Value dy, Value w,
                   Value column) const {
    return arith::MulFOp::create(b, loc, of(b, loc, dy, column),
                                 tensor::ExtractOp::create(b, loc, w, column));
  }

  /// Element `column` of the row: input plus residual.
  Value at(OpBuilder &b, Location loc, Value column) const {
    Value value = of(b, loc, input, column);
    if (!residual)
      return value;
    return arith::AddFOp::create(b, loc, value, of(b, loc, residual, column));
  }

  /// The sums over the row of `terms(column)`, in one pass: this lane's
  /// elements in order, then the lanes' sums combined, the same values in
  /// every lane.
  SmallVector<Value>
  sums(OpBuilder &b, Location loc, unsigned count,
       function_ref<SmallVector<Value>(OpBuilder &, Location, Value)> terms)
      const {
    SmallVector<Value> zeros(count, floatConstant(b, loc, element, 0));
    auto loop = scf::ForOp::create(
        b, loc, lane, width, lanes, zeros,
        [&](OpBuilder &nb, Location l, Value column, ValueRange acc) {
          SmallVector<Value> next;
          for (auto [sum, term] : llvm::zip_equal(acc, terms(nb, l, column)))
            next.push_back(arith::AddFOp::create(nb, l, sum, term));
          scf::YieldOp::create(nb, l, next);
        });
    SmallVector<Value> totals;
    for (Value partial : loop.getResults())
      totals.push_back(sumOverLanes(b, loc, partial, lanes));
    return totals;
  }

  /// The row's mean of `term`.
  Value mean(OpBuilder &b, Location loc,
             function_ref<Value(OpBuilder &, Location, Value)> term) const {
    Value sum = sums(b, loc, 1, [&](OpBuilder &nb, Location l, Value c) {
      return SmallVector<Value>{term(nb, l, c)};
    })[0];
    return arith::DivFOp::create(b, loc, sum, widthFloat);
  }
};

/// One result of the loop: a tensor of the input's shape (an element per
/// column) or of one value per row (a statistic the adjoints keep for the
/// weights' sums), from its column, given the row's statistics.
struct RowOutput {
  bool perRow;
  std::function<Value(OpBuilder &, Location, Value column)> value;
};
using RowStatisticsFn = function_ref<SmallVector<RowOutput>(
    OpBuilder &, Location, const WarpRow &)>;

/// Writes `output` of iteration (row..., lane) into `shared` ([rows...,
/// n]): the lane's elements lane, lane + L, ... as a strided slice of its
/// row, ceil((n - lane) / L) of them (lane < L, so the dividend is not
/// negative; a statistic, n = 1, is lane 0's, the other lanes' slices
/// empty).
void writeLaneSlice(OpBuilder &b, Location loc, const WarpRow &row,
                    scf::ForallOp loop, Value shared, Value n,
                    const RowOutput &output) {
  int64_t rank = row.row.size() + 1;
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value count = arith::DivUIOp::create(
      b, loc,
      arith::SubIOp::create(
          b, loc,
          arith::AddIOp::create(b, loc, n,
                                arith::SubIOp::create(b, loc, row.lanes, one)),
          row.lane),
      row.lanes);
  SmallVector<OpFoldResult> offsets(row.row.begin(), row.row.end());
  offsets.push_back(row.lane);
  SmallVector<OpFoldResult> extents(rank - 1, b.getIndexAttr(1));
  extents.push_back(count);
  SmallVector<OpFoldResult> strides(rank - 1, b.getIndexAttr(1));
  strides.push_back(row.lanes);
  Value slice = tensor::ExtractSliceOp::create(b, loc, shared, offsets, extents,
                                               strides);
  auto fill = scf::ForOp::create(
      b, loc, zero, count, one, ValueRange{slice},
      [&](OpBuilder &nb, Location l, Value k, ValueRange acc) {
        Value column = arith::AddIOp::create(
            nb, l, row.lane, arith::MulIOp::create(nb, l, k, row.lanes));
        SmallVector<Value> at(rank - 1, zero);
        at.push_back(k);
        Value inserted = tensor::InsertOp::create(
            nb, l, output.value(nb, l, column), acc[0], at);
        scf::YieldOp::create(nb, l, inserted);
      });
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(loop.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(b, loc, fill.getResult(0), shared,
                                        offsets, extents, strides);
}

/// The loop over rows and lanes whose iteration computes its row's
/// statistics (`statistics`, which returns the functions of the outputs'
/// elements) and writes the lane's elements of each output. The results:
/// a tensor of the input's shape for an output per column, of its shape
/// without the last dim for an output per row.
SmallVector<Value> buildWarpRows(OpBuilder &b, Location loc, Value input,
                                 Value residual, ArrayRef<bool> perRow,
                                 RowStatisticsFn statistics) {
  auto type = cast<RankedTensorType>(input.getType());
  Type element = type.getElementType();
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, input);
  Value width = getValueOrCreateConstantIndexOp(b, loc, sizes.back());
  Value lanes = gpu::SubgroupSizeOp::create(b, loc, /*upper_bound=*/nullptr);
  SmallVector<OpFoldResult> statisticSizes(sizes);
  statisticSizes.back() = b.getIndexAttr(1);
  SmallVector<Value> outputs;
  for (bool statistic : perRow)
    outputs.push_back(tensor::EmptyOp::create(
        b, loc, statistic ? statisticSizes : sizes, element));
  SmallVector<OpFoldResult> loopSizes(sizes.begin(), sizes.end() - 1);
  loopSizes.push_back(lanes);
  auto loop = scf::ForallOp::create(b, loc, loopSizes, outputs, std::nullopt);
  {
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
                    b, loc, element,
                    arith::IndexCastOp::create(b, loc, b.getI64Type(), width)),
                element};
    SmallVector<RowOutput> results = statistics(b, loc, row);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    for (auto [result, shared] :
         llvm::zip_equal(results, loop.getRegionIterArgs()))
      writeLaneSlice(b, loc, row, loop, shared, result.perRow ? one : width,
                     result);
  }
  // Statistics [rows..., 1] as [rows...].
  SmallVector<Value> values;
  int64_t rank = type.getRank();
  SmallVector<ReassociationIndices> lastTwo;
  for (int64_t d = 0; d + 2 < rank; ++d)
    lastTwo.push_back({d});
  lastTwo.push_back({rank - 2, rank - 1});
  for (auto [statistic, value] : llvm::zip_equal(perRow, loop.getResults()))
    values.push_back(statistic ? Value(tensor::CollapseShapeOp::create(
                                     b, loc, value, lastTwo))
                               : Value(value));
  return values;
}

/// Whether the warp form applies: a residual, if any, of the input's type,
/// and rows (an adjoint's statistics are one rank fewer, at least 1).
bool warpRowsApply(Value input, Value residual, int64_t minRank = 1) {
  return cast<RankedTensorType>(input.getType()).getRank() >= minRank &&
         (!residual || residual.getType() == input.getType());
}

/// 1 / sqrt(`value` + eps).
Value inverseRoot(OpBuilder &b, Location loc, const WarpRow &row, Value value,
                  double eps) {
  return math::RsqrtOp::create(
      b, loc,
      arith::AddFOp::create(b, loc, value,
                            floatConstant(b, loc, row.element, eps)));
}

/// A layer norm's statistics of a row.
struct LayerNormRow {
  Value mean, rstd; // rstd: 1 / sqrt(var + eps)
};

LayerNormRow layerNormStatistics(OpBuilder &b, Location loc,
                                 const WarpRow &row, double eps) {
  Value mean = row.mean(b, loc, [&](OpBuilder &nb, Location l, Value c) {
    return row.at(nb, l, c);
  });
  Value var = row.mean(b, loc, [&](OpBuilder &nb, Location l, Value c) {
    Value centred = arith::SubFOp::create(nb, l, row.at(nb, l, c), mean);
    return arith::MulFOp::create(nb, l, centred, centred).getResult();
  });
  return {mean, inverseRoot(b, loc, row, var, eps)};
}

/// An RMS norm's 1 / sqrt(mean(y^2) + eps) of the row.
Value rmsNormStatistic(OpBuilder &b, Location loc, const WarpRow &row,
                       double eps) {
  Value meanSquare = row.mean(b, loc, [&](OpBuilder &nb, Location l, Value c) {
    Value y = row.at(nb, l, c);
    return arith::MulFOp::create(nb, l, y, y).getResult();
  });
  return inverseRoot(b, loc, row, meanSquare, eps);
}

/// A norm: the loop with one output, an element per column, which
/// `normalized` gives from the row (its statistics computed first).
template <typename NormOp>
struct NormWarpRows : OpConversionPattern<NormOp> {
  using OpConversionPattern<NormOp>::OpConversionPattern;
  using OpAdaptor = typename NormOp::Adaptor;

  virtual RowOutput normalized(OpBuilder &b, Location loc, const WarpRow &row,
                               OpAdaptor adaptor, double eps) const = 0;

  LogicalResult
  matchAndRewrite(NormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value input = adaptor.getInput(), residual = adaptor.getResidual();
    if (!warpRowsApply(input, residual))
      return failure();
    double eps = op.getEps().convertToDouble();
    Value result = buildWarpRows(
        rewriter, op.getLoc(), input, residual, {false},
        [&](OpBuilder &b, Location loc, const WarpRow &row) {
          return SmallVector<RowOutput>{normalized(b, loc, row, adaptor, eps)};
        })[0];
    rewriter.replaceOpWithNewOp<tensor::CastOp>(op, op.getType(), result);
    return success();
  }
};

struct LayerNormWarpRows : NormWarpRows<LayerNormOp> {
  using NormWarpRows::NormWarpRows;

  /// As the linalg form computes it: (y - mean) rstd w + b.
  RowOutput normalized(OpBuilder &b, Location loc, const WarpRow &row,
                       OpAdaptor adaptor, double eps) const override {
    LayerNormRow statistics = layerNormStatistics(b, loc, row, eps);
    Value mean = statistics.mean, rstd = statistics.rstd;
    Value weight = adaptor.getWeight(), bias = adaptor.getBias();
    return {false, [=, &row](OpBuilder &nb, Location l, Value c) {
              Value centred =
                  arith::SubFOp::create(nb, l, row.at(nb, l, c), mean);
              Value scaled = arith::MulFOp::create(nb, l, centred, rstd);
              Value w = tensor::ExtractOp::create(nb, l, weight, c);
              Value shift = tensor::ExtractOp::create(nb, l, bias, c);
              return arith::AddFOp::create(
                         nb, l, arith::MulFOp::create(nb, l, scaled, w), shift)
                  .getResult();
            }};
  }
};

struct RmsNormWarpRows : NormWarpRows<RmsNormOp> {
  using NormWarpRows::NormWarpRows;

  /// As the linalg form computes it: y rstd w.
  RowOutput normalized(OpBuilder &b, Location loc, const WarpRow &row,
                       OpAdaptor adaptor, double eps) const override {
    Value rstd = rmsNormStatistic(b, loc, row, eps);
    Value weight = adaptor.getWeight();
    return {false, [=, &row](OpBuilder &nb, Location l, Value c) {
              Value scaled = arith::MulFOp::create(nb, l, row.at(nb, l, c), rstd);
              Value w = tensor::ExtractOp::create(nb, l, weight, c);
              return arith::MulFOp::create(nb, l, scaled, w).getResult();
            }};
  }
};

/// A norm's adjoint: the loop whose outputs are the input's adjoint (an
/// element per column) and the row's statistics (`rowOutputs`, per row),
/// which the weight's and bias's sums over the rows read (linalg
/// reductions, as the linalg form has them: `replacements`).
template <typename GradOp>
struct NormGradWarpRows : OpConversionPattern<GradOp> {
  using OpConversionPattern<GradOp>::OpConversionPattern;
  using OpAdaptor = typename GradOp::Adaptor;

  /// Per output, whether it is one value per row.
  virtual SmallVector<bool> perRow() const = 0;
  virtual SmallVector<RowOutput> rowOutputs(OpBuilder &b, Location loc,
                                            const WarpRow &row,
                                            OpAdaptor adaptor,
                                            double eps) const = 0;
  virtual SmallVector<Value> replacements(OpBuilder &b, GradOp op,
                                          OpAdaptor adaptor,
                                          ArrayRef<Value> results) const = 0;

  LogicalResult
  matchAndRewrite(GradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!warpRowsApply(adaptor.getInput(), nullptr, /*minRank=*/2))
      return failure();
    double eps = op.getEps().convertToDouble();
    SmallVector<Value> results = buildWarpRows(
        rewriter, op.getLoc(), adaptor.getInput(), nullptr, perRow(),
        [&](OpBuilder &b, Location loc, const WarpRow &row) {
          return rowOutputs(b, loc, row, adaptor, eps);
        });
    rewriter.replaceOp(op, replacements(rewriter, op, adaptor, results));
    return success();
  }
};

/// An output that is `value` in every column (a row's statistic).
RowOutput perRowValue(Value value) {
  return {true, [value](OpBuilder &, Location, Value) { return value; }};
}

/// dx = rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)), xhat = (x -
/// mean) rstd, dxhat = dy w; and the row's mean and rstd.
struct LayerNormGradWarpRows : NormGradWarpRows<LayerNormGradOp> {
  using NormGradWarpRows::NormGradWarpRows;

  SmallVector<bool> perRow() const override { return {false, true, true}; }

  SmallVector<RowOutput> rowOutputs(OpBuilder &b, Location l,
                                    const WarpRow &row, OpAdaptor adaptor,
                                    double eps) const override {
    Value w = adaptor.getWeight(), dy = adaptor.getGradOutput();
    LayerNormRow statistics = layerNormStatistics(b, l, row, eps);
    Value mean = statistics.mean, rstd = statistics.rstd;
    auto xhatAt = [=, &row](OpBuilder &nb, Location nl, Value c) {
      return arith::MulFOp::create(
                 nb, nl, arith::SubFOp::create(nb, nl, row.at(nb, nl, c), mean),
                 rstd)
          .getResult();
    };
    SmallVector<Value> sums =
        row.sums(b, l, 2, [&](OpBuilder &nb, Location nl, Value c) {
          Value dxhat = row.scaledGrad(nb, nl, dy, w, c);
          return SmallVector<Value>{
              dxhat, arith::MulFOp::create(nb, nl, dxhat, xhatAt(nb, nl, c))};
        });
    Value meanDxhat = arith::DivFOp::create(b, l, sums[0], row.widthFloat);
    Value meanDxhatXhat = arith::DivFOp::create(b, l, sums[1], row.widthFloat);
    RowOutput dx = {false, [=, &row](OpBuilder &nb, Location nl, Value c) {
                      Value inner = arith::SubFOp::create(
                          nb, nl,
                          arith::SubFOp::create(
                              nb, nl, row.scaledGrad(nb, nl, dy, w, c),
                              meanDxhat),
                          arith::MulFOp::create(nb, nl, xhatAt(nb, nl, c),
                                                meanDxhatXhat));
                      return arith::MulFOp::create(nb, nl, rstd, inner)
                          .getResult();
                    }};
    return {dx, perRowValue(mean), perRowValue(rstd)};
  }

  SmallVector<Value> replacements(OpBuilder &b, LayerNormGradOp op,
                                  OpAdaptor adaptor,
                                  ArrayRef<Value> results) const override {
    return layerNormGradResults(b, op.getLoc(), op, results[0],
                                adaptor.getInput(), adaptor.getGradOutput(),
                                results[1], results[2]);
  }
};

/// The same for RMS norm: dx = r dy w - r^3 x mean(dy w x); and the row's r.
struct RmsNormGradWarpRows : NormGradWarpRows<RmsNormGradOp> {
  using NormGradWarpRows::NormGradWarpRows;

  SmallVector<bool> perRow() const override { return {false, true}; }

  SmallVector<RowOutput> rowOutputs(OpBuilder &b, Location l,
                                    const WarpRow &row, OpAdaptor adaptor,
                                    double eps) const override {
    Value w = adaptor.getWeight(), dy = adaptor.getGradOutput();
    Value r = rmsNormStatistic(b, l, row, eps);
    Value meanGx = row.mean(b, l, [&](OpBuilder &nb, Location nl, Value c) {
      return arith::MulFOp::create(nb, nl, row.scaledGrad(nb, nl, dy, w, c),
                                   row.at(nb, nl, c))
          .getResult();
    });
    Value r3 = arith::MulFOp::create(b, l, arith::MulFOp::create(b, l, r, r), r);
    RowOutput dx = {false, [=, &row](OpBuilder &nb, Location nl, Value c) {
                      Value first = arith::MulFOp::create(
                          nb, nl, r, row.scaledGrad(nb, nl, dy, w, c));
                      Value second = arith::MulFOp::create(
                          nb, nl, r3,
                          arith::MulFOp::create(nb, nl, row.at(nb, nl, c),
                                                meanGx));
                      return arith::SubFOp::create(nb, nl, first, second)
                          .getResult();
                    }};
    return {dx, perRowValue(r)};
  }

  SmallVector<Value> replacements(OpBuilder &b, RmsNormGradOp op,
                                  OpAdaptor adaptor,
                                  ArrayRef<Value> results) const override {
    return rmsNormGradResults(b, op.getLoc(), op, results[0],
                              adaptor.getInput(), adaptor.getGradOutput(),
                              results[1]);
  }
};

} // namespace

void populateWarpNormPatterns(RewritePatternSet &patterns) {
  // Ahead of the linalg patterns of the same ops, which remain for the
  // shapes these refuse.
  patterns.add<LayerNormWarpRows, RmsNormWarpRows, LayerNormGradWarpRows,
               RmsNormGradWarpRows>(patterns.getContext(), /*benefit=*/2);
}

} // namespace attn
