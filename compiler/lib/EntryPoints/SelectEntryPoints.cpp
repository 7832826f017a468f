//===- SelectEntryPoints.cpp - Only the entry points asked for ------------===//
//
// `attnc --entry`: a binary with fewer entry points compiles faster and is
// smaller; what the kept ones call stays.
//
//===----------------------------------------------------------------------===//

#include "attn/EntryPoints/Passes.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNSELECTENTRYPOINTS
#include "attn/EntryPoints/Passes.h.inc"

namespace {

/// The names of `wanted` and of every entry point among `entries` they call,
/// directly or not (`train_step` calls `<loss>_grad`).
llvm::StringSet<> withCallees(ModuleOp module, ArrayRef<func::FuncOp> entries,
                              ArrayRef<std::string> wanted) {
  llvm::StringSet<> kept;
  SmallVector<func::FuncOp> work;
  for (func::FuncOp func : entries)
    if (llvm::is_contained(wanted, func.getSymName())) {
      kept.insert(func.getSymName());
      work.push_back(func);
    }
  while (!work.empty()) {
    func::FuncOp func = work.pop_back_val();
    func.walk([&](func::CallOp call) {
      auto callee = module.lookupSymbol<func::FuncOp>(call.getCalleeAttr());
      if (callee && callee.isPublic() && !callee.isExternal() &&
          kept.insert(callee.getSymName()).second)
        work.push_back(callee);
    });
  }
  return kept;
}

struct AttnSelectEntryPointsPass
    : impl::AttnSelectEntryPointsBase<AttnSelectEntryPointsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (entries.empty())
      return;
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> all;
    for (auto func : module.getOps<func::FuncOp>())
      if (func.isPublic() && !func.isExternal())
        all.push_back(func);
    for (const std::string &name : entries)
      if (!llvm::any_of(
              all, [&](func::FuncOp f) { return f.getSymName() == name; })) {
        std::string names;
        for (func::FuncOp f : all)
          names += (names.empty() ? "" : ", ") + f.getSymName().str();
        module.emitError() << "the model has no entry point '" << name
                           << "'; it has " << names;
        return signalPassFailure();
      }
    llvm::StringSet<> kept = withCallees(module, all, entries);
    for (func::FuncOp func : all) {
      if (kept.contains(func.getSymName()))
        continue;
      if (SymbolTable::symbolKnownUseEmpty(func, module))
        func.erase();
      else
        func.setPrivate();
    }
  }
};

} // namespace
} // namespace attn
