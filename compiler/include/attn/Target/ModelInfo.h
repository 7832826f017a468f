//===- ModelInfo.h - What the runtime needs to know of a model --*- C++ -*-===//
//
// The description of a compiled model that goes into its object as an
// `attn_model_info` (runtime/include/attn/abi.h): parameters with their
// offsets and initialisers, entry points with their tensors. It is read off
// the attn module before lowering, while the declarations still exist.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TARGET_MODELINFO_H
#define ATTN_TARGET_MODELINFO_H

#include "mlir/IR/BuiltinOps.h"

#include "attn/abi.h"

#include <optional>
#include <string>
#include <vector>

namespace attn {

struct TensorInfo {
  std::string name;
  attn_arg_kind kind = ATTN_ARG_INPUT;
  attn_dtype dtype = ATTN_F32;
  std::vector<int64_t> shape; // -1 for a run-time size
  std::vector<std::string> dimNames;
  /// Per dim, the largest size the model allows; -1 for any (empty: none).
  std::vector<int64_t> maxShape;
  /// Ids looked up in a table must be in [0, idLimit); 0 when unchecked.
  int64_t idLimit = 0;
};

struct ParamInfo {
  std::string name;
  std::vector<int64_t> shape;
  int64_t offset = 0;
  attn_init_kind init = ATTN_INIT_ZEROS;
  std::vector<double> initArgs;
  /// The low-precision copy's slots (abi.h attn_param_info); -1 for none.
  int64_t weightOffset = -1, scaleOffset = -1;
};

struct EntryInfo {
  std::string name;
  std::vector<TensorInfo> args; // the parameter buffers first, the arena last
  std::vector<TensorInfo> results;
  /// Bytes of the activation arena at batch 1 and the model's other bounds,
  /// and per further sequence of the batch; -1 when not known at compile
  /// time (collectArenaSizes).
  int64_t arenaBytes = -1;
  int64_t arenaBytesPerBatch = -1;
};

/// The `train { }` section (abi.h attn_train_info).
struct TrainInfo {
  std::string lossFn;
  attn_optimizer_kind optimizer = ATTN_OPTIMIZER_ADAM;
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0;
  attn_schedule_kind schedule = ATTN_SCHEDULE_CONSTANT;
  int64_t warmup = 0, totalSteps = 0;
  double dModel = 0, clipNorm = 0;
};

struct ModelInfo {
  std::string name;
  std::string target;
  int64_t numParamElements = 0;
  std::vector<ParamInfo> params;
  std::vector<EntryInfo> entries;
  int64_t kvCacheFloatsPerPosition = 0;
  /// How products read their weights (`attnc --weights`), the elements per
  /// int8 scale, and the sizes of the weights and scales buffers.
  attn_weight_format weightFormat = ATTN_WEIGHTS_F32;
  int64_t weightBlock = 0, numWeightElements = 0, numScaleElements = 0;
  /// int8 weights: 16 when single rows of A are rounded to int16 for
  /// integer dot products (AVX512-VNNI targets), else 0.
  int64_t int8RowBits = 0;
  /// How the products compute (`attnc --precision`).
  attn_precision precision = ATTN_PRECISION_F32;
  /// Where bf16 products run (`--amx`; AMX tiles by default on a target
  /// with AMX-BF16).
  attn_amx_tiles amxTiles = ATTN_AMX_OFF;
  /// The training section, when the model has one.
  std::optional<TrainInfo> train;
};

/// Reads the model description off an attn module (before
/// `attn-bind-params`). Fails with a diagnostic on a type the runtime cannot
/// pass (e.g. an f64 argument).
mlir::FailureOr<ModelInfo> collectModelInfo(mlir::ModuleOp module);

} // namespace attn

#endif // ATTN_TARGET_MODELINFO_H
