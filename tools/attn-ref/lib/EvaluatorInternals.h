//===- EvaluatorInternals.h - What the evaluator's files share --*- C++ -*-===//
//
// The values of one function invocation, and the check of a tensor against
// an IR type, which both the evaluator's calls (Evaluator.cpp) and its ops
// (OpEvaluation.cpp) use.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_REFERENCE_EVALUATORINTERNALS_H
#define ATTN_REFERENCE_EVALUATORINTERNALS_H

#include "attn/Reference/Evaluator.h"

#include "llvm/ADT/DenseMap.h"

#include <string>

namespace attn::reference {

/// The values of one function invocation: the tensor of each value in
/// scope, and what its return gives back.
class Evaluator::Frame {
public:
  const Tensor &get(mlir::Value value) const {
    auto it = values.find(value);
    assert(it != values.end() && "operands are evaluated before their users");
    return it->second;
  }
  const Tensor *getOptional(mlir::Value value) const {
    return value ? &get(value) : nullptr;
  }
  void set(mlir::Value value, Tensor tensor) {
    values[value] = std::move(tensor);
  }

  llvm::DenseMap<mlir::Value, Tensor> values;
  llvm::SmallVector<Tensor> results;
};

/// Whether `tensor` is a value of `type`: same element type and rank, and
/// every static size equal.
bool matchesType(const Tensor &tensor, mlir::Type type);

/// `type` printed and quoted, for diagnostics: 'tensor<2xf32>'.
std::string typeString(mlir::Type type);

} // namespace attn::reference

#endif // ATTN_REFERENCE_EVALUATORINTERNALS_H
