//===- LinalgBuilders.h - Building blocks of the attn lowering --*- C++ -*-===//
//
// The few shapes of code every lowering pattern builds: an empty or filled
// tensor of a result's (possibly dynamic) shape, an element-wise
// `linalg.generic` over broadcast operands, and a reduction over one axis.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_CONVERSION_ATTNTOLINALG_LINALGBUILDERS_H
#define ATTN_CONVERSION_ATTNTOLINALG_LINALGBUILDERS_H

#include "attn/Conversion/Passes.h"

#include "mlir/IR/Builders.h"

#include <functional>

namespace attn {

/// Computes one output element from the operands' elements.
using ScalarFn = std::function<mlir::Value(mlir::OpBuilder &, mlir::Location,
                                           mlir::ValueRange)>;

/// The sizes of `resultType`: static sizes as attributes, dynamic ones read
/// with `tensor.dim` from an operand whose aligned (last-dim-aligned) size is
/// not a static 1, as NumPy broadcasting implies.
llvm::SmallVector<mlir::OpFoldResult>
broadcastResultSizes(mlir::OpBuilder &b, mlir::Location loc,
                     mlir::RankedTensorType resultType,
                     mlir::ValueRange operands);

/// The indexing map that reads `operand` inside a loop nest over
/// `resultRank` dims, aligning the last dims and pinning broadcast (static
/// size-1) dims to 0.
mlir::AffineMap broadcastMap(mlir::MLIRContext *context,
                             mlir::RankedTensorType operand,
                             mlir::RankedTensorType result);

/// `tensor.empty` of `type` with `sizes`.
mlir::Value emptyTensor(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::RankedTensorType type,
                        llvm::ArrayRef<mlir::OpFoldResult> sizes);

/// A tensor of `type` and `sizes` filled with `value`.
mlir::Value filledTensor(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::RankedTensorType type,
                         llvm::ArrayRef<mlir::OpFoldResult> sizes,
                         mlir::TypedAttr value);

/// An element-wise `linalg.generic` producing `resultType` from `operands`
/// broadcast by NumPy's rules.
mlir::Value buildElementwise(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::RankedTensorType resultType,
                             mlir::ValueRange operands, ScalarFn fn);

/// One weight element in f32 from its low-precision copy (Dequantize.cpp):
/// a bf16 `value` widened, or an i8 `value` times its block's `scale`.
mlir::Value dequantizeElement(mlir::OpBuilder &b, mlir::Location loc,
                              mlir::Value value, mlir::Value scale);

/// `a` [M, K] times the transpose of the weight W [N, K] that `values` and
/// `scales` (null for bf16) hold in low precision (attn.dequantize), into
/// zeros: one linalg.generic converting W's elements where it reads them.
mlir::Value lowPrecisionMatmul2D(mlir::OpBuilder &b, mlir::Location loc,
                                 mlir::Value a, mlir::Value values,
                                 mlir::Value scales);

/// Combines `value` into the accumulator of a reduction.
using CombineFn = std::function<mlir::Value(
    mlir::OpBuilder &, mlir::Location, mlir::Value element, mlir::Value acc)>;

/// Reduces `input` over `axis` (the dim is dropped) starting from `init`.
mlir::Value buildReduction(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Value input, int64_t axis,
                           mlir::TypedAttr init, CombineFn combine);

/// The size of dim `axis` of `value`, as an index.
mlir::Value dimOf(mlir::OpBuilder &b, mlir::Location loc, mlir::Value value,
                  int64_t axis);

/// A float constant of `type`.
mlir::Value floatConstant(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Type type, double value);

/// The scale of attention scores: `given` when the op states one, else
/// 1/sqrt(head dim).
mlir::Value attentionScale(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Type element, std::optional<llvm::APFloat> given,
                           mlir::Value headDim);

/// The query heads that share one key/value head (grouped-query attention)
/// of attention over `query` [B, H, T, D] and `key` [B, H_kv, S, D]: H /
/// H_kv, 1 unless both head counts are static (the dialect takes a dynamic
/// head count to be the other operand's).
int64_t attentionGroupSize(mlir::Value query, mlir::Value key);

/// The key/value head query head `head` reads, `head floordiv group`:
/// `head` itself when `group` is 1.
mlir::Value kvHeadOf(mlir::OpBuilder &b, mlir::Location loc, mlir::Value head,
                     int64_t group);

/// `x` [B, H, ...] viewed as [B, H / group, group, ...]: the query heads of
/// grouped-query attention by key/value head.
mlir::Value groupHeads(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                       int64_t group);

/// An element-wise generic over `full`'s shape reading `full`, then each of
/// `reduced` (statistics reduced over `axis`), then each of `perFeature`
/// (vectors indexed by the last dim).
mlir::Value buildWithStatistics(mlir::OpBuilder &b, mlir::Location loc,
                                mlir::Value full, mlir::ValueRange reduced,
                                int64_t axis, mlir::ValueRange perFeature,
                                ScalarFn fn);

/// The body of one tile of a loop made by buildTileLoop: the tile's first
/// index and its width; it yields the next iteration values.
using TileBodyFn = llvm::function_ref<void(
    mlir::OpBuilder &, mlir::Location, mlir::Value start, mlir::Value width,
    mlir::ValueRange state)>;

/// `for (s = 0; s < end; s += tile)` carrying `inits`, as two loops: the
/// full tiles, whose width `body` gets as the constant `tile` (static
/// shapes, so the tile's element-wise ops and row reductions vectorise
/// without masks), then the last, partial tile if there is one (width
/// `end - s`). Returns the final values.
mlir::ValueRange buildTileLoop(mlir::OpBuilder &b, mlir::Location loc,
                               mlir::Value end, mlir::Value tile,
                               mlir::ValueRange inits, TileBodyFn body);

/// The maximum and the sum of `x` over `axis`.
mlir::Value reduceMax(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                      int64_t axis);
mlir::Value reduceSum(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                      int64_t axis);

/// exp(x - max), with `max` reduced over `axis`.
mlir::Value shiftedExp(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                       mlir::Value max, int64_t axis);

/// The derivative f'(x) of an activation at a scalar.
mlir::Value applyActivationDerivative(mlir::OpBuilder &b, mlir::Location loc,
                                      Activation activation, mlir::Value x);

/// Dropout's counter-based random stream (runtime/include/attn/abi.h,
/// attn_dropout_bits): the loop-invariant part `seed +
/// ATTN_DROPOUT_STREAM_STEP * (stream + 1)` of the hashed counter, from the
/// i64 `seed`.
mlir::Value dropoutStreamBase(mlir::OpBuilder &b, mlir::Location loc,
                              mlir::Value seed, int64_t stream);

/// The i64 seed a dropout op with the `seed` tensor draws from: the seed
/// itself, or, in a function with a dropout row argument r
/// (entry::kDropoutRowAttr, ATTN_ARG_DROPOUT_ROW), the seed plus
/// `0xD1B5...03 * r * rowElements`, which numbers every element as in a
/// batch with r rows before the call's (the stream is linear in the index).
/// `rowElements` (index) is the elements of one batch row of the dropped
/// tensor: T * d of [B, T, d], H * T * S of attention's [B, H, T, S].
mlir::Value dropoutSeed(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::Operation *op, mlir::Value seed,
                        mlir::Value rowElements);

/// Whether dropout at `rate` keeps the element numbered `index` (an i64, the
/// row-major index) of the stream whose base `dropoutStreamBase` gave:
/// `splitmix64(base + 0xD1B5...03 * index) >> 40 >= (uint64)(rate * 2^24)`,
/// in wrapping i64 arithmetic (an i1).
mlir::Value dropoutKeep(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::Value base, mlir::Value index, double rate);

/// The row-major index, as an i64, of the current iteration of a
/// `linalg.generic` body over a loop nest of `sizes` (index values).
mlir::Value linearIndexInBody(mlir::OpBuilder &b, mlir::Location loc,
                              llvm::ArrayRef<mlir::Value> sizes);

/// Attention's flash loop nests (Attention.cpp), shared with the backward.
/// `out[i, j] = sum_k lhs[lhsMap] * rhs[rhsMap]` over loops (i, j, k) into a
/// fresh zero tensor of `type` and `sizes`.
mlir::Value contract(mlir::OpBuilder &b, mlir::Location loc, mlir::Value lhs,
                     mlir::Value rhs, mlir::AffineMap lhsMap,
                     mlir::AffineMap rhsMap, mlir::RankedTensorType type,
                     llvm::ArrayRef<mlir::OpFoldResult> sizes);

/// Each row's logsumexp from an online softmax's running maximum `max` and
/// sum of exp(x - max) `sumExp` (both [rows]): max + log(sumExp), 0 for a
/// row that saw no key (sum 0).
mlir::Value rowLogsumexp(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::Value max, mlir::Value sumExp);

/// The [rows, C] slice at (batch, head, row0, 0) of a [B, H, R, C] tensor.
mlir::Value tileOf(mlir::OpBuilder &b, mlir::Location loc, mlir::Value tensor,
                   mlir::Value batch, mlir::Value head, mlir::Value row0,
                   mlir::Value rows);

/// Attention dropout of a [rows, cols] block of weights at query t0 and key
/// s0 of (batch, head): the stream indexed over [B, H, T, S].
mlir::Value applyAttentionDropout(mlir::OpBuilder &b, mlir::Location loc,
                                  mlir::Value weights, mlir::Value base,
                                  double rate, mlir::Value batch,
                                  mlir::Value head, mlir::Value heads,
                                  mlir::Value queries, mlir::Value keys,
                                  mlir::Value t0, mlir::Value s0);

/// Each of `values` cast to the matching result type of `op` (the
/// attention lowerings build dynamic shapes for static results).
llvm::SmallVector<mlir::Value> castToResults(mlir::OpBuilder &b,
                                             mlir::Location loc,
                                             mlir::Operation *op,
                                             mlir::ValueRange values);

/// The query and key tile sizes of the flash-attention loop nests
/// (`convert-attn-to-linalg`'s `query-tile` and `key-tile`).
struct AttentionTiles {
  int64_t query;
  int64_t key;
};

/// The results of `attn.layer_norm_grad` from its input adjoint `dx` and
/// each row's mean and 1/sqrt(var + eps) (one rank fewer than `x`): dx cast
/// to its type, and the weight's and bias's adjoints summed over the rows.
llvm::SmallVector<mlir::Value>
layerNormGradResults(mlir::OpBuilder &b, mlir::Location loc,
                     LayerNormGradOp op, mlir::Value dx, mlir::Value x,
                     mlir::Value dy, mlir::Value mean, mlir::Value rstd);

/// The same for `attn.rms_norm_grad`, from each row's 1/sqrt(ms + eps).
llvm::SmallVector<mlir::Value>
rmsNormGradResults(mlir::OpBuilder &b, mlir::Location loc, RmsNormGradOp op,
                   mlir::Value dx, mlir::Value x, mlir::Value dy,
                   mlir::Value rstd);

/// Patterns of each op family.
void populateElementwisePatterns(mlir::RewritePatternSet &patterns);
void populateShapePatterns(mlir::RewritePatternSet &patterns);
void populateRotaryPatterns(mlir::RewritePatternSet &patterns);
void populateContractionPatterns(mlir::RewritePatternSet &patterns);
void populateDequantizePatterns(mlir::RewritePatternSet &patterns);
void populateNormalizationPatterns(mlir::RewritePatternSet &patterns);
void populateAttentionPatterns(mlir::RewritePatternSet &patterns,
                               AttentionTiles tiles);
void populateLossPatterns(mlir::RewritePatternSet &patterns);
void populateDropoutPatterns(mlir::RewritePatternSet &patterns);
void populateGradientPatterns(mlir::RewritePatternSet &patterns);
void populateOptimizerPatterns(mlir::RewritePatternSet &patterns);
void populateAttentionBackwardPatterns(mlir::RewritePatternSet &patterns,
                                       AttentionTiles tiles);
void populateMaterializedAttentionPatterns(mlir::RewritePatternSet &patterns);
void populateRowAttentionPatterns(mlir::RewritePatternSet &patterns);
void populateWarpNormPatterns(mlir::RewritePatternSet &patterns);

/// After the row lowerings: a transpose that is the only reader of a row
/// loop's result (attention's output read into rows) written by the loop
/// itself at transposed places (TransposeIntoRowLoops.cpp).
mlir::LogicalResult foldTransposesIntoRowLoops(mlir::Operation *root);

} // namespace attn

#endif // ATTN_CONVERSION_ATTNTOLINALG_LINALGBUILDERS_H
