//===- BindKVCache.cpp - The key/value cache as runtime buffers -----------===//
//
// Turns the cache ops into reads and writes of a buffer the runtime owns: the
// new keys and values are materialised into their slot at the current length,
// and attention reads a tensor view of the positions cached so far.
//
//===----------------------------------------------------------------------===//

#include "attn/Conversion/Passes.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNBINDKVCACHE
#include "attn/Conversion/Passes.h.inc"

FailureOr<SmallVector<KVCacheSlot>>
computeKVCacheLayout(func::FuncOp func, int64_t &floatsPerPosition) {
  SmallVector<KVCacheSlot> slots;
  floatsPerPosition = 0;
  WalkResult result = func.walk([&](KVCacheAppendOp append) {
    auto keys = cast<RankedTensorType>(append.getNewKeys().getType());
    auto values = cast<RankedTensorType>(append.getNewValues().getType());
    if (keys.isDynamicDim(1) || keys.isDynamicDim(3) || values.isDynamicDim(3)) {
      append.emitError("a cached attention needs static head count and head "
                       "sizes");
      return WalkResult::interrupt();
    }
    KVCacheSlot slot{append, keys.getDimSize(1), keys.getDimSize(3),
                     values.getDimSize(3), floatsPerPosition};
    floatsPerPosition += slot.heads * (slot.keyDim + slot.valueDim);
    slots.push_back(slot);
    return WalkResult::advance();
  });
  if (result.wasInterrupted())
    return failure();
  // Slots are laid out in program order, which is also the order
  // `attn-incremental-decoding` numbers them in.
  return slots;
}

namespace {

struct AttnBindKVCachePass : impl::AttnBindKVCacheBase<AttnBindKVCachePass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (failed(bind(func)))
        return signalPassFailure();
  }

  LogicalResult bind(func::FuncOp func) {
    bool uses = false;
    func.walk([&](Operation *op) {
      uses |= isa<KVCacheAppendOp, KVCacheLengthOp, KVCacheReadOp>(op);
    });
    if (!uses)
      return success();
    WalkResult reads = func.walk([](KVCacheReadOp op) {
      op.emitError("kv_cache_read cannot be compiled yet: only causal "
                   "decoders are decoded incrementally");
      return WalkResult::interrupt();
    });
    if (reads.wasInterrupted())
      return failure();
    int64_t perPosition;
    FailureOr<SmallVector<KVCacheSlot>> slots =
        computeKVCacheLayout(func, perPosition);
    if (failed(slots))
      return failure();

    MLIRContext *context = func.getContext();
    OpBuilder b(context);
    Location loc = func.getLoc();
    Type f32 = b.getF32Type(), i64 = b.getI64Type();
    unsigned cacheIndex = func.getNumArguments();
    auto cacheType = MemRefType::get({ShapedType::kDynamic}, f32);
    auto stateType = MemRefType::get({2}, i64);
    if (failed(func.insertArgument(
            cacheIndex, cacheType,
            b.getDictionaryAttr(b.getNamedAttr("attn.kv_cache", b.getUnitAttr())),
            loc)) ||
        failed(func.insertArgument(
            cacheIndex + 1, stateType,
            b.getDictionaryAttr(b.getNamedAttr("attn.kv_state", b.getUnitAttr())),
            loc)))
      return func.emitError("cannot add the key/value cache arguments");
    Value cache = func.getArgument(cacheIndex);
    Value state = func.getArgument(cacheIndex + 1);

    // The state is read once, at entry: every append of this call writes at
    // the same position.
    b.setInsertionPointToStart(&func.front());
    auto load = [&](int64_t i) -> Value {
      Value index = arith::ConstantIndexOp::create(b, loc, i);
      Value v = memref::LoadOp::create(b, loc, state, ValueRange{index});
      return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
    };
    Value length = load(0), capacity = load(1);
    func.walk([&](KVCacheLengthOp op) {
      op.replaceAllUsesWith(length);
      op.erase();
    });

    Value appended;
    for (const KVCacheSlot &slot : *slots) {
      KVCacheAppendOp append = slot.append;
      b.setInsertionPoint(append);
      Location l = append.getLoc();
      Value batch = tensor::DimOp::create(b, l, append.getNewKeys(), 0);
      Value count = tensor::DimOp::create(b, l, append.getNewKeys(), 2);
      appended = appended ? appended : count;
      Value end = arith::AddIOp::create(b, l, length, count);
      // Floats before this slot: B * capacity * offset-per-position.
      Value rows = arith::MulIOp::create(b, l, batch, capacity);
      auto constant = [&](int64_t v) -> Value {
        return arith::ConstantIndexOp::create(b, l, v);
      };
      Value base = arith::MulIOp::create(b, l, rows, constant(slot.offset));
      auto block = [&](Value tensor, Value offset, int64_t dim) -> Value {
        // The [B, H, cap, dim] block at `offset` in the cache.
        Value planeStride = arith::MulIOp::create(b, l, capacity, constant(dim));
        Value headStride = planeStride;
        Value batchStride =
            arith::MulIOp::create(b, l, headStride, constant(slot.heads));
        SmallVector<OpFoldResult> sizes = {batch, b.getIndexAttr(slot.heads),
                                           capacity, b.getIndexAttr(dim)};
        SmallVector<OpFoldResult> strides = {batchStride, headStride,
                                             b.getIndexAttr(dim),
                                             b.getIndexAttr(1)};
        auto blockType = MemRefType::get(
            {ShapedType::kDynamic, slot.heads, ShapedType::kDynamic, dim}, f32,
            StridedLayoutAttr::get(
                context, ShapedType::kDynamic,
                {ShapedType::kDynamic, ShapedType::kDynamic, dim, 1}));
        Value view = memref::ReinterpretCastOp::create(
            b, l, blockType, cache, OpFoldResult(offset), sizes, strides);
        // Write the new positions [len, len + t), then read [0, len + t).
        SmallVector<OpFoldResult> unit(4, b.getIndexAttr(1));
        SmallVector<OpFoldResult> at = {b.getIndexAttr(0), b.getIndexAttr(0),
                                        length, b.getIndexAttr(0)};
        SmallVector<OpFoldResult> newSizes = {batch, b.getIndexAttr(slot.heads),
                                              count, b.getIndexAttr(dim)};
        Value destination =
            memref::SubViewOp::create(b, l, view, at, newSizes, unit);
        auto write = bufferization::MaterializeInDestinationOp::create(
            b, l, TypeRange{}, tensor, destination);
        write.setRestrict(true);
        write.setWritable(true);
        SmallVector<OpFoldResult> zero(4, b.getIndexAttr(0));
        SmallVector<OpFoldResult> allSizes = {batch, b.getIndexAttr(slot.heads),
                                              end, b.getIndexAttr(dim)};
        Value all = memref::SubViewOp::create(b, l, view, zero, allSizes, unit);
        auto resultType = RankedTensorType::get(
            {ShapedType::kDynamic, slot.heads, ShapedType::kDynamic, dim}, f32);
        return bufferization::ToTensorOp::create(b, l, resultType, all,
                                                 /*restrict=*/true,
                                                 /*writable=*/false);
      };
      Value keys = block(append.getNewKeys(), base, slot.keyDim);
      Value valueBase = arith::AddIOp::create(
          b, l, base,
          arith::MulIOp::create(b, l, rows,
                                constant(slot.heads * slot.keyDim)));
      Value values = block(append.getNewValues(), valueBase, slot.valueDim);
      append.getKeys().replaceAllUsesWith(
          tensor::CastOp::create(b, l, append.getKeys().getType(), keys));
      append.getValues().replaceAllUsesWith(
          tensor::CastOp::create(b, l, append.getValues().getType(), values));
      append.erase();
    }

    // The cache now holds `len + t` positions.
    if (appended) {
      auto ret = cast<func::ReturnOp>(func.front().getTerminator());
      b.setInsertionPoint(ret);
      Value total = arith::AddIOp::create(b, loc, length, appended);
      Value stored = arith::IndexCastOp::create(b, loc, i64, total);
      memref::StoreOp::create(b, loc, stored, state,
                              ValueRange{arith::ConstantIndexOp::create(b, loc, 0)});
    }
    return success();
  }
};

} // namespace
} // namespace attn
