//===- Kernels.cpp - One kernel function per kind of product --------------===//
//
// The kernel functions of a module: one per kind of product (A as [M, K]
// or [K, M], B as [K, N] or [N, K], from C or from zeros, with or without
// an epilogue), internal, over dynamic sizes and strides (unit innermost
// stride), computing a range of columns of C; each product calls one.
// Inlining one copy per product instead made a large model's compile time
// grow with its number of products. A kernel for A stored [M, K] chooses at
// run time between a few-rows kernel (below the cost model's fewRowsBelow:
// dot products for B stored [N, K], scaled rows of B for B stored [K, N])
// and the packed loop nest.
//
//===----------------------------------------------------------------------===//

#include "MatmulKernels.h"
#include "ThreadPoolCall.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace attn {

/// The product over columns [nBegin, nEnd) of C, at the builder's
/// insertion point (the body of the kernel function).
void MatmulEmitter::emit(Value nBegin, Value nEnd) {
  f32 = b.getF32Type();
  vecType = VectorType::get({lanes}, f32);
  zeroF = arith::ConstantOp::create(b, b.getF32FloatAttr(0));
  zeroV = arith::ConstantOp::create(
      b, DenseElementsAttr::get(vecType, b.getF32FloatAttr(0)));
  if (ops.transposedA)
    return emitPacked(nBegin, nEnd);
  // Few rows (a decoding step's B tokens, one query's attention): packing
  // B would cost more than the product, which reads B in place instead:
  // dot products along K for B stored [N, K], rows of B scaled and summed
  // for B stored [K, N].
  Value m = rowsOfA();
  Value few = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, m,
                                    index(model.fewRowsBelow));
  auto branch = scf::IfOp::create(b, few, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(branch.thenBlock());
  if (ops.transposedB)
    emitDots(nBegin, nEnd);
  else
    emitAxpyRows(nBegin, nEnd);
  b.setInsertionPointToStart(branch.elseBlock());
  emitPacked(nBegin, nEnd);
}

void forLoop(ImplicitLocOpBuilder &ib, Value from, Value to, Value step,
             function_ref<void(ImplicitLocOpBuilder &, Value)> body) {
  scf::ForOp::create(ib, from, to, step, ValueRange{},
                     [&](OpBuilder &nb, Location loc, Value iv, ValueRange) {
                       ImplicitLocOpBuilder lb(loc, nb);
                       body(lb, iv);
                       scf::YieldOp::create(lb);
                     });
}

Value MatmulEmitter::index(int64_t v) {
  return arith::ConstantIndexOp::create(b, v);
}

Value MatmulEmitter::index(ImplicitLocOpBuilder &ib, int64_t v) {
  return arith::ConstantIndexOp::create(ib, v);
}

/// M, the rows of C.
Value MatmulEmitter::rowsOfA() {
  return memref::DimOp::create(b, ops.a, ops.transposedA ? 1 : 0);
}

MemRefType kernelOperandType(MLIRContext *context, Type element) {
  int64_t d = ShapedType::kDynamic;
  return MemRefType::get(
      {d, d}, element ? element : Float32Type::get(context),
      StridedLayoutAttr::get(context, d, ArrayRef<int64_t>{d, 1}));
}

/// The kernel name's suffix for B's element type: none for f32.
static std::string weightSuffix(const MatmulOperands &operands) {
  if (!operands.lowPrecisionB())
    return "";
  return operands.scales ? "_q8b" + std::to_string(operands.scaleBlock)
                         : "_bf16";
}

/// The kernel name's suffix for how bf16 products multiply.
static llvm::StringRef bf16KernelSuffix(CpuCostModel::Bf16Kernel kernel) {
  switch (kernel) {
  case CpuCostModel::Bf16Kernel::Vectors:
    return "_dpbf16";
  case CpuCostModel::Bf16Kernel::AmxTiles:
    return "_amx";
  case CpuCostModel::Bf16Kernel::EmulatedAmxTiles:
    return "_amx_emulated";
  }
  llvm_unreachable("a bf16 kernel");
}

func::FuncOp getOrCreateKernel(ModuleOp module, const MatmulOperands &operands,
                               const CpuCostModel &model, bool zeroInit,
                               const Epilogue *epilogue, int epilogueIndex) {
  std::string name =
      (llvm::Twine("__attn_sgemm_") + (operands.transposedA ? "t" : "n") +
       (operands.transposedB ? "t" : "n") + "_" +
       llvm::Twine(model.target.lanes) + "x" +
       llvm::Twine(model.target.registers) + weightSuffix(operands) +
       (model.bf16Products ? bf16KernelSuffix(model.bf16Kernel) : "") +
       (usesInt16Rows(operands, model) ? "_i16rows" : "") +
       (zeroInit ? "_z" : ""))
          .str();
  if (epilogue)
    name += "_e" + std::to_string(epilogueIndex);
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  MLIRContext *context = module.getContext();
  Location loc = module.getLoc();
  MemRefType operand = kernelOperandType(context);
  MemRefType weight = kernelOperandType(
      context, cast<MemRefType>(operands.b.getType()).getElementType());
  Type index = IndexType::get(context);
  SmallVector<Type> inputs = {operand, weight, operand, index, index};
  if (operands.scales)
    inputs.push_back(operand);
  if (epilogue)
    inputs.append(epilogue->extras.size() + 1, operand);
  func::FuncOp func = createInternalFunction(
      module, loc, name, FunctionType::get(context, inputs, {}));
  Block *entry = &func.front();
  ImplicitLocOpBuilder b(loc, context);
  b.setInsertionPointToStart(entry);
  MatmulOperands ops = operands;
  ops.a = entry->getArgument(0);
  ops.b = entry->getArgument(1);
  ops.c = entry->getArgument(2);
  if (operands.scales)
    ops.scales = entry->getArgument(5);
  std::optional<KernelEpilogue> kernelEpilogue;
  if (epilogue) {
    // (A, B, C, nBegin, nEnd, [S], E1..En, Out)
    auto args = entry->getArguments().drop_front(operands.scales ? 6 : 5);
    kernelEpilogue.emplace(KernelEpilogue{
        *epilogue, SmallVector<Value>(args.drop_back()), args.back()});
  }
  MatmulEmitter(b, ops, model, zeroInit,
                kernelEpilogue ? &*kernelEpilogue : nullptr)
      .emit(entry->getArgument(3), entry->getArgument(4));
  func::ReturnOp::create(b);
  return func;
}

} // namespace attn
