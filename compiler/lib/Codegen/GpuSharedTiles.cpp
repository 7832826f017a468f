//===- GpuSharedTiles.cpp - Tiles a block's threads share -----------------===//
//
// The shared tiles and block copies of tiled kernels (GpuSharedTiles.h),
// and `attn-gpu-shared-tiles`, which puts the tiles in the GPU's shared
// memory once the kernels are outlined.
//
//===----------------------------------------------------------------------===//

#include "GpuSharedTiles.h"

#include "attn/Codegen/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNGPUSHAREDTILES
#include "attn/Codegen/Passes.h.inc"

Value allocateSharedTile(OpBuilder &b, Location loc, int64_t rows,
                         int64_t columns, int64_t stages) {
  SmallVector<int64_t> shape{rows, columns};
  if (stages > 1)
    shape.insert(shape.begin(), stages);
  auto type = MemRefType::get(shape, b.getF32Type());
  auto tile = memref::AllocaOp::create(b, loc, type);
  tile.setAlignment(kVectorBytes);
  tile->setAttr(kSharedTileAttr, b.getUnitAttr());
  return tile;
}

namespace {

/// Whether every vector of 4 a block copy reads from `source` (at columns
/// that are multiples of 4) is 16-byte aligned: the first element's address
/// and every stride in bytes are multiples of 16. Known only when the
/// kernel runs (a view's offset, the buffer's address), and the same for
/// all of a block's threads.
Value vectorsAligned(OpBuilder &b, Location loc, Value source) {
  auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, source);
  Value pointer = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, source);
  // Sums and products as affine.apply: attn-gpu-mma-sync's conversion
  // takes any arith.addi or arith.muli of the kernel for part of a
  // fragment's chain, and fails on it.
  AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1);
  Value bits = affine::AffineApplyOp::create(
      b, loc, d0 + d1 * 4, ValueRange{pointer, metadata.getOffset()});
  ValueRange strides = metadata.getStrides();
  for (Value stride : strides.drop_back())
    bits = arith::OrIOp::create(
        b, loc, bits,
        affine::AffineApplyOp::create(b, loc, d0 * 4, ValueRange{stride}));
  Value mask = arith::ConstantIndexOp::create(b, loc, kVectorBytes - 1);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value low = arith::AndIOp::create(b, loc, bits, mask);
  Value aligned =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, low, zero);
  Value unitStride = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                           strides.back(), one);
  return arith::AndIOp::create(b, loc, aligned, unitStride);
}

/// The loop of a block copy taking `width` consecutive elements of a row
/// at a time (1, or a vector of kVectorWidth, aligned).
void emitCopyLoop(OpBuilder &b, Location loc, const TileSource &from,
                  Value tile, Value stage, Value thread, int64_t threads,
                  int64_t width) {
  int64_t perRow = from.columns / width;
  Value end = arith::ConstantIndexOp::create(b, loc, from.rows * perRow);
  Value step = arith::ConstantIndexOp::create(b, loc, threads);
  auto loop = scf::ForOp::create(
      b, loc, thread, end, step, ValueRange{},
      [&](OpBuilder &nb, Location, Value piece, ValueRange) {
        AffineExpr e = nb.getAffineDimExpr(0), base = nb.getAffineDimExpr(1);
        auto apply = [&](AffineExpr expr, ValueRange operands) -> Value {
          return affine::AffineApplyOp::create(nb, loc, expr, operands);
        };
        AffineExpr row = e.floorDiv(perRow), column = (e % perRow) * width;
        SmallVector<Value> at(from.batch);
        at.push_back(apply(row + base, ValueRange{piece, from.row}));
        at.push_back(apply(column + base, ValueRange{piece, from.column}));
        // Where element i of the piece goes in the tile.
        Value tileRow = apply(row, piece), tileColumn = apply(column, piece);
        auto to = [&](int64_t i) -> SmallVector<Value> {
          Value c = i == 0 ? tileColumn
                           : apply(nb.getAffineDimExpr(0) + i, tileColumn);
          SmallVector<Value> indices;
          if (stage)
            indices.push_back(stage);
          indices.append(from.transposed ? SmallVector<Value>{c, tileRow}
                                         : SmallVector<Value>{tileRow, c});
          return indices;
        };
        llvm::MaybeAlign align(kVectorBytes);
        if (width == 1) {
          Value value = memref::LoadOp::create(nb, loc, from.source, at);
          memref::StoreOp::create(nb, loc, value, tile, to(0));
        } else {
          auto type = VectorType::get({width}, nb.getF32Type());
          Value value = vector::LoadOp::create(nb, loc, type, from.source, at,
                                               false, align);
          if (!from.transposed)
            vector::StoreOp::create(nb, loc, value, tile, to(0), false, align);
          for (int64_t i = 0; from.transposed && i < width; ++i)
            memref::StoreOp::create(
                nb, loc, vector::ExtractOp::create(nb, loc, value, i), tile,
                to(i));
        }
        scf::YieldOp::create(nb, loc);
      });
  loop->setAttr(kBlockCopyAttr, b.getUnitAttr());
}

} // namespace

void emitBlockCopy(OpBuilder &b, Location loc, const TileSource &from,
                   Value tile, Value thread, int64_t threads, Value stage) {
  assert(from.rows * from.columns % (threads * kVectorWidth) == 0 &&
         "every thread copies as many elements");
  if (from.columns % kVectorWidth != 0) {
    emitCopyLoop(b, loc, from, tile, stage, thread, threads, 1);
    return;
  }
  auto branch = scf::IfOp::create(b, loc, vectorsAligned(b, loc, from.source),
                                  /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(branch.thenBlock());
  emitCopyLoop(b, loc, from, tile, stage, thread, threads, kVectorWidth);
  b.setInsertionPointToStart(branch.elseBlock());
  emitCopyLoop(b, loc, from, tile, stage, thread, threads, 1);
}

void emitBarrierAfterCopies(OpBuilder &b, Location loc, int64_t pending) {
  auto barrier = gpu::BarrierOp::create(b, loc);
  barrier->setAttr(kAwaitCopiesAttr, b.getI64IntegerAttr(pending));
}

namespace {

/// A block copy `for e = thread to n step threads` as `for i = 0 to n /
/// threads`, e = thread + i threads: the same iterations (thread <
/// threads, and emitBlockCopy's element counts are multiples of the block's
/// thread count), a trip count LLVM knows and unrolls, so that a thread's
/// loads are in flight together.
scf::ForOp countBlockCopy(RewriterBase &rewriter, scf::ForOp copy) {
  std::optional<int64_t> end = getConstantIntValue(copy.getUpperBound());
  std::optional<int64_t> step = getConstantIntValue(copy.getStep());
  if (!end || !step || *end % *step != 0)
    return copy;
  rewriter.setInsertionPoint(copy);
  Location loc = copy.getLoc();
  Value thread = copy.getLowerBound();
  auto counted = scf::ForOp::create(
      rewriter, loc, arith::ConstantIndexOp::create(rewriter, loc, 0),
      arith::ConstantIndexOp::create(rewriter, loc, *end / *step),
      arith::ConstantIndexOp::create(rewriter, loc, 1));
  rewriter.setInsertionPointToStart(counted.getBody());
  AffineExpr i = rewriter.getAffineDimExpr(0),
             first = rewriter.getAffineDimExpr(1);
  Value element = affine::AffineApplyOp::create(
      rewriter, loc, first + i * *step,
      ValueRange{counted.getInductionVar(), thread});
  counted.getBody()->getOperations().splice(
      Block::iterator(element.getDefiningOp()->getNextNode()),
      copy.getBody()->getOperations(), copy.getBody()->begin(),
      std::prev(copy.getBody()->end()));
  copy.getInductionVar().replaceAllUsesWith(element);
  rewriter.eraseOp(copy);
  return counted;
}

/// The counted copies' indices composed into one affine map each: the
/// element thread + i threads of row (thread + i threads) floordiv n, for
/// the block's thread count a multiple of n, becomes row thread floordiv n
/// plus i (threads / n), so that LLVM keeps one address per copy across
/// the loop over K and adds constants to it, not one address per element
/// (which took 128 of a kernel's 242 registers).
void composeCopyIndices(ArrayRef<scf::ForOp> copies) {
  if (copies.empty())
    return;
  MLIRContext *context = copies.front()->getContext();
  RewritePatternSet patterns(context);
  affine::AffineApplyOp::getCanonicalizationPatterns(patterns, context);
  FrozenRewritePatternSet frozen(std::move(patterns));
  SmallVector<Operation *> applies;
  for (scf::ForOp copy : copies)
    copy.walk([&](affine::AffineApplyOp apply) { applies.push_back(apply); });
  (void)applyOpPatternsGreedily(applies, frozen);
}

/// The block copy `copy` as `cp.async`s, when each iteration loads one
/// element or one vector of 4 and stores it into a shared tile: the
/// store goes to the tile's shared memory (the cast's source) straight
/// from global memory, 16 bytes bypassing L1, 4 bytes through it.
void copyAsynchronously(RewriterBase &rewriter, scf::ForOp copy) {
  Operation *load = nullptr, *store = nullptr;
  for (Operation &op : copy.getBody()->without_terminator()) {
    if (isa<memref::LoadOp, vector::LoadOp>(op) && !load)
      load = &op;
    else if (isa<memref::StoreOp, vector::StoreOp>(op) && !store)
      store = &op;
    else if (!isa<affine::AffineApplyOp>(op))
      return;
  }
  if (!load || !store || store->getOperand(0) != load->getResult(0))
    return;
  auto shared = store->getOperand(1).getDefiningOp<memref::MemorySpaceCastOp>();
  // cp.async reads consecutive elements: a source whose last stride may
  // not be 1 keeps the copy synchronous.
  auto source = cast<MemRefType>(load->getOperand(0).getType());
  if (!shared || !source.isLastDimUnitStride())
    return;
  auto vector = dyn_cast<VectorType>(load->getResult(0).getType());
  int64_t elements = vector ? vector.getNumElements() : 1;
  rewriter.setInsertionPoint(store);
  nvgpu::DeviceAsyncCopyOp::create(
      rewriter, copy.getLoc(),
      nvgpu::DeviceAsyncTokenType::get(rewriter.getContext()),
      shared.getSource(), store->getOperands().drop_front(2),
      load->getOperand(0), load->getOperands().drop_front(),
      rewriter.getIndexAttr(elements), /*srcElements=*/Value(),
      elements * 4 == kVectorBytes ? rewriter.getUnitAttr() : UnitAttr());
  rewriter.eraseOp(store);
  rewriter.eraseOp(load);
}

/// In a kernel whose barriers await copies: each block copy asynchronous
/// where it can be and a group of its own (an empty one where it stays
/// synchronous, so that every copy counts as one group), and each such
/// barrier preceded by a wait for all but its pending groups.
void awaitCopies(RewriterBase &rewriter, ArrayRef<scf::ForOp> copies,
                 ArrayRef<gpu::BarrierOp> barriers) {
  for (scf::ForOp copy : copies) {
    copyAsynchronously(rewriter, copy);
    rewriter.setInsertionPointAfter(copy);
    NVVM::CpAsyncCommitGroupOp::create(rewriter, copy.getLoc());
  }
  for (gpu::BarrierOp barrier : barriers) {
    auto pending = barrier->getAttrOfType<IntegerAttr>(kAwaitCopiesAttr);
    rewriter.setInsertionPoint(barrier);
    NVVM::CpAsyncWaitGroupOp::create(rewriter, barrier.getLoc(),
                                     pending.getInt());
    barrier->removeAttr(kAwaitCopiesAttr);
  }
}

struct GpuSharedTilesPass : impl::AttnGpuSharedTilesBase<GpuSharedTilesPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    for (auto kernel : getOperation().getOps<gpu::GPUFuncOp>()) {
      SmallVector<memref::AllocaOp> tiles;
      SmallVector<scf::ForOp> copies;
      SmallVector<gpu::BarrierOp> awaiting;
      kernel.walk([&](Operation *op) {
        if (auto alloca = dyn_cast<memref::AllocaOp>(op);
            alloca && alloca->hasAttr(kSharedTileAttr))
          tiles.push_back(alloca);
        if (auto copy = dyn_cast<scf::ForOp>(op);
            copy && copy->hasAttr(kBlockCopyAttr))
          copies.push_back(copy);
        if (auto barrier = dyn_cast<gpu::BarrierOp>(op);
            barrier && barrier->hasAttr(kAwaitCopiesAttr))
          awaiting.push_back(barrier);
      });
      for (memref::AllocaOp alloca : tiles)
        shareTile(rewriter, kernel, alloca);
      for (scf::ForOp &copy : copies)
        copy = countBlockCopy(rewriter, copy);
      composeCopyIndices(copies);
      if (!awaiting.empty())
        awaitCopies(rewriter, copies, awaiting);
    }
  }

  /// `alloca` as a workgroup attribution of `kernel`, cast to its type.
  void shareTile(RewriterBase &rewriter, gpu::GPUFuncOp kernel,
                 memref::AllocaOp alloca) {
    auto workgroup = gpu::AddressSpaceAttr::get(
        &getContext(), gpu::GPUDialect::getWorkgroupAddressSpace());
    MemRefType type = alloca.getType();
    auto shared = MemRefType::get(type.getShape(), type.getElementType(),
                                  type.getLayout(), workgroup);
    BlockArgument memory =
        kernel.addWorkgroupAttribution(shared, alloca.getLoc());
    // The block copies store vectors of 4 floats.
    kernel.setWorkgroupAttributionAttr(
        memory.getArgNumber() - kernel.getNumArguments(),
        LLVM::LLVMDialect::getAlignAttrName(),
        rewriter.getI64IntegerAttr(kVectorBytes));
    // The kernel's loads and stores keep their generic pointers; NVPTX's
    // address space inference makes them shared-memory ones.
    rewriter.setInsertionPoint(alloca);
    rewriter.replaceOpWithNewOp<memref::MemorySpaceCastOp>(alloca, type,
                                                           memory);
  }
};

} // namespace

} // namespace attn
