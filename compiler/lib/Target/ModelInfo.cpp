//===- ModelInfo.cpp - What the runtime needs to know of a model ----------===//
//
// Reads parameters (with the buffer layout `attn-bind-params` uses) and entry
// point signatures off the attn module.
//
//===----------------------------------------------------------------------===//

#include "attn/Target/ModelInfo.h"
#include "attn/EntryPoints/LowPrecisionWeights.h"

#include "attn/EntryPoints/Passes.h"

#include "attn/Dialect/IR/DimNames.h"
#include "attn/Dialect/Transforms/EntryPoints.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string_view>

using namespace mlir;

namespace attn {

/// The runtime's dtype of an element type, or none for a type the runtime
/// cannot pass.
static std::optional<attn_dtype> dtypeOf(Type type) {
  if (type.isF32())
    return ATTN_F32;
  if (type.isBF16())
    return ATTN_BF16;
  if (type.isInteger(32))
    return ATTN_I32;
  if (type.isInteger(64))
    return ATTN_I64;
  if (type.isInteger(1))
    return ATTN_BOOL;
  if (type.isInteger(8))
    return ATTN_I8;
  return std::nullopt;
}

static attn_init_kind abiInitKind(InitKind kind) {
  switch (kind) {
  case InitKind::zeros:
    return ATTN_INIT_ZEROS;
  case InitKind::ones:
    return ATTN_INIT_ONES;
  case InitKind::normal:
    return ATTN_INIT_NORMAL;
  case InitKind::uniform:
    return ATTN_INIT_UNIFORM;
  case InitKind::xavier_uniform:
    return ATTN_INIT_XAVIER_UNIFORM;
  }
  llvm_unreachable("an InitKind the ABI lacks");
}

static attn_optimizer_kind abiOptimizer(OptimizerKind kind) {
  switch (kind) {
  case OptimizerKind::adam:
    return ATTN_OPTIMIZER_ADAM;
  case OptimizerKind::adamw:
    return ATTN_OPTIMIZER_ADAMW;
  }
  llvm_unreachable("an OptimizerKind the ABI lacks");
}

static attn_schedule_kind abiSchedule(ScheduleKind kind) {
  switch (kind) {
  case ScheduleKind::constant:
    return ATTN_SCHEDULE_CONSTANT;
  case ScheduleKind::cosine:
    return ATTN_SCHEDULE_COSINE;
  case ScheduleKind::warmup_rsqrt:
    return ATTN_SCHEDULE_WARMUP_RSQRT;
  }
  llvm_unreachable("a ScheduleKind the ABI lacks");
}

/// The argument kind of each parameter buffer.
static attn_arg_kind abiArgKind(ParamBuffer buffer) {
  switch (buffer) {
  case ParamBuffer::value:
    return ATTN_ARG_PARAMS;
  case ParamBuffer::grad:
    return ATTN_ARG_GRADS;
  case ParamBuffer::first_moment:
    return ATTN_ARG_FIRST_MOMENT;
  case ParamBuffer::second_moment:
    return ATTN_ARG_SECOND_MOMENT;
  case ParamBuffer::weights:
    return ATTN_ARG_WEIGHTS;
  case ParamBuffer::weight_scales:
    return ATTN_ARG_WEIGHT_SCALES;
  }
  llvm_unreachable("a ParamBuffer the ABI lacks");
}

static attn_weight_format abiWeightFormat(WeightFormat format) {
  switch (format) {
  case WeightFormat::f32:
    return ATTN_WEIGHTS_F32;
  case WeightFormat::bf16:
    return ATTN_WEIGHTS_BF16;
  case WeightFormat::int8:
    return ATTN_WEIGHTS_INT8;
  }
  llvm_unreachable("a WeightFormat the ABI lacks");
}

/// The weight format and the low-precision slots of each parameter.
static void describeWeights(ModuleOp module, ModelInfo &info) {
  WeightFormat format = weightFormatOf(module);
  info.weightFormat = abiWeightFormat(format);
  info.weightBlock = format == WeightFormat::int8 ? weightBlockOf(module) : 0;
  llvm::StringMap<std::pair<int64_t, int64_t>> slots;
  for (WeightSlot slot : computeWeightLayout(module, info.numWeightElements,
                                             info.numScaleElements))
    slots[slot.param.getSymName()] = {slot.weightOffset, slot.scaleOffset};
  for (ParamInfo &p : info.params)
    if (auto it = slots.find(p.name); it != slots.end())
      std::tie(p.weightOffset, p.scaleOffset) = it->second;
}

/// The shape and dtype of the buffer `buffer` of an entry point.
static void describeBuffer(ParamBuffer buffer, const ModelInfo &info,
                           TensorInfo &t) {
  t.name = paramBufferArgAttr(buffer).drop_front(5).str();
  t.kind = abiArgKind(buffer);
  t.shape = {info.numParamElements};
  if (buffer == ParamBuffer::weights) {
    t.shape = {info.numWeightElements};
    t.dtype = info.weightFormat == ATTN_WEIGHTS_INT8 ? ATTN_I8 : ATTN_BF16;
  } else if (buffer == ParamBuffer::weight_scales) {
    t.shape = {info.numScaleElements};
  }
  t.dimNames = {""};
}

/// The names of the roles an entry point derived by a pass plays are the
/// dialect's (it may not include the runtime's header) and the runtime's:
/// they must agree.
static constexpr bool sameName(std::string_view abi, llvm::StringLiteral ir) {
  return abi == std::string_view(ir.data(), ir.size());
}
static_assert(sameName(ATTN_ENTRY_FORWARD, entry::kForward));
static_assert(sameName(ATTN_ENTRY_TRAIN_STEP, entry::kTrainStep));
static_assert(sameName(ATTN_ENTRY_GRAD_SUFFIX, entry::kGradSuffix));
static_assert(sameName(ATTN_ENTRY_PREFILL, entry::kPrefill));
static_assert(sameName(ATTN_ENTRY_DECODE_STEP, entry::kDecodeStep));
static_assert(sameName(ATTN_ENTRY_ENCODE, entry::kEncode));
static_assert(sameName(ATTN_ENTRY_DECODE, entry::kDecode));
static_assert(sameName(ATTN_ENTRY_DECODE_PREFILL, entry::kDecodePrefill));
static_assert(sameName(ATTN_ENTRY_ATTENTION_WEIGHTS,
                       entry::kAttentionWeights));

/// Describes a tensor of `type`; its dims are named by `dims` (attn.dims).
static FailureOr<TensorInfo> describe(Location loc, Type type,
                                      llvm::StringRef name, ArrayAttr dims) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  std::optional<attn_dtype> dtype =
      tensor ? dtypeOf(tensor.getElementType()) : std::nullopt;
  if (!dtype)
    return emitError(loc) << "an entry point cannot pass " << type
                          << " to the runtime";
  TensorInfo info;
  info.name = name.str();
  info.dtype = *dtype;
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

/// The training section of `train`, with PyTorch's defaults for any key the
/// op lacks (MLIRGen spells every key out; hand-written IR may not).
static TrainInfo describeTrain(TrainOp train) {
  TrainInfo info;
  info.lossFn = train.getLoss().str();
  info.optimizer = abiOptimizer(train.getOptimizer());
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
  info.schedule = abiSchedule(train.getSchedule());
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
    p.init = abiInitKind(param.getInit());
    llvm::append_range(p.initArgs, param.getInitArgs());
    info.params.push_back(std::move(p));
  }

  describeWeights(module, info);

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
      describeBuffer(buffer, info, params);
      entry.args.push_back(params);
    }
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      auto name = func.getArgAttrOfType<StringAttr>(i, "attn.name");
      bool hyper = func.getArgAttr(i, "attn.hyper") != nullptr;
      bool seed = func.getArgAttr(i, "attn.seed") != nullptr;
      bool row = func.getArgAttr(i, entry::kDropoutRowAttr) != nullptr;
      std::string fallback = hyper  ? "hyper"
                             : seed ? "seed"
                             : row  ? "dropout_row"
                                    : "arg" + std::to_string(i);
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
        if (t.getRank() != 1 || t.getDimSize(0) != ATTN_HYPER_COUNT ||
            !t.getElementType().isF32())
          return emitError(func.getLoc())
                 << "the hyperparameter argument of '" << entry.name
                 << "' must be tensor<" << ATTN_HYPER_COUNT << "xf32>, not "
                 << type;
        arg->kind = ATTN_ARG_HYPER;
      } else if (seed || row) {
        auto t = cast<RankedTensorType>(type);
        if (t.getRank() != 0 || !t.getElementType().isInteger(64))
          return emitError(func.getLoc())
                 << "the dropout " << (seed ? "seed" : "row")
                 << " argument of '" << entry.name
                 << "' must be tensor<i64>, not " << type;
        arg->kind = seed ? ATTN_ARG_SEED : ATTN_ARG_DROPOUT_ROW;
      }
      entry.args.push_back(std::move(*arg));
    }
    collectDimBounds(func, entry.args, /*firstInput=*/buffers.size());
    // The cache arguments `attn-bind-kv-cache` adds after the inputs.
    if (usesKVCache(func)) {
      TensorInfo cache;
      cache.name = "kv_cache";
      cache.kind = ATTN_ARG_KV_CACHE;
      cache.shape = {-1};
      cache.dimNames = {""};
      TensorInfo state;
      state.name = "kv_state";
      state.kind = ATTN_ARG_KV_STATE;
      state.dtype = ATTN_I64;
      // Positions cached, capacity, memory positions cached.
      state.shape = {ATTN_KV_STATE_SIZE};
      state.dimNames = {""};
      entry.args.push_back(cache);
      entry.args.push_back(state);
    }
    // The activation arena `attn-finalize-entry-points` adds last: bytes
    // (the one-byte dtype) and the i64 the entry point stores its need in.
    TensorInfo arena;
    arena.name = "arena";
    arena.kind = ATTN_ARG_ARENA;
    arena.dtype = ATTN_BOOL;
    arena.shape = {-1};
    arena.dimNames = {""};
    TensorInfo need;
    need.name = "arena_need";
    need.kind = ATTN_ARG_ARENA_NEED;
    need.dtype = ATTN_I64;
    entry.args.push_back(arena);
    entry.args.push_back(need);
    // A result's dims are named as the arguments' dims it keeps
    // (forward's logits are [B, T, vocab] of tokens [B, T]).
    Builder builder(func.getContext());
    for (Value value : func.front().getTerminator()->getOperands()) {
      SmallVector<Attribute> dims;
      for (StringAttr name : getDimNames(value))
        dims.push_back(name ? name : builder.getStringAttr(""));
      FailureOr<TensorInfo> result = describe(
          func.getLoc(), value.getType(), "", builder.getArrayAttr(dims));
      if (failed(result))
        return failure();
      entry.results.push_back(std::move(*result));
    }
    info.entries.push_back(std::move(entry));
  }
  return info;
}

} // namespace attn
