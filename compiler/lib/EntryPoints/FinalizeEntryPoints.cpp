//===- FinalizeEntryPoints.cpp - Entry points as C interfaces -------------===//
//
// The last attn-specific step before LLVM: the model declarations go (their
// content is in the metadata the code generator emits), each entry point
// takes the caller's activation arena (which attn-plan-arena places its
// temporaries in) and gets MLIR's C interface wrapper.
//
//===----------------------------------------------------------------------===//

#include "attn/EntryPoints/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNFINALIZEENTRYPOINTS
#include "attn/EntryPoints/Passes.h.inc"

namespace {

/// Appends the arena arguments (abi.h ATTN_ARG_ARENA, ATTN_ARG_ARENA_NEED)
/// to an entry point, once.
LogicalResult addArenaArguments(func::FuncOp func, bool markHostMemory) {
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (func.getArgAttr(i, kArenaArgAttr))
      return success();
  OpBuilder b(func.getContext());
  Location loc = func.getLoc();
  unsigned index = func.getNumArguments();
  auto bytes = MemRefType::get({ShapedType::kDynamic}, b.getIntegerType(8));
  auto need = MemRefType::get({}, b.getI64Type());
  SmallVector<NamedAttribute> needAttrs = {
      b.getNamedAttr(kArenaNeedArgAttr, b.getUnitAttr())};
  if (markHostMemory)
    needAttrs.push_back(b.getNamedAttr(kHostMemoryArgAttr, b.getUnitAttr()));
  if (failed(func.insertArgument(
          index, bytes,
          b.getDictionaryAttr(b.getNamedAttr(kArenaArgAttr, b.getUnitAttr())),
          loc)) ||
      failed(func.insertArgument(
          index + 1, need,
          b.getDictionaryAttr(needAttrs),
          loc)))
    return func.emitError("cannot add the activation arena arguments");
  return success();
}

struct AttnFinalizeEntryPointsPass
    : impl::AttnFinalizeEntryPointsBase<AttnFinalizeEntryPointsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (Operation &op : llvm::make_early_inc_range(*module.getBody()))
      if (isa<ParamOp, TrainOp>(op))
        op.erase();
    UnitAttr unit = UnitAttr::get(&getContext());
    for (auto func : module.getOps<func::FuncOp>()) {
      // The argument descriptions (names, symbolic dims) are in the
      // metadata now; LLVM has no use for them.
      for (unsigned i = 0; i < func.getNumArguments(); ++i) {
        if (markHostMemory && func.getArgAttr(i, "attn.kv_state"))
          func.setArgAttr(i, kHostMemoryArgAttr, unit);
        for (int buffer = 0; buffer < kNumParamBuffers; ++buffer)
          func.removeArgAttr(
              i, paramBufferArgAttr(static_cast<ParamBuffer>(buffer)));
        // attn.dropout_row stays for convert-attn-to-linalg, whose dropout
        // lowering reads the argument it marks, and which removes it.
        for (llvm::StringRef name : {"attn.hyper", "attn.seed", "attn.dims",
                                     "attn.name", "attn.kv_cache",
                                     "attn.kv_state"})
          func.removeArgAttr(i, name);
      }
      if (!func.isPublic() || func.isExternal())
        continue;
      if (failed(addArenaArguments(func, markHostMemory)))
        return signalPassFailure();
      func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(), unit);
    }
  }
};

} // namespace
} // namespace attn
