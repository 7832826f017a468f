//===- BindParams.cpp - Parameters as slices of one buffer ----------------===//
//
// Gives every entry point the parameter buffer as its first argument and
// turns each `attn.get_param` into a view of that buffer, at the offset the
// runtime's parameter table uses (`computeParamLayout`).
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

namespace {

struct AttnBindParamsPass : impl::AttnBindParamsBase<AttnBindParamsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    int64_t numElements;
    llvm::StringMap<int64_t> offsets;
    for (ParamSlot slot : computeParamLayout(module, numElements))
      offsets[slot.param.getSymName()] = slot.offset;

    OpBuilder b(module.getContext());
    auto bufferType =
        RankedTensorType::get({ShapedType::kDynamic}, b.getF32Type());
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      if (failed(func.insertArgument(0, bufferType,
                                     b.getDictionaryAttr(b.getNamedAttr(
                                         "attn.params", b.getUnitAttr())),
                                     func.getLoc()))) {
        func.emitError("cannot add the parameter buffer argument");
        return signalPassFailure();
      }
      Value buffer = func.getArgument(0);
      func.walk([&](GetParamOp get) {
        b.setInsertionPoint(get);
        Location loc = get.getLoc();
        auto type = cast<RankedTensorType>(get.getType());
        int64_t size = type.getNumElements();
        auto flatType = RankedTensorType::get({size}, type.getElementType());
        Value flat = tensor::ExtractSliceOp::create(
            b, loc, flatType, buffer,
            ArrayRef<OpFoldResult>{b.getIndexAttr(offsets[get.getName()])},
            ArrayRef<OpFoldResult>{b.getIndexAttr(size)},
            ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
        Value shaped = flat;
        if (type.getRank() != 1) {
          SmallVector<ReassociationIndices> groups;
          if (type.getRank() > 1)
            groups.push_back(llvm::to_vector(llvm::seq<int64_t>(0, type.getRank())));
          shaped = type.getRank() > 1
                       ? Value(tensor::ExpandShapeOp::create(b, loc, type, flat,
                                                             groups))
                       : Value(tensor::CollapseShapeOp::create(b, loc, type, flat,
                                                               groups));
        }
        get.replaceAllUsesWith(shaped);
        get.erase();
      });
    }
  }
};

} // namespace
} // namespace attn
