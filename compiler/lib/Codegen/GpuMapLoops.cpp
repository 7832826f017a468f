//===- GpuMapLoops.cpp - Host and device parts of an entry point ----------===//
//
// `attn-gpu-map-loops`: on buffers, after linalg became `scf.parallel` nests,
// splits each function into what the host runs and what the GPU runs, and
// marks the GPU's part for `convert-parallel-loops-to-gpu`:
//
// - Every buffer lives in device memory except those the runtime passes in
//   host memory (arguments marked `attn.host_memory`: the key/value cache's
//   state and the arena's need). Allocations on the host become `gpu.alloc`
//   and `gpu.dealloc`; copies of device buffers become parallel loops;
//   constants are copied to the device where they are taken.
// - Each outermost `scf.parallel` becomes one kernel launch: its loops are
//   collapsed into one, tiled by `kThreadsPerBlock`, the tiles mapped to
//   blocks and the iterations of a tile to threads; loops nested inside run
//   sequentially in their thread. A kernel written per warp or per thread
//   (tensor-core and SIMT products, GpuWarpTiles.h) keeps its blocks and
//   threads as they are.
// - A row loop around a parallel loop (column reductions, the embedding
//   gradient's scatter-add) becomes one kernel whose threads walk the rows,
//   and a full reduction into one element partial sums across threads
//   (GpuLoopRestructure.h). A fill right before a reduction into the
//   same elements becomes the reduction's first store, in its kernel, and
//   adjacent loops over the same columns that touch shared memory at their
//   own index only run as one kernel.
// - Any other host-level op that reads or writes device memory runs in a
//   single-iteration parallel loop, i.e. on one GPU thread: correct, but
//   slow for large sequential loops.
//
// The host part keeps only index arithmetic, allocations, views, calls and
// the accesses of host buffers.
//
//===----------------------------------------------------------------------===//

#include "attn/Codegen/Passes.h"

#include "BufferUses.h"
#include "GpuLoopRestructure.h"
#include "GpuWarpTiles.h"
#include "attn/EntryPoints/ArgAttributes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"

#include <algorithm>
#include <numeric>

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNGPUMAPLOOPS
#include "attn/Codegen/Passes.h.inc"

namespace {

/// Threads per block of the generic kernels: a multiple of the warp size
/// that leaves a multiprocessor room for several blocks.
constexpr int64_t kThreadsPerBlock = 256;

bool isHostMemory(Value memref) {
  // Buffers of indices are the shapes of reshapes, which the host reads.
  if (cast<MemRefType>(memref.getType()).getElementType().isIndex())
    return true;
  Value root = rootBuffer(memref);
  // The host's stack: values read back from the device, and the arena's
  // need that a called entry point reports.
  if (auto alloca = root.getDefiningOp<memref::AllocaOp>())
    return !alloca->getParentOfType<scf::ParallelOp>();
  auto arg = dyn_cast<BlockArgument>(root);
  if (!arg)
    return false;
  auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  return func && func.getArgAttr(arg.getArgNumber(), kHostMemoryArgAttr);
}

/// Whether `op` itself reads or writes a device buffer.
bool accessesDeviceMemory(Operation *op) {
  // The host's own calls of the GPU runtime.
  if (isa<memref::AllocOp, memref::DeallocOp, gpu::AllocOp, gpu::DeallocOp,
          gpu::MemcpyOp>(op))
    return false;
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return false;
  SmallVector<MemoryEffects::EffectInstance> instances;
  effects.getEffects(instances);
  return llvm::any_of(instances, [](const MemoryEffects::EffectInstance &e) {
    Value value = e.getValue();
    return value && isa<MemRefType>(value.getType()) &&
           (isa<MemoryEffects::Read>(e.getEffect()) ||
            isa<MemoryEffects::Write>(e.getEffect())) &&
           !isHostMemory(value);
  });
}

/// Whether `op` or an op nested in it (outside nested parallel loops, which
/// become kernels of their own) reads or writes a device buffer.
bool runsOnDevice(Operation *op) {
  bool found = false;
  op->walk<WalkOrder::PreOrder>([&](Operation *nested) {
    if (nested != op && isa<scf::ParallelOp>(nested))
      return WalkResult::skip();
    if (accessesDeviceMemory(nested)) {
      found = true;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}

/// `memref.copy` of a device buffer as a parallel loop over its elements:
/// one loop per dim not of static size 1 (index 0 in those), so that a
/// copy of a [rows, 1] statistic runs over the rows as the loops that fill
/// and reduce into it do.
void copyAsLoop(RewriterBase &rewriter, memref::CopyOp copy) {
  rewriter.setInsertionPoint(copy);
  Location loc = copy.getLoc();
  Value source = copy.getSource(), target = copy.getTarget();
  auto type = cast<MemRefType>(source.getType());
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  SmallVector<int64_t> looped;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.getDimSize(d) != 1)
      looped.push_back(d);
  // Without such a dim, a loop of one iteration.
  size_t loops = std::max<size_t>(looped.size(), 1);
  SmallVector<Value> lower(loops, zero), steps(loops, one), upper(loops, one);
  for (auto [i, d] : llvm::enumerate(looped))
    upper[i] = memref::DimOp::create(rewriter, loc, source, d);
  scf::ParallelOp::create(
      rewriter, loc, lower, upper, steps,
      [&](OpBuilder &b, Location l, ValueRange ivs) {
        SmallVector<Value> indices(type.getRank(), zero);
        for (auto [i, d] : llvm::enumerate(looped))
          indices[d] = ivs[i];
        Value element = memref::LoadOp::create(b, l, source, indices);
        memref::StoreOp::create(b, l, element, target, indices);
      });
  rewriter.eraseOp(copy);
}

/// Host allocations of device buffers through the GPU runtime.
void allocateOnDevice(RewriterBase &rewriter, func::FuncOp func) {
  func.walk([&](Operation *op) {
    if (op->getParentOfType<scf::ParallelOp>())
      return;
    rewriter.setInsertionPoint(op);
    if (auto alloc = dyn_cast<memref::AllocOp>(op);
        alloc && !isHostMemory(alloc)) {
      auto device = rewriter.replaceOpWithNewOp<gpu::AllocOp>(
          alloc, alloc.getType(), /*asyncToken=*/Type(),
          /*asyncDependencies=*/ValueRange{}, alloc.getDynamicSizes(),
          alloc.getSymbolOperands(), /*hostShared=*/false);
      if (Attribute arena = alloc->getAttr(kArenaAllocAttr))
        device->setAttr(kArenaAllocAttr, arena);
    } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op);
               dealloc && !isHostMemory(dealloc.getMemref())) {
      rewriter.replaceOpWithNewOp<gpu::DeallocOp>(
          dealloc, /*asyncToken=*/Type(), ValueRange{}, dealloc.getMemref());
    }
  });
}

/// Constants (`memref.get_global`, bufferised dense tensors) live in the
/// host's memory, where kernels cannot read them: each use reads a device
/// copy, made where the constant is taken and freed at the end of its
/// block.
void copyConstantsToDevice(RewriterBase &rewriter, func::FuncOp func) {
  SmallVector<memref::GetGlobalOp> globals;
  func.walk([&](memref::GetGlobalOp global) {
    if (!global->getParentOfType<scf::ParallelOp>())
      globals.push_back(global);
  });
  for (memref::GetGlobalOp global : globals) {
    Location loc = global.getLoc();
    rewriter.setInsertionPointAfter(global);
    Value device =
        gpu::AllocOp::create(rewriter, loc, global.getType(), Type(),
                             ValueRange{}, ValueRange{}, ValueRange{}, false)
            .getMemref();
    rewriter.replaceAllUsesWith(global.getResult(), device);
    gpu::MemcpyOp::create(rewriter, loc, Type(), ValueRange{}, device,
                          global.getResult());
    rewriter.setInsertionPoint(global->getBlock()->getTerminator());
    gpu::DeallocOp::create(rewriter, loc, Type(), ValueRange{}, device);
  }
}

/// Index buffers (the shapes of reshapes) that attn-plan-arena placed in
/// the arena, which is device memory here, move to the host's stack.
LogicalResult keepShapesOnHost(RewriterBase &rewriter, func::FuncOp func) {
  SmallVector<memref::ViewOp> views;
  func.walk([&](memref::ViewOp view) {
    if (view.getType().getElementType().isIndex())
      views.push_back(view);
  });
  for (memref::ViewOp view : views) {
    if (!view.getType().hasStaticShape())
      return view.emitError("the GPU target needs static shapes of reshapes");
    rewriter.setInsertionPointToStart(&func.getBody().front());
    rewriter.replaceOp(
        view, memref::AllocaOp::create(rewriter, view.getLoc(), view.getType())
                  .getResult());
  }
  return success();
}

/// `op` (a sequential loop or access of device memory) inside a parallel
/// loop of one iteration, so that it runs on one GPU thread. Fails when the
/// host would use one of its results.
FailureOr<scf::ParallelOp> runOnOneThread(RewriterBase &rewriter,
                                          Operation *op) {
  if (op->getNumResults() != 0)
    return op->emitError("the GPU target cannot run this on the host: it "
                         "reads device memory for the host");
  rewriter.setInsertionPoint(op);
  Location loc = op->getLoc();
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  auto loop = scf::ParallelOp::create(rewriter, loc, zero, one, one);
  rewriter.moveOpBefore(op, loop.getBody()->getTerminator());
  return loop;
}

/// A parallel loop without reductions as a nest of sequential loops.
void sequentialize(RewriterBase &rewriter, scf::ParallelOp loop) {
  rewriter.setInsertionPoint(loop);
  scf::buildLoopNest(
      rewriter, loop.getLoc(), loop.getLowerBound(), loop.getUpperBound(),
      loop.getStep(), [&](OpBuilder &b, Location, ValueRange ivs) {
        IRMapping mapping;
        mapping.map(loop.getInductionVars(), ivs);
        for (Operation &op : loop.getBody()->without_terminator())
          b.clone(op, mapping);
      });
  rewriter.eraseOp(loop);
}

/// One kernel: the loops collapsed into one, tiled into blocks of threads,
/// and marked for convert-parallel-loops-to-gpu.
void mapToKernel(RewriterBase &rewriter, scf::ParallelOp loop) {
  if (loop.getNumLoops() > 1) {
    std::vector<unsigned> all(loop.getNumLoops());
    std::iota(all.begin(), all.end(), 0);
    // The collapsed loop replaces `loop` where it stood.
    Operation *next = loop->getNextNode();
    collapseParallelLoops(rewriter, loop, {all});
    loop = cast<scf::ParallelOp>(next->getPrevNode());
  }
  auto [blocks, threads] =
      scf::tileParallelLoop(loop, {kThreadsPerBlock}, /*noMinMaxBounds=*/true);
  MLIRContext *context = rewriter.getContext();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(1, context);
  auto dim = [&](gpu::Processor processor) {
    return gpu::ParallelLoopDimMappingAttr::get(context, processor, identity,
                                                identity);
  };
  (void)gpu::setMappingAttr(blocks, {dim(gpu::Processor::BlockX)});
  (void)gpu::setMappingAttr(threads, {dim(gpu::Processor::ThreadX)});
  // Parallel loops inside a thread's iteration run sequentially, as loops
  // (convert-parallel-loops-to-gpu leaves a kernel on the host when one sits
  // under another loop).
  SmallVector<scf::ParallelOp> nested;
  threads.getBody()->walk(
      [&](scf::ParallelOp loop) { nested.push_back(loop); });
  for (scf::ParallelOp loop : nested)
    sequentialize(rewriter, loop);
}

/// A kernel for `loop`, or two for a reduction over many rows into few
/// columns (partial results over slices of the rows, then their
/// combination; GpuLoopRestructure.h).
void mapParallelLoop(RewriterBase &rewriter, scf::ParallelOp loop) {
  if (FailureOr<SplitReduction> split = splitColumnReduction(rewriter, loop);
      succeeded(split)) {
    mapToKernel(rewriter, split->partials);
    mapToKernel(rewriter, split->totals);
    return;
  }
  mapToKernel(rewriter, loop);
}

/// A kernel written per warp or per thread (GpuWarpTiles.h): each
/// dimension mapped to the block or thread its attribute names.
void mapTiledKernel(scf::ParallelOp loop, ArrayRef<gpu::Processor> processors) {
  MLIRContext *context = loop.getContext();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(1, context);
  SmallVector<gpu::ParallelLoopDimMappingAttr> dims;
  for (gpu::Processor processor : processors)
    dims.push_back(gpu::ParallelLoopDimMappingAttr::get(context, processor,
                                                        identity, identity));
  (void)gpu::setMappingAttr(loop, dims);
}

/// A host read of one element of a device buffer: a one-thread kernel
/// copies it into a buffer of its own, which is copied into host memory and
/// read there (the host waits for the GPU at that point).
void readOnHost(RewriterBase &rewriter, memref::LoadOp load) {
  rewriter.setInsertionPoint(load);
  Location loc = load.getLoc();
  auto one = MemRefType::get({1}, load.getType());
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value step = arith::ConstantIndexOp::create(rewriter, loc, 1);
  Value device = gpu::AllocOp::create(rewriter, loc, one, Type(), ValueRange{},
                                      ValueRange{}, ValueRange{}, false)
                     .getMemref();
  auto loop = scf::ParallelOp::create(
      rewriter, loc, zero, step, step,
      [&](OpBuilder &b, Location l, ValueRange) {
        Value element =
            memref::LoadOp::create(b, l, load.getMemRef(), load.getIndices());
        memref::StoreOp::create(b, l, element, device, ValueRange{zero});
      });
  mapToKernel(rewriter, loop);
  Value host = memref::AllocaOp::create(rewriter, loc, one);
  gpu::MemcpyOp::create(rewriter, loc, Type(), ValueRange{}, host, device);
  gpu::DeallocOp::create(rewriter, loc, Type(), ValueRange{}, device);
  rewriter.replaceOpWithNewOp<memref::LoadOp>(load, host, ValueRange{zero});
}

/// The parallel loops of `func` outside other loops (host loops' bodies
/// are mapped as they stand: a row loop may become a column loop).
SmallVector<scf::ParallelOp> hostLevelLoops(func::FuncOp func) {
  SmallVector<scf::ParallelOp> loops;
  func.walk([&](scf::ParallelOp loop) {
    if (!loop->getParentOfType<LoopLikeOpInterface>())
      loops.push_back(loop);
  });
  return loops;
}

/// Before any loop is mapped, fewer kernels: each fill moves down to the
/// reduction that starts from it and runs in its kernel, reductions are
/// split, and then adjacent loops over the same columns join (a combining
/// loop and the element-wise loop on its result).
void joinLoops(RewriterBase &rewriter, func::FuncOp func) {
  SetVector<Block *> blocks;
  SmallVector<scf::ParallelOp> loops = hostLevelLoops(func);
  for (scf::ParallelOp loop : loops)
    blocks.insert(loop->getBlock());
  for (Block *block : blocks)
    sinkFills(*block);
  // A fill absorbed is a loop earlier in `loops`, already visited.
  for (scf::ParallelOp loop : loops)
    absorbInitialFills(rewriter, loop);
  for (scf::ParallelOp loop : hostLevelLoops(func))
    (void)splitColumnReduction(rewriter, loop);
  fuseSameColumnLoops(func.getBody().front());
}

/// Maps the host-level ops of `block`: kernels for parallel loops and for
/// device work, host loops and branches searched for both.
LogicalResult mapBlock(RewriterBase &rewriter, Block &block) {
  for (Operation &op : llvm::make_early_inc_range(block)) {
    if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
      if (auto processors = tiledKernelProcessors(loop))
        mapTiledKernel(loop, *processors);
      else
        mapParallelLoop(rewriter, loop);
      continue;
    }
    if (auto load = dyn_cast<memref::LoadOp>(op);
        load && accessesDeviceMemory(load)) {
      readOnHost(rewriter, load);
      continue;
    }
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      // A row loop around a parallel loop: one kernel, not one per row.
      if (FailureOr<scf::ParallelOp> columns =
              interchangeRowLoop(rewriter, loop);
          succeeded(columns)) {
        mapParallelLoop(rewriter, *columns);
        continue;
      }
      // A full reduction: partial sums across threads, then their sum.
      if (runsOnDevice(loop)) {
        if (FailureOr<SplitReduction> split =
                splitFullReduction(rewriter, loop);
            succeeded(split)) {
          mapToKernel(rewriter, split->partials);
          mapToKernel(rewriter, split->totals);
          continue;
        }
      }
    }
    // Anything else touching device memory outside a parallel loop (a host
    // loop's own body included) runs on the device whole.
    if (runsOnDevice(&op)) {
      FailureOr<scf::ParallelOp> loop = runOnOneThread(rewriter, &op);
      if (failed(loop))
        return failure();
      mapToKernel(rewriter, *loop);
      continue;
    }
    for (Region &region : op.getRegions())
      for (Block &nested : region)
        if (failed(mapBlock(rewriter, nested)))
          return failure();
  }
  return success();
}

/// Each kernel launch reserves its argument arrays on the host's stack
/// where it stands, and an alloca in a loop is not released before the
/// function returns: a host loop launching a kernel per row (thousands of
/// rows) would overflow the stack. Such loops' bodies get an alloca scope.
void releaseStackPerIteration(RewriterBase &rewriter, func::FuncOp func) {
  SmallVector<scf::ForOp> loops;
  func.walk([&](scf::ForOp loop) {
    if (loop.getNumResults() == 0 &&
        !loop->getParentOfType<scf::ParallelOp>() &&
        !loop.getBody()->getOps<scf::ParallelOp>().empty())
      loops.push_back(loop);
  });
  for (scf::ForOp loop : loops) {
    Block *body = loop.getBody();
    rewriter.setInsertionPointToStart(body);
    auto scope =
        memref::AllocaScopeOp::create(rewriter, loop.getLoc(), TypeRange{});
    Block *inner = rewriter.createBlock(&scope.getBodyRegion());
    for (Operation &op : llvm::make_early_inc_range(*body))
      if (&op != scope && !op.hasTrait<OpTrait::IsTerminator>())
        op.moveBefore(inner, inner->end());
    rewriter.setInsertionPointToEnd(inner);
    memref::AllocaScopeReturnOp::create(rewriter, loop.getLoc(), ValueRange{});
  }
}

struct GpuMapLoopsPass : impl::AttnGpuMapLoopsBase<GpuMapLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    IRRewriter rewriter(&getContext());
    SmallVector<memref::CopyOp> copies;
    func.walk([&](memref::CopyOp copy) {
      if (!copy->getParentOfType<scf::ParallelOp>() &&
          !(isHostMemory(copy.getSource()) && isHostMemory(copy.getTarget())))
        copies.push_back(copy);
    });
    for (memref::CopyOp copy : copies)
      copyAsLoop(rewriter, copy);
    copyConstantsToDevice(rewriter, func);
    if (failed(keepShapesOnHost(rewriter, func)))
      return signalPassFailure();
    allocateOnDevice(rewriter, func);
    joinLoops(rewriter, func);
    if (failed(mapBlock(rewriter, func.getBody().front())))
      return signalPassFailure();
    releaseStackPerIteration(rewriter, func);
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      func.removeArgAttr(i, kHostMemoryArgAttr);
  }
};

} // namespace

} // namespace attn
