//===- ModelInfo.cpp - What the runtime needs to know of a model ----------===//
//
// Reads parameters (with the buffer layout `attn-bind-params` uses) and entry
// point signatures off the attn module.
//
//===----------------------------------------------------------------------===//

#include "attn/Target/ModelInfo.h"

#include "attn/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

namespace attn {

/// The runtime's dtype code (attn_dtype) of an element type, or -1.
static int dtypeOf(Type type) {
  if (type.isF32())
    return 0;
  if (type.isBF16())
    return 1;
  if (type.isInteger(32))
    return 2;
  if (type.isInteger(64))
    return 3;
  if (type.isInteger(1))
    return 4;
  return -1;
}

/// Describes a tensor of `type`; its dims are named by `dims` (attn.dims).
static FailureOr<TensorInfo> describe(Location loc, Type type,
                                      llvm::StringRef name, ArrayAttr dims) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  int dtype = tensor ? dtypeOf(tensor.getElementType()) : -1;
  if (dtype < 0)
    return emitError(loc) << "an entry point cannot pass " << type
                          << " to the runtime";
  TensorInfo info;
  info.name = name.str();
  info.dtype = dtype;
  for (auto [axis, size] : llvm::enumerate(tensor.getShape())) {
    info.shape.push_back(ShapedType::isDynamic(size) ? -1 : size);
    std::string dimName;
    if (dims && axis < dims.size())
      if (auto s = dyn_cast<StringAttr>(dims[axis]))
        dimName = s.getValue().str();
    info.dimNames.push_back(dimName);
  }
  return info;
}

/// What the arguments of `func` may hold, from the tables they index: ids
/// passed to a gather are rows of its table, and a dim whose size is the
/// length of `positions(...)` looked up in a table of N rows is at most N.
static void collectDimBounds(func::FuncOp func,
                             std::vector<TensorInfo> &args,
                             unsigned firstInput) {
  func.walk([&](GatherOp gather) {
    auto table = cast<RankedTensorType>(gather.getTable().getType());
    if (table.isDynamicDim(0))
      return;
    // Ids passed in are rows of the table.
    if (auto ids = dyn_cast<BlockArgument>(gather.getIds());
        ids && ids.getOwner() == &func.front()) {
      int64_t &limit = args[firstInput + ids.getArgNumber()].idLimit;
      limit = limit ? std::min(limit, table.getDimSize(0)) : table.getDimSize(0);
      return;
    }
    auto positions = gather.getIds().getDefiningOp<PositionsOp>();
    if (!positions)
      return;
    auto dim = positions.getLength().getDefiningOp<DimOp>();
    auto arg = dim ? dyn_cast<BlockArgument>(dim.getInput()) : nullptr;
    if (!arg || arg.getOwner() != &func.front())
      return;
    TensorInfo &info = args[firstInput + arg.getArgNumber()];
    int64_t axis = dim.getAxis();
    if (info.maxShape.empty())
      info.maxShape.assign(info.shape.size(), -1);
    int64_t &bound = info.maxShape[axis];
    bound = bound < 0 ? table.getDimSize(0)
                      : std::min(bound, table.getDimSize(0));
  });
}

/// attn_arg_kind of each ParamBuffer's argument.
static constexpr int kParamBufferKinds[] = {0, 4, 5, 6};
/// ATTN_ARG_ARENA, ATTN_ARG_ARENA_NEED.
static constexpr int kArenaKind = 9, kArenaNeedKind = 10;
/// ATTN_HYPER_COUNT.
static constexpr int64_t kHyperCount = 7;

/// The training section of `train`, with PyTorch's defaults for any key the
/// op lacks (MLIRGen spells every key out; hand-written IR may not).
static TrainInfo describeTrain(TrainOp train) {
  TrainInfo info;
  info.lossFn = train.getLoss().str();
  info.optimizer = static_cast<int>(train.getOptimizer());
  if (train.getOptimizer() == OptimizerKind::adamw)
    info.weightDecay = 0.01;
  DictionaryAttr optimizer = train.getOptimizerArgs();
  auto number = [](DictionaryAttr dict, llvm::StringRef key, double fallback) {
    Attribute value = dict.get(key);
    if (auto f = dyn_cast_or_null<FloatAttr>(value))
      return f.getValueAsDouble();
    if (auto i = dyn_cast_or_null<IntegerAttr>(value))
      return static_cast<double>(i.getInt());
    return fallback;
  };
  info.lr = number(optimizer, "lr", info.lr);
  info.beta1 = number(optimizer, "beta1", info.beta1);
  info.beta2 = number(optimizer, "beta2", info.beta2);
  info.eps = number(optimizer, "eps", info.eps);
  info.weightDecay = number(optimizer, "weight_decay", info.weightDecay);
  info.schedule = static_cast<int>(train.getSchedule());
  DictionaryAttr schedule = train.getScheduleArgs();
  switch (train.getSchedule()) {
  case ScheduleKind::constant:
    break;
  case ScheduleKind::cosine:
    info.warmup = static_cast<int64_t>(number(schedule, "warmup", 0));
    info.totalSteps = static_cast<int64_t>(number(schedule, "steps", 0));
    break;
  case ScheduleKind::warmup_rsqrt:
    info.warmup = static_cast<int64_t>(number(schedule, "warmup", 4000));
    info.dModel = number(schedule, "d_model", 0);
    break;
  }
  info.clipNorm = train.getClipNorm().convertToDouble();
  return info;
}

FailureOr<ModelInfo> collectModelInfo(ModuleOp module) {
  ModelInfo info;
  if (auto name = module->getAttrOfType<StringAttr>("attn.model"))
    info.name = name.getValue().str();
  else if (module.getSymName())
    info.name = module.getSymName()->str();
  else
    info.name = "model";

  for (const ParamSlot &slot :
       computeParamLayout(module, info.numParamElements)) {
    ParamOp param = slot.param;
    ParamInfo p;
    p.name = param.getSymName().str();
    llvm::append_range(p.shape, param.getTensorType().getShape());
    p.offset = slot.offset;
    p.init = static_cast<int>(param.getInit());
    llvm::append_range(p.initArgs, param.getInitArgs());
    info.params.push_back(std::move(p));
  }

  // One cache layout serves every entry point.
  if (failed(computeKVCacheLayout(module, info.kvCacheFloatsPerPosition)))
    return failure();
  for (TrainOp train : module.getOps<TrainOp>())
    info.train = describeTrain(train);

  for (auto func : module.getOps<func::FuncOp>()) {
    if (!func.isPublic() || func.isExternal())
      continue;
    EntryInfo entry;
    entry.name = func.getSymName().str();
    // The buffers `attn-bind-params` adds, in its order.
    SmallVector<ParamBuffer> buffers = paramBufferArgs(paramBuffersOf(func));
    for (ParamBuffer buffer : buffers) {
      TensorInfo params;
      params.name = paramBufferArgAttr(buffer).drop_front(5).str();
      params.kind = kParamBufferKinds[static_cast<int>(buffer)];
      params.shape = {info.numParamElements};
      params.dimNames = {""};
      entry.args.push_back(params);
    }
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      auto name = func.getArgAttrOfType<StringAttr>(i, "attn.name");
      bool hyper = func.getArgAttr(i, "attn.hyper") != nullptr;
      bool seed = func.getArgAttr(i, "attn.seed") != nullptr;
      std::string fallback =
          hyper ? "hyper" : seed ? "seed" : "arg" + std::to_string(i);
      Type type = func.getArgumentTypes()[i];
      FailureOr<TensorInfo> arg =
          describe(func.getLoc(), type,
                   name ? name.getValue() : llvm::StringRef(fallback),
                   func.getArgAttrOfType<ArrayAttr>(i, "attn.dims"));
      if (failed(arg))
        return failure();
      // The training arguments the runtime provides: their types are the
      // ABI's.
      if (hyper) {
        auto t = cast<RankedTensorType>(type);
        if (t.getRank() != 1 || t.getDimSize(0) != kHyperCount ||
            !t.getElementType().isF32())
          return emitError(func.getLoc())
                 << "the hyperparameter argument of '" << entry.name
                 << "' must be tensor<" << kHyperCount << "xf32>, not " << type;
        arg->kind = 7;
      } else if (seed) {
        auto t = cast<RankedTensorType>(type);
        if (t.getRank() != 0 || !t.getElementType().isInteger(64))
          return emitError(func.getLoc())
                 << "the dropout seed argument of '" << entry.name
                 << "' must be tensor<i64>, not " << type;
        arg->kind = 8;
      }
      entry.args.push_back(std::move(*arg));
    }
    collectDimBounds(func, entry.args, /*firstInput=*/buffers.size());
    // The cache arguments `attn-bind-kv-cache` adds after the inputs.
    if (usesKVCache(func)) {
      TensorInfo cache;
      cache.name = "kv_cache";
      cache.kind = 2;
      cache.shape = {-1};
      cache.dimNames = {""};
      TensorInfo state;
      state.name = "kv_state";
      state.kind = 3;
      state.dtype = 3;
      // Positions cached, capacity, memory positions cached.
      state.shape = {3};
      state.dimNames = {""};
      entry.args.push_back(cache);
      entry.args.push_back(state);
    }
    // The activation arena `attn-finalize-entry-points` adds last: bytes
    // (the one-byte dtype) and the i64 the entry point stores its need in.
    TensorInfo arena;
    arena.name = "arena";
    arena.kind = kArenaKind;
    arena.dtype = 4;
    arena.shape = {-1};
    arena.dimNames = {""};
    TensorInfo need;
    need.name = "arena_need";
    need.kind = kArenaNeedKind;
    need.dtype = 3;
    entry.args.push_back(arena);
    entry.args.push_back(need);
    for (Type type : func.getResultTypes()) {
      FailureOr<TensorInfo> result = describe(func.getLoc(), type, "", {});
      if (failed(result))
        return failure();
      entry.results.push_back(std::move(*result));
    }
    info.entries.push_back(std::move(entry));
  }
  return info;
}

} // namespace attn
