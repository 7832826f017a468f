//===- ThreadPoolCall.h - Calls into the runtime's thread pool --*- C++ -*-===//
//
// How generated code hands work to the runtime's thread pool
// (runtime/include/attn/runtime.h): a task `void task(void *arg, int64_t
// begin, int64_t end)` outlined into an internal function, the values it
// needs stored in a stack object whose address is `arg`, and a call of
// `attn_parallel_for` or `attn_parallel_for_sized`. attn-matmul-to-vector
// and attn-parallelize-loops both call the pool this way; when they do is
// theirs to decide, from the CPU cost model.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_CODEGEN_THREADPOOLCALL_H
#define ATTN_CODEGEN_THREADPOOLCALL_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace attn {

/// The type a value of `type` has in a task's argument object: a memref's
/// LLVM descriptor, i64 for an index, an integer or float as it is; null
/// for a type the object cannot carry.
mlir::Type taskFieldType(mlir::Type type);

/// A new private function of `type` at the end of `module`, with internal
/// linkage (every model object has its own copy) and an empty entry block.
mlir::func::FuncOp createInternalFunction(mlir::ModuleOp module,
                                          mlir::Location loc,
                                          llvm::StringRef name,
                                          mlir::FunctionType type);

/// A new internal function `void name(void *arg, int64_t begin, int64_t
/// end)` at the end of `module`, with an empty entry block.
mlir::func::FuncOp createTaskFunction(mlir::ModuleOp module, mlir::Location loc,
                                      llvm::StringRef name);

/// A stack object of `argsType` (an LLVM struct or array, field i of the
/// type `taskFieldType` gives value i) holding `values`; its address.
mlir::Value storeTaskArguments(mlir::ImplicitLocOpBuilder &b,
                               mlir::Type argsType, mlir::ValueRange values);

/// The values of `types` that `storeTaskArguments` stored in the object of
/// `argsType` at `arg`, loaded (in a task's body).
llvm::SmallVector<mlir::Value> loadTaskArguments(mlir::ImplicitLocOpBuilder &b,
                                                 mlir::Type argsType,
                                                 mlir::Value arg,
                                                 mlir::TypeRange types);

/// The runtime's `attn_parallel_for(pool, n, task, arg)`, declared in
/// `module` once.
mlir::func::FuncOp declareParallelFor(mlir::ModuleOp module);

/// The runtime's `attn_parallel_for_sized(n, work, min_work, task, arg)`,
/// declared in `module` once.
mlir::func::FuncOp declareParallelForSized(mlir::ModuleOp module);

/// `attn_parallel_for(NULL, count, task, args)`: the calling context's pool
/// runs `task` over [0, count) (`count` an index).
void callParallelFor(mlir::ImplicitLocOpBuilder &b,
                     mlir::func::FuncOp parallelFor, mlir::func::FuncOp task,
                     mlir::Value count, mlir::Value args);

/// `attn_parallel_for_sized(n, work, minWork, task, args)`: the runtime
/// runs `task` over [0, n) (`n` an i64) on the pool when `work` (an index:
/// the elements the loop writes) is at least `minWork`, on the calling
/// thread otherwise. The comparison is the runtime's, so that the glue
/// calling it stays one basic block.
void callParallelForSized(mlir::ImplicitLocOpBuilder &b,
                          mlir::func::FuncOp parallelForSized,
                          mlir::func::FuncOp task, mlir::Value n,
                          mlir::Value work, int64_t minWork, mlir::Value args);

} // namespace attn

#endif // ATTN_CODEGEN_THREADPOOLCALL_H
