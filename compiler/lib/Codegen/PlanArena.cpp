//===- PlanArena.cpp - The temporaries of an entry point in one arena -----===//
//
// `attn-plan-arena`: after bufferisation (and attn-reuse-buffers), the
// temporaries of an entry point are planned into one arena:
//  1. the candidates are the memref.alloc ops directly in the function body
//     whose buffer stays local (attn-reuse-buffers' rule) and is freed in
//     the same block; a candidate lives from its alloc to its dealloc;
//  2. candidates are assigned to slots at compile time, first fit in
//     program order: a candidate takes the first slot whose last occupant
//     is dead before it is allocated (liveness-based reuse), else opens a
//     new slot;
//  3. at run time the entry computes each slot's size (the largest of its
//     occupants at this call's sizes, 64-byte aligned) and so the arena's,
//     and every candidate becomes a memref.view at its slot's offset.
// The slot assignment is static; only sizes that depend on the call's
// dynamic dims (B, T) are computed at run time. A candidate whose sizes
// cannot be computed at the function's entry (they depend on something
// read from memory) keeps its own allocation.
//
// The arena is the caller's: an entry point takes it as an argument
// (`attn.arena`, added by attn-finalize-entry-points; abi.h ATTN_ARG_ARENA),
// kept by the runtime's context across calls so that its pages are mapped
// and touched once rather than at every call. The entry stores the bytes it
// needs into its `attn.arena_need` argument (the runtime grows the arena
// for the next call) and uses the caller's arena when it is at least that
// large and 64-byte aligned; otherwise it allocates an arena of its own and
// frees it before returning, so that any caller stays correct. A function
// without those arguments (hand-written IR) allocates its arena at every
// call.
//
// The arena allocation carries `attn.arena`, so that attnc can evaluate its
// size at the model's bounds for the header (evaluateArenaBytes).
//
//===----------------------------------------------------------------------===//

#include "BufferUses.h"
#include "attn/Codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNPLANARENA
#include "attn/Codegen/Passes.h.inc"

namespace {

/// Arena offsets are multiples of a cache line (and of every vector size).
constexpr int64_t kArenaAlignment = 64;

FailureOr<Value> materializeAtEntry(Value value, OpBuilder &b,
                                    IRMapping &mapping, int depth = 0);

/// Size `index` of `buffer` at the function's entry: a buffer computed in
/// the body has the sizes it was allocated or reshaped with.
FailureOr<Value> dimAtEntry(Value buffer, int64_t index, OpBuilder &b,
                            IRMapping &mapping, int depth) {
  auto type = cast<MemRefType>(buffer.getType());
  Location loc = buffer.getLoc();
  if (!type.isDynamicDim(index))
    return Value(arith::ConstantIndexOp::create(b, loc, type.getDimSize(index)));
  if (depth > 32)
    return failure();
  if (auto arg = dyn_cast<BlockArgument>(buffer)) {
    if (!arg.getOwner()->isEntryBlock())
      return failure();
    Value c = arith::ConstantIndexOp::create(b, loc, index);
    return Value(memref::DimOp::create(b, loc, buffer, c));
  }
  Operation *def = buffer.getDefiningOp();
  unsigned dynamicIndex = type.getDynamicDimIndex(index);
  if (auto alloc = dyn_cast<memref::AllocOp>(def))
    return materializeAtEntry(alloc.getDynamicSizes()[dynamicIndex], b,
                              mapping, depth + 1);
  if (auto view = dyn_cast<memref::ViewOp>(def))
    return materializeAtEntry(view.getSizes()[dynamicIndex], b, mapping,
                              depth + 1);
  if (auto cast = dyn_cast<memref::CastOp>(def))
    return dimAtEntry(cast.getSource(), index, b, mapping, depth + 1);
  if (auto expand = dyn_cast<memref::ExpandShapeOp>(def)) {
    OpFoldResult size = expand.getMixedOutputShape()[index];
    if (auto v = dyn_cast<Value>(size))
      return materializeAtEntry(v, b, mapping, depth + 1);
    return Value(arith::ConstantIndexOp::create(
        b, loc, cast<IntegerAttr>(cast<Attribute>(size)).getInt()));
  }
  if (auto collapse = dyn_cast<memref::CollapseShapeOp>(def)) {
    Value product = arith::ConstantIndexOp::create(b, loc, 1);
    for (int64_t source : collapse.getReassociationIndices()[index]) {
      FailureOr<Value> size =
          dimAtEntry(collapse.getSrc(), source, b, mapping, depth + 1);
      if (failed(size))
        return failure();
      product = arith::MulIOp::create(b, loc, product, *size);
    }
    return product;
  }
  return failure();
}

/// Re-creates the pure computation of `value` at the builder's insertion
/// point (the function's entry), or fails when it reads memory or has
/// regions. Values already available there are used as they are.
FailureOr<Value> materializeAtEntry(Value value, OpBuilder &b,
                                    IRMapping &mapping, int depth) {
  if (Value mapped = mapping.lookupOrNull(value))
    return mapped;
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    if (!arg.getOwner()->isEntryBlock())
      return failure();
    return value;
  }
  Operation *def = value.getDefiningOp();
  if (depth > 32)
    return failure();
  FailureOr<Value> result = failure();
  if (auto dim = dyn_cast<memref::DimOp>(def)) {
    std::optional<int64_t> index = dim.getConstantIndex();
    if (!index || !isa<MemRefType>(dim.getSource().getType()))
      return failure();
    result = dimAtEntry(dim.getSource(), *index, b, mapping, depth + 1);
  } else {
    if (def->getNumRegions() != 0 || !isMemoryEffectFree(def))
      return failure();
    for (Value operand : def->getOperands())
      if (failed(materializeAtEntry(operand, b, mapping, depth + 1)))
        return failure();
    Operation *clone = b.clone(*def, mapping);
    for (auto [from, to] : llvm::zip(def->getResults(), clone->getResults()))
      mapping.map(from, to);
    result = mapping.lookup(value);
  }
  if (succeeded(result))
    mapping.map(value, *result);
  return result;
}

/// Bytes per element of a buffer (i1 is stored as a byte).
std::optional<int64_t> elementBytes(Type type) {
  if (type.isIntOrFloat())
    return std::max<int64_t>(1, (type.getIntOrFloatBitWidth() + 7) / 8);
  if (type.isIndex())
    return 8;
  return std::nullopt;
}

struct Candidate {
  memref::AllocOp alloc;
  memref::DeallocOp dealloc;
  unsigned begin, end; // positions in the block
  Value bytes;         // at the function's entry, rounded up
};

struct Slot {
  unsigned end; // position where its last occupant dies
  SmallVector<Candidate *> occupants;
};

struct PlanArenaPass : impl::AttnPlanArenaBase<PlanArenaPass> {
  using Base::Base;

  /// The caller's arena and the slot for the bytes needed, when `func`
  /// takes them; their attributes are consumed.
  LogicalResult takeArenaArguments(func::FuncOp func, Value &arena,
                                   Value &need) {
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      Value arg = func.getArgument(i);
      auto type = dyn_cast<MemRefType>(arg.getType());
      if (func.getArgAttr(i, kArenaArgAttr)) {
        func.removeArgAttr(i, kArenaArgAttr);
        if (!type || type.getRank() != 1 || !type.isDynamicDim(0) ||
            !type.getElementType().isInteger(8) ||
            !type.getLayout().isIdentity() || type.getMemorySpace())
          return func.emitError("the activation arena argument must be "
                                "memref<?xi8>, not ")
                 << arg.getType();
        arena = arg;
      }
      if (func.getArgAttr(i, kArenaNeedArgAttr)) {
        func.removeArgAttr(i, kArenaNeedArgAttr);
        if (!type || type.getRank() != 0 ||
            !type.getElementType().isInteger(64) || type.getMemorySpace())
          return func.emitError("the arena size argument must be "
                                "memref<i64>, not ")
                 << arg.getType();
        need = arg;
      }
    }
    return success();
  }

  /// The allocations of `block` that can live in the arena (local, freed
  /// in the block, sizes computable at the entry), in program order, with
  /// their aligned sizes in bytes computed at `entry`.
  std::vector<Candidate> collectCandidates(Block &block, OpBuilder &entry,
                                           IRMapping &mapping) {
    DenseMap<Operation *, unsigned> position;
    unsigned i = 0;
    for (Operation &op : block)
      position[&op] = i++;

    std::vector<Candidate> candidates;
    for (Operation &op : block) {
      auto alloc = dyn_cast<memref::AllocOp>(&op);
      if (!alloc || !alloc.getType().getLayout().isIdentity() ||
          alloc.getType().getMemorySpace())
        continue;
      std::optional<int64_t> bytesPerElement =
          elementBytes(alloc.getType().getElementType());
      memref::DeallocOp dealloc;
      if (!bytesPerElement || !staysLocal(alloc.getResult(), dealloc) ||
          !dealloc || dealloc->getBlock() != &block)
        continue;
      // Its size in bytes, computed at the entry.
      int64_t staticElements = 1;
      for (int64_t size : alloc.getType().getShape())
        if (!ShapedType::isDynamic(size))
          staticElements *= size;
      Location loc = alloc.getLoc();
      Value bytes = arith::ConstantIndexOp::create(entry, loc,
                                                   staticElements *
                                                       *bytesPerElement);
      bool computable = true;
      for (Value size : alloc.getDynamicSizes()) {
        FailureOr<Value> atEntry = materializeAtEntry(size, entry, mapping);
        if (failed(atEntry)) {
          computable = false;
          break;
        }
        bytes = arith::MulIOp::create(entry, loc, bytes, *atEntry);
      }
      if (!computable)
        continue;
      Value mask = arith::ConstantIndexOp::create(entry, loc,
                                                  kArenaAlignment - 1);
      Value rounded = arith::AddIOp::create(entry, loc, bytes, mask);
      Value aligned = arith::ConstantIndexOp::create(entry, loc,
                                                     -kArenaAlignment);
      bytes = arith::AndIOp::create(entry, loc, rounded, aligned);
      candidates.push_back(
          {alloc, dealloc, position[alloc], position[dealloc], bytes});
    }
    return candidates;
  }

  /// Slots of the arena for `candidates`: first fit in program order, a
  /// candidate taking the first slot whose occupants are all dead.
  static std::vector<Slot> firstFit(std::vector<Candidate> &candidates) {
    std::vector<Slot> slots;
    for (Candidate &c : candidates) {
      Slot *slot = nullptr;
      for (Slot &s : slots)
        if (s.end < c.begin) {
          slot = &s;
          break;
        }
      if (!slot) {
        slots.push_back({});
        slot = &slots.back();
      }
      slot->end = c.end;
      slot->occupants.push_back(&c);
    }
    return slots;
  }

  /// The arena of `offset` bytes (an index: the end of the last slot) over
  /// `slotCount` slots: the caller's `arenaArg` when it is large enough and
  /// aligned, else one of this call's own, allocated where `fallback` (set
  /// when there is an `arenaArg`) holds.
  Value arenaFor(OpBuilder &entry, Location loc, Value arenaArg, Value offset,
                 size_t slotCount, Value &fallback) {
    auto arenaType = MemRefType::get({ShapedType::kDynamic},
                                     entry.getIntegerType(8));
    auto allocate = [&](OpBuilder &b, Location loc) {
      auto alloc = memref::AllocOp::create(
          b, loc, arenaType, ValueRange{offset},
          b.getI64IntegerAttr(kArenaAlignment));
      alloc->setAttr(kArenaAllocAttr,
                     b.getI64IntegerAttr(static_cast<int64_t>(slotCount)));
      return alloc.getResult();
    };
    Value arena;
    if (arenaArg) {
      Value zero = arith::ConstantIndexOp::create(entry, loc, 0);
      Value size = memref::DimOp::create(entry, loc, arenaArg, zero);
      Value small = arith::CmpIOp::create(entry, loc, arith::CmpIPredicate::ult,
                                          size, offset);
      Value pointer =
          memref::ExtractAlignedPointerAsIndexOp::create(entry, loc, arenaArg);
      Value mask =
          arith::ConstantIndexOp::create(entry, loc, kArenaAlignment - 1);
      Value misaligned = arith::CmpIOp::create(
          entry, loc, arith::CmpIPredicate::ne,
          arith::AndIOp::create(entry, loc, pointer, mask), zero);
      fallback = arith::OrIOp::create(entry, loc, small, misaligned);
      arena = scf::IfOp::create(
                  entry, loc, fallback,
                  [&](OpBuilder &b, Location loc) {
                    scf::YieldOp::create(b, loc, allocate(b, loc));
                  },
                  [&](OpBuilder &b, Location loc) {
                    scf::YieldOp::create(b, loc, arenaArg);
                  })
                  .getResult(0);
    } else {
      arena = allocate(entry, loc);
    }
    return arena;
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    Value arenaArg, needArg;
    if (failed(takeArenaArguments(func, arenaArg, needArg)))
      return signalPassFailure();
    if (!func.getBody().hasOneBlock())
      return;
    Block &block = func.getBody().front();
    OpBuilder entry = OpBuilder::atBlockBegin(&block);
    IRMapping mapping;

    std::vector<Candidate> candidates =
        collectCandidates(block, entry, mapping);
    // The caller learns the bytes this call needs, also when it is 0.
    Location loc = func.getLoc();
    auto storeNeed = [&](Value bytes) {
      if (!needArg)
        return;
      Value i64 = arith::IndexCastOp::create(entry, loc, entry.getI64Type(),
                                             bytes);
      memref::StoreOp::create(entry, loc, i64, needArg, ValueRange{});
    };
    if (candidates.empty()) {
      storeNeed(arith::ConstantIndexOp::create(entry, loc, 0));
      return;
    }

    std::vector<Slot> slots = firstFit(candidates);

    // Slot sizes and offsets at run time.
    Value offset = arith::ConstantIndexOp::create(entry, loc, 0);
    DenseMap<Candidate *, Value> offsets;
    for (Slot &slot : slots) {
      Value size = slot.occupants.front()->bytes;
      for (Candidate *c : ArrayRef(slot.occupants).drop_front())
        size = arith::MaxUIOp::create(entry, loc, size, c->bytes);
      for (Candidate *c : slot.occupants)
        offsets[c] = offset;
      offset = arith::AddIOp::create(entry, loc, offset, size);
    }
    storeNeed(offset);
    Value fallback;
    Value arena =
        arenaFor(entry, loc, arenaArg, offset, slots.size(), fallback);

    for (Candidate &c : candidates) {
      OpBuilder b(c.alloc);
      Value view = memref::ViewOp::create(b, c.alloc.getLoc(),
                                          c.alloc.getType(), arena,
                                          offsets[&c],
                                          c.alloc.getDynamicSizes());
      c.alloc.getResult().replaceAllUsesWith(view);
      c.alloc->erase();
      c.dealloc->erase();
    }
    OpBuilder exit(block.getTerminator());
    if (!fallback) {
      memref::DeallocOp::create(exit, loc, arena);
      return;
    }
    scf::IfOp::create(exit, loc, fallback, [&](OpBuilder &b, Location loc) {
      memref::DeallocOp::create(b, loc, arena);
      scf::YieldOp::create(b, loc);
    });
  }
};

} // namespace

} // namespace attn
