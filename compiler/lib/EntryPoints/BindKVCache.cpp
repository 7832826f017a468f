//===- BindKVCache.cpp - The key/value cache as runtime buffers -----------===//
//
// Turns the cache ops into reads and writes of a buffer the runtime owns: the
// new keys and values are materialised into their slot at the current length,
// and attention reads a tensor view of the positions cached so far. Memory
// slots (an encoder-decoder's cross-attention keys and values) are written
// from position 0 by the call that appends to them and read whole by
// `attn.kv_cache_read`.
//
//===----------------------------------------------------------------------===//

#include "attn/EntryPoints/Passes.h"

#include "attn/Dialect/Transforms/EntryPoints.h"

#include "attn/abi.h"

#include <map>

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNBINDKVCACHE
#include "attn/EntryPoints/Passes.h.inc"

bool usesKVCache(func::FuncOp func) {
  return func
      .walk([](Operation *op) {
        return isa<KVCacheAppendOp, KVCacheLengthOp, KVCacheReadOp>(op)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

FailureOr<SmallVector<KVCacheSlot>>
computeKVCacheLayout(ModuleOp module, int64_t &floatsPerPosition) {
  std::map<int64_t, std::pair<KVCacheSlot, Operation *>> bySlot;
  auto note = [&](Operation *op, int64_t slot, Type keyType, Type valueType,
                  bool memory) -> LogicalResult {
    auto keys = cast<RankedTensorType>(keyType);
    auto values = cast<RankedTensorType>(valueType);
    if (keys.getRank() != 4 || values.getRank() != 4 ||
        keys.isDynamicDim(1) || keys.isDynamicDim(3) ||
        values.isDynamicDim(3) || values.getDimSize(1) != keys.getDimSize(1))
      return op->emitError("a cached attention needs static head count and "
                           "head sizes, got keys ")
             << keys << " and values " << values;
    KVCacheSlot info{slot, keys.getDimSize(1), keys.getDimSize(3),
                     values.getDimSize(3), 0, memory};
    auto [it, first] = bySlot.try_emplace(slot, info, op);
    if (first)
      return success();
    const KVCacheSlot &seen = it->second.first;
    if (seen.heads != info.heads || seen.keyDim != info.keyDim ||
        seen.valueDim != info.valueDim || seen.memory != info.memory) {
      InFlightDiagnostic diag = op->emitError()
                                << "cache slot " << slot
                                << " is used with another shape or kind here";
      diag.attachNote(it->second.second->getLoc()) << "first used here";
      return diag;
    }
    return success();
  };
  WalkResult result = module.walk([&](Operation *op) {
    LogicalResult ok = success();
    if (auto append = dyn_cast<KVCacheAppendOp>(op))
      ok = note(op, append.getSlot(), append.getNewKeys().getType(),
                append.getNewValues().getType(),
                op->hasAttr(entry::kKVMemoryAttr));
    else if (auto read = dyn_cast<KVCacheReadOp>(op))
      ok = note(op, read.getSlot(), read.getKeys().getType(),
                read.getValues().getType(), /*memory=*/true);
    return failed(ok) ? WalkResult::interrupt() : WalkResult::advance();
  });
  if (result.wasInterrupted())
    return failure();
  SmallVector<KVCacheSlot> slots;
  floatsPerPosition = 0;
  for (auto &[number, entry] : bySlot) {
    KVCacheSlot slot = entry.first;
    slot.offset = floatsPerPosition;
    floatsPerPosition += slot.heads * (slot.keyDim + slot.valueDim);
    slots.push_back(slot);
  }
  return slots;
}

namespace {

/// The cache ops of one function rewritten as accesses of the cache buffer,
/// given the function's cache and state arguments.
class CacheBinder {
public:
  CacheBinder(func::FuncOp func, const DenseMap<int64_t, KVCacheSlot> &slots,
              int64_t perPosition, Value cache, Value state)
      : func(func), slots(slots), perPosition(perPosition), b(func.getContext()),
        cache(cache), state(state) {}

  void bind() {
    readState();
    SmallVector<KVCacheAppendOp> appends;
    func.walk([&](KVCacheAppendOp op) { appends.push_back(op); });
    for (KVCacheAppendOp append : appends)
      bindAppend(append);
    SmallVector<KVCacheReadOp> reads;
    func.walk([&](KVCacheReadOp op) { reads.push_back(op); });
    for (KVCacheReadOp op : reads)
      bindRead(op);
    writeState();
  }

private:
  /// The state is read once, at entry: every append of this call writes at
  /// the same position.
  void readState() {
    Location loc = func.getLoc();
    b.setInsertionPointToStart(&func.front());
    auto load = [&](int64_t i) -> Value {
      Value index = arith::ConstantIndexOp::create(b, loc, i);
      Value v = memref::LoadOp::create(b, loc, state, ValueRange{index});
      return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
    };
    length = load(0);
    capacity = load(1);
    memoryLength = load(2);
    func.walk([&](KVCacheLengthOp op) {
      op.replaceAllUsesWith(length);
      op.erase();
    });
  }

  /// The cache now holds `len + t` target positions (and `s` memory
  /// positions when this call wrote the memory).
  void writeState() {
    Location loc = func.getLoc();
    auto ret = cast<func::ReturnOp>(func.front().getTerminator());
    b.setInsertionPoint(ret);
    auto store = [&](Value v, int64_t i) {
      Value stored = arith::IndexCastOp::create(b, loc, b.getI64Type(), v);
      memref::StoreOp::create(b, loc, stored, state,
                              ValueRange{constant(loc, i)});
    };
    if (appended)
      store(arith::AddIOp::create(b, loc, length, appended), 0);
    if (memoryAppended)
      store(memoryAppended, 2);
  }

  Value constant(Location l, int64_t v) {
    return arith::ConstantIndexOp::create(b, l, v);
  }

  const KVCacheSlot &slotOf(int64_t number) const {
    auto it = slots.find(number);
    assert(it != slots.end() && "the layout covers every slot");
    return it->second;
  }

  /// The [B, H, cap, dim] block of keys (`values` false) or values of
  /// `slot` for a batch of `batch`.
  Value blockOf(Location l, const KVCacheSlot &slot, Value batch,
                bool values) {
    int64_t dim = values ? slot.valueDim : slot.keyDim;
    // Floats before this slot: B * capacity * offset-per-position.
    Value rows = arith::MulIOp::create(b, l, batch, capacity);
    Value offset = arith::MulIOp::create(b, l, rows, constant(l, slot.offset));
    if (values)
      offset = arith::AddIOp::create(
          b, l, offset,
          arith::MulIOp::create(b, l, rows,
                                constant(l, slot.heads * slot.keyDim)));
    Value headStride = arith::MulIOp::create(b, l, capacity, constant(l, dim));
    Value batchStride =
        arith::MulIOp::create(b, l, headStride, constant(l, slot.heads));
    SmallVector<OpFoldResult> sizes = {batch, b.getIndexAttr(slot.heads),
                                       capacity, b.getIndexAttr(dim)};
    SmallVector<OpFoldResult> strides = {batchStride, headStride,
                                         b.getIndexAttr(dim),
                                         b.getIndexAttr(1)};
    auto blockType = MemRefType::get(
        {ShapedType::kDynamic, slot.heads, ShapedType::kDynamic, dim},
        b.getF32Type(),
        StridedLayoutAttr::get(
            b.getContext(), ShapedType::kDynamic,
            {ShapedType::kDynamic, ShapedType::kDynamic, dim, 1}));
    return memref::ReinterpretCastOp::create(
        b, l, blockType, cache, OpFoldResult(offset), sizes, strides);
  }

  /// Positions [from, from + count) of a block, as a memref.
  Value positions(Location l, const KVCacheSlot &slot, Value block,
                  Value batch, Value from, Value count, bool values) {
    int64_t dim = values ? slot.valueDim : slot.keyDim;
    SmallVector<OpFoldResult> unit(4, b.getIndexAttr(1));
    SmallVector<OpFoldResult> at = {b.getIndexAttr(0), b.getIndexAttr(0), from,
                                    b.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes = {batch, b.getIndexAttr(slot.heads),
                                       count, b.getIndexAttr(dim)};
    return memref::SubViewOp::create(b, l, block, at, sizes, unit);
  }

  void write(Location l, Value tensor, Value destination) {
    auto op = bufferization::MaterializeInDestinationOp::create(
        b, l, TypeRange{}, tensor, destination);
    op.setRestrict(true);
    op.setWritable(true);
  }

  Value read(Location l, const KVCacheSlot &slot, Value view, bool values,
             Type type) {
    int64_t dim = values ? slot.valueDim : slot.keyDim;
    auto resultType = RankedTensorType::get(
        {ShapedType::kDynamic, slot.heads, ShapedType::kDynamic, dim},
        b.getF32Type());
    Value all = bufferization::ToTensorOp::create(b, l, resultType, view,
                                                  /*restrict=*/true,
                                                  /*writable=*/false);
    return tensor::CastOp::create(b, l, type, all);
  }

  void bindAppend(KVCacheAppendOp append) {
    const KVCacheSlot &slot = slotOf(append.getSlot());
    b.setInsertionPoint(append);
    Location l = append.getLoc();
    Value batch = tensor::DimOp::create(b, l, append.getNewKeys(), 0);
    Value count = tensor::DimOp::create(b, l, append.getNewKeys(), 2);
    Value keyBlock = blockOf(l, slot, batch, false);
    Value valueBlock = blockOf(l, slot, batch, true);
    if (slot.memory) {
      // The memory starts over at position 0, and this call's attention
      // reads exactly what it writes.
      memoryAppended = memoryAppended ? memoryAppended : count;
      Value zero = constant(l, 0);
      write(l, append.getNewKeys(),
            positions(l, slot, keyBlock, batch, zero, count, false));
      write(l, append.getNewValues(),
            positions(l, slot, valueBlock, batch, zero, count, true));
      append.getKeys().replaceAllUsesWith(tensor::CastOp::create(
          b, l, append.getKeys().getType(), append.getNewKeys()));
      append.getValues().replaceAllUsesWith(tensor::CastOp::create(
          b, l, append.getValues().getType(), append.getNewValues()));
      append.erase();
      return;
    }
    // Write the new positions [len, len + t), then read [0, len + t).
    appended = appended ? appended : count;
    Value end = arith::AddIOp::create(b, l, length, count);
    Value zero = constant(l, 0);
    write(l, append.getNewKeys(),
          positions(l, slot, keyBlock, batch, length, count, false));
    write(l, append.getNewValues(),
          positions(l, slot, valueBlock, batch, length, count, true));
    Value keys = read(l, slot,
                      positions(l, slot, keyBlock, batch, zero, end, false),
                      false, append.getKeys().getType());
    Value values = read(l, slot,
                        positions(l, slot, valueBlock, batch, zero, end, true),
                        true, append.getValues().getType());
    append.getKeys().replaceAllUsesWith(keys);
    append.getValues().replaceAllUsesWith(values);
    append.erase();
  }

  /// Reads see the memory positions [0, memory length) of every sequence;
  /// the batch is what the runtime sized the cache for.
  void bindRead(KVCacheReadOp op) {
    const KVCacheSlot &slot = slotOf(op.getSlot());
    b.setInsertionPoint(op);
    Location l = op.getLoc();
    Value floats = memref::DimOp::create(b, l, cache, 0);
    Value perSequence =
        arith::MulIOp::create(b, l, capacity, constant(l, perPosition));
    Value batch = arith::DivUIOp::create(b, l, floats, perSequence);
    Value zero = constant(l, 0);
    Value keys = read(l, slot,
                      positions(l, slot, blockOf(l, slot, batch, false), batch,
                                zero, memoryLength, false),
                      false, op.getKeys().getType());
    Value values = read(l, slot,
                        positions(l, slot, blockOf(l, slot, batch, true), batch,
                                  zero, memoryLength, true),
                        true, op.getValues().getType());
    op.getKeys().replaceAllUsesWith(keys);
    op.getValues().replaceAllUsesWith(values);
    op.erase();
  }

  func::FuncOp func;
  const DenseMap<int64_t, KVCacheSlot> &slots;
  int64_t perPosition;
  OpBuilder b;
  Value cache, state;
  /// The state read at entry: target positions cached, capacity, memory
  /// positions cached.
  Value length, capacity, memoryLength;
  /// The positions this call appends to the target and to the memory; null
  /// when it appends none.
  Value appended, memoryAppended;
};

struct AttnBindKVCachePass : impl::AttnBindKVCacheBase<AttnBindKVCachePass> {
  void runOnOperation() override {
    int64_t perPosition;
    FailureOr<SmallVector<KVCacheSlot>> layout =
        computeKVCacheLayout(getOperation(), perPosition);
    if (failed(layout))
      return signalPassFailure();
    DenseMap<int64_t, KVCacheSlot> slots;
    for (const KVCacheSlot &slot : *layout)
      slots[slot.slot] = slot;
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (usesKVCache(func) && failed(bind(func, slots, perPosition)))
        return signalPassFailure();
  }

  /// Adds the cache and state arguments to `func` and binds its cache ops
  /// to them.
  LogicalResult bind(func::FuncOp func,
                     const DenseMap<int64_t, KVCacheSlot> &slots,
                     int64_t perPosition) {
    OpBuilder b(func.getContext());
    Location loc = func.getLoc();
    unsigned cacheIndex = func.getNumArguments();
    auto cacheType = MemRefType::get({ShapedType::kDynamic}, b.getF32Type());
    auto stateType = MemRefType::get({ATTN_KV_STATE_SIZE}, b.getI64Type());
    auto unitAttr = [&](StringRef name) {
      return b.getDictionaryAttr(b.getNamedAttr(name, b.getUnitAttr()));
    };
    if (failed(func.insertArgument(cacheIndex, cacheType,
                                   unitAttr("attn.kv_cache"), loc)) ||
        failed(func.insertArgument(cacheIndex + 1, stateType,
                                   unitAttr("attn.kv_state"), loc)))
      return func.emitError("cannot add the key/value cache arguments");
    CacheBinder(func, slots, perPosition, func.getArgument(cacheIndex),
                func.getArgument(cacheIndex + 1))
        .bind();
    return success();
  }
};

} // namespace
} // namespace attn
