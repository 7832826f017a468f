//===- BindParams.cpp - Parameters as slices of flat buffers --------------===//
//
// Gives every entry point the parameter buffer as its first argument, then
// the gradient and moment buffers it uses (same layout), and turns each
// `attn.get_param` into a view of its buffer at the offset the runtime's
// parameter table uses (`computeParamLayout`). `attn.set_param` writes in
// place: a buffer a function writes arrives as a memref, is seen as one
// writable tensor (`bufferization.to_tensor restrict writable`) that each
// write updates with a `tensor.insert_slice`, and the last value is
// materialised back into the memref, which bufferisation turns into nothing
// when every insert happened in place (the tests check that it does).
//
//===----------------------------------------------------------------------===//

#include "attn/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNBINDPARAMS
#include "attn/Conversion/Passes.h.inc"

/// Parameters start at multiples of this many elements (64 bytes).
static constexpr int64_t kParamAlignment = 16;

SmallVector<ParamSlot> computeParamLayout(ModuleOp module,
                                          int64_t &numElements) {
  SmallVector<ParamSlot> slots;
  int64_t offset = 0;
  for (ParamOp param : module.getOps<ParamOp>()) {
    slots.push_back({param, offset});
    int64_t size = param.getTensorType().getNumElements();
    offset += (size + kParamAlignment - 1) / kParamAlignment * kParamAlignment;
  }
  numElements = offset;
  return slots;
}

llvm::StringRef paramBufferArgAttr(ParamBuffer buffer) {
  switch (buffer) {
  case ParamBuffer::value:
    return "attn.params";
  case ParamBuffer::grad:
    return "attn.grads";
  case ParamBuffer::first_moment:
    return "attn.first_moment";
  case ParamBuffer::second_moment:
    return "attn.second_moment";
  }
  llvm_unreachable("unknown parameter buffer");
}

ParamBufferUse paramBuffersOf(func::FuncOp func) {
  ParamBufferUse use;
  func.walk([&](Operation *op) {
    if (auto get = dyn_cast<GetParamOp>(op))
      use.read[static_cast<int>(get.getBuffer())] = true;
    else if (auto set = dyn_cast<SetParamOp>(op))
      use.written[static_cast<int>(set.getBuffer())] = true;
  });
  use.read[0] = true; // every entry point takes the parameter buffer
  return use;
}

SmallVector<ParamBuffer> paramBufferArgs(const ParamBufferUse &use) {
  SmallVector<ParamBuffer> buffers;
  for (int i = 0; i < 4; ++i)
    if (use.read[i] || use.written[i])
      buffers.push_back(static_cast<ParamBuffer>(i));
  return buffers;
}

namespace {

/// The flat [size] slice at `offset` of `buffer`, reshaped to `type`.
Value readSlot(OpBuilder &b, Location loc, Value buffer, int64_t offset,
               RankedTensorType type) {
  int64_t size = type.getNumElements();
  auto flatType = RankedTensorType::get({size}, type.getElementType());
  Value flat = tensor::ExtractSliceOp::create(
      b, loc, flatType, buffer, ArrayRef<OpFoldResult>{b.getIndexAttr(offset)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(size)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  if (type.getRank() == 1)
    return flat;
  if (type.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, type, flat,
                                           ArrayRef<ReassociationIndices>{});
  ReassociationIndices all = llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
  return tensor::ExpandShapeOp::create(b, loc, type, flat,
                                       ArrayRef<ReassociationIndices>{all});
}

/// `value` as a flat [size] tensor.
Value flatten(OpBuilder &b, Location loc, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getRank() == 1)
    return value;
  auto flatType =
      RankedTensorType::get({type.getNumElements()}, type.getElementType());
  if (type.getRank() == 0)
    return tensor::ExpandShapeOp::create(b, loc, flatType, value,
                                         ArrayRef<ReassociationIndices>{});
  ReassociationIndices all = llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
  return tensor::CollapseShapeOp::create(b, loc, flatType, value,
                                         ArrayRef<ReassociationIndices>{all});
}

/// Moves each `attn.set_param` up to just after the op computing its value,
/// but not above an earlier write of the same slot or a use of a value read
/// from that slot before it. The write then comes before the next value is
/// computed, so that `attn-param-writes-in-place` can give that value's
/// producer its slot of the buffer as written so far (a later value of the
/// buffer, which bufferisation does not see as conflicting with reads of
/// other slots the way a slot of the first value is).
void hoistWrites(Block &body) {
  SmallVector<SetParamOp> sets(body.getOps<SetParamOp>());
  for (SetParamOp set : sets) {
    Operation *after = nullptr;
    auto later = [&](Operation *op) {
      op = body.findAncestorOpInBlock(*op);
      if (op && op != set && op->isBeforeInBlock(set) &&
          (!after || after->isBeforeInBlock(op)))
        after = op;
    };
    if (Operation *def = set.getValue().getDefiningOp())
      later(def);
    for (Operation &op : body) {
      if (&op == set.getOperation())
        break;
      if (auto other = dyn_cast<SetParamOp>(op)) {
        if (other.getName() == set.getName() &&
            other.getBuffer() == set.getBuffer())
          later(other);
        continue;
      }
      auto get = dyn_cast<GetParamOp>(op);
      if (!get || get.getName() != set.getName() ||
          get.getBuffer() != set.getBuffer())
        continue;
      later(get);
      for (Operation *user : get->getUsers())
        later(user);
    }
    if (!after)
      set->moveBefore(&body.front());
    else if (after->getNextNode() != set.getOperation())
      set->moveAfter(after);
  }
}

struct AttnBindParamsPass : impl::AttnBindParamsBase<AttnBindParamsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    int64_t numElements;
    llvm::StringMap<int64_t> offsets;
    for (ParamSlot slot : computeParamLayout(module, numElements))
      offsets[slot.param.getSymName()] = slot.offset;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      if (failed(bindFunction(func, offsets)))
        return signalPassFailure();
    }
  }

  LogicalResult bindFunction(func::FuncOp func,
                             const llvm::StringMap<int64_t> &offsets) {
    OpBuilder b(func.getContext());
    Location loc = func.getLoc();
    ParamBufferUse use = paramBuffersOf(func);
    // Reads and writes of a buffer a function writes are ordered by their
    // place in the body's block; nested ones cannot be ordered.
    Block &body = func.front();
    WalkResult nested = func.walk([&](Operation *op) {
      if (isa<GetParamOp, SetParamOp>(op) && op->getBlock() != &body &&
          (isa<SetParamOp>(op) ||
           use.written[static_cast<int>(cast<GetParamOp>(op).getBuffer())])) {
        op->emitError("a parameter buffer the function writes can only be "
                      "accessed at the top level of the function");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (nested.wasInterrupted())
      return failure();
    hoistWrites(body);

    // The buffer arguments, first and in buffer order.
    auto tensorType =
        RankedTensorType::get({ShapedType::kDynamic}, b.getF32Type());
    auto memrefType = MemRefType::get({ShapedType::kDynamic}, b.getF32Type());
    Value buffers[4] = {};   // the tensor every read or write starts from
    Value memrefs[4] = {};   // written buffers: the argument
    unsigned index = 0;
    for (ParamBuffer buffer : paramBufferArgs(use)) {
      int i = static_cast<int>(buffer);
      bool written = use.written[i];
      SmallVector<NamedAttribute> attrs = {
          b.getNamedAttr(paramBufferArgAttr(buffer), b.getUnitAttr())};
      // A buffer only read must stay as it is: bufferisation copies rather
      // than write into it.
      if (!written)
        attrs.push_back(
            b.getNamedAttr("bufferization.writable", b.getBoolAttr(false)));
      if (failed(func.insertArgument(index, written ? Type(memrefType)
                                                    : Type(tensorType),
                                     b.getDictionaryAttr(attrs), loc)))
        return func.emitError("cannot add the parameter buffer arguments");
      Value arg = func.getArgument(index++);
      if (!written) {
        buffers[i] = arg;
        continue;
      }
      memrefs[i] = arg;
      b.setInsertionPointToStart(&body);
      buffers[i] = bufferization::ToTensorOp::create(b, loc, tensorType, arg,
                                                     /*restrict=*/true,
                                                     /*writable=*/true);
    }

    // Writes, in block order: each extends the chain of values of its
    // buffer. `chainBefore[op]` is each chain's value just before `op`.
    DenseMap<Operation *, std::array<Value, 4>> chainBefore;
    DenseMap<Operation *, unsigned> position;
    std::array<Value, 4> current = {buffers[0], buffers[1], buffers[2],
                                    buffers[3]};
    unsigned counter = 0;
    for (Operation &op : llvm::make_early_inc_range(body)) {
      chainBefore[&op] = current;
      position[&op] = counter++;
      auto set = dyn_cast<SetParamOp>(op);
      if (!set)
        continue;
      auto it = offsets.find(set.getName());
      if (it == offsets.end())
        return set.emitError("no parameter named ") << set.getName();
      int i = static_cast<int>(set.getBuffer());
      b.setInsertionPoint(set);
      Value flat = flatten(b, set.getLoc(), set.getValue());
      int64_t size = cast<RankedTensorType>(flat.getType()).getDimSize(0);
      current[i] = tensor::InsertSliceOp::create(
          b, set.getLoc(), flat, current[i],
          ArrayRef<OpFoldResult>{b.getIndexAttr(it->second)},
          ArrayRef<OpFoldResult>{b.getIndexAttr(size)},
          ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
    }

    // The writes of the function: where each buffer slot was written.
    DenseMap<std::pair<Attribute, int>, SmallVector<unsigned>> writesOf;
    for (auto set : body.getOps<SetParamOp>())
      writesOf[{set.getNameAttr(), static_cast<int>(set.getBuffer())}]
          .push_back(position[set]);

    SmallVector<GetParamOp> gets;
    func.walk([&](GetParamOp get) { gets.push_back(get); });
    for (GetParamOp get : gets) {
      auto it = offsets.find(get.getName());
      if (it == offsets.end())
        return get.emitError("no parameter named ") << get.getName();
      int i = static_cast<int>(get.getBuffer());
      auto type = cast<RankedTensorType>(get.getType());
      if (!use.written[i]) {
        b.setInsertionPoint(get);
        get.replaceAllUsesWith(
            readSlot(b, get.getLoc(), buffers[i], it->second, type));
        get.erase();
        continue;
      }
      // A buffer the function writes: each use reads the chain's value at
      // the use (so that reads after writes of other slots do not keep the
      // old buffer alive), unless this slot was written between the read and
      // the use: then the value at the read, which bufferisation copies.
      unsigned readAt = position[get];
      const SmallVector<unsigned> &writes =
          writesOf.lookup({get.getNameAttr(), i});
      for (OpOperand &operand : llvm::make_early_inc_range(get->getUses())) {
        Operation *user = body.findAncestorOpInBlock(*operand.getOwner());
        unsigned useAt = position[user];
        bool rewritten = llvm::any_of(
            writes, [&](unsigned w) { return w > readAt && w < useAt; });
        Value chain = rewritten ? chainBefore[get][i] : chainBefore[user][i];
        b.setInsertionPoint(operand.getOwner());
        operand.set(readSlot(b, get.getLoc(), chain, it->second, type));
      }
      get.erase();
    }
    for (auto set : llvm::make_early_inc_range(body.getOps<SetParamOp>()))
      set.erase();

    // The final value of each written buffer goes back to its argument.
    Operation *terminator = body.getTerminator();
    b.setInsertionPoint(terminator);
    for (int i = 0; i < 4; ++i) {
      if (!memrefs[i])
        continue;
      auto write = bufferization::MaterializeInDestinationOp::create(
          b, loc, TypeRange{}, current[i], memrefs[i]);
      write.setWritable(true);
    }
    return success();
  }
};

} // namespace
} // namespace attn
