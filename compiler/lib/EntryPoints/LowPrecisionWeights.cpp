//===- LowPrecisionWeights.cpp - The weights of `attnc --weights` ---------===//

#include "attn/EntryPoints/LowPrecisionWeights.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace attn {

std::optional<WeightFormat> parseWeightFormat(llvm::StringRef name) {
  if (name == "f32")
    return WeightFormat::f32;
  if (name == "bf16")
    return WeightFormat::bf16;
  if (name == "int8")
    return WeightFormat::int8;
  return std::nullopt;
}

llvm::StringRef weightFormatName(WeightFormat format) {
  switch (format) {
  case WeightFormat::f32:
    return "f32";
  case WeightFormat::bf16:
    return "bf16";
  case WeightFormat::int8:
    return "int8";
  }
  llvm_unreachable("unknown weight format");
}

WeightFormat weightFormatOf(ModuleOp module) {
  auto name = module->getAttrOfType<StringAttr>(kWeightFormatAttr);
  if (!name)
    return WeightFormat::f32;
  return parseWeightFormat(name.getValue()).value_or(WeightFormat::f32);
}

int64_t weightBlockOf(ModuleOp module) {
  auto block = module->getAttrOfType<IntegerAttr>(kWeightBlockAttr);
  return block ? block.getInt() : 0;
}

Type weightElementType(MLIRContext *context, WeightFormat format) {
  Builder b(context);
  switch (format) {
  case WeightFormat::bf16:
    return b.getBF16Type();
  case WeightFormat::int8:
    return b.getIntegerType(8);
  case WeightFormat::f32:
    return b.getF32Type();
  }
  llvm_unreachable("unknown weight format");
}

/// Slots start at multiples of 64 bytes, as the parameters' do.
static int64_t alignTo64Bytes(int64_t elements, int64_t elementBytes) {
  int64_t perLine = 64 / elementBytes;
  return (elements + perLine - 1) / perLine * perLine;
}

SmallVector<WeightSlot> computeWeightLayout(ModuleOp module,
                                            int64_t &numWeights,
                                            int64_t &numScales) {
  SmallVector<WeightSlot> slots;
  numWeights = numScales = 0;
  WeightFormat format = weightFormatOf(module);
  if (format == WeightFormat::f32)
    return slots;
  int64_t weightBytes = format == WeightFormat::int8 ? 1 : 2;
  int64_t block = weightBlockOf(module);
  for (ParamOp param : module.getOps<ParamOp>()) {
    if (!param->hasAttr(kLowPrecisionAttr))
      continue;
    int64_t elements = param.getTensorType().getNumElements();
    slots.push_back({param, numWeights, format == WeightFormat::int8
                                            ? numScales
                                            : int64_t(-1)});
    numWeights += alignTo64Bytes(elements, weightBytes);
    if (format == WeightFormat::int8)
      numScales += alignTo64Bytes(elements / block, 4);
  }
  return slots;
}

} // namespace attn
