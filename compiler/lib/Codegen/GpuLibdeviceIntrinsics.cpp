//===- GpuLibdeviceIntrinsics.cpp - libdevice's few functions, our own ----===//
//
// `attn-gpu-libdevice-intrinsics`: the `__nv_*` functions that
// convert-gpu-to-nvvm calls for the math ops the approximations leave get
// a body of one LLVM intrinsic each, so that the PTX never depends on
// whether a CUDA toolkit's libdevice was found at compile time. See
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "attn/Codegen/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/StringSwitch.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNGPULIBDEVICEINTRINSICS
#include "attn/Codegen/Passes.h.inc"

namespace {

/// The body of libdevice function `name` (f32 `...f` or f64) applied to
/// `args`; a null value for a function without one here.
Value libdeviceValue(OpBuilder &b, Location loc, StringRef name,
                     ValueRange args) {
  StringRef base = name.drop_front(strlen("__nv_"));
  Type type = args.empty() ? Type() : args[0].getType();
  if (type && type.isF32())
    base.consume_back("f");
  auto unary = [&](auto op) -> Value {
    using Op = decltype(op);
    return args.size() == 1 ? Op::create(b, loc, args[0]).getResult()
                            : Value();
  };
  auto binary = [&](auto op) -> Value {
    using Op = decltype(op);
    return args.size() == 2 ? Op::create(b, loc, args[0], args[1]).getResult()
                            : Value();
  };
  if (base == "fma" && args.size() == 3)
    return LLVM::FMAOp::create(b, loc, args[0], args[1], args[2]);
  if (base == "rsqrt" && args.size() == 1)
    return LLVM::FDivOp::create(
        b, loc, LLVM::ConstantOp::create(b, loc, type, b.getFloatAttr(type, 1)),
        LLVM::SqrtOp::create(b, loc, args[0]));
  using Make = std::function<Value()>;
  Make make = llvm::StringSwitch<Make>(base)
                  .Case("sqrt", [&] { return unary(LLVM::SqrtOp()); })
                  .Case("floor", [&] { return unary(LLVM::FFloorOp()); })
                  .Case("ceil", [&] { return unary(LLVM::FCeilOp()); })
                  .Case("trunc", [&] { return unary(LLVM::FTruncOp()); })
                  .Case("fabs", [&] { return unary(LLVM::FAbsOp()); })
                  .Case("rint", [&] { return unary(LLVM::RintOp()); })
                  .Case("copysign", [&] { return binary(LLVM::CopySignOp()); })
                  .Case("fmin", [&] { return binary(LLVM::MinNumOp()); })
                  .Case("fmax", [&] { return binary(LLVM::MaxNumOp()); })
                  .Default([] { return Value(); });
  return make();
}

struct GpuLibdeviceIntrinsicsPass
    : impl::AttnGpuLibdeviceIntrinsicsBase<GpuLibdeviceIntrinsicsPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<LLVM::LLVMFuncOp>()) {
      if (!func.isExternal() || !func.getName().starts_with("__nv_"))
        continue;
      OpBuilder b(func);
      Block *entry = func.addEntryBlock(b);
      b.setInsertionPointToStart(entry);
      Value result = libdeviceValue(b, func.getLoc(), func.getName(),
                                    entry->getArguments());
      if (!result) {
        func.emitError() << "the kernels call libdevice's " << func.getName()
                         << ", which attnc has no instruction for";
        return signalPassFailure();
      }
      LLVM::ReturnOp::create(b, func.getLoc(), result);
      // Inlined into each caller, and no symbol of the module's own.
      func.setLinkage(LLVM::Linkage::Internal);
    }
  }
};

} // namespace
} // namespace attn
