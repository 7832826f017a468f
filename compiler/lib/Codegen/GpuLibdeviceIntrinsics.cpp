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


using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNGPULIBDEVICEINTRINSICS
#include "attn/Codegen/Passes.h.inc"

namespace {

/// `Op` of the function's arguments: an intrinsic taking as many values.
template <typename Op>
Value intrinsic(OpBuilder &b, Location loc, ValueRange args) {
  return Op::create(b, loc, args.getTypes().front(), args).getResult();
}

/// 1 / sqrt(x), which libdevice computes approximately (rsqrt.approx);
/// divided here, IEEE, as the CPU build's math-to-llvm does.
Value reciprocalSqrt(OpBuilder &b, Location loc, ValueRange args) {
  Type type = args[0].getType();
  Value one = LLVM::ConstantOp::create(b, loc, type, b.getFloatAttr(type, 1));
  return LLVM::FDivOp::create(b, loc, one,
                              LLVM::SqrtOp::create(b, loc, args[0]));
}

using BodyFn = Value (*)(OpBuilder &, Location, ValueRange);

/// The body of libdevice function `name` (`__nv_sqrtf` for f32,
/// `__nv_sqrt` for f64) of `arity` arguments, or null for one without.
BodyFn libdeviceBody(StringRef name, size_t arity) {
  StringRef base = name.drop_front(strlen("__nv_"));
  struct Entry {
    StringRef name;
    size_t arity;
    BodyFn body;
  };
  static const Entry entries[] = {
      {"fma", 3, intrinsic<LLVM::FMAOp>},
      {"sqrt", 1, intrinsic<LLVM::SqrtOp>},
      {"rsqrt", 1, reciprocalSqrt},
      {"floor", 1, intrinsic<LLVM::FFloorOp>},
      {"ceil", 1, intrinsic<LLVM::FCeilOp>},
      {"trunc", 1, intrinsic<LLVM::FTruncOp>},
      {"rint", 1, intrinsic<LLVM::RintOp>},
      {"fabs", 1, intrinsic<LLVM::FAbsOp>},
      {"copysign", 2, intrinsic<LLVM::CopySignOp>},
      {"fmin", 2, intrinsic<LLVM::MinNumOp>},
      {"fmax", 2, intrinsic<LLVM::MaxNumOp>},
  };
  for (const Entry &entry : entries)
    if (entry.arity == arity &&
        (base == entry.name || base == (entry.name + "f").str()))
      return entry.body;
  return nullptr;
}

struct GpuLibdeviceIntrinsicsPass
    : impl::AttnGpuLibdeviceIntrinsicsBase<GpuLibdeviceIntrinsicsPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<LLVM::LLVMFuncOp>()) {
      if (!func.isExternal() || !func.getName().starts_with("__nv_"))
        continue;
      BodyFn body = libdeviceBody(func.getName(), func.getNumArguments());
      if (!body) {
        func.emitError() << "the kernels call libdevice's " << func.getName()
                         << ", which attnc has no instruction for";
        return signalPassFailure();
      }
      OpBuilder b(func);
      Block *entry = func.addEntryBlock(b);
      b.setInsertionPointToStart(entry);
      LLVM::ReturnOp::create(
          b, func.getLoc(), body(b, func.getLoc(), entry->getArguments()));
      // Inlined into each caller, and no symbol of the module's own.
      func.setLinkage(LLVM::Linkage::Internal);
    }
  }
};

} // namespace
} // namespace attn
