//===- ThreadPoolCall.cpp - Calls into the runtime's thread pool ----------===//
//
// Tasks, their argument objects and the runtime calls that run them on the
// pool (ThreadPoolCall.h).
//
//===----------------------------------------------------------------------===//

#include "ThreadPoolCall.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"

using namespace mlir;

namespace attn {

Type taskFieldType(Type type) {
  MLIRContext *context = type.getContext();
  if (auto memref = dyn_cast<MemRefType>(type)) {
    Type ptr = LLVM::LLVMPointerType::get(context);
    Type i64 = IntegerType::get(context, 64);
    if (memref.getRank() == 0)
      return LLVM::LLVMStructType::getLiteral(context, {ptr, ptr, i64});
    Type dims = LLVM::LLVMArrayType::get(i64, memref.getRank());
    return LLVM::LLVMStructType::getLiteral(context,
                                            {ptr, ptr, i64, dims, dims});
  }
  if (type.isIndex())
    return IntegerType::get(context, 64);
  if (type.isIntOrFloat())
    return type;
  return nullptr;
}

func::FuncOp createInternalFunction(ModuleOp module, Location loc,
                                    StringRef name, FunctionType type) {
  OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
  auto func = func::FuncOp::create(mb, loc, name, type);
  func.setPrivate();
  func->setAttr("llvm.linkage", LLVM::LinkageAttr::get(
                                    module.getContext(),
                                    LLVM::Linkage::Internal));
  func.addEntryBlock();
  return func;
}

func::FuncOp createTaskFunction(ModuleOp module, Location loc, StringRef name) {
  Builder b(module.getContext());
  Type ptr = LLVM::LLVMPointerType::get(module.getContext());
  Type i64 = b.getI64Type();
  return createInternalFunction(module, loc, name,
                                b.getFunctionType({ptr, i64, i64}, {}));
}

Value storeTaskArguments(ImplicitLocOpBuilder &b, Type argsType,
                         ValueRange values) {
  Type ptr = LLVM::LLVMPointerType::get(b.getContext());
  Type i64 = b.getI64Type();
  Value one = LLVM::ConstantOp::create(b, i64, b.getI64IntegerAttr(1));
  Value args = LLVM::AllocaOp::create(b, ptr, argsType, one, 8);
  for (auto [i, v] : llvm::enumerate(values)) {
    Value field =
        LLVM::GEPOp::create(b, ptr, argsType, args,
                            ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(i)});
    Value stored = v;
    if (isa<MemRefType>(v.getType()))
      stored =
          UnrealizedConversionCastOp::create(b, taskFieldType(v.getType()), v)
              .getResult(0);
    else if (v.getType().isIndex())
      stored = arith::IndexCastOp::create(b, i64, v);
    LLVM::StoreOp::create(b, stored, field);
  }
  return args;
}

SmallVector<Value> loadTaskArguments(ImplicitLocOpBuilder &b, Type argsType,
                                     Value arg, TypeRange types) {
  Type ptr = LLVM::LLVMPointerType::get(b.getContext());
  SmallVector<Value> values;
  for (auto [i, type] : llvm::enumerate(types)) {
    Value field =
        LLVM::GEPOp::create(b, ptr, argsType, arg,
                            ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(i)});
    Value loaded = LLVM::LoadOp::create(b, taskFieldType(type), field);
    if (isa<MemRefType>(type))
      loaded = UnrealizedConversionCastOp::create(b, type, loaded).getResult(0);
    else if (type.isIndex())
      loaded = arith::IndexCastOp::create(b, b.getIndexType(), loaded);
    values.push_back(loaded);
  }
  return values;
}

/// The runtime function `name` taking `inputs` then a task and its
/// argument object, declared in `module` once.
static func::FuncOp declareRuntimeFunction(ModuleOp module, StringRef name,
                                           ArrayRef<Type> inputs) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
  Type ptr = LLVM::LLVMPointerType::get(module.getContext());
  Type i64 = mb.getI64Type();
  FunctionType taskType = mb.getFunctionType({ptr, i64, i64}, {});
  SmallVector<Type> types(inputs);
  types.append({taskType, ptr});
  auto func = func::FuncOp::create(mb, module.getLoc(), name,
                                   mb.getFunctionType(types, {}));
  func.setPrivate();
  return func;
}

func::FuncOp declareParallelFor(ModuleOp module) {
  Builder b(module.getContext());
  return declareRuntimeFunction(
      module, "attn_parallel_for",
      {LLVM::LLVMPointerType::get(module.getContext()), b.getI64Type()});
}

func::FuncOp declareParallelForSized(ModuleOp module) {
  Builder b(module.getContext());
  Type i64 = b.getI64Type();
  return declareRuntimeFunction(module, "attn_parallel_for_sized",
                                {i64, i64, i64});
}

void callParallelFor(ImplicitLocOpBuilder &b, func::FuncOp parallelFor,
                     func::FuncOp task, Value count, Value args) {
  Value fn = func::ConstantOp::create(b, task.getFunctionType(),
                                      SymbolRefAttr::get(task));
  Value pool =
      LLVM::ZeroOp::create(b, LLVM::LLVMPointerType::get(b.getContext()));
  Value n = arith::IndexCastOp::create(b, b.getI64Type(), count);
  func::CallOp::create(b, parallelFor, ValueRange{pool, n, fn, args});
}

void callParallelForSized(ImplicitLocOpBuilder &b,
                          func::FuncOp parallelForSized, func::FuncOp task,
                          Value n, Value work, int64_t minWork, Value args) {
  Type i64 = b.getI64Type();
  Value fn = func::ConstantOp::create(b, task.getFunctionType(),
                                      SymbolRefAttr::get(task));
  Value workI64 = arith::IndexCastOp::create(b, i64, work);
  Value minWorkI64 =
      LLVM::ConstantOp::create(b, i64, b.getI64IntegerAttr(minWork));
  func::CallOp::create(b, parallelForSized,
                       ValueRange{n, workI64, minWorkI64, fn, args});
}

} // namespace attn
