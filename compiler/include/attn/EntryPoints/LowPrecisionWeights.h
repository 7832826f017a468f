//===- LowPrecisionWeights.h - The weights of `attnc --weights` -*- C++ -*-===//
//
// What `attn-quantize-weights` decides and the passes after it read: the
// format of the low-precision copy of the product weights (abi.h's
// attn_weight_format), recorded on the module, which parameters have a copy,
// marked on their `attn.param`, and where each copy lies in the runtime's
// weights and scales buffers.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_ENTRYPOINTS_LOWPRECISIONWEIGHTS_H
#define ATTN_ENTRYPOINTS_LOWPRECISIONWEIGHTS_H

#include "attn/Dialect/IR/AttnOps.h"

#include "mlir/IR/BuiltinOps.h"

#include <optional>

namespace attn {

enum class WeightFormat { f32, bf16, int8 };

/// The format an `attnc --weights` value names ("f32", "bf16", "int8").
std::optional<WeightFormat> parseWeightFormat(llvm::StringRef name);
llvm::StringRef weightFormatName(WeightFormat format);

/// The module attributes `attn-quantize-weights` sets: the format's name
/// and, for int8, the elements per scale.
inline constexpr llvm::StringLiteral kWeightFormatAttr = "attn.weight_format";
inline constexpr llvm::StringLiteral kWeightBlockAttr = "attn.weight_block";
/// The unit attribute on an `attn.param` whose low-precision copy the
/// runtime keeps.
inline constexpr llvm::StringLiteral kLowPrecisionAttr = "attn.low_precision";

/// The module's weight format (f32 when the pass did not run) and block.
WeightFormat weightFormatOf(mlir::ModuleOp module);
int64_t weightBlockOf(mlir::ModuleOp module);

/// The element type of the weights buffer (bf16 or i8).
mlir::Type weightElementType(mlir::MLIRContext *context, WeightFormat format);

/// Where one parameter's copy lies: elements of the weights buffer and of
/// the scales buffer (int8), each slot starting at a multiple of 64 bytes.
struct WeightSlot {
  ParamOp param;
  int64_t weightOffset, scaleOffset;
};
llvm::SmallVector<WeightSlot> computeWeightLayout(mlir::ModuleOp module,
                                                  int64_t &numWeights,
                                                  int64_t &numScales);

} // namespace attn

#endif // ATTN_ENTRYPOINTS_LOWPRECISIONWEIGHTS_H
