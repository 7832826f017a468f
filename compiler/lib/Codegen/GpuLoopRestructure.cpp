//===- GpuLoopRestructure.cpp - Host loops as parallel kernels ------------===//
//
// See GpuLoopRestructure.h.
//
//===----------------------------------------------------------------------===//

#include "GpuLoopRestructure.h"

#include "BufferUses.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

namespace attn {

namespace {

/// Threads of a split full reduction: enough to fill the GPU's
/// multiprocessors, few enough that the final sum of their partial sums is
/// short.
constexpr int64_t kPartialSums = 4096;

/// A load or store: the buffer and the indices.
struct Access {
  Value buffer;
  SmallVector<Value> indices;
  bool write;
};

/// The allocation `buffer` belongs to, an arena slot counting as one.
Value allocationOf(Value buffer) {
  return rootBuffer(buffer, /*arenaSlots=*/true);
}

/// Whether `op` has no memory effects but reads.
bool onlyReads(Operation *op) {
  if (isMemoryEffectFree(op))
    return true;
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  return effects && effects.onlyHasEffect<MemoryEffects::Read>();
}

/// The loads and stores in `region`; fails on any other op with memory
/// effects of its own.
LogicalResult collectAccesses(Region &region, SmallVectorImpl<Access> &out) {
  WalkResult result = region.walk([&](Operation *op) {
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      out.push_back({load.getMemRef(), llvm::to_vector(load.getIndices()),
                     false});
      return WalkResult::advance();
    }
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      out.push_back({store.getMemRef(), llvm::to_vector(store.getIndices()),
                     true});
      return WalkResult::advance();
    }
    if (op->hasTrait<OpTrait::HasRecursiveMemoryEffects>() ||
        isMemoryEffectFree(op))
      return WalkResult::advance();
    return WalkResult::interrupt();
  });
  return failure(result.wasInterrupted());
}

bool definedOutside(Value value, Operation *loop) {
  return !loop->isAncestor(value.getParentRegion()->getParentOp()) &&
         (value.getDefiningOp() == nullptr ||
          !loop->isAncestor(value.getDefiningOp()));
}

/// Whether dimension `dim` of `buffer` starts at the same element of its
/// allocation in every iteration of `loop`: the buffer is defined outside
/// the loop, or is a subview with a constant offset in that dimension of
/// such a buffer.
bool offsetInvariant(Value buffer, unsigned dim, Operation *loop) {
  if (definedOutside(buffer, loop))
    return true;
  auto subview = buffer.getDefiningOp<memref::SubViewOp>();
  if (!subview ||
      subview.getSourceType().getRank() != subview.getType().getRank() ||
      ShapedType::isDynamic(subview.getStaticOffsets()[dim]))
    return false;
  return offsetInvariant(subview.getSource(), dim, loop);
}

bool hasTripCountOne(scf::ParallelOp par, unsigned k) {
  std::optional<int64_t> lower = getConstantIntValue(par.getLowerBound()[k]);
  std::optional<int64_t> upper = getConstantIntValue(par.getUpperBound()[k]);
  std::optional<int64_t> step = getConstantIntValue(par.getStep()[k]);
  return lower && upper && step && *upper - *lower <= *step;
}

/// Whether iterations of `par` with different induction variables never
/// write memory another iteration (of any row of `loop`) reads or writes,
/// and `preReads` (the row's own loads) read nothing `par` writes.
bool columnsIndependent(scf::ForOp loop, scf::ParallelOp par,
                        ArrayRef<Access> accesses, ArrayRef<Access> preReads) {
  for (const Access &w : accesses) {
    if (!w.write)
      continue;
    for (unsigned k = 0; k < par.getNumLoops(); ++k) {
      if (hasTripCountOne(par, k))
        continue;
      auto at = llvm::find(w.indices, par.getInductionVars()[k]);
      if (at == w.indices.end() ||
          !offsetInvariant(w.buffer, at - w.indices.begin(), loop))
        return false;
    }
    Value allocation = allocationOf(w.buffer);
    for (const Access &other : accesses)
      if (&other != &w && allocationOf(other.buffer) == allocation &&
          (other.buffer != w.buffer || other.indices != w.indices))
        return false;
    for (const Access &read : preReads)
      if (allocationOf(read.buffer) == allocation)
        return false;
  }
  return true;
}

} // namespace

FailureOr<scf::ParallelOp> interchangeRowLoop(RewriterBase &rewriter,
                                              scf::ForOp loop) {
  if (loop.getNumResults() != 0)
    return failure();
  Block *body = loop.getBody();
  Operation *last = body->getTerminator()->getPrevNode();
  // Nested row loops (rows of a [B, T, D] tensor) from the inside out.
  if (auto inner = dyn_cast_or_null<scf::ForOp>(last))
    if (FailureOr<scf::ParallelOp> columns = interchangeRowLoop(rewriter, inner);
        succeeded(columns))
      last = *columns;
  auto par = dyn_cast_or_null<scf::ParallelOp>(last);
  if (!par || !par.getInitVals().empty())
    return failure();
  for (Operation &op : body->without_terminator())
    if (&op != par && (op.getNumRegions() != 0 || !onlyReads(&op)))
      return failure();
  for (Value bound : llvm::concat<Value>(par.getLowerBound(),
                                         par.getUpperBound(), par.getStep()))
    if (!definedOutside(bound, loop))
      return failure();
  SmallVector<Access> accesses, preReads;
  if (failed(collectAccesses(par.getRegion(), accesses)))
    return failure();
  for (Operation &op : body->without_terminator())
    if (auto load = dyn_cast<memref::LoadOp>(op))
      preReads.push_back({load.getMemRef(), {}, false});
  if (!columnsIndependent(loop, par, accesses, preReads))
    return failure();

  rewriter.setInsertionPoint(loop);
  auto columns = scf::ParallelOp::create(
      rewriter, par.getLoc(), par.getLowerBound(), par.getUpperBound(),
      par.getStep(), [&](OpBuilder &b, Location l, ValueRange ivs) {
        scf::ForOp::create(
            b, loop.getLoc(), loop.getLowerBound(), loop.getUpperBound(),
            loop.getStep(), ValueRange{},
            [&](OpBuilder &fb, Location fl, Value row, ValueRange) {
              IRMapping mapping;
              mapping.map(loop.getInductionVar(), row);
              mapping.map(par.getInductionVars(), ivs);
              for (Operation &op : body->without_terminator())
                if (&op != par)
                  fb.clone(op, mapping);
              for (Operation &op : par.getBody()->without_terminator())
                fb.clone(op, mapping);
              scf::YieldOp::create(fb, fl);
            });
      });
  rewriter.eraseOp(loop);
  return columns;
}

FailureOr<scf::ParallelOp> splitFullReduction(RewriterBase &rewriter,
                                              scf::ForOp loop) {
  if (loop.getNumResults() != 0)
    return failure();
  Block *body = loop.getBody();
  auto store = dyn_cast<memref::StoreOp>(body->getTerminator()->getPrevNode());
  if (!store || !isa<FloatType>(store.getValueToStore().getType()))
    return failure();
  auto add = store.getValueToStore().getDefiningOp<arith::AddFOp>();
  if (!add || add->getBlock() != body)
    return failure();
  Value acc = store.getMemRef();
  for (Value index : store.getIndices())
    if (!definedOutside(index, loop))
      return failure();
  // acc[c] read once, by the add, at the stored element.
  memref::LoadOp accLoad;
  for (Value operand : add->getOperands())
    if (auto load = operand.getDefiningOp<memref::LoadOp>();
        load && load.getMemRef() == acc &&
        load.getIndices() == store.getIndices() && load->hasOneUse())
      accLoad = load;
  if (!accLoad || accLoad->getBlock() != body)
    return failure();
  Value accAllocation = allocationOf(acc);
  for (Operation &op : body->without_terminator()) {
    if (&op == store || &op == accLoad)
      continue;
    if (op.getNumRegions() != 0 || !onlyReads(&op))
      return failure();
    if (auto load = dyn_cast<memref::LoadOp>(op);
        load && allocationOf(load.getMemRef()) == accAllocation)
      return failure();
  }

  Location loc = loop.getLoc();
  Type element = store.getValueToStore().getType();
  rewriter.setInsertionPoint(loop);
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  Value count = arith::ConstantIndexOp::create(rewriter, loc, kPartialSums);
  auto partialsType = MemRefType::get({kPartialSums}, element);
  Value partials = gpu::AllocOp::create(rewriter, loc, partialsType, Type(),
                                        ValueRange{}, ValueRange{},
                                        ValueRange{}, false)
                       .getMemref();
  // Thread p sums elements p, p + P, p + 2P, ... (in steps of the loop's).
  auto threads = scf::ParallelOp::create(
      rewriter, loc, zero, count, one,
      [&](OpBuilder &b, Location l, ValueRange ivs) {
        Value start = arith::AddIOp::create(
            b, l, loop.getLowerBound(),
            arith::MulIOp::create(b, l, ivs[0], loop.getStep()));
        Value stride = arith::MulIOp::create(b, l, count, loop.getStep());
        Value identity = arith::ConstantOp::create(
            b, l, element, b.getFloatAttr(element, 0.0));
        auto sum = scf::ForOp::create(
            b, l, start, loop.getUpperBound(), stride, ValueRange{identity},
            [&](OpBuilder &fb, Location fl, Value i, ValueRange args) {
              IRMapping mapping;
              mapping.map(loop.getInductionVar(), i);
              mapping.map(accLoad.getResult(), args[0]);
              for (Operation &op : body->without_terminator())
                if (&op != store && &op != accLoad)
                  fb.clone(op, mapping);
              scf::YieldOp::create(fb, fl, mapping.lookup(add.getResult()));
            });
        memref::StoreOp::create(b, l, sum.getResult(0), partials, ivs);
      });
  // acc[c] += the partial sums, in order.
  scf::ForOp::create(
      rewriter, loc, zero, count, one, ValueRange{},
      [&](OpBuilder &b, Location l, Value p, ValueRange) {
        Value total = memref::LoadOp::create(b, l, acc, store.getIndices());
        Value part = memref::LoadOp::create(b, l, partials, ValueRange{p});
        memref::StoreOp::create(b, l,
                                arith::AddFOp::create(b, l, total, part),
                                acc, store.getIndices());
        scf::YieldOp::create(b, l);
      });
  gpu::DeallocOp::create(rewriter, loc, Type(), ValueRange{}, partials);
  rewriter.eraseOp(loop);
  return threads;
}

} // namespace attn
