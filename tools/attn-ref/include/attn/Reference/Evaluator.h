//===- Evaluator.h - Executes attn IR directly ------------------*- C++ -*-===//
//
// The reference evaluator: runs a func.func of an attn module op by op on
// dense double tensors, with no MLIR lowering, so that every compiled model
// can be checked against an independent execution of the same IR. Dropout
// without a seed is the identity (inference; with `training` set it is an
// error instead); dropout with a seed (the training entry points) draws the
// runtime's counter-based mask exactly (abi.h). The evaluator holds the four
// buffers of every parameter (value, grad, first and second moment), which
// attn.get_param reads and attn.set_param writes.
//
// Errors (an op it does not know, an input of the wrong shape, an id out of
// range) are MLIR diagnostics at the op's location.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_REFERENCE_EVALUATOR_H
#define ATTN_REFERENCE_EVALUATOR_H

#include "attn/Dialect/IR/AttnOps.h"
#include "attn/Reference/Tensor.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <map>

namespace mlir {
namespace func {
class CallOp;
class FuncOp;
} // namespace func
} // namespace mlir

namespace attn::reference {

struct AttentionOptions;

struct EvaluatorOptions {
  /// Whether the function runs as a training entry point: dropout of a
  /// nonzero rate is then an error instead of the identity.
  bool training = false;
  /// The exact value of every `attn.seed` argument (a tensor holds doubles,
  /// exact for integers up to 2^53 only); without it the argument's tensor
  /// is read.
  std::optional<uint64_t> seed;
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

  /// Sets the gradient or a moment of a declared parameter (checked as
  /// setParameter checks values). Unset ones read as zeros.
  mlir::LogicalResult setBuffer(ParamBuffer buffer, llvm::StringRef name,
                                Tensor value);
  /// The tensor buffer `buffer` of parameter `name` holds: its value (which
  /// must be set), or its gradient or moment (zeros when never set).
  mlir::FailureOr<Tensor> getBuffer(ParamBuffer buffer,
                                    llvm::StringRef name);

  /// Runs the function `name` on `inputs`, which must match its argument
  /// types (element type, rank and static sizes), and returns its results.
  mlir::FailureOr<llvm::SmallVector<Tensor>> run(llvm::StringRef name,
                                                 llvm::ArrayRef<Tensor> inputs);

  /// The gradient of the scalar result of function `name` with respect to
  /// parameter `parameter`, by central differences with step `step`: a check
  /// of gradients that depends on no differentiation rule. In double, the
  /// error is O(step^2) from truncation plus O(1e-16 / step) from rounding.
  /// Each element costs two runs, each from the same key/value cache.
  /// With a `mask` of the parameter's shape, only the elements where it is
  /// nonzero are differentiated, the others are NaN.
  mlir::FailureOr<Tensor>
  gradientByFiniteDifferences(llvm::StringRef name,
                              llvm::ArrayRef<Tensor> inputs,
                              llvm::StringRef parameter, double step = 1e-5,
                              const Tensor *mask = nullptr);

  /// Empties the key/value cache that attn.kv_cache_append fills, as a new
  /// sequence does.
  void clearKVCache() { kvCache.clear(); }

  /// The values of one function invocation (defined in the private
  /// EvaluatorInternals.h).
  class Frame;

private:
  mlir::FailureOr<llvm::SmallVector<Tensor>> call(mlir::func::FuncOp function,
                                                  llvm::ArrayRef<Tensor> inputs,
                                                  unsigned depth);
  /// Computes the results of `op` into `frame` (OpEvaluation.cpp, one
  /// function per family of ops).
  mlir::LogicalResult evaluate(mlir::Operation *op, Frame &frame,
                               unsigned depth);
  /// The ops that read or write the evaluator's state (calls, parameters,
  /// the key/value cache), and those that draw dropout masks from a seed;
  /// nothing for an op of another kind.
  std::optional<mlir::LogicalResult>
  evaluateStateOp(mlir::Operation *op, Frame &frame, unsigned depth);
  std::optional<mlir::LogicalResult> evaluateRandomOp(mlir::Operation *op,
                                                      Frame &frame);
  mlir::LogicalResult evaluateCall(mlir::func::CallOp callOp, Frame &frame,
                                   unsigned depth);
  mlir::LogicalResult readParam(GetParamOp getParam, Frame &frame);
  mlir::LogicalResult readParamBuffer(GetParamBufferOp getParamBuffer,
                                      Frame &frame);
  mlir::LogicalResult writeParamBuffer(SetParamBufferOp setParamBuffer,
                                       Frame &frame);
  mlir::LogicalResult appendToCache(KVCacheAppendOp append, Frame &frame);
  /// The seed a dropout draws its mask from.
  uint64_t seedOf(mlir::Value seed, const Frame &frame) const;
  /// The seed dropout `op` numbers its elements from, whose batch rows hold
  /// `rowElements` elements: seedOf(seed), moved to the rows of a larger
  /// batch in a function with a dropout row argument (abi.h,
  /// ATTN_ARG_DROPOUT_ROW), as the compiled lowering does.
  uint64_t dropoutSeedOf(mlir::Operation *op, mlir::Value seed,
                         int64_t rowElements, const Frame &frame) const;
  /// Sets the dropout of `attention` (op `op`, whose probabilities have
  /// `rowElements` per batch row) when it has a seed and a nonzero rate.
  void setAttentionDropout(AttentionOptions &attention, mlir::Operation *op,
                           int64_t rowElements, llvm::APFloat rate,
                           mlir::Value seed, std::optional<uint64_t> stream,
                           const Frame &frame) const;
  /// Whether the running entry point wrote `buffer` of parameter `name`.
  bool wasWritten(ParamBuffer buffer, llvm::StringRef name) const;
  /// attn.set_param's store: `value` becomes `buffer` of parameter `name`,
  /// marked written.
  void storeParam(ParamBuffer buffer, llvm::StringRef name, Tensor value);

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
  /// The gradient and moments of the parameters (index: ParamBuffer - 1).
  llvm::StringMap<Tensor> buffers[3];
  /// The buffers written by attn.set_param in the running entry point, as
  /// "<kind>:<name>": a later read of one breaks the op contract.
  llvm::StringSet<> written;
  /// Whether the running entry point wrote any parameter value.
  bool wroteValues = false;
};

} // namespace attn::reference

#endif // ATTN_REFERENCE_EVALUATOR_H
