//===- Evaluator.h - Executes attn IR directly ------------------*- C++ -*-===//
//
// The reference evaluator: runs a func.func of an attn module op by op on
// dense double tensors, with no MLIR lowering, so that every compiled model
// can be checked against an independent execution of the same IR. It runs
// inference semantics: dropout is the identity unless `training` is set, in
// which case a dropout that would draw random numbers is an error (the
// reference cannot reproduce the compiler's random stream).
//
// Errors (an op it does not know, an input of the wrong shape, an id out of
// range) are MLIR diagnostics at the op's location.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_REFERENCE_EVALUATOR_H
#define ATTN_REFERENCE_EVALUATOR_H

#include "attn/Reference/Tensor.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringMap.h"

#include <map>

namespace mlir {
namespace func {
class FuncOp;
} // namespace func
} // namespace mlir

namespace attn::reference {

struct EvaluatorOptions {
  /// Whether the function runs as a training entry point: dropout of a
  /// nonzero rate is then an error instead of the identity.
  bool training = false;
};

class Evaluator {
public:
  /// Evaluates functions of `module`, which must outlive the evaluator.
  explicit Evaluator(mlir::ModuleOp module, EvaluatorOptions options = {});

  /// Gives the parameter declared as `attn.param @name` a value of its
  /// declared shape; fails with a diagnostic on an undeclared name or a
  /// shape or element type that differs from the declaration.
  mlir::LogicalResult setParameter(llvm::StringRef name, Tensor value);
  /// Whether the module declares parameter `name`.
  bool declaresParameter(llvm::StringRef name) const;
  /// The declared parameters, in declaration order.
  llvm::ArrayRef<std::string> getParameterNames() const {
    return declarationOrder;
  }
  /// The declared parameters that have no value yet, in declaration order.
  llvm::SmallVector<std::string> getUnsetParameters() const;

  /// Runs the function `name` on `inputs`, which must match its argument
  /// types (element type, rank and static sizes), and returns its results.
  mlir::FailureOr<llvm::SmallVector<Tensor>> run(llvm::StringRef name,
                                                 llvm::ArrayRef<Tensor> inputs);

  /// The gradient of the scalar result of function `name` with respect to
  /// parameter `parameter`, by central differences with step `step`: a check
  /// of gradients that depends on no differentiation rule. In double, the
  /// error is O(step^2) from truncation plus O(1e-16 / step) from rounding.
  /// Each element costs two runs, each from the same key/value cache.
  mlir::FailureOr<Tensor>
  gradientByFiniteDifferences(llvm::StringRef name,
                              llvm::ArrayRef<Tensor> inputs,
                              llvm::StringRef parameter, double step = 1e-5);

  /// Empties the key/value cache that attn.kv_cache_append fills, as a new
  /// sequence does.
  void clearKVCache() { kvCache.clear(); }

  /// The values of one function invocation (defined in Evaluator.cpp).
  class Frame;

private:
  mlir::FailureOr<llvm::SmallVector<Tensor>> call(mlir::func::FuncOp function,
                                                  llvm::ArrayRef<Tensor> inputs,
                                                  unsigned depth);
  mlir::LogicalResult evaluate(mlir::Operation *op, Frame &frame,
                               unsigned depth);

  mlir::ModuleOp module;
  EvaluatorOptions options;
  /// Declared parameter types, by name, and their values once set.
  llvm::StringMap<mlir::RankedTensorType> declared;
  llvm::SmallVector<std::string> declarationOrder;
  llvm::StringMap<Tensor> parameters;
  /// Keys and values held by each cache slot.
  std::map<int64_t, std::pair<Tensor, Tensor>> kvCache;
  /// The length of every cache slot when the running entry point was
  /// called; nothing when the slots disagree.
  std::optional<int64_t> entryCacheLength;
};

} // namespace attn::reference

#endif // ATTN_REFERENCE_EVALUATOR_H
