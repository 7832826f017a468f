//===- Dispatch.cpp - Large products on the thread pool -------------------===//
//
// The entry of a kernel's products: the kernel over every column of C, or,
// for a product the cost model deems large enough, ranges of columns (in
// units of the cost model's split columns) run as tasks on the calling
// context's thread pool (ThreadPoolCall.h).
//
//===----------------------------------------------------------------------===//

#include "MatmulKernels.h"
#include "ThreadPoolCall.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace attn {

/// The argument object of `kernel`'s tasks: the descriptors of its
/// `buffers` buffers (A, B, C, then the scales and the epilogue's), all
/// alike whatever their element type.
static Type taskArgumentsType(MLIRContext *context, int32_t buffers) {
  return LLVM::LLVMArrayType::get(taskFieldType(kernelOperandType(context)),
                                  buffers);
}

/// The types of `kernel`'s buffers: its arguments but nBegin and nEnd.
static SmallVector<Type> bufferTypes(func::FuncOp kernel) {
  SmallVector<Type> types(kernel.getArgumentTypes());
  types.erase(types.begin() + 3, types.begin() + 5);
  return types;
}

/// The loop body the pool runs, `void task(void *arg, int64_t begin,
/// int64_t end)`: `arg` holds the descriptors of the kernel's buffers;
/// [begin, end) is a range of the cost model's split columns.
static func::FuncOp getOrCreateTask(ModuleOp module, func::FuncOp kernel,
                                    int32_t buffers,
                                    const CpuCostModel &model) {
  std::string name = (kernel.getName() + "_task").str();
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  MLIRContext *context = module.getContext();
  Location loc = module.getLoc();
  func::FuncOp func = createTaskFunction(module, loc, name);
  Block *entry = &func.getBody().front();
  ImplicitLocOpBuilder b(loc, context);
  b.setInsertionPointToStart(entry);
  SmallVector<Value> operands =
      loadTaskArguments(b, taskArgumentsType(context, buffers),
                        entry->getArgument(0), bufferTypes(kernel));
  Value cols = arith::ConstantIndexOp::create(b, model.splitCols);
  auto toIndex = [&](Value v) {
    return arith::IndexCastOp::create(b, b.getIndexType(), v);
  };
  Value n = memref::DimOp::create(b, operands[2], 1);
  Value nBegin = arith::MulIOp::create(b, toIndex(entry->getArgument(1)), cols);
  Value nEnd = arith::MinSIOp::create(
      b, n, arith::MulIOp::create(b, toIndex(entry->getArgument(2)), cols));
  operands.insert(operands.begin() + 3, {nBegin, nEnd});
  func::CallOp::create(b, kernel, operands);
  func::ReturnOp::create(b);
  return func;
}

func::FuncOp getOrCreateDispatcher(ModuleOp module, func::FuncOp kernel,
                                   bool transposedA,
                                   const CpuCostModel &model) {
  std::string name = (kernel.getName() + "_parallel").str();
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  MLIRContext *context = module.getContext();
  // The kernel's buffers: all its arguments but nBegin and nEnd.
  int32_t buffers = kernel.getNumArguments() - 2;
  func::FuncOp body = getOrCreateTask(module, kernel, buffers, model);
  func::FuncOp pfor = declareParallelFor(module);
  Location loc = module.getLoc();
  func::FuncOp func = createInternalFunction(
      module, loc, name,
      FunctionType::get(context, bufferTypes(kernel), {}));
  Block *entry = &func.front();
  ImplicitLocOpBuilder b(loc, context);
  b.setInsertionPointToStart(entry);
  Value a = entry->getArgument(0), bm = entry->getArgument(1),
        c = entry->getArgument(2);
  // A is [M, K], or [K, M] for the `t?` kernels.
  Value m = memref::DimOp::create(b, a, transposedA ? 1 : 0);
  Value k = memref::DimOp::create(b, a, transposedA ? 0 : 1);
  Value n = memref::DimOp::create(b, c, 1);
  Value cols = arith::ConstantIndexOp::create(b, model.splitCols);
  Value tiles = arith::DivUIOp::create(
      b,
      arith::AddIOp::create(
          b, n, arith::ConstantIndexOp::create(b, model.splitCols - 1)),
      cols);
  // The pool pays for products of many multiply-adds, and for those that
  // stream a large B from memory, which several cores read faster.
  Value bElements = arith::MulIOp::create(b, n, k);
  Value work = arith::MulIOp::create(b, bElements, m);
  Value large = arith::OrIOp::create(
      b,
      arith::CmpIOp::create(
          b, arith::CmpIPredicate::uge, work,
          arith::ConstantIndexOp::create(b, model.parallelMatmulWork)),
      arith::CmpIOp::create(
          b, arith::CmpIPredicate::uge, bElements,
          arith::ConstantIndexOp::create(b, model.parallelMatmulWeights)));
  Value big = arith::AndIOp::create(
      b, large,
      arith::CmpIOp::create(
          b, arith::CmpIPredicate::uge, tiles,
          arith::ConstantIndexOp::create(b, model.parallelMatmulMinTiles)));
  Value zero = arith::ConstantIndexOp::create(b, 0);
  scf::IfOp::create(
      b, big,
      [&](OpBuilder &tb, Location loc) {
        ImplicitLocOpBuilder ib(loc, tb);
        Value args = storeTaskArguments(ib, taskArgumentsType(context, buffers),
                                        entry->getArguments());
        callParallelFor(ib, pfor, body, tiles, args);
        scf::YieldOp::create(ib);
      },
      [&](OpBuilder &eb, Location loc) {
        ImplicitLocOpBuilder ib(loc, eb);
        SmallVector<Value> operands = {a, bm, c, zero, n};
        llvm::append_range(operands, entry->getArguments().drop_front(3));
        func::CallOp::create(ib, kernel, operands);
        scf::YieldOp::create(ib);
      });
  func::ReturnOp::create(b);
  return func;
}

} // namespace attn
