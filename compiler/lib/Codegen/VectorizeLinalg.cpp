//===- VectorizeLinalg.cpp - Tile and vectorise the other linalg ops ------===//
//
// `attn-vectorize-linalg`: the element-wise ops, reductions, fills and
// transposes the attn lowering produces, on buffers after bufferisation.
// Each op is tiled with scf::tileUsingSCF to 1 along every loop but the
// innermost, which gets one vector's worth (the cost model's registers for
// an element-wise op or a reduction along it), and the
// tile is vectorised with linalg::vectorize, masked where
// its innermost size is dynamic (the edge tile of a dimension that is not a
// multiple, or a dynamic dim such as an attention tile's key count). An op
// whose innermost loop is a reduction gets a vector.multi_reduction per
// tile. Ops the vectoriser rejects (a gather reading a table inside its
// body, for one) stay as tiled linalg ops for convert-linalg-to-loops.
// memref.copy ops into or out of strided slices become linalg.copy first
// (they would otherwise call the runtime's element-by-element memrefCopy).
//
//===----------------------------------------------------------------------===//

#include "attn/Codegen/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNVECTORIZELINALG
#include "attn/Codegen/Passes.h.inc"

namespace {

struct VectorizeLinalgPass
    : impl::AttnVectorizeLinalgBase<VectorizeLinalgPass> {
  using Base::Base;



  void runOnOperation() override {
    // memref.copy between buffers that are not both plain row-major (a tile
    // written into a slice, as attention's output) would call the generic
    // element-by-element memrefCopy: make it a linalg.copy, vectorised below.
    // Identity-layout copies stay memcpy.
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) {
      auto src = cast<MemRefType>(copy.getSource().getType());
      auto dst = cast<MemRefType>(copy.getTarget().getType());
      if (src.getRank() > 0 && src.getElementType().isIntOrFloat() &&
          (!src.getLayout().isIdentity() || !dst.getLayout().isIdentity()))
        copies.push_back(copy);
    });
    for (memref::CopyOp copy : copies) {
      OpBuilder b(copy);
      linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(),
                             copy.getTarget());
      copy->erase();
    }
    SmallVector<linalg::LinalgOp> ops;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (op.hasPureBufferSemantics() && op.getNumLoops() > 0)
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    CpuCostModel model =
        CpuCostModel::forTarget(VectorTarget{lanes, registers});
    for (linalg::LinalgOp op : ops)
      vectorizeOne(rewriter, op, model);
  }

  /// The vector size of the innermost loop, or the static size when it is
  /// smaller: the cost model's registers of f32 for an element-wise op
  /// (innermost loop parallel) or a reduction along the innermost loop (one
  /// horizontal reduction per tile); a static reduction of up to its
  /// whole-row registers (a layer norm's row) is one vector, so that each
  /// row has one horizontal reduction. Element-wise tiles stay narrow
  /// because the attention backward's masked steps compare index vectors
  /// (8 bytes a lane) next to several f32 tiles: wider ones kept more
  /// values live than there are registers.
  int64_t innerVectorSize(linalg::LinalgOp op,
                          const CpuCostModel &model) const {
    bool reduction =
        linalg::isReductionIterator(op.getIteratorTypesArray().back());
    int64_t width = reduction ? model.reductionRegisters * lanes
                              : model.elementwiseRegisters * lanes;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t inner = ranges.back();
    if (ShapedType::isDynamic(inner))
      return width;
    if (inner < width)
      return inner;
    if (reduction && inner <= model.wholeRowReductionRegisters * lanes)
      return inner;
    return width;
  }

  void vectorizeOne(IRRewriter &rewriter, linalg::LinalgOp op,
                    const CpuCostModel &model) {
    unsigned loops = op.getNumLoops();
    int64_t width = innerVectorSize(op, model);
    SmallVector<int64_t> vectorSizes(loops, 1);
    vectorSizes.back() = width;
    SmallVector<OpFoldResult> tileSizes;
    for (int64_t size : vectorSizes)
      tileSizes.push_back(rewriter.getIndexAttr(size));

    Operation *target = op;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    bool needsTiling = llvm::any_of(llvm::zip(ranges, vectorSizes), [](auto p) {
      return std::get<0>(p) != std::get<1>(p);
    });
    if (needsTiling) {
      auto tilable = dyn_cast<TilingInterface>(op.getOperation());
      if (!tilable)
        return;
      scf::SCFTilingOptions options;
      options.setTileSizes(tileSizes);
      options.setLoopType(scf::SCFTilingOptions::LoopType::ForOp);
      rewriter.setInsertionPoint(op);
      FailureOr<scf::SCFTilingResult> tiled =
          scf::tileUsingSCF(rewriter, tilable, options);
      if (failed(tiled) || tiled->tiledOps.size() != 1)
        return;
      rewriter.eraseOp(op);
      target = tiled->tiledOps.front();
    }
    // (The scalable flags must be given with the sizes, all false here.)
    SmallVector<bool> scalable(loops, false);
    if (failed(linalg::vectorizeOpPrecondition(target, vectorSizes, scalable)))
      return;
    rewriter.setInsertionPoint(target);
    FailureOr<linalg::VectorizationResult> result =
        linalg::vectorize(rewriter, target, vectorSizes, scalable);
    if (failed(result))
      return;
    rewriter.eraseOp(target);
  }
};

} // namespace

} // namespace attn
