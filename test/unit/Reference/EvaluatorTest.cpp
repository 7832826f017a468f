//===- EvaluatorTest.cpp - The reference evaluator's own behaviour --------===//
//
// What is not one op's arithmetic: parameters, constants, sizes, calls, the
// key/value cache, argument checking and the errors for what it cannot run.
//
//===----------------------------------------------------------------------===//

#include "ReferenceTestUtils.h"

using namespace attn::reference;
using namespace attn::reference::testing;

namespace {

using EvaluatorTest = IRTest;

const char *kParamIR = R"mlir(
  attn.param @"emb.weight" : tensor<3x2xf32> init normal [0.0, 1.0]
  func.func @f(%ids: tensor<?xi32>) -> tensor<?x2xf32> {
    %w = attn.get_param @"emb.weight" : tensor<3x2xf32>
    %0 = attn.gather %w, %ids : (tensor<3x2xf32>, tensor<?xi32>) -> tensor<?x2xf32>
    return %0 : tensor<?x2xf32>
  })mlir";

// Tests that get_param reads the value set by name.
TEST_F(EvaluatorTest, Parameters) {
  Tensor w = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  auto r = run(kParamIR, {i32({2}, {2, 0})}, {{"emb.weight", w}});
  ASSERT_EQ(r.size(), 1u);
  expectTensor(r[0], {2, 2}, {5, 6, 1, 2});
}

// Tests the errors of parameters: no value, an undeclared name, a shape
// that differs from the declaration.
TEST_F(EvaluatorTest, ParameterErrors) {
  std::string unset = runError(kParamIR, {i32({1}, {0})});
  EXPECT_NE(unset.find("parameter 'emb.weight' has no value"),
            std::string::npos)
      << unset;
  std::string unknown =
      runError(kParamIR, {i32({1}, {0})}, {{"emb.bias", f32({2}, {0, 0})}});
  EXPECT_NE(unknown.find("the model has no parameter 'emb.bias'"),
            std::string::npos)
      << unknown;
  std::string shape =
      runError(kParamIR, {i32({1}, {0})},
               {{"emb.weight", f32({2, 3}, {0, 0, 0, 0, 0, 0})}});
  EXPECT_NE(shape.find("parameter 'emb.weight' is 'tensor<3x2xf32>', got a "
                       "value of type tensor<2x3xf32>"),
            std::string::npos)
      << shape;
}

// Tests that arguments are checked against the function's types.
TEST_F(EvaluatorTest, ArgumentErrors) {
  Tensor w = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  std::string type = runError(kParamIR, {f32({1}, {0})}, {{"emb.weight", w}});
  EXPECT_NE(type.find("argument #0 of 'f' is 'tensor<?xi32>', got "
                      "tensor<1xf32>"),
            std::string::npos)
      << type;
  std::string count = runError(kParamIR, {}, {{"emb.weight", w}});
  EXPECT_NE(count.find("'f' takes 1 arguments, got 0"), std::string::npos)
      << count;
  std::string name = runError(kParamIR, {}, {}, "g");
  EXPECT_NE(name.find("the module has no function 'g'"), std::string::npos)
      << name;
}

// Tests that a symbolic size shared by several arguments (attn.dims) must
// have one value, as the compiled entry points require.
TEST_F(EvaluatorTest, SymbolicSizesAgree) {
  const char *ir = R"mlir(
    func.func @f(%a: tensor<?x?xi32> {attn.dims = ["B", "T"]}, %b: tensor<?xi32> {attn.dims = ["B"]}) -> tensor<?x?xi32> {
      return %a : tensor<?x?xi32>
    })mlir";
  auto r = run(ir, {i32({2, 3}, {0, 1, 2, 3, 4, 5}), i32({2}, {0, 1})});
  ASSERT_EQ(r.size(), 1u);
  std::string error =
      runError(ir, {i32({2, 3}, {0, 1, 2, 3, 4, 5}), i32({3}, {0, 1, 2})});
  EXPECT_NE(error.find("size B of 'f' is 2 in argument #0 but 3 in argument "
                       "#1"),
            std::string::npos)
      << error;
}

// Tests dense constants (splat and element-wise, float, integer and
// boolean) and index arithmetic on sizes.
TEST_F(EvaluatorTest, Constants) {
  const char *ir = R"mlir(
    func.func @f(%x: tensor<?x3xf32>) -> (tensor<2x2xf32>, tensor<3xi32>, tensor<2xi1>, tensor<?xi32>) {
      %0 = arith.constant dense<[[1.5, -2.0], [0.25, 4.0]]> : tensor<2x2xf32>
      %1 = arith.constant dense<[7, -8, 9]> : tensor<3xi32>
      %2 = arith.constant dense<[true, false]> : tensor<2xi1>
      %n = attn.dim %x, 0 : tensor<?x3xf32>
      %c2 = arith.constant 2 : index
      %m = arith.muli %n, %c2 : index
      %k = arith.addi %m, %c2 : index
      %3 = attn.positions %k : tensor<?xi32>
      return %0, %1, %2, %3 : tensor<2x2xf32>, tensor<3xi32>, tensor<2xi1>, tensor<?xi32>
    })mlir";
  auto r = run(ir, {f32({1, 3}, {0, 0, 0})});
  ASSERT_EQ(r.size(), 4u);
  expectTensor(r[0], {2, 2}, {1.5, -2.0, 0.25, 4.0});
  expectTensor(r[1], {3}, {7, -8, 9});
  EXPECT_EQ(r[1].getDType(), DType::I32);
  expectTensor(r[2], {2}, {1, 0});
  EXPECT_EQ(r[2].getDType(), DType::Bool);
  expectTensor(r[3], {4}, {0, 1, 2, 3});
}

// Tests func.call of another function of the module.
TEST_F(EvaluatorTest, Call) {
  const char *ir = R"mlir(
    func.func private @twice(%x: tensor<2xf32>) -> tensor<2xf32> {
      %0 = attn.add %x, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      return %0 : tensor<2xf32>
    }
    func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
      %0 = func.call @twice(%x) : (tensor<2xf32>) -> tensor<2xf32>
      %1 = func.call @twice(%0) : (tensor<2xf32>) -> tensor<2xf32>
      return %1 : tensor<2xf32>
    })mlir";
  auto r = run(ir, {f32({2}, {1, -3})});
  ASSERT_EQ(r.size(), 1u);
  expectTensor(r[0], {2}, {4, -12});
}

// Tests that the key/value cache accumulates appended keys along the
// sequence, across calls, that kv_cache_length is its length when the call
// began, and that reading an empty slot is an error.
TEST_F(EvaluatorTest, KVCache) {
  const char *ir = R"mlir(
    func.func @f(%k: tensor<1x1x?x2xf32>, %v: tensor<1x1x?x2xf32>) -> (tensor<1x1x?x2xf32>, tensor<1x1x?x2xf32>, tensor<?xi32>) {
      %ks, %vs = attn.kv_cache_append %k, %v slot 0 : (tensor<1x1x?x2xf32>, tensor<1x1x?x2xf32>) -> (tensor<1x1x?x2xf32>, tensor<1x1x?x2xf32>)
      %kr, %vr = attn.kv_cache_read slot 0 : tensor<1x1x?x2xf32>, tensor<1x1x?x2xf32>
      %n = attn.kv_cache_length : index
      %p = attn.positions %n : tensor<?xi32>
      return %ks, %vr, %p : tensor<1x1x?x2xf32>, tensor<1x1x?x2xf32>, tensor<?xi32>
    }
    func.func @read() -> tensor<1x1x?x2xf32> {
      %kr, %vr = attn.kv_cache_read slot 1 : tensor<1x1x?x2xf32>, tensor<1x1x?x2xf32>
      return %kr : tensor<1x1x?x2xf32>
    })mlir";
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(ir, &context);
  ASSERT_TRUE(module);
  Evaluator evaluator(*module);
  auto first = evaluator.run(
      "f", {f32({1, 1, 2, 2}, {1, 2, 3, 4}), f32({1, 1, 2, 2}, {5, 6, 7, 8})});
  ASSERT_TRUE(succeeded(first));
  auto second = evaluator.run(
      "f", {f32({1, 1, 1, 2}, {9, 10}), f32({1, 1, 1, 2}, {11, 12})});
  ASSERT_TRUE(succeeded(second));
  expectTensor((*second)[0], {1, 1, 3, 2}, {1, 2, 3, 4, 9, 10});
  expectTensor((*second)[1], {1, 1, 3, 2}, {5, 6, 7, 8, 11, 12});
  // kv_cache_length is the length before the call: 0, then 2.
  expectTensor((*first)[2], {0}, {});
  expectTensor((*second)[2], {2}, {0, 1});
  evaluator.clearKVCache();
  auto third = evaluator.run(
      "f", {f32({1, 1, 1, 2}, {9, 10}), f32({1, 1, 1, 2}, {11, 12})});
  ASSERT_TRUE(succeeded(third));
  expectTensor((*third)[0], {1, 1, 1, 2}, {9, 10});

  std::string error = runError(ir, {}, {}, "read");
  EXPECT_NE(error.find("reads slot 1 of the key/value cache, which is empty"),
            std::string::npos)
      << error;
}

// Tests that an op the evaluator does not know is an error naming it, not
// a silent wrong answer.
TEST_F(EvaluatorTest, UnsupportedOp) {
  const char *ir = R"mlir(
    func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
      %0 = tensor.empty() : tensor<2xf32>
      return %0 : tensor<2xf32>
    })mlir";
  std::string error = runError(ir, {f32({2}, {1, 2})});
  EXPECT_NE(error.find("unsupported op 'tensor.empty'"), std::string::npos)
      << error;
}

// Tests that a result whose run-time shape contradicts a static size of its
// type is reported (here a reshape of a dynamic input).
TEST_F(EvaluatorTest, ResultTypeMismatch) {
  const char *ir = R"mlir(
    func.func @f(%x: tensor<?xf32>) -> tensor<2x2xf32> {
      %0 = attn.reshape %x : tensor<?xf32> -> tensor<2x2xf32>
      return %0 : tensor<2x2xf32>
    })mlir";
  std::string error = runError(ir, {f32({3}, {1, 2, 3})});
  EXPECT_NE(error.find("cannot reshape [3] (3 elements) to [2, 2]"),
            std::string::npos)
      << error;
}

} // namespace
