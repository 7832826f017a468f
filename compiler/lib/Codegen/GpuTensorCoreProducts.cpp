//===- GpuTensorCoreProducts.cpp - Matrix products on tensor cores --------===//
//
// The GPU target's `--precision tf32`, in two passes:
//
// - `attn-gpu-tensor-core-products` (on buffers, before linalg becomes
//   loops): each f32 matrix product becomes a kernel over its whole 64x64
//   block tiles, K in steps of 8, and generic products for the rest
//   (GpuBlockedProducts.h). A block of the kernel is a grid of warps, and
//   each warp accumulates a grid of 16x8 fragments of C in registers over
//   K, reading A and B from global memory (GpuWarpTiles.h).
// - `attn-gpu-mma-sync` (on the kernels' gpu.module): MLIR's lowering of
//   those warp-level contractions to `nvgpu.mma.sync` m16n8k8, the f32
//   operands read as TF32.
//
//===----------------------------------------------------------------------===//

#include "attn/Codegen/Passes.h"

#include "GpuBlockedProducts.h"
#include "GpuSharedTiles.h"
#include "GpuWarpTiles.h"

#include "mlir/Conversion/VectorToGPU/VectorToGPU.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNGPUTENSORCOREPRODUCTS
#define GEN_PASS_DEF_ATTNGPUMMASYNC
#include "attn/Codegen/Passes.h.inc"

namespace {

/// The tiles of a tensor-core product: mma.sync m16n8k8 fragments; a warp
/// holds 2 x 4 of them (32 x 32 of C, 32 accumulator registers a lane), a
/// block 2 x 2 warps (64 x 64 of C, 128 threads).
struct Tiles {
  static constexpr int64_t fragM = 16, fragN = 8, fragK = 8;
  static constexpr int64_t fragsM = 2, fragsN = 4;
  static constexpr int64_t warpsM = 2, warpsN = 2;
  static constexpr int64_t warpM = fragM * fragsM, warpN = fragN * fragsN;
  static constexpr int64_t blockM = warpM * warpsM, blockN = warpN * warpsN;
  static constexpr int64_t threads = kWarpSize * warpsM * warpsN;
  /// The terms of A B a block stages in shared memory at a time, and the
  /// stages its shared tiles hold (one read while the next is copied).
  static constexpr int64_t stepK = 32, stages = 2;
};

Value constantIndex(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

/// `base + offset`. The kernels' index arithmetic is affine.apply:
/// convert-vector-to-gpu takes an arith op computing a fragment's index for
/// part of the fragment's chain, and fails on it.
Value plus(OpBuilder &b, Location loc, Value base, int64_t offset) {
  if (offset == 0)
    return base;
  AffineExpr d0 = b.getAffineDimExpr(0);
  return affine::AffineApplyOp::create(b, loc, d0 + offset, ValueRange{base});
}

/// Reads and writes of one warp's fragments of a product, at the batch
/// element `batch` (no indices for a 2-D product).
struct FragmentAccess {
  OpBuilder &b;
  Location loc;
  SmallVector<Value> batch;

  /// The vector's two dimensions along the memref's last two, or the other
  /// way round (`transposed`).
  AffineMap map(Value memref, bool transposed) {
    unsigned rank = cast<MemRefType>(memref.getType()).getRank();
    AffineExpr row = b.getAffineDimExpr(rank - 2),
               col = b.getAffineDimExpr(rank - 1);
    return AffineMap::get(rank, 0,
                          transposed ? ArrayRef<AffineExpr>{col, row}
                                     : ArrayRef<AffineExpr>{row, col},
                          b.getContext());
  }

  SmallVector<Value> indices(Value first, Value second) {
    SmallVector<Value> all(batch);
    all.append({first, second});
    return all;
  }

  /// The fragment of `memref` at (`first`, `second`), in bounds.
  Value read(Value memref, Value first, Value second, VectorType type,
             bool transposed) {
    Value pad = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
    return vector::TransferReadOp::create(
        b, loc, type, memref, indices(first, second), pad,
        map(memref, transposed), ArrayRef<bool>{true, true});
  }

  void write(Value fragment, Value memref, Value row, Value col) {
    vector::TransferWriteOp::create(b, loc, fragment, memref, indices(row, col),
                                    map(memref, false),
                                    ArrayRef<bool>{true, true});
  }
};

/// A shared tile's row length: `columns` and a few more, so that the 32
/// lanes reading a fragment hit 32 different banks (4-byte words mod 32).
/// Lane (g, t) = (lane / 4, lane % 4) reads the fragment's element (g, t)
/// (and (g + 8, t), (g, t + 4), ...), with the K index t along the tile's
/// columns (rows of 32 terms: word 4 g + t of a row of 36) or along its
/// rows (rows of 64 of C's rows or columns: word 8 t + g of a row of 72).
int64_t paddedColumns(int64_t columns) {
  return columns == Tiles::stepK ? columns + 4 : columns + 8;
}

/// The shared tiles of two stages holding what stagedTerms takes of an
/// operand, as the operand stores it.
Value allocateStages(OpBuilder &b, Location loc, bool termsDown,
                     int64_t side) {
  using T = Tiles;
  if (termsDown)
    return allocateSharedTile(b, loc, T::stepK, paddedColumns(side), T::stages);
  return allocateSharedTile(b, loc, side, paddedColumns(T::stepK), T::stages);
}

/// A block's shared tiles of A and B, each of two stages in its operand's
/// own orientation, and what the block copies into them.
struct StagedOperands {
  const MatmulOperands &p;
  const BlockTile &tile;
  /// The block's first row of A and column of B, and the thread's index
  /// in the block.
  Value blockRow, blockCol, thread;
  Value aTile, bTile;

  /// The block's copies of the terms from `k` into stage `stage`.
  void copy(OpBuilder &b, Location loc, Value k, Value stage) const {
    using T = Tiles;
    emitBlockCopy(
        b, loc,
        stagedTerms(p, p.a, tile.batch, blockRow, T::blockM, k, T::stepK),
        aTile, thread, T::threads, stage);
    emitBlockCopy(
        b, loc,
        stagedTerms(p, p.b, tile.batch, blockCol, T::blockN, k, T::stepK),
        bTile, thread, T::threads, stage);
  }
};

/// A warp's contractions of the fragments of the terms from `kk` (fragK
/// of them) that stage `stage` of the shared tiles holds into its `sums`,
/// yielded.
void emitFragmentProducts(OpBuilder &b, Location loc,
                          const StagedOperands &staged, Value stage,
                          ArrayRef<Value> localRows, ArrayRef<Value> localCols,
                          Value kk, ValueRange sums) {
  using T = Tiles;
  const MatmulOperands &p = staged.p;
  MLIRContext *context = b.getContext();
  Type f32 = b.getF32Type();
  auto aType = VectorType::get({T::fragM, T::fragK}, f32);
  auto bType = VectorType::get({T::fragN, T::fragK}, f32);
  FragmentAccess shared{b, loc, {stage}};
  SmallVector<Value> as, bs;
  for (Value r : localRows)
    as.push_back(p.transposedA
                     ? shared.read(staged.aTile, kk, r, aType, true)
                     : shared.read(staged.aTile, r, kk, aType, false));
  for (Value c : localCols)
    bs.push_back(p.transposedB
                     ? shared.read(staged.bTile, c, kk, bType, false)
                     : shared.read(staged.bTile, kk, c, bType, true));
  AffineExpr m = getAffineDimExpr(0, context), n = getAffineDimExpr(1, context),
             k = getAffineDimExpr(2, context);
  ArrayAttr maps =
      b.getAffineMapArrayAttr({AffineMap::get(3, 0, {m, k}, context),
                               AffineMap::get(3, 0, {n, k}, context),
                               AffineMap::get(3, 0, {m, n}, context)});
  auto iterator = [&](vector::IteratorType type) -> Attribute {
    return vector::IteratorTypeAttr::get(context, type);
  };
  ArrayAttr iterators =
      b.getArrayAttr({iterator(vector::IteratorType::parallel),
                      iterator(vector::IteratorType::parallel),
                      iterator(vector::IteratorType::reduction)});

  SmallVector<Value> next;
  for (auto [i, a] : llvm::enumerate(as))
    for (auto [j, bf] : llvm::enumerate(bs))
      next.push_back(vector::ContractionOp::create(
          b, loc, a, bf, sums[i * bs.size() + j], maps, iterators));
  scf::YieldOp::create(b, loc, next);
}

/// One step over K of a warp's sums, from term `k0`: the next terms
/// copied into the other stage, the barrier, the warp's products of this
/// stage's fragments, the barrier after them. Returns the new sums.
ValueRange emitStep(OpBuilder &b, Location loc, const StagedOperands &staged,
                    Value k0, ArrayRef<Value> localRows,
                    ArrayRef<Value> localCols, ValueRange sums) {
  using T = Tiles;
  AffineExpr k = b.getAffineDimExpr(0), kEnd = b.getAffineSymbolExpr(0);
  auto apply = [&](AffineExpr e) -> Value {
    return affine::AffineApplyOp::create(b, loc, e, k0);
  };
  Value stage = apply(k.floorDiv(T::stepK) % T::stages);
  // The first terms, before the first step reads them.
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, k0,
                                      constantIndex(b, loc, 0));
  auto prologue = scf::IfOp::create(b, loc, first);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(prologue.thenBlock());
    staged.copy(b, loc, k0, stage);
  }
  // The next terms into the other stage; the last step copies its own
  // terms again, so that every step copies as many (on the GPU, two groups
  // of asynchronous copies, which the barrier leaves pending).
  Value next = affine::AffineMinOp::create(
      b, loc,
      AffineMap::get(1, 1, {k + T::stepK, kEnd - T::stepK}, b.getContext()),
      ValueRange{k0, staged.tile.kEnd});
  staged.copy(b, loc, next, apply((k.floorDiv(T::stepK) + 1) % T::stages));
  emitBarrierAfterCopies(b, loc, /*pending=*/2);
  // The steps over the staged terms as a loop, not unrolled: under
  // cuda-on-host each contraction becomes scalar code.
  auto steps = scf::ForOp::create(
      b, loc, constantIndex(b, loc, 0), constantIndex(b, loc, T::stepK),
      constantIndex(b, loc, T::fragK), sums,
      [&](OpBuilder &inner, Location, Value kk, ValueRange partial) {
        emitFragmentProducts(inner, loc, staged, stage, localRows, localCols,
                             kk, partial);
      });
  // No thread copies the next terms over these before every warp has read
  // them.
  gpu::BarrierOp::create(b, loc);
  return steps.getResults();
}

/// One warp's tile of C at (`row`, `col`) of C, (`localRow`, `localCol`)
/// of the block's: its fragments read, the first `kEnd` terms of A B added
/// and written back. The block stages stepK terms of its rows of A and
/// columns of B at a time in shared tiles of two stages: while its warps
/// read one stage's fragments, fragK terms at a time, its threads copy the
/// next terms into the other.
void emitWarpTile(FragmentAccess &access, const MatmulOperands &p,
                  const BlockTile &tile, Value row, Value col, Value localRow,
                  Value localCol, Value thread) {
  using T = Tiles;
  OpBuilder &b = access.b;
  Location loc = access.loc;
  auto cType = VectorType::get({T::fragM, T::fragN}, b.getF32Type());
  AffineExpr d0 = b.getAffineDimExpr(0);
  StagedOperands staged{
      p,
      tile,
      affine::AffineApplyOp::create(b, loc, d0 * T::blockM, tile.blockRow),
      affine::AffineApplyOp::create(b, loc, d0 * T::blockN, tile.blockCol),
      thread,
      allocateStages(b, loc, holdsTermsDown(p, p.a), T::blockM),
      allocateStages(b, loc, holdsTermsDown(p, p.b), T::blockN)};

  SmallVector<Value> rows, cols, localRows, localCols;
  for (int64_t i = 0; i < T::fragsM; ++i) {
    rows.push_back(plus(b, loc, row, i * T::fragM));
    localRows.push_back(plus(b, loc, localRow, i * T::fragM));
  }
  for (int64_t j = 0; j < T::fragsN; ++j) {
    cols.push_back(plus(b, loc, col, j * T::fragN));
    localCols.push_back(plus(b, loc, localCol, j * T::fragN));
  }
  SmallVector<Value> accumulators;
  for (Value r : rows)
    for (Value c : cols)
      accumulators.push_back(access.read(p.c, r, c, cType, false));

  auto terms = scf::ForOp::create(
      b, loc, constantIndex(b, loc, 0), tile.kEnd,
      constantIndex(b, loc, T::stepK), accumulators,
      [&](OpBuilder &nested, Location, Value k0, ValueRange sums) {
        scf::YieldOp::create(nested, loc,
                             emitStep(nested, loc, staged, k0, localRows,
                                      localCols, sums));
      });
  for (auto [i, r] : llvm::enumerate(rows))
    for (auto [j, c] : llvm::enumerate(cols))
      access.write(terms.getResult(i * cols.size() + j), p.c, r, c);
}

/// What a block's threads do: warp (thread y, thread z) of the block takes
/// its 32x32 tile of C; the lanes (thread x) share the block copies and
/// divide the warp's fragments later.
void emitWarpTiles(OpBuilder &b, Location loc, const MatmulOperands &p,
                   const BlockTile &tile) {
  using T = Tiles;
  using gpu::Processor;
  AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1),
             d2 = b.getAffineDimExpr(2);
  auto apply = [&](AffineExpr e, ValueRange operands) -> Value {
    return affine::AffineApplyOp::create(b, loc, e, operands);
  };
  Value lane = tile.thread(Processor::ThreadX);
  Value warpN = tile.thread(Processor::ThreadY);
  Value warpM = tile.thread(Processor::ThreadZ);
  Value localRow = apply(d0 * T::warpM, warpM);
  Value localCol = apply(d0 * T::warpN, warpN);
  Value row = apply(d0 * T::blockM + d1, {tile.blockRow, localRow});
  Value col = apply(d0 * T::blockN + d1, {tile.blockCol, localCol});
  Value thread = apply(d0 + d1 * kWarpSize + d2 * (kWarpSize * T::warpsN),
                       {lane, warpN, warpM});
  FragmentAccess access{b, loc, tile.batch};
  emitWarpTile(access, p, tile, row, col, localRow, localCol, thread);
}

struct GpuTensorCoreProductsPass
    : impl::AttnGpuTensorCoreProductsBase<GpuTensorCoreProductsPass> {
  void runOnOperation() override {
    using T = Tiles;
    using gpu::Processor;
    BlockedKernel kernel{T::blockM,
                         T::blockN,
                         T::stepK,
                         {{Processor::ThreadX, kWarpSize},
                          {Processor::ThreadY, T::warpsN},
                          {Processor::ThreadZ, T::warpsM}},
                         kWarpTilesAttr,
                         /*canStartFromZero=*/false,
                         emitWarpTiles};
    IRRewriter rewriter(&getContext());
    for (auto &[op, p] : collectBlockableProducts(getOperation()))
      rewriteBlockedProduct(rewriter, op, p, kernel);
  }
};

struct GpuMmaSyncPass : impl::AttnGpuMmaSyncBase<GpuMmaSyncPass> {
  /// MLIR's preparation of contractions for mma.sync, and every registered
  /// op's canonicalisation (the clean-up after the conversion), built once.
  FrozenRewritePatternSet prepare, cleanup;

  LogicalResult initialize(MLIRContext *context) override {
    RewritePatternSet prepareSet(context), cleanupSet(context);
    populatePrepareVectorToMMAPatterns(prepareSet, /*useNvGpu=*/true);
    for (RegisteredOperationName name : context->getRegisteredOperations())
      name.getCanonicalizationPatterns(cleanupSet, context);
    prepare = std::move(prepareSet);
    cleanup = std::move(cleanupSet);
    return success();
  }

  void runOnOperation() override {
    for (auto kernel : getOperation().getOps<gpu::GPUFuncOp>()) {
      bool contracts = kernel
                           ->walk([](vector::ContractionOp) {
                             return WalkResult::interrupt();
                           })
                           .wasInterrupted();
      if (contracts && failed(convertKernel(kernel)))
        return signalPassFailure();
    }
  }

  /// MLIR's conversion, on the kernels that have contractions only: it
  /// tries every arith op of the function it is given, index arithmetic
  /// included, and fails on those.
  LogicalResult convertKernel(gpu::GPUFuncOp kernel) {
    Operation *root = kernel;
    if (failed(applyPatternsGreedily(root, prepare)))
      return failure();
    IRRewriter rewriter(&getContext());
    if (failed(convertVectorToNVVMCompatibleMMASync(rewriter, root)))
      return failure();
    // The conversion leaves the warp-level ops it replaced, dead, and the
    // loop's old accumulators beside the new ones.
    if (failed(applyPatternsGreedily(root, cleanup)))
      return failure();
    // A contraction left as it was would run whole in every lane, each
    // lane adding its own copy of the product into C.
    WalkResult left = root->walk([](vector::ContractionOp contract) {
      contract.emitError("a warp's product did not become mma.sync");
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      return failure();
    // The steps over a block's staged terms, a loop on the host, unrolled
    // here: a step's shared-memory reads can then overlap the previous
    // step's products.
    SmallVector<scf::ForOp> steps;
    root->walk([&](scf::ForOp loop) {
      std::optional<APInt> trips = loop.getStaticTripCount();
      bool products = !loop.getBody()->getOps<nvgpu::MmaSyncOp>().empty();
      if (products && trips &&
          trips->getSExtValue() <= Tiles::stepK / Tiles::fragK)
        steps.push_back(loop);
    });
    for (scf::ForOp loop : steps)
      if (failed(loopUnrollFull(loop)))
        return failure();
    // The tensor cores take an f32 operand's sign, exponent and leading 10
    // mantissa bits (TF32).
    root->walk([](nvgpu::MmaSyncOp mma) {
      if (cast<VectorType>(mma.getMatrixA().getType()).getElementType().isF32())
        mma.setTf32Enabled(true);
    });
    return success();
  }
};

} // namespace

} // namespace attn
