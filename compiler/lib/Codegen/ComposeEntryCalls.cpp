//===- ComposeEntryCalls.cpp - Calls between entry points on buffers ------===//
//
// `attn-compose-entry-calls`: puts back the call of one entry point by
// another that attn-bind-params took out (`kEntryCallAttr`), once both are
// on buffers. `train_step` calls `<loss>_grad`, so the forward and reverse
// passes are compiled once, not once per training entry point.
//
// The call moves to the top of the caller (attn-bind-params checked that
// nothing before it writes). It is passed the caller's arguments recorded
// for it, the caller's arena (nothing of the caller is live across the
// call, so they can share it) and a slot of its own for the bytes it needs;
// the caller then stores the larger of its own need and the callee's. The
// call's results replace the caller's arguments that stood for them.
//
// Running between one-shot bufferisation and the deallocation pipeline, the
// call's results are owned by the caller like any call's, and returning
// them needs no copy.
//
//===----------------------------------------------------------------------===//

#include "attn/Codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/BitVector.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNCOMPOSEENTRYCALLS
#include "attn/Codegen/Passes.h.inc"

namespace {

/// The argument of `func` marked `attr`, if any.
std::optional<unsigned> argumentMarked(func::FuncOp func, StringRef attr) {
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (func.getArgAttr(i, attr))
      return i;
  return std::nullopt;
}

struct ComposeEntryCallsPass
    : impl::AttnComposeEntryCallsBase<ComposeEntryCallsPass> {
  using Base::Base;


  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (auto record = func->getAttrOfType<DictionaryAttr>(kEntryCallAttr))
        if (failed(compose(func, record)))
          return signalPassFailure();
  }

  LogicalResult compose(func::FuncOp caller, DictionaryAttr record) {
    caller->removeAttr(kEntryCallAttr);
    auto calleeName = record.getAs<FlatSymbolRefAttr>("callee");
    auto args = record.getAs<DenseI64ArrayAttr>("args");
    auto callee = calleeName ? SymbolTable::lookupNearestSymbolFrom<
                                   func::FuncOp>(caller, calleeName)
                             : func::FuncOp();
    if (!callee || !args || !caller.getBody().hasOneBlock())
      return caller.emitError("bad ") << kEntryCallAttr << " record";
    Location loc = caller.getLoc();
    OpBuilder b = OpBuilder::atBlockBegin(&caller.front());

    SmallVector<Value> operands;
    for (int64_t index : args.asArrayRef()) {
      if (index < 0 || index >= caller.getNumArguments())
        return caller.emitError("bad ") << kEntryCallAttr << " record";
      operands.push_back(caller.getArgument(index));
    }
    // The arena arguments attn-finalize-entry-points added to both.
    std::optional<unsigned> calleeArena =
        argumentMarked(callee, kArenaArgAttr);
    std::optional<unsigned> calleeNeed =
        argumentMarked(callee, kArenaNeedArgAttr);
    std::optional<unsigned> callerArena =
        argumentMarked(caller, kArenaArgAttr);
    std::optional<unsigned> callerNeed =
        argumentMarked(caller, kArenaNeedArgAttr);
    Value calleeNeedSlot;
    if (calleeArena && calleeNeed) {
      if (!callerArena || !callerNeed || *calleeArena != operands.size() ||
          *calleeNeed != operands.size() + 1)
        return caller.emitError("calls an entry point with an arena but "
                                "takes none itself");
      operands.push_back(caller.getArgument(*callerArena));
      calleeNeedSlot = memref::AllocaOp::create(
          b, loc, MemRefType::get({}, b.getI64Type()));
      operands.push_back(calleeNeedSlot);
    }
    FunctionType calleeType = callee.getFunctionType();
    if (operands.size() != calleeType.getNumInputs())
      return caller.emitError("passes ")
             << operands.size() << " arguments to '" << callee.getSymName()
             << "', which takes " << calleeType.getNumInputs();
    for (auto [operand, type] : llvm::zip(operands, calleeType.getInputs())) {
      if (operand.getType() == type)
        continue;
      if (!memref::CastOp::areCastCompatible(operand.getType(), type))
        return caller.emitError("passes ")
               << operand.getType() << " to '" << callee.getSymName()
               << "' for " << type;
      operand = memref::CastOp::create(b, loc, type, operand);
    }
    auto call = func::CallOp::create(b, loc, callee, operands);

    // The call's results replace the arguments that stood for them.
    llvm::BitVector erased(caller.getNumArguments());
    for (unsigned i = 0; i < caller.getNumArguments(); ++i) {
      auto index = caller.getArgAttrOfType<IntegerAttr>(i, kEntryCallResultAttr);
      if (!index)
        continue;
      if (index.getInt() < 0 || index.getInt() >= call.getNumResults() ||
          call.getResult(index.getInt()).getType() !=
              caller.getArgument(i).getType())
        return caller.emitError("bad ") << kEntryCallResultAttr
                                        << " argument " << i;
      caller.getArgument(i).replaceAllUsesWith(
          call.getResult(index.getInt()));
      erased.set(i);
    }
    if (failed(caller.eraseArguments(erased)))
      return caller.emitError("cannot remove the call's result arguments");

    // The caller's need, stored at its entry by attn-plan-arena, becomes
    // the larger of the two at its exit.
    if (calleeNeedSlot) {
      Value callerNeedArg = caller.getArgument(*argumentMarked(
          caller, kArenaNeedArgAttr));
      Operation *terminator = caller.front().getTerminator();
      OpBuilder exit(terminator);
      Value own = memref::LoadOp::create(exit, loc, callerNeedArg);
      Value inner = memref::LoadOp::create(exit, loc, calleeNeedSlot);
      Value larger = arith::MaxSIOp::create(exit, loc, own, inner);
      memref::StoreOp::create(exit, loc, larger, callerNeedArg);
    }
    return success();
  }
};

} // namespace

} // namespace attn
