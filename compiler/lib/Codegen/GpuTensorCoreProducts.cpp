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

/// One warp's tile of C at (`row`, `col`): its fragments read, the first
/// `kEnd` terms of A B added in steps of fragK, and written back.
void emitWarpTile(FragmentAccess &access, const MatmulOperands &p, Value row,
                  Value col, Value kEnd) {
  using T = Tiles;
  OpBuilder &b = access.b;
  Location loc = access.loc;
  MLIRContext *context = b.getContext();
  Type f32 = b.getF32Type();
  auto cType = VectorType::get({T::fragM, T::fragN}, f32);
  auto aType = VectorType::get({T::fragM, T::fragK}, f32);
  auto bType = VectorType::get({T::fragN, T::fragK}, f32);
  SmallVector<Value> rows, cols;
  for (int64_t i = 0; i < T::fragsM; ++i)
    rows.push_back(plus(b, loc, row, i * T::fragM));
  for (int64_t j = 0; j < T::fragsN; ++j)
    cols.push_back(plus(b, loc, col, j * T::fragN));
  SmallVector<Value> accumulators;
  for (Value r : rows)
    for (Value c : cols)
      accumulators.push_back(access.read(p.c, r, c, cType, false));

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

  auto terms = scf::ForOp::create(
      b, loc, constantIndex(b, loc, 0), kEnd, constantIndex(b, loc, T::fragK),
      accumulators,
      [&](OpBuilder &nested, Location, Value kk, ValueRange sums) {
        FragmentAccess inner{nested, loc, access.batch};
        SmallVector<Value> as, bs;
        for (Value r : rows)
          as.push_back(p.transposedA ? inner.read(p.a, kk, r, aType, true)
                                     : inner.read(p.a, r, kk, aType, false));
        for (Value c : cols)
          bs.push_back(p.transposedB ? inner.read(p.b, c, kk, bType, false)
                                     : inner.read(p.b, kk, c, bType, true));
        SmallVector<Value> next;
        for (auto [i, a] : llvm::enumerate(as))
          for (auto [j, bf] : llvm::enumerate(bs))
            next.push_back(vector::ContractionOp::create(
                nested, loc, a, bf, sums[i * bs.size() + j], maps, iterators));
        scf::YieldOp::create(nested, loc, next);
      });
  for (auto [i, r] : llvm::enumerate(rows))
    for (auto [j, c] : llvm::enumerate(cols))
      access.write(terms.getResult(i * cols.size() + j), p.c, r, c);
}

/// What a block's threads do: warp (thread y, thread z) of the block takes
/// its 32x32 tile of C; the lanes (thread x) are divided later.
void emitWarpTiles(OpBuilder &b, Location loc, const MatmulOperands &p,
                   const BlockTile &tile) {
  using T = Tiles;
  using gpu::Processor;
  AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1);
  auto at = [&](Value blockIndex, int64_t blockSize, Value warpIndex,
                int64_t warpSize) -> Value {
    return affine::AffineApplyOp::create(b, loc,
                                         d0 * blockSize + d1 * warpSize,
                                         ValueRange{blockIndex, warpIndex});
  };
  Value row = at(tile.blockRow, T::blockM, tile.thread(Processor::ThreadZ),
                 T::warpM);
  Value col = at(tile.blockCol, T::blockN, tile.thread(Processor::ThreadY),
                 T::warpN);
  FragmentAccess access{b, loc, tile.batch};
  emitWarpTile(access, p, row, col, tile.kEnd);
}

struct GpuTensorCoreProductsPass
    : impl::AttnGpuTensorCoreProductsBase<GpuTensorCoreProductsPass> {
  void runOnOperation() override {
    using T = Tiles;
    using gpu::Processor;
    BlockedKernel kernel{T::blockM,
                         T::blockN,
                         T::fragK,
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
