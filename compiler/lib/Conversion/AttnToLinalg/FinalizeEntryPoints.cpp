//===- FinalizeEntryPoints.cpp - Entry points as C interfaces -------------===//
//
// The last attn-specific step before LLVM: the model declarations go (their
// content is in the metadata the code generator emits) and each entry point
// gets MLIR's C interface wrapper.
//
//===----------------------------------------------------------------------===//

#include "attn/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNFINALIZEENTRYPOINTS
#include "attn/Conversion/Passes.h.inc"

namespace {

struct AttnFinalizeEntryPointsPass
    : impl::AttnFinalizeEntryPointsBase<AttnFinalizeEntryPointsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (Operation &op : llvm::make_early_inc_range(*module.getBody()))
      if (isa<ParamOp, TrainOp>(op))
        op.erase();
    UnitAttr unit = UnitAttr::get(&getContext());
    for (auto func : module.getOps<func::FuncOp>()) {
      // The argument descriptions (names, symbolic dims) are in the
      // metadata now; LLVM has no use for them.
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        for (llvm::StringRef name :
             {"attn.params", "attn.grads", "attn.first_moment",
              "attn.second_moment", "attn.hyper", "attn.seed", "attn.dims",
              "attn.name", "attn.kv_cache", "attn.kv_state"})
          func.removeArgAttr(i, name);
      if (func.isPublic() && !func.isExternal())
        func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(), unit);
    }
  }
};

} // namespace
} // namespace attn
