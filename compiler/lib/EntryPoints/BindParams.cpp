//===- BindParams.cpp - Parameters as slices of flat buffers --------------===//
//
// Gives every entry point the parameter buffer as its first argument, then
// the gradient and moment buffers it uses (same layout), and turns each
// `attn.get_param` into a view of its buffer at the offset the runtime's
// parameter table uses (`computeParamLayout`). `attn.set_param` writes in
// place: a buffer a function writes arrives as a memref; each slot the
// function accesses is a `memref.subview` seen as its own writable tensor
// (`bufferization.to_tensor restrict writable`: the slots are disjoint), a
// write makes the written value the slot's current one, and the last value
// is materialised back into the subview, which bufferisation turns into
// nothing when the value was computed in place (the tests check that it
// is). `attn.get_param_buffer` / `attn.set_param_buffer` access a whole
// buffer: the argument itself when read only, else one slot spanning it.
// A call of another entry point (train_step's of `<loss>_grad`) is taken
// out and recorded for attn-compose-entry-calls (kEntryCallAttr).
// One tensor per slot rather than one chain of inserts per buffer:
// one-shot bufferisation's analysis follows such a chain back for every
// read of it, which made it cubic in the number of parameters (gpt2_small's
// train_step: minutes).
//
//===----------------------------------------------------------------------===//

#include "attn/EntryPoints/Passes.h"
#include "attn/EntryPoints/LowPrecisionWeights.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNBINDPARAMS
#include "attn/EntryPoints/Passes.h.inc"

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
  case ParamBuffer::weights:
    return "attn.weights";
  case ParamBuffer::weight_scales:
    return "attn.weight_scales";
  }
  llvm_unreachable("unknown parameter buffer");
}

func::FuncOp calledEntryPoint(func::CallOp call) {
  auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      call, call.getCalleeAttr());
  if (!callee || !callee.isPublic() || callee.isExternal())
    return nullptr;
  return callee;
}

/// The buffer an access op (get_param, set_param and their whole-buffer
/// forms) addresses, and whether it writes it; none for other ops.
static std::optional<std::pair<int, bool>> paramAccess(Operation *op) {
  if (auto get = dyn_cast<GetParamOp>(op))
    return std::make_pair(static_cast<int>(get.getBuffer()), false);
  if (auto get = dyn_cast<GetParamBufferOp>(op))
    return std::make_pair(static_cast<int>(get.getBuffer()), false);
  if (auto set = dyn_cast<SetParamOp>(op))
    return std::make_pair(static_cast<int>(set.getBuffer()), true);
  if (auto set = dyn_cast<SetParamBufferOp>(op))
    return std::make_pair(static_cast<int>(set.getBuffer()), true);
  return std::nullopt;
}

/// The buffers `func`'s own access ops use.
static ParamBufferUse ownParamBuffers(func::FuncOp func) {
  ParamBufferUse use;
  func.walk([&](Operation *op) {
    if (auto access = paramAccess(op))
      (access->second ? use.written : use.read)[access->first] = true;
  });
  use.read[0] = true; // every entry point takes the parameter buffer
  return use;
}

ParamBufferUse paramBuffersOf(func::FuncOp func) {
  ParamBufferUse use = ownParamBuffers(func);
  // The caller passes its buffers on to an entry point it calls: it takes
  // them too (as read-only: the callee's writes happen before its own
  // code runs).
  func.walk([&](func::CallOp call) {
    func::FuncOp callee = calledEntryPoint(call);
    if (!callee || callee == func)
      return;
    ParamBufferUse inner = ownParamBuffers(callee);
    for (int i = 0; i < kNumParamBuffers; ++i)
      use.read[i] |= inner.read[i] || inner.written[i];
  });
  return use;
}

SmallVector<ParamBuffer> paramBufferArgs(const ParamBufferUse &use) {
  SmallVector<ParamBuffer> buffers;
  for (int i = 0; i < kNumParamBuffers; ++i)
    if (use.read[i] || use.written[i])
      buffers.push_back(static_cast<ParamBuffer>(i));
  return buffers;
}

namespace {

/// `flat` (a [size] tensor) reshaped to `type`.
Value unflatten(OpBuilder &b, Location loc, Value flat, RankedTensorType type) {
  if (type.getRank() == 1)
    return flat;
  if (type.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, type, flat,
                                           ArrayRef<ReassociationIndices>{});
  ReassociationIndices all = llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
  return tensor::ExpandShapeOp::create(b, loc, type, flat,
                                       ArrayRef<ReassociationIndices>{all});
}

/// The flat [size] slice at `offset` of `buffer`, reshaped to `type`.
Value readSlot(OpBuilder &b, Location loc, Value buffer, int64_t offset,
               RankedTensorType type) {
  int64_t size = type.getNumElements();
  auto flatType = RankedTensorType::get({size}, type.getElementType());
  Value flat = tensor::ExtractSliceOp::create(
      b, loc, flatType, buffer, ArrayRef<OpFoldResult>{b.getIndexAttr(offset)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(size)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  return unflatten(b, loc, flat, type);
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

/// Per buffer: its element type and the offset of each parameter's slot.
/// The parameters, gradients and moments share the f32 layout
/// (`computeParamLayout`); the low-precision weights and their scales have
/// their own (`computeWeightLayout`), holding only the marked parameters.
struct BufferLayouts {
  Type elementTypes[kNumParamBuffers];
  llvm::StringMap<int64_t> offsets[kNumParamBuffers];

  explicit BufferLayouts(ModuleOp module) {
    Builder b(module.getContext());
    int64_t numElements, numWeights, numScales;
    llvm::StringMap<int64_t> f32Offsets;
    for (ParamSlot slot : computeParamLayout(module, numElements))
      f32Offsets[slot.param.getSymName()] = slot.offset;
    for (int i = 0; i < kNumParamBuffers; ++i) {
      elementTypes[i] = b.getF32Type();
      offsets[i] = f32Offsets;
    }
    int weights = static_cast<int>(ParamBuffer::weights);
    int scales = static_cast<int>(ParamBuffer::weight_scales);
    offsets[weights].clear();
    offsets[scales].clear();
    WeightFormat format = weightFormatOf(module);
    if (format == WeightFormat::f32)
      return;
    elementTypes[weights] = weightElementType(module.getContext(), format);
    for (WeightSlot slot : computeWeightLayout(module, numWeights, numScales)) {
      offsets[weights][slot.param.getSymName()] = slot.weightOffset;
      offsets[scales][slot.param.getSymName()] = slot.scaleOffset;
    }
  }
};

/// The parameter accesses of one function rewritten as accesses of the
/// buffers passed in.
class FunctionBinder {
public:
  FunctionBinder(func::FuncOp func, const ParamBufferUse &use,
                 const BufferLayouts &layouts)
      : func(func), use(use), layouts(layouts), b(func.getContext()),
        body(func.front()) {}

  LogicalResult bind() {
    if (failed(checkTopLevel()) || failed(addBufferArguments()) ||
        failed(bindReadOnlyBuffers()) || failed(bindWrittenBuffers()))
      return failure();
    storeWrittenSlots();
    return success();
  }

private:
  /// Reads and writes of a buffer a function writes are ordered by their
  /// place in the body's block; nested ones cannot be ordered.
  LogicalResult checkTopLevel() {
    WalkResult nested = func.walk([&](Operation *op) {
      std::optional<std::pair<int, bool>> access = paramAccess(op);
      if (access && op->getBlock() != &body && use.written[access->first]) {
        op->emitError("a parameter buffer the function writes can only be "
                      "accessed at the top level of the function");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    return failure(nested.wasInterrupted());
  }

  /// The buffer arguments, first and in buffer order.
  LogicalResult addBufferArguments() {
    Location loc = func.getLoc();
    unsigned index = 0;
    for (ParamBuffer buffer : paramBufferArgs(use)) {
      int i = static_cast<int>(buffer);
      Type element = layouts.elementTypes[i];
      auto tensorType = RankedTensorType::get({ShapedType::kDynamic}, element);
      auto memrefType = MemRefType::get({ShapedType::kDynamic}, element);
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
      (written ? memrefs : buffers)[i] = arg;
    }
    return success();
  }

  /// Reads of buffers the function only reads: slices of the argument (a
  /// whole-buffer read: the argument itself).
  LogicalResult bindReadOnlyBuffers() {
    SmallVector<Operation *> reads;
    func.walk([&](Operation *op) {
      if (isa<GetParamOp, GetParamBufferOp>(op))
        reads.push_back(op);
    });
    for (Operation *op : reads) {
      std::optional<std::pair<int, bool>> access = paramAccess(op);
      int i = access->first;
      if (use.written[i])
        continue;
      b.setInsertionPoint(op);
      auto type = cast<RankedTensorType>(op->getResult(0).getType());
      Value read;
      if (auto get = dyn_cast<GetParamOp>(op)) {
        const llvm::StringMap<int64_t> &offsets = layouts.offsets[i];
        auto it = offsets.find(get.getName());
        if (it == offsets.end())
          return get.emitError("no parameter named ")
                 << get.getName() << " in the " << paramBufferArgAttr(get.getBuffer())
                 << " buffer";
        read = readSlot(b, get.getLoc(), buffers[i], it->second, type);
      } else {
        read = tensor::CastOp::create(b, op->getLoc(), type, buffers[i]);
      }
      op->getResult(0).replaceAllUsesWith(read);
      op->erase();
    }
    return success();
  }

  /// One slot of a written buffer: a subview of the argument seen as one
  /// tensor (made at the top of the body), its current value that tensor
  /// until a write replaces it.
  struct Slot {
    Value memref;  // the subview
    Value current; // flat tensor<size x f32>
    bool written = false;
  };

  /// The slot `op` accesses, made at its first access: a parameter (keyed
  /// by its name) or, for the whole-buffer ops, the whole buffer (keyed by
  /// `wholeKey`); the two cannot mix in one buffer, whose slots must be
  /// disjoint.
  FailureOr<Slot *> slotOf(Operation *op, Attribute key, ParamBuffer buffer,
                           int64_t size) {
    int i = static_cast<int>(buffer);
    auto [it, inserted] = slots.try_emplace({key, i});
    if (!inserted)
      return &it->second;
    int64_t offset = 0;
    if (auto name = dyn_cast<FlatSymbolRefAttr>(key)) {
      const llvm::StringMap<int64_t> &offsets = layouts.offsets[i];
      auto found = offsets.find(name.getValue());
      if (found == offsets.end())
        return op->emitError("no parameter named ") << name.getValue();
      offset = found->second;
    }
    (key == wholeKey ? whole : sliced)[i] = true;
    if (whole[i] && sliced[i])
      return op->emitError("a function cannot access a parameter buffer it "
                           "writes both whole and per parameter");
    // Slots are made at the top of the body, in order of first access.
    if (lastSlot)
      b.setInsertionPointAfter(lastSlot);
    else
      b.setInsertionPointToStart(&body);
    Location loc = func.getLoc();
    Value view = memref::SubViewOp::create(
        b, loc, memrefs[i], ArrayRef<OpFoldResult>{b.getIndexAttr(offset)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(size)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
    Value tensor = bufferization::ToTensorOp::create(
        b, loc, RankedTensorType::get({size}, layouts.elementTypes[i]), view,
        /*restrict=*/true, /*writable=*/true);
    lastSlot = tensor.getDefiningOp();
    it->second.memref = view;
    it->second.current = tensor;
    return &it->second;
  }

  /// Accesses of written buffers, in block order: a read is the slot's
  /// value current at the read, a write replaces it.
  LogicalResult bindWrittenBuffers() {
    wholeKey = b.getUnitAttr();
    auto elements = [](Type type) {
      return cast<RankedTensorType>(type).getNumElements();
    };
    for (Operation &op : llvm::make_early_inc_range(body)) {
      if (auto get = dyn_cast<GetParamOp>(op)) {
        FailureOr<Slot *> slot = slotOf(get, get.getNameAttr(), get.getBuffer(),
                                        elements(get.getType()));
        if (failed(slot))
          return failure();
        b.setInsertionPoint(get);
        get.replaceAllUsesWith(unflatten(b, get.getLoc(), (*slot)->current,
                                         cast<RankedTensorType>(get.getType())));
        get.erase();
      } else if (auto get = dyn_cast<GetParamBufferOp>(op)) {
        FailureOr<Slot *> slot =
            slotOf(get, wholeKey, get.getBuffer(), elements(get.getType()));
        if (failed(slot))
          return failure();
        get.replaceAllUsesWith((*slot)->current);
        get.erase();
      } else if (auto set = dyn_cast<SetParamOp>(op)) {
        FailureOr<Slot *> slot = slotOf(set, set.getNameAttr(), set.getBuffer(),
                                        elements(set.getValue().getType()));
        if (failed(slot))
          return failure();
        b.setInsertionPoint(set);
        (*slot)->current = flatten(b, set.getLoc(), set.getValue());
        (*slot)->written = true;
        set.erase();
      } else if (auto set = dyn_cast<SetParamBufferOp>(op)) {
        FailureOr<Slot *> slot = slotOf(set, wholeKey, set.getBuffer(),
                                        elements(set.getValue().getType()));
        if (failed(slot))
          return failure();
        (*slot)->current = set.getValue();
        (*slot)->written = true;
        set.erase();
      }
    }
    return success();
  }

  /// The final value of each written slot goes back to its subview.
  void storeWrittenSlots() {
    b.setInsertionPoint(body.getTerminator());
    for (auto &[key, slot] : slots) {
      if (!slot.written)
        continue;
      auto write = bufferization::MaterializeInDestinationOp::create(
          b, func.getLoc(), TypeRange{}, slot.current, slot.memref);
      write.setWritable(true);
    }
  }

  func::FuncOp func;
  const ParamBufferUse &use;
  const BufferLayouts &layouts;
  OpBuilder b;
  Block &body;
  Value buffers[kNumParamBuffers] = {}; // read-only buffers: the argument
  Value memrefs[kNumParamBuffers] = {}; // written buffers: the argument
  llvm::MapVector<std::pair<Attribute, int>, Slot> slots;
  Attribute wholeKey;
  bool sliced[kNumParamBuffers] = {}, whole[kNumParamBuffers] = {};
  Operation *lastSlot = nullptr;
};

struct AttnBindParamsPass : impl::AttnBindParamsBase<AttnBindParamsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    BufferLayouts layouts(module);
    // Every function's buffers first (a caller's include those of the entry
    // point it calls), then the calls become records, then the bodies are
    // bound.
    SmallVector<std::pair<func::FuncOp, ParamBufferUse>> functions;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal())
        functions.push_back({func, paramBuffersOf(func)});
    SmallVector<EntryCall> calls;
    for (auto &[func, use] : functions)
      if (failed(extractEntryCall(func, calls)))
        return signalPassFailure();
    for (auto &[func, use] : functions)
      if (failed(bindFunction(func, use, layouts)))
        return signalPassFailure();
    for (EntryCall &call : calls)
      recordEntryCall(call);
  }

  /// A call of another entry point, taken out of the caller's body: the
  /// callee, the caller's arguments it was passed (in the callee's
  /// argument order before binding).
  struct EntryCall {
    func::FuncOp caller, callee;
    SmallVector<BlockArgument> operands;
  };

  /// Takes the call of another entry point (train_step's call of
  /// `<loss>_grad`) out of `func`: each of its results becomes a new last
  /// argument of `func` marked `kEntryCallResultAttr`, which
  /// attn-compose-entry-calls replaces by the call again once both
  /// functions are on buffers. Only a call at the top level, of the
  /// caller's own arguments, before anything of the caller that writes,
  /// can move to the top of the body; the autodiff pass builds no other.
  LogicalResult extractEntryCall(func::FuncOp func,
                                 SmallVectorImpl<EntryCall> &calls) {
    SmallVector<func::CallOp> found;
    func.walk([&](func::CallOp call) {
      if (calledEntryPoint(call))
        found.push_back(call);
    });
    if (found.empty())
      return success();
    func::CallOp call = found.front();
    if (found.size() > 1)
      return found[1].emitError("a function can call only one entry point");
    Block &body = func.front();
    if (call->getBlock() != &body)
      return call.emitError("an entry point can be called only at the top "
                            "level of a function");
    func::FuncOp callee = calledEntryPoint(call);
    bool nested = callee.walk([](func::CallOp inner) {
                          return calledEntryPoint(inner)
                                     ? WalkResult::interrupt()
                                     : WalkResult::advance();
                        }).wasInterrupted();
    if (callee == func || nested)
      return call.emitError("an entry point called by another cannot call "
                            "an entry point itself");
    EntryCall record{func, callee, {}};
    for (Value operand : call.getOperands()) {
      auto arg = dyn_cast<BlockArgument>(operand);
      if (!arg || arg.getOwner() != &body)
        return call.emitError("an entry point can be called only with the "
                              "caller's own arguments");
      record.operands.push_back(arg);
    }
    for (Operation &op : body) {
      if (&op == call.getOperation())
        break;
      if (isa<SetParamOp>(op) || !isMemoryEffectFree(&op))
        return call.emitError("an entry point can be called only before "
                              "the caller writes anything");
    }
    OpBuilder b(func.getContext());
    for (auto [index, result] : llvm::enumerate(call.getResults())) {
      unsigned position = func.getNumArguments();
      SmallVector<NamedAttribute> attrs = {
          b.getNamedAttr(kEntryCallResultAttr, b.getI64IntegerAttr(index)),
          b.getNamedAttr("bufferization.writable", b.getBoolAttr(false))};
      if (failed(func.insertArgument(position, result.getType(),
                                     b.getDictionaryAttr(attrs),
                                     call.getLoc())))
        return func.emitError("cannot add an argument for a call's result");
      result.replaceAllUsesWith(func.getArgument(position));
    }
    call.erase();
    calls.push_back(std::move(record));
    return success();
  }

  /// Once both functions are bound: `kEntryCallAttr` on the caller, the
  /// callee and, per callee argument, the caller's argument passed (its
  /// buffer of the same kind, or the argument the call was given).
  void recordEntryCall(EntryCall &call) {
    SmallVector<int64_t> args;
    func::FuncOp callee = call.callee;
    unsigned inputs = 0;
    for (unsigned i = 0; i < callee.getNumArguments(); ++i) {
      std::optional<int64_t> buffer;
      for (int kind = 0; kind < kNumParamBuffers; ++kind) {
        StringRef attr = paramBufferArgAttr(static_cast<ParamBuffer>(kind));
        if (!callee.getArgAttr(i, attr))
          continue;
        for (unsigned j = 0; j < call.caller.getNumArguments(); ++j)
          if (call.caller.getArgAttr(j, attr))
            buffer = j;
      }
      if (buffer) {
        args.push_back(*buffer);
        continue;
      }
      args.push_back(call.operands[inputs++].getArgNumber());
    }
    Builder b(call.caller.getContext());
    call.caller->setAttr(
        kEntryCallAttr,
        b.getDictionaryAttr(
            {b.getNamedAttr("callee", FlatSymbolRefAttr::get(callee)),
             b.getNamedAttr("args", b.getDenseI64ArrayAttr(args))}));
  }

  LogicalResult bindFunction(func::FuncOp func, const ParamBufferUse &use,
                             const BufferLayouts &layouts) {
    return FunctionBinder(func, use, layouts).bind();
  }
};

} // namespace
} // namespace attn
