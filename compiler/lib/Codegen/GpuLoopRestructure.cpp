//===- GpuLoopRestructure.cpp - Host loops as parallel kernels ------------===//
//
// See GpuLoopRestructure.h.
//
//===----------------------------------------------------------------------===//

#include "GpuLoopRestructure.h"

#include "BufferUses.h"
#include "GpuWarpTiles.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/bit.h"

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
  Operation *op;
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
      out.push_back(
          {load.getMemRef(), llvm::to_vector(load.getIndices()), false, op});
      return WalkResult::advance();
    }
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      out.push_back(
          {store.getMemRef(), llvm::to_vector(store.getIndices()), true, op});
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
    if (FailureOr<scf::ParallelOp> columns =
            interchangeRowLoop(rewriter, inner);
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
      preReads.push_back({load.getMemRef(), {}, false, load});
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

namespace {

/// `acc[c] = combine(acc[c], v)`: `combine` an associative floating-point
/// op (a sum, a maximum or a minimum) and `c` the same element in every
/// iteration of the loops around it.
struct Accumulator {
  memref::StoreOp store;
  memref::LoadOp load; // acc[c]
  Operation *combine;
  Value value; // v, the operand of `combine` that is not acc[c]
  TypedAttr identity;
};

/// One or more accumulators (a layer norm's weight and bias gradients) as
/// the innermost body of a perfect nest of sequential loops.
struct Accumulation {
  SmallVector<scf::ForOp> nest; // outermost first
  SmallVector<Accumulator> accumulators;

  Block *body() { return nest.back().getBody(); }
  bool isAccumulatorOp(Operation *op) {
    return llvm::any_of(accumulators, [&](Accumulator &a) {
      return op == a.store || op == a.load;
    });
  }
};

/// The identity of `combine`, if it is an op partial results can be
/// combined with in any grouping.
TypedAttr combineIdentity(Operation *combine, FloatType type) {
  Builder b(combine->getContext());
  if (isa<arith::AddFOp>(combine))
    return b.getFloatAttr(type, 0.0);
  bool max = isa<arith::MaximumFOp, arith::MaxNumFOp>(combine);
  if (!max && !isa<arith::MinimumFOp, arith::MinNumFOp>(combine))
    return {};
  return b.getFloatAttr(
      type, APFloat::getInf(type.getFloatSemantics(), /*Negative=*/max));
}

/// The accumulator `store` ends, if it ends one: acc and c are defined
/// outside `outer`, and acc[c] is read once in `body`, for `combine`, whose
/// result only `store` uses.
FailureOr<Accumulator> matchAccumulator(memref::StoreOp store, Block *body,
                                        scf::ForOp outer) {
  Accumulator acc{store, {}, store.getValueToStore().getDefiningOp(), {}, {}};
  auto type = dyn_cast<FloatType>(store.getValueToStore().getType());
  if (!type || !acc.combine || acc.combine->getBlock() != body ||
      acc.combine->getNumOperands() != 2 || !acc.combine->hasOneUse())
    return failure();
  acc.identity = combineIdentity(acc.combine, type);
  if (!acc.identity || !definedOutside(store.getMemRef(), outer))
    return failure();
  for (Value index : store.getIndices())
    if (!definedOutside(index, outer))
      return failure();
  for (OpOperand &operand : acc.combine->getOpOperands())
    if (auto load = operand.get().getDefiningOp<memref::LoadOp>();
        load && load.getMemRef() == store.getMemRef() &&
        load.getIndices() == store.getIndices() && load->hasOneUse() &&
        load->getBlock() == body) {
      acc.load = load;
      acc.value = acc.combine->getOperand(1 - operand.getOperandNumber());
    }
  if (!acc.load)
    return failure();
  return acc;
}

/// The accumulation `outer` is, if it is one: its loops carry no values and
/// take their bounds from outside the nest, each store of the innermost
/// body ends an accumulator into an allocation of its own, and every other
/// op only reads memory that is no accumulator's.
FailureOr<Accumulation> matchAccumulation(scf::ForOp outer) {
  Accumulation match;
  for (scf::ForOp loop = outer; loop;) {
    if (loop.getNumResults() != 0)
      return failure();
    for (Value bound :
         {loop.getLowerBound(), loop.getUpperBound(), loop.getStep()})
      if (!definedOutside(bound, outer))
        return failure();
    match.nest.push_back(loop);
    Block *body = loop.getBody();
    auto inner = dyn_cast<scf::ForOp>(body->front());
    loop = inner && &body->front() == body->getTerminator()->getPrevNode()
               ? inner
               : scf::ForOp();
  }
  Block *body = match.body();
  DenseSet<Value> allocations;
  for (auto store : body->getOps<memref::StoreOp>()) {
    FailureOr<Accumulator> acc = matchAccumulator(store, body, outer);
    if (failed(acc) ||
        !allocations.insert(allocationOf(store.getMemRef())).second)
      return failure();
    match.accumulators.push_back(*acc);
  }
  if (match.accumulators.empty())
    return failure();
  for (Operation &op : body->without_terminator()) {
    if (match.isAccumulatorOp(&op))
      continue;
    if (op.getNumRegions() != 0 || !onlyReads(&op))
      return failure();
    if (auto load = dyn_cast<memref::LoadOp>(op);
        load && allocations.contains(allocationOf(load.getMemRef())))
      return failure();
  }
  return match;
}

/// The columns a split accumulation runs for: the upper bounds of a
/// parallel loop's dimensions from 0 in steps of 1 (none for one element),
/// its induction variables, and the side-effect-free ops of its body before
/// the nest.
struct Columns {
  SmallVector<Value> upper;
  SmallVector<Value> ivs;
  SmallVector<Operation *> prefix;
};

/// How the rows are sliced: how many slices, and whether the slice is the
/// fastest dimension of the partial results' loop (rows read along their
/// contiguous dimension, so that a warp's lanes read consecutive elements)
/// or the slowest (columns contiguous).
struct Slicing {
  int64_t count;
  bool last;
};

/// A parallel loop from 0 in steps of 1 over `columns` and, with `slicing`,
/// its slices (one iteration when there is neither), whose body clones the
/// prefix and then calls `body` with the mapping, the slice (null without
/// slicing) and the columns' induction variables.
scf::ParallelOp buildColumnsLoop(
    OpBuilder &b, Location loc, const Columns &columns,
    std::optional<Slicing> slicing,
    function_ref<void(OpBuilder &, IRMapping &, Value, ValueRange)> body) {
  SmallVector<Value> upper(columns.upper);
  if (slicing) {
    Value count = arith::ConstantIndexOp::create(b, loc, slicing->count);
    upper.insert(slicing->last ? upper.end() : upper.begin(), count);
  }
  if (upper.empty())
    upper.push_back(arith::ConstantIndexOp::create(b, loc, 1));
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  return scf::ParallelOp::create(
      b, loc, SmallVector<Value>(upper.size(), zero), upper,
      SmallVector<Value>(upper.size(), one),
      [&](OpBuilder &pb, Location, ValueRange ivs) {
        Value slice;
        if (slicing) {
          slice = slicing->last ? ivs.back() : ivs.front();
          ivs = slicing->last ? ivs.drop_back() : ivs.drop_front();
        }
        ivs = ivs.take_front(columns.ivs.size());
        IRMapping mapping;
        mapping.map(columns.ivs, ivs);
        for (Operation *op : columns.prefix)
          pb.clone(*op, mapping);
        body(pb, mapping, slice, ivs);
      });
}

/// The accumulation as two parallel loops over a temporary P of the
/// columns and the slices: partial results over `slicing.count`
/// interleaved slices of the innermost loop (slice s taking its iterations
/// s, s + count, ...), then acc[c] combined with them in slice order, or
/// the accumulator's `initial` value instead of acc[c] where given. Both
/// are inserted before the rewriter's insertion point; the caller erases
/// what they replace.
SplitReduction buildSplit(RewriterBase &rewriter, Location loc,
                          Accumulation &match, const Columns &columns,
                          Slicing slicing, ArrayRef<Value> initial = {}) {
  SmallVector<int64_t> shape;
  SmallVector<Value> dynamicSizes;
  for (Value size : columns.upper) {
    std::optional<int64_t> constant = getConstantIntValue(size);
    shape.push_back(constant ? *constant : ShapedType::kDynamic);
    if (!constant)
      dynamicSizes.push_back(size);
  }
  shape.insert(slicing.last ? shape.end() : shape.begin(), slicing.count);
  SmallVector<Value> partials;
  for (Accumulator &acc : match.accumulators)
    partials.push_back(
        gpu::AllocOp::create(
            rewriter, loc, MemRefType::get(shape, acc.identity.getType()),
            Type(), ValueRange{}, dynamicSizes, ValueRange{}, false)
            .getMemref());
  auto partialIndices = [&](Value slice, ValueRange columnIvs) {
    SmallVector<Value> indices(columnIvs);
    indices.insert(slicing.last ? indices.end() : indices.begin(), slice);
    return indices;
  };

  scf::ParallelOp partialLoop = buildColumnsLoop(
      rewriter, loc, columns, slicing,
      [&](OpBuilder &b, IRMapping &mapping, Value slice, ValueRange ivs) {
        SmallVector<Value> lower, upper, steps;
        for (scf::ForOp loop : match.nest) {
          lower.push_back(mapping.lookupOrDefault(loop.getLowerBound()));
          upper.push_back(mapping.lookupOrDefault(loop.getUpperBound()));
          steps.push_back(mapping.lookupOrDefault(loop.getStep()));
        }
        lower.back() = arith::AddIOp::create(
            b, loc, lower.back(),
            arith::MulIOp::create(b, loc, slice, steps.back()));
        steps.back() = arith::MulIOp::create(
            b, loc, steps.back(),
            arith::ConstantIndexOp::create(b, loc, slicing.count));
        SmallVector<Value> identities;
        for (Accumulator &acc : match.accumulators)
          identities.push_back(arith::ConstantOp::create(b, loc, acc.identity));
        scf::LoopNest nest = scf::buildLoopNest(
            b, loc, lower, upper, steps, identities,
            [&](OpBuilder &nb, Location, ValueRange loopIvs,
                ValueRange carried) -> scf::ValueVector {
              for (auto [loop, iv] : llvm::zip(match.nest, loopIvs))
                mapping.map(loop.getInductionVar(), iv);
              for (auto [acc, partial] : llvm::zip(match.accumulators, carried))
                mapping.map(acc.load.getResult(), partial);
              for (Operation &op : match.body()->without_terminator())
                if (!match.isAccumulatorOp(&op))
                  nb.clone(op, mapping);
              scf::ValueVector results;
              for (Accumulator &acc : match.accumulators)
                results.push_back(mapping.lookup(acc.combine->getResult(0)));
              return results;
            });
        for (auto [result, buffer] : llvm::zip(nest.results, partials))
          memref::StoreOp::create(b, loc, result, buffer,
                                  partialIndices(slice, ivs));
      });

  scf::ParallelOp totalLoop = buildColumnsLoop(
      rewriter, loc, columns, std::nullopt,
      [&](OpBuilder &b, IRMapping &mapping, Value, ValueRange ivs) {
        SmallVector<SmallVector<Value>> indices;
        SmallVector<Value> starts;
        for (auto [i, acc] : llvm::enumerate(match.accumulators)) {
          indices.emplace_back();
          for (Value index : acc.store.getIndices())
            indices.back().push_back(mapping.lookupOrDefault(index));
          starts.push_back(!initial.empty() && initial[i]
                               ? initial[i]
                               : memref::LoadOp::create(b, loc,
                                                        acc.store.getMemRef(),
                                                        indices.back()));
        }
        auto combined = scf::ForOp::create(
            b, loc, arith::ConstantIndexOp::create(b, loc, 0),
            arith::ConstantIndexOp::create(b, loc, slicing.count),
            arith::ConstantIndexOp::create(b, loc, 1), starts,
            [&](OpBuilder &fb, Location, Value slice, ValueRange carried) {
              SmallVector<Value> next;
              for (auto [acc, buffer, total] :
                   llvm::zip(match.accumulators, partials, carried)) {
                Value part = memref::LoadOp::create(fb, loc, buffer,
                                                    partialIndices(slice, ivs));
                IRMapping operands;
                operands.map(acc.load.getResult(), total);
                operands.map(acc.value, part);
                next.push_back(fb.clone(*acc.combine, operands)->getResult(0));
              }
              scf::YieldOp::create(fb, loc, next);
            });
        for (auto [acc, result, at] :
             llvm::zip(match.accumulators, combined.getResults(), indices))
          memref::StoreOp::create(b, loc, result, acc.store.getMemRef(), at);
      });
  for (Value buffer : partials)
    gpu::DeallocOp::create(rewriter, loc, Type(), ValueRange{}, buffer);
  return {partialLoop, totalLoop};
}

/// Slices of a column reduction's rows: enough for about this many threads
/// in all, so that the GPU's multiprocessors are busy...
constexpr int64_t kSplitThreads = 65536;
/// ... at most this many, so that combining them stays short...
constexpr int64_t kMaxSlices = 256;
/// ... and at least this many, or the reduction is left as it is.
constexpr int64_t kMinSlices = 4;
/// Slices of a long row (a warp's lanes, reading consecutive elements),
/// and the fewest static elements a row needs to be sliced.
constexpr int64_t kRowSlices = 32;
constexpr int64_t kMinRowLength = 256;

/// Whether the accumulation reads rows of its own: every load that depends
/// on the innermost loop takes it as its last, contiguous index and is
/// indexed by every column too (nothing one column reads is read by
/// another, as a matrix product's operands are), and there is such a load.
bool readsOwnRows(Accumulation &match, ValueRange columnIvs) {
  Value row = match.nest.back().getInductionVar();
  bool any = false;
  for (Operation &op : match.body()->without_terminator()) {
    auto load = dyn_cast<memref::LoadOp>(op);
    if (!load || match.isAccumulatorOp(load) ||
        !llvm::is_contained(load.getIndices(), row))
      continue;
    if (load.getIndices().back() != row)
      return false;
    for (Value column : columnIvs)
      if (!llvm::is_contained(load.getIndices(), column))
        return false;
    any = true;
  }
  return any;
}

/// How to slice the rows of `match` inside the parallel loop over
/// `columns`, if it is worth it: few static columns (a bias's gradient)
/// take slices of the rows, the slice the slowest dimension; many or
/// dynamic columns whose long static rows are their own (a row's sum or
/// maximum over a vocabulary) take a warp's lanes, the slice the fastest.
std::optional<Slicing> chooseSlicing(Accumulation &match,
                                     const Columns &columns) {
  // The number of columns, if static and at most kSplitThreads.
  std::optional<int64_t> count = 1;
  for (Value size : columns.upper) {
    std::optional<int64_t> constant = getConstantIntValue(size);
    count = count && constant && *count * *constant <= kSplitThreads
                ? std::optional(*count * *constant)
                : std::nullopt;
  }
  std::optional<int64_t> rows;
  if (std::optional<APInt> trips = match.nest.back().getStaticTripCount())
    rows = trips->getZExtValue();
  if (count && *count > 0) {
    int64_t slices = std::min(
        kMaxSlices, int64_t(llvm::bit_floor(uint64_t(kSplitThreads / *count))));
    // Each slice takes at least 4 of the innermost loop's iterations.
    if (rows)
      slices = std::min(slices, int64_t(llvm::bit_floor(uint64_t(*rows / 4))));
    if (slices >= kMinSlices)
      return Slicing{slices, /*last=*/false};
  }
  if (rows && *rows >= kMinRowLength && readsOwnRows(match, columns.ivs))
    return Slicing{kRowSlices, /*last=*/true};
  return std::nullopt;
}

/// A parallel loop's body as splitColumnReduction and absorbInitialFills
/// take it: side-effect-free ops (`prefix`), stores of values defined
/// outside the loop (`initialStores`, which absorbInitialFills made), and
/// an accumulation (`match`) last.
struct ColumnAccumulation {
  Accumulation match;
  SmallVector<Operation *> prefix;
  SmallVector<memref::StoreOp> initialStores;
};

FailureOr<ColumnAccumulation> matchColumnAccumulation(scf::ParallelOp par) {
  if (!par.getInitVals().empty())
    return failure();
  Block *body = par.getBody();
  auto outer =
      dyn_cast_or_null<scf::ForOp>(body->getTerminator()->getPrevNode());
  if (!outer)
    return failure();
  ColumnAccumulation result;
  for (Operation &op : body->without_terminator()) {
    if (&op == outer.getOperation())
      continue;
    if (auto store = dyn_cast<memref::StoreOp>(op);
        store && definedOutside(store.getValueToStore(), par)) {
      result.initialStores.push_back(store);
      continue;
    }
    if (op.getNumRegions() != 0 || !isMemoryEffectFree(&op))
      return failure();
    result.prefix.push_back(&op);
  }
  FailureOr<Accumulation> match = matchAccumulation(outer);
  if (failed(match))
    return failure();
  result.match = std::move(*match);
  return result;
}

/// The accumulator of `match` into buffer[indices], if there is one (two
/// constants of one value being the same index).
Accumulator *findAccumulator(Accumulation &match, Value buffer,
                             ArrayRef<OpFoldResult> indices) {
  for (Accumulator &acc : match.accumulators)
    if (acc.store.getMemRef() == buffer &&
        llvm::equal(getAsOpFoldResult(acc.store.getIndices()), indices,
                    isEqualConstantIntOrValue))
      return &acc;
  return nullptr;
}

/// Whether `loop` is written for a warp's lanes (WarpLanes.h): its last
/// dimension runs over kWarpSize lanes and its body shuffles between them.
bool isWarpLoop(scf::ParallelOp loop) {
  unsigned n = loop.getNumLoops();
  return n > 1 && isConstantIntValue(loop.getUpperBound()[n - 1], kWarpSize) &&
         loop.getBody()
              ->walk([](gpu::ShuffleOp) { return WalkResult::interrupt(); })
              .wasInterrupted();
}

/// Whether `op`, in warp loop `loop`, runs in its lane 0 only: under an
/// `scf.if` on lane == 0.
bool inLaneZero(Operation *op, scf::ParallelOp loop) {
  Value lane = loop.getInductionVars().back();
  for (Operation *parent = op->getParentOp(); parent != loop;
       parent = parent->getParentOp()) {
    auto branch = dyn_cast<scf::IfOp>(parent);
    auto test = branch ? branch.getCondition().getDefiningOp<arith::CmpIOp>()
                       : arith::CmpIOp();
    if (test && test.getPredicate() == arith::CmpIPredicate::eq &&
        test.getLhs() == lane && isConstantIntValue(test.getRhs(), 0) &&
        branch.getThenRegion().isAncestor(op->getParentRegion()))
      return true;
  }
  return false;
}

/// The induction variables of `loop` over its columns: all of them but a
/// warp loop's lanes.
SmallVector<Value> columnIvs(scf::ParallelOp loop) {
  SmallVector<Value> ivs = loop.getInductionVars();
  if (isWarpLoop(loop))
    ivs.pop_back();
  return ivs;
}

/// How an access of `loop`'s body indexes its buffer, if by the loop's own
/// index (its columns', columnIvs): each of them once, in order, with
/// constants between them ([i, 0] of a row's statistic of a [rows, 1]
/// buffer). An induction variable k is written -(k + 1), a constant as
/// itself; then every iteration touches elements of its own, the same ones
/// in every loop that indexes the buffer alike.
std::optional<SmallVector<int64_t>> ownIndexPattern(ValueRange indices,
                                                    scf::ParallelOp loop) {
  SmallVector<int64_t> pattern;
  int64_t next = 0;
  SmallVector<Value> ivs = columnIvs(loop);
  for (Value index : indices) {
    auto iv = llvm::find(ivs, index);
    if (iv != ivs.end()) {
      if (iv - ivs.begin() != next)
        return std::nullopt;
      pattern.push_back(-(++next));
      continue;
    }
    std::optional<int64_t> constant = getConstantIntValue(index);
    if (!constant || *constant < 0)
      return std::nullopt;
    pattern.push_back(*constant);
  }
  if (next != static_cast<int64_t>(ivs.size()))
    return std::nullopt;
  return pattern;
}

/// Whether an own index `pattern` (ownIndexPattern) of `buffer` leaves out
/// only its dims of static size 1 (index 0 there): a loop over all of the
/// pattern's induction variables' ranges covers every element.
bool coversEveryElement(const std::optional<SmallVector<int64_t>> &pattern,
                        Value buffer) {
  if (!pattern)
    return false;
  auto type = cast<MemRefType>(buffer.getType());
  for (auto [d, index] : llvm::enumerate(*pattern))
    if (index >= 0 && (index != 0 || type.getDimSize(d) != 1))
      return false;
  return true;
}

/// A fill: every element of `buffer`, indexed by the loop's own index
/// (`pattern`, ownIndexPattern), set to `value`.
struct Fill {
  Value buffer, value;
  SmallVector<int64_t> pattern;
};

/// `loop` as a fill, if it is one: `parallel j { buffer[j] = value }` (or
/// `buffer[j, 0]` of a [rows, 1] buffer) from 0 in steps of 1, `value`
/// defined outside it.
std::optional<Fill> matchFill(scf::ParallelOp loop) {
  Block *body = loop.getBody();
  auto store = dyn_cast<memref::StoreOp>(body->front());
  if (!loop.getInitVals().empty() || body->getOperations().size() != 2 ||
      !store || !definedOutside(store.getValueToStore(), loop))
    return std::nullopt;
  std::optional<SmallVector<int64_t>> pattern =
      ownIndexPattern(store.getIndices(), loop);
  if (!coversEveryElement(pattern, store.getMemRef()))
    return std::nullopt;
  return Fill{store.getMemRef(), store.getValueToStore(), *pattern};
}

/// The indices `pattern` (ownIndexPattern) gives in `loop`'s body: its
/// induction variables and constants.
SmallVector<OpFoldResult> indicesOf(ArrayRef<int64_t> pattern,
                                    scf::ParallelOp loop) {
  Builder b(loop.getContext());
  SmallVector<OpFoldResult> indices;
  for (int64_t index : pattern)
    indices.push_back(index < 0
                          ? OpFoldResult(loop.getInductionVars()[-index - 1])
                          : OpFoldResult(b.getIndexAttr(index)));
  return indices;
}

/// `size` traced back as far as canonicalSize goes, however many reshapes
/// the trace crosses (a layer's sizes come through every layer before it),
/// and through the sizes of arena slots (memref.view).
Value tracedSize(Value size) {
  while (true) {
    Value next = canonicalSize(size);
    if (auto dim = next.getDefiningOp<memref::DimOp>()) {
      auto view = dim.getSource().getDefiningOp<memref::ViewOp>();
      std::optional<int64_t> index = dim.getConstantIndex();
      if (view && index && view.getType().isDynamicDim(*index))
        next = view.getSizes()[view.getType().getDynamicDimIndex(*index)];
    }
    if (next == size)
      return size;
    size = next;
  }
}

/// Whether `a` and `b` run over the same columns (columnIvs) from 0 in
/// steps of 1, their upper bounds equal as tracedSize traces them.
bool sameColumns(scf::ParallelOp a, scf::ParallelOp b) {
  if (columnIvs(a).size() != columnIvs(b).size())
    return false;
  for (scf::ParallelOp loop : {a, b})
    for (auto [lower, step] : llvm::zip(loop.getLowerBound(), loop.getStep()))
      if (!isConstantIntValue(lower, 0) || !isConstantIntValue(step, 1))
        return false;
  for (auto [x, y] : llvm::zip(a.getUpperBound(), b.getUpperBound())) {
    Value tx = tracedSize(x), ty = tracedSize(y);
    std::optional<int64_t> cx = getConstantIntValue(tx),
                           cy = getConstantIntValue(ty);
    if (cx || cy ? cx != cy : tx != ty)
      return false;
  }
  return true;
}

/// The allocations `op` and the ops in it read, write or free (an arena
/// slot counting as one); fails if an effect's memory is unknown (a call).
LogicalResult collectTouched(Operation *op, DenseSet<Value> &touched) {
  WalkResult result = op->walk([&](Operation *nested) {
    if (nested->hasTrait<OpTrait::HasRecursiveMemoryEffects>() ||
        isMemoryEffectFree(nested))
      return WalkResult::advance();
    auto effects = dyn_cast<MemoryEffectOpInterface>(nested);
    if (!effects)
      return WalkResult::interrupt();
    SmallVector<MemoryEffects::EffectInstance> instances;
    effects.getEffects(instances);
    for (const MemoryEffects::EffectInstance &effect : instances) {
      Value value = effect.getValue();
      if (!value)
        return WalkResult::interrupt();
      touched.insert(allocationOf(value));
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

/// If `loop` copies every element of `filled` (the buffer `fill` just
/// filled, over the same columns) into another buffer: `loop` made to store
/// the fill's value instead, a fill of its target.
bool copyOfFillToFill(scf::ParallelOp loop, scf::ParallelOp fill,
                      Value filled, Value value) {
  Block *body = loop.getBody();
  auto load = dyn_cast<memref::LoadOp>(body->front());
  auto store = load ? dyn_cast<memref::StoreOp>(load->getNextNode())
                    : memref::StoreOp();
  if (!store || body->getOperations().size() != 3 ||
      load.getMemRef() != filled || store.getValueToStore() != load ||
      !llvm::equal(load.getIndices(), store.getIndices()) ||
      !coversEveryElement(ownIndexPattern(load.getIndices(), loop), filled) ||
      !sameColumns(fill, loop))
    return false;
  store.getValueMutable().assign(value);
  load->erase();
  return true;
}

/// The op before `op` with effects, past side-effect-free ops and frees.
Operation *previousPastFrees(Operation *op) {
  Operation *prev = previousWithEffects(op);
  while (isa_and_nonnull<memref::DeallocOp, gpu::DeallocOp>(prev))
    prev = previousWithEffects(prev);
  return prev;
}

/// The parallel loop before `op` with only side-effect-free ops and frees
/// between them, if there is one.
scf::ParallelOp previousLoop(Operation *op) {
  return dyn_cast_or_null<scf::ParallelOp>(previousPastFrees(op));
}

/// A loop fuseSameColumnLoops may merge: plain, over columns of its own.
bool isFusable(scf::ParallelOp loop) {
  return loop.getInitVals().empty() && !tiledKernelProcessors(loop);
}

/// Whether `value` (through its views) is used by an op of `block` before
/// `op` (`before`) or after it.
bool usedBeside(Value value, Block &block, Operation *op, bool before) {
  SmallVector<Operation *> users;
  collectUsers(value, users);
  return llvm::any_of(users, [&](Operation *user) {
    Operation *ancestor = block.findAncestorOpInBlock(*user);
    return !isBufferView(user) && ancestor &&
           (before ? ancestor->isBeforeInBlock(op)
                   : op->isBeforeInBlock(ancestor));
  });
}

/// Whether `first` and `second` (adjacent, over the same columns) can run
/// as one loop: memory both touch, one writing it, is touched through one
/// buffer at the columns' own index only (one ownIndexPattern), and by a
/// warp loop `first` in its lane 0 only (where `second` will run); and two
/// arena slots only one of them touches (one writing) cannot be one slot's
/// memory reused: the arena was planned for the loops one after the other,
/// so a slot last used in `first` may share memory with one first written
/// in `second`, unless the former is still used after `second` or the
/// latter already before `first`.
bool canFuse(scf::ParallelOp first, scf::ParallelOp second) {
  SmallVector<Access> firstAccesses, secondAccesses;
  if (failed(collectAccesses(first.getRegion(), firstAccesses)) ||
      failed(collectAccesses(second.getRegion(), secondAccesses)))
    return false;
  struct Use {
    bool first = false, second = false, written = false, ownIndex = true;
    // Touched by a lane of a warp loop `first` other than lane 0, which
    // runs no part of `second`.
    bool otherLanes = false;
    std::optional<SmallVector<int64_t>> pattern;
    SmallPtrSet<Value, 2> buffers;
  };
  llvm::MapVector<Value, Use> uses;
  auto record = [&](ArrayRef<Access> accesses, scf::ParallelOp loop,
                    bool isFirst) {
    for (const Access &access : accesses) {
      Use &use = uses[allocationOf(access.buffer)];
      (isFirst ? use.first : use.second) = true;
      use.written |= access.write;
      use.otherLanes |=
          isFirst && isWarpLoop(loop) && !inLaneZero(access.op, loop);
      std::optional<SmallVector<int64_t>> pattern =
          ownIndexPattern(access.indices, loop);
      use.ownIndex &= pattern && (!use.pattern || *use.pattern == *pattern);
      if (!use.pattern)
        use.pattern = pattern;
      use.buffers.insert(access.buffer);
    }
  };
  record(firstAccesses, first, true);
  record(secondAccesses, second, false);
  SmallVector<Value> onlyFirst, onlySecond;
  for (auto &[allocation, use] : uses) {
    if (use.first && use.second) {
      if (use.written &&
          (!use.ownIndex || use.buffers.size() != 1 || use.otherLanes))
        return false;
      continue;
    }
    if (!allocation.getDefiningOp<memref::ViewOp>())
      continue;
    (use.first ? onlyFirst : onlySecond).push_back(allocation);
  }
  // A slot of `first` used after `second`, or one of `second` used before
  // `first`, is live across both loops. Across a branch's end
  // (sinkIntoBranch) no slot counts as live.
  Block &block = *first->getBlock();
  bool oneBlock = second->getBlock() == &block;
  llvm::erase_if(onlyFirst, [&](Value slot) {
    return oneBlock && usedBeside(slot, block, second, /*before=*/false);
  });
  llvm::erase_if(onlySecond, [&](Value slot) {
    return oneBlock && usedBeside(slot, block, first, /*before=*/true);
  });
  for (Value a : onlyFirst)
    for (Value b : onlySecond)
      if (uses[a].written || uses[b].written)
        return false;
  return true;
}

/// `second`'s body after `first`'s, in `first` (a warp loop's: in its
/// lane 0, once per column); `second` erased. The side-effect-free ops
/// between them (views, sizes `second` may use) move before `first`; frees
/// between them stay after it.
void mergeInto(scf::ParallelOp first, scf::ParallelOp second) {
  for (Operation *op = first->getNextNode(); op != second;) {
    Operation *next = op->getNextNode();
    if (isMemoryEffectFree(op))
      op->moveBefore(first);
    op = next;
  }
  Block *from = second.getBody(), *to = first.getBody();
  Operation *end = to->getTerminator();
  if (isWarpLoop(first)) {
    OpBuilder b(end);
    Location loc = second.getLoc();
    Value lane = first.getInductionVars().back();
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    auto laneZero = scf::IfOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, zero),
        /*withElseRegion=*/false);
    to = laneZero.thenBlock();
    end = to->getTerminator();
  }
  for (auto [a, b] : llvm::zip(second.getInductionVars(), columnIvs(first)))
    a.replaceAllUsesWith(b);
  from->getTerminator()->erase();
  to->getOperations().splice(end->getIterator(), from->getOperations());
  second->erase();
}

/// Whether `second` can join `first` as one loop (canFuse says when): a
/// warp loop joins only as `first`, the loop after it in its lane 0.
bool joins(scf::ParallelOp first, scf::ParallelOp second) {
  return first && isFusable(first) && isFusable(second) &&
         !isWarpLoop(second) && sameColumns(first, second) &&
         canFuse(first, second);
}

/// Whether `loop`, moved to the end of `way`, joins the loop there, or one
/// at the end of a way of a branch there (where sinkIntoBranch takes it).
bool joinsAtEnd(Block *way, scf::ParallelOp loop) {
  Operation *last = previousPastFrees(way->getTerminator());
  if (auto prev = dyn_cast_or_null<scf::ParallelOp>(last))
    return joins(prev, loop);
  auto branch = dyn_cast_or_null<scf::IfOp>(last);
  return branch && branch.getNumResults() == 0 && branch.elseBlock() &&
         (joinsAtEnd(branch.thenBlock(), loop) ||
          joinsAtEnd(branch.elseBlock(), loop));
}

/// A parallel loop right after a branch (side-effect-free ops between
/// them, which move before the branch) moved into both of its ways, when
/// the last loop of one of them can join it (in the other it stays a
/// kernel of its own): a product's bias, after the branch on its rows.
void sinkIntoBranch(scf::ParallelOp loop) {
  auto branch = dyn_cast_or_null<scf::IfOp>(previousWithEffects(loop));
  if (!branch || branch.getNumResults() != 0 || !branch.elseBlock())
    return;
  if (!joinsAtEnd(branch.thenBlock(), loop) &&
      !joinsAtEnd(branch.elseBlock(), loop))
    return;
  while (branch->getNextNode() != loop)
    branch->getNextNode()->moveBefore(branch);
  OpBuilder b(branch.thenBlock()->getTerminator());
  b.clone(*loop);
  loop->moveBefore(branch.elseBlock()->getTerminator());
}

/// fuseSameColumnLoops within one block, ways of branches included.
void fuseInBlock(Block &block) {
  for (auto loop : llvm::make_early_inc_range(block.getOps<scf::ParallelOp>()))
    if (isFusable(loop))
      sinkIntoBranch(loop);
  for (auto branch : block.getOps<scf::IfOp>())
    for (Region &way : branch->getRegions())
      for (Block &inner : way)
        fuseInBlock(inner);
  for (auto loop :
       llvm::make_early_inc_range(block.getOps<scf::ParallelOp>())) {
    scf::ParallelOp prev = previousLoop(loop);
    if (joins(prev, loop))
      mergeInto(prev, loop);
  }
}

} // namespace

void fuseSameColumnLoops(Block &block) { fuseInBlock(block); }

void sinkFills(Block &block) {
  SmallVector<scf::ParallelOp> fills;
  for (auto loop : block.getOps<scf::ParallelOp>())
    if (matchFill(loop))
      fills.push_back(loop);
  for (size_t i = 0; i < fills.size(); ++i) {
    scf::ParallelOp fill = fills[i];
    Fill filled = *matchFill(fill);
    Value buffer = filled.buffer;
    // The buffer, and what it is a slot of (the arena, freed whole).
    Value allocation = allocationOf(buffer), whole = rootBuffer(buffer);
    Operation *next = fill->getNextNode();
    for (; next && !next->hasTrait<OpTrait::IsTerminator>();
         next = next->getNextNode()) {
      DenseSet<Value> touched;
      if (failed(collectTouched(next, touched)))
        break;
      if (!touched.contains(allocation) && !touched.contains(whole))
        continue;
      auto copy = dyn_cast<scf::ParallelOp>(next);
      if (!copy || !copyOfFillToFill(copy, fill, buffer, filled.value))
        break;
      fills.push_back(copy);
    }
    fill->moveBefore(next);
  }
}

bool absorbInitialFills(RewriterBase &rewriter, scf::ParallelOp par) {
  FailureOr<ColumnAccumulation> columnMatch = matchColumnAccumulation(par);
  if (failed(columnMatch) || !columnMatch->initialStores.empty())
    return false;
  Accumulation &match = columnMatch->match;
  scf::ForOp outer = match.nest.front();
  DenseSet<Operation *> started;
  bool any = false;
  for (Operation *prev = previousWithEffects(par); prev;) {
    auto fill = dyn_cast<scf::ParallelOp>(prev);
    std::optional<Fill> filled = fill ? matchFill(fill) : std::nullopt;
    SmallVector<OpFoldResult> at =
        filled ? indicesOf(filled->pattern, par) : SmallVector<OpFoldResult>();
    Accumulator *acc =
        filled ? findAccumulator(match, filled->buffer, at) : nullptr;
    // A buffer filled twice keeps the later fill: stop at the earlier.
    if (!acc || !sameColumns(fill, par) ||
        !started.insert(acc->store).second)
      break;
    prev = previousWithEffects(fill);
    rewriter.setInsertionPoint(outer);
    memref::StoreOp::create(
        rewriter, fill.getLoc(), filled->value, filled->buffer,
        getValueOrCreateConstantIndexOp(rewriter, fill.getLoc(), at));
    rewriter.eraseOp(fill);
    any = true;
  }
  return any;
}

FailureOr<SplitReduction> splitFullReduction(RewriterBase &rewriter,
                                             scf::ForOp loop) {
  FailureOr<Accumulation> match = matchAccumulation(loop);
  if (failed(match))
    return failure();
  rewriter.setInsertionPoint(loop);
  SplitReduction split = buildSplit(rewriter, loop.getLoc(), *match, Columns{},
                                    Slicing{kPartialSums, false});
  rewriter.eraseOp(loop);
  return split;
}

FailureOr<SplitReduction> splitColumnReduction(RewriterBase &rewriter,
                                               scf::ParallelOp par) {
  Columns columns;
  columns.ivs = llvm::to_vector(par.getInductionVars());
  for (auto [lower, upper, step] :
       llvm::zip(par.getLowerBound(), par.getUpperBound(), par.getStep())) {
    if (!isConstantIntValue(lower, 0) || !isConstantIntValue(step, 1))
      return failure();
    columns.upper.push_back(upper);
  }
  FailureOr<ColumnAccumulation> columnMatch = matchColumnAccumulation(par);
  if (failed(columnMatch))
    return failure();
  Accumulation &match = columnMatch->match;
  columns.prefix = columnMatch->prefix;
  SmallVector<Value> initial(match.accumulators.size());
  for (memref::StoreOp store : columnMatch->initialStores) {
    Accumulator *acc = findAccumulator(match, store.getMemRef(),
                                       getAsOpFoldResult(store.getIndices()));
    if (!acc)
      return failure();
    initial[acc - match.accumulators.begin()] = store.getValueToStore();
  }
  std::optional<Slicing> slicing = chooseSlicing(match, columns);
  if (!slicing)
    return failure();
  rewriter.setInsertionPoint(par);
  SplitReduction split =
      buildSplit(rewriter, par.getLoc(), match, columns, *slicing, initial);
  rewriter.eraseOp(par);
  return split;
}

} // namespace attn
