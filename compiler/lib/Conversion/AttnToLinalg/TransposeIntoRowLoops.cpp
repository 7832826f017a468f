//===- TransposeIntoRowLoops.cpp - Row loops that write transposed --------===//
//
// Attention's row loops write its output [B, H, T, Dv] one slice per
// iteration into an empty tensor, and `merge_heads` transposes that into
// rows [B, T, H, Dv] for the output projection: on the GPU target a kernel
// that only copies. When the transpose is the output's only reader, the
// loop writes the transposed tensor itself, each slice at its transposed
// place.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilders.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace attn {
namespace {

/// `values` in the order of `permutation`: result k is values[perm[k]].
SmallVector<OpFoldResult> permuted(ArrayRef<OpFoldResult> values,
                                   ArrayRef<int64_t> permutation) {
  SmallVector<OpFoldResult> result;
  for (int64_t p : permutation)
    result.push_back(values[p]);
  return result;
}

/// Whether the slice's sizes read the same in the permuted order (only
/// dims of equal size move: unit dims around a row), so that the slice
/// keeps its type at its transposed place.
bool keepsShape(OffsetSizeAndStrideOpInterface slice,
                ArrayRef<int64_t> permutation) {
  SmallVector<OpFoldResult> sizes = slice.getMixedSizes();
  return llvm::all_of(llvm::seq<size_t>(0, sizes.size()), [&](size_t k) {
    return isEqualConstantIntOrValue(sizes[k], sizes[permutation[k]]);
  });
}

struct TransposeIntoRowLoop : OpRewritePattern<linalg::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::TransposeOp transpose,
                                PatternRewriter &rewriter) const override {
    // The loop's result, through casts; besides the next cast, only
    // tensor.dim reads them (the transpose's sizes).
    Value input = transpose.getInput();
    SmallVector<Value> chain = {input};
    while (auto cast = input.getDefiningOp<tensor::CastOp>()) {
      input = cast.getSource();
      chain.push_back(input);
    }
    auto loop = input.getDefiningOp<scf::ForallOp>();
    if (!loop)
      return failure();
    unsigned index = cast<OpResult>(input).getResultNumber();
    auto empty = loop.getOutputs()[index].getDefiningOp<tensor::EmptyOp>();
    if (!empty)
      return failure();
    SmallVector<tensor::DimOp> dims;
    for (auto [k, value] : llvm::enumerate(chain))
      for (Operation *user : value.getUsers()) {
        Operation *next =
            k == 0 ? transpose.getOperation() : chain[k - 1].getDefiningOp();
        auto dim = dyn_cast<tensor::DimOp>(user);
        if (dim && dim.getConstantIndex())
          dims.push_back(dim);
        else if (user != next)
          return failure();
      }
    ArrayRef<int64_t> permutation = transpose.getPermutation();
    BlockArgument shared = loop.getRegionIterArgs()[index];
    SmallVector<OffsetSizeAndStrideOpInterface> slices;
    for (OpOperand &use : shared.getUses()) {
      auto extract = dyn_cast<tensor::ExtractSliceOp>(use.getOwner());
      auto insert = dyn_cast<tensor::ParallelInsertSliceOp>(use.getOwner());
      bool sliced = (extract && extract.getSource() == shared) ||
                    (insert && insert.getDest() == shared);
      auto slice = cast<OffsetSizeAndStrideOpInterface>(use.getOwner());
      if (!sliced || !keepsShape(slice, permutation))
        return failure();
      slices.push_back(slice);
    }

    // The sizes read are the empty tensor's.
    rewriter.setInsertionPoint(loop);
    SmallVector<OpFoldResult> sizes = empty.getMixedSizes();
    for (tensor::DimOp dim : dims)
      rewriter.replaceOp(dim, getValueOrCreateConstantIndexOp(
                                  rewriter, dim.getLoc(),
                                  sizes[*dim.getConstantIndex()]));

    // The same loop over a transposed empty tensor.
    Value transposedEmpty = tensor::EmptyOp::create(
        rewriter, empty.getLoc(), permuted(sizes, permutation),
        empty.getType().getElementType());
    SmallVector<Value> outputs(loop.getOutputs());
    outputs[index] = transposedEmpty;
    auto transposedLoop = scf::ForallOp::create(
        rewriter, loop.getLoc(), loop.getMixedLowerBound(),
        loop.getMixedUpperBound(), loop.getMixedStep(), outputs,
        loop.getMapping());
    transposedLoop.getRegion().takeBody(loop.getRegion());
    shared.setType(transposedEmpty.getType());
    for (OffsetSizeAndStrideOpInterface slice : slices)
      moveSlice(rewriter, slice, shared, permutation);

    // Its result is the transpose's.
    rewriter.setInsertionPointAfter(transposedLoop);
    Value result = transposedLoop.getResult(index);
    if (result.getType() != transpose.getResult()[0].getType())
      result = tensor::CastOp::create(rewriter, transpose.getLoc(),
                                      transpose.getResult()[0].getType(),
                                      result);
    rewriter.replaceOp(transpose, result);
    for (Value value : ArrayRef<Value>(chain).drop_back())
      rewriter.eraseOp(value.getDefiningOp());
    for (auto [old, replacement] :
         llvm::zip_equal(loop.getResults(), transposedLoop.getResults()))
      if (old != input)
        rewriter.replaceAllUsesWith(old, replacement);
    rewriter.eraseOp(loop);
    return success();
  }

  /// `slice` of `shared` at its transposed place.
  static void moveSlice(PatternRewriter &rewriter,
                        OffsetSizeAndStrideOpInterface slice, Value shared,
                        ArrayRef<int64_t> permutation) {
    SmallVector<OpFoldResult> offsets =
        permuted(slice.getMixedOffsets(), permutation);
    SmallVector<OpFoldResult> sizes = permuted(slice.getMixedSizes(), permutation);
    SmallVector<OpFoldResult> strides =
        permuted(slice.getMixedStrides(), permutation);
    rewriter.setInsertionPoint(slice);
    if (auto extract = dyn_cast<tensor::ExtractSliceOp>(*slice)) {
      rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
          extract, extract.getType(), shared, offsets, sizes, strides);
      return;
    }
    auto insert = cast<tensor::ParallelInsertSliceOp>(*slice);
    tensor::ParallelInsertSliceOp::create(rewriter, insert.getLoc(),
                                          insert.getSource(), shared, offsets,
                                          sizes, strides);
    rewriter.eraseOp(insert);
  }
};

} // namespace

LogicalResult foldTransposesIntoRowLoops(Operation *root) {
  RewritePatternSet patterns(root->getContext());
  patterns.add<TransposeIntoRowLoop>(root->getContext());

  return applyPatternsGreedily(root, std::move(patterns));
}

} // namespace attn
