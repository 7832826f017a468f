//===- ReferenceTestUtils.h - Helpers of the reference tests ----*- C++ -*-===//
//
// Building small tensors, running attn IR written inline through the
// evaluator, and comparing results with hand-computed values.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TEST_UNIT_REFERENCE_REFERENCETESTUTILS_H
#define ATTN_TEST_UNIT_REFERENCE_REFERENCETESTUTILS_H

#include "attn/Dialect/IR/AttnDialect.h"
#include "attn/Reference/Evaluator.h"
#include "attn/Reference/Tensor.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

namespace attn::reference::testing {

inline Tensor f32(llvm::ArrayRef<int64_t> shape, std::vector<double> data) {
  return Tensor(DType::F32, shape, std::move(data));
}
inline Tensor i32(llvm::ArrayRef<int64_t> shape, std::vector<double> data) {
  return Tensor(DType::I32, shape, std::move(data));
}
inline Tensor boolean(llvm::ArrayRef<int64_t> shape, std::vector<double> data) {
  return Tensor(DType::Bool, shape, std::move(data));
}

/// Expects `actual` to have `shape` and elements within `tolerance`
/// (absolute) of `expected`.
inline void expectTensor(const Tensor &actual, llvm::ArrayRef<int64_t> shape,
                         llvm::ArrayRef<double> expected,
                         double tolerance = 1e-12) {
  ASSERT_EQ(formatShape(actual.getShape()), formatShape(shape));
  ASSERT_EQ(actual.getNumElements(), static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], tolerance) << "at element " << i;
}

/// Parses inline attn IR and runs its functions, collecting diagnostics.
class IRTest : public ::testing::Test {
protected:
  IRTest() {
    context.loadDialect<AttnDialect, mlir::arith::ArithDialect,
                        mlir::func::FuncDialect, mlir::tensor::TensorDialect>();
  }

  /// Runs @`fn` of `ir` and returns its results; fails the test on any
  /// diagnostic.
  llvm::SmallVector<Tensor>
  run(llvm::StringRef ir, llvm::ArrayRef<Tensor> inputs,
      const std::map<std::string, Tensor> &params = {},
      llvm::StringRef fn = "f", EvaluatorOptions options = {}) {
    std::string errors;
    mlir::FailureOr<llvm::SmallVector<Tensor>> results =
        tryRun(ir, inputs, params, fn, options, errors);
    EXPECT_TRUE(succeeded(results)) << errors;
    if (failed(results))
      return {};
    return *results;
  }

  /// Runs @`fn` of `ir`, expecting it to fail, and returns the diagnostics.
  std::string runError(llvm::StringRef ir, llvm::ArrayRef<Tensor> inputs,
                       const std::map<std::string, Tensor> &params = {},
                       llvm::StringRef fn = "f",
                       EvaluatorOptions options = {}) {
    std::string errors;
    mlir::FailureOr<llvm::SmallVector<Tensor>> results =
        tryRun(ir, inputs, params, fn, options, errors);
    EXPECT_TRUE(failed(results)) << "expected a failure";
    return errors;
  }

  mlir::FailureOr<llvm::SmallVector<Tensor>>
  tryRun(llvm::StringRef ir, llvm::ArrayRef<Tensor> inputs,
         const std::map<std::string, Tensor> &params, llvm::StringRef fn,
         EvaluatorOptions options, std::string &errors) {
    mlir::ScopedDiagnosticHandler handler(&context,
                                          [&](mlir::Diagnostic &diag) {
                                            errors += diag.str() + "\n";
                                            return mlir::success();
                                          });
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::parseSourceString<mlir::ModuleOp>(ir, &context);
    if (!module) {
      errors = "parse error: " + errors;
      return mlir::failure();
    }
    Evaluator evaluator(*module, options);
    for (const auto &[name, value] : params)
      if (failed(evaluator.setParameter(name, value)))
        return mlir::failure();
    return evaluator.run(fn, inputs);
  }

  mlir::MLIRContext context;
};

} // namespace attn::reference::testing

#endif // ATTN_TEST_UNIT_REFERENCE_REFERENCETESTUTILS_H
