//===- ShapeInferenceTest.cpp - Building attn ops without result types ----===//
//
// The frontend builds ops through the builders that infer result types; these
// tests build ops from C++ the same way and check the inferred shapes, and
// that impossible shapes are refused with a diagnostic naming both shapes.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/IR/AttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace attn;

namespace {

constexpr int64_t kDyn = ShapedType::kDynamic;

class ShapeInferenceTest : public ::testing::Test {
protected:
  ShapeInferenceTest() : builder(&context), loc(builder.getUnknownLoc()) {
    context.loadDialect<AttnDialect, arith::ArithDialect, func::FuncDialect>();
    module = ModuleOp::create(loc);
    auto fn = func::FuncOp::create(builder, loc, "f",
                                   builder.getFunctionType({}, {}));
    module->push_back(fn);
    builder.setInsertionPointToStart(fn.addEntryBlock());
  }

  /// A value of the given type: a block argument of a fresh function, so
  /// dynamic shapes are possible.
  Value arg(ArrayRef<int64_t> shape, Type elementType = {}) {
    if (!elementType)
      elementType = builder.getF32Type();
    Block *block = builder.getInsertionBlock();
    return block->addArgument(RankedTensorType::get(shape, elementType), loc);
  }

  /// Ends the function, gives it the type of the arguments the test added,
  /// and verifies the module.
  LogicalResult finishAndVerify() {
    func::ReturnOp::create(builder, loc);
    Block *block = builder.getInsertionBlock();
    cast<func::FuncOp>(block->getParentOp())
        .setType(builder.getFunctionType(block->getArgumentTypes(), {}));
    return verify(*module);
  }

  static ArrayRef<int64_t> shapeOf(Value value) {
    return cast<RankedTensorType>(value.getType()).getShape();
  }

  /// Infers the result types of `OpTy` from `operands` and `attrs` through
  /// the op's InferTypeOpInterface, collecting any diagnostic.
  template <typename OpTy>
  LogicalResult infer(ValueRange operands, SmallVectorImpl<Type> &types,
                      std::string &message,
                      ArrayRef<NamedAttribute> attrs = {}) {
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      message = diag.str();
      return success();
    });
    OperationState state(loc, OpTy::getOperationName());
    state.addOperands(operands);
    state.addAttributes(attrs);
    return OpTy::inferReturnTypes(
        &context, loc, state.operands, state.attributes.getDictionary(&context),
        state.getRawProperties(), state.regions, types);
  }

  MLIRContext context;
  OpBuilder builder;
  Location loc;
  OwningOpRef<ModuleOp> module;
};

TEST_F(ShapeInferenceTest, AddBroadcastsTrailingDimensions) {
  auto add = AddOp::create(builder, loc, arg({kDyn, kDyn, 192}), arg({192}));
  EXPECT_EQ(shapeOf(add), ArrayRef<int64_t>({kDyn, kDyn, 192}));
}

TEST_F(ShapeInferenceTest, AddTakesStaticSizeOverDynamic) {
  auto add = AddOp::create(builder, loc, arg({kDyn, 4}), arg({8, 1}));
  EXPECT_EQ(shapeOf(add), ArrayRef<int64_t>({8, 4}));
}

TEST_F(ShapeInferenceTest, AddRefusesMismatchedShapesNamingBoth) {
  SmallVector<Type> types;
  std::string message;
  EXPECT_TRUE(failed(
      infer<AddOp>({arg({2, 3}), arg({4})}, types, message)));
  EXPECT_EQ(message, "operand shapes 'tensor<2x3xf32>' and 'tensor<4xf32>' "
                     "cannot be broadcast together");
}

TEST_F(ShapeInferenceTest, CompareGivesBooleans) {
  auto cmp = CompareOp::create(builder, loc, CompareKind::eq,
                               arg({kDyn, kDyn}, builder.getI32Type()),
                               arg({}, builder.getI32Type()));
  auto type = cast<RankedTensorType>(cmp.getType());
  EXPECT_TRUE(type.getElementType().isInteger(1));
  EXPECT_EQ(type.getShape(), ArrayRef<int64_t>({kDyn, kDyn}));
}

TEST_F(ShapeInferenceTest, MatmulBroadcastsBatchDimensions) {
  auto mm = MatmulOp::create(builder, loc, arg({kDyn, kDyn, 192}),
                             arg({192, 256}));
  EXPECT_EQ(shapeOf(mm), ArrayRef<int64_t>({kDyn, kDyn, 256}));
}

TEST_F(ShapeInferenceTest, MatmulRefusesMismatchedContraction) {
  SmallVector<Type> types;
  std::string message;
  EXPECT_TRUE(failed(
      infer<MatmulOp>({arg({2, 3}), arg({4, 5})}, types, message)));
  EXPECT_EQ(message, "contracted dimensions differ: 'tensor<2x3xf32>' @ "
                     "'tensor<4x5xf32>'");
}

TEST_F(ShapeInferenceTest, LinearUsesPyTorchWeightLayout) {
  auto linear = LinearOp::create(builder, loc, arg({kDyn, kDyn, 192}),
                                 arg({768, 192}), arg({768}), Value(),
                                 Activation::gelu);
  EXPECT_EQ(shapeOf(linear), ArrayRef<int64_t>({kDyn, kDyn, 768}));
}

TEST_F(ShapeInferenceTest, SplitAndMergeHeadsAreInverse) {
  Value x = arg({kDyn, kDyn, 192});
  auto split = SplitHeadsOp::create(builder, loc, x, 6);
  EXPECT_EQ(shapeOf(split), ArrayRef<int64_t>({kDyn, 6, kDyn, 32}));
  auto merge = MergeHeadsOp::create(builder, loc, split);
  EXPECT_EQ(merge.getType(), x.getType());
}

TEST_F(ShapeInferenceTest, SdpaOutputTakesValueHeadSize) {
  auto sdpa = SdpaOp::create(builder, loc, arg({2, 4, 10, 16}),
                             arg({2, 4, 12, 16}), arg({2, 4, 12, 8}),
                             arg({2, 12}, builder.getI1Type()),
                             /*seed=*/Value(), MaskKind::causal, nullptr,
                             APFloat(0.0), nullptr);
  EXPECT_EQ(shapeOf(sdpa.getResult()), ArrayRef<int64_t>({2, 4, 10, 8}));
  EXPECT_FALSE(sdpa.getLogsumexp());
}

TEST_F(ShapeInferenceTest, SdpaLogsumexpIsPerQuery) {
  auto sdpa = SdpaOp::create(builder, loc, arg({2, 4, kDyn, 16}),
                             arg({2, 4, 12, 16}), arg({2, 4, 12, 8}),
                             /*key_padding=*/Value(), /*seed=*/Value(),
                             MaskKind::none, nullptr, APFloat(0.0), nullptr,
                             /*return_logsumexp=*/true);
  EXPECT_EQ(shapeOf(sdpa.getLogsumexp()), ArrayRef<int64_t>({2, 4, kDyn}));
}

TEST_F(ShapeInferenceTest, ReduceDropsTheAxis) {
  auto reduce = ReduceOp::create(builder, loc, ReduceKind::mean,
                                 arg({kDyn, kDyn, 128}), 1,
                                 arg({kDyn, kDyn}, builder.getI1Type()));
  EXPECT_EQ(shapeOf(reduce), ArrayRef<int64_t>({kDyn, 128}));
}

TEST_F(ShapeInferenceTest, GatherAppendsTheFeatureDimension) {
  auto gather = GatherOp::create(builder, loc, arg({256, 192}),
                                 arg({kDyn, kDyn}, builder.getI32Type()));
  EXPECT_EQ(shapeOf(gather), ArrayRef<int64_t>({kDyn, kDyn, 192}));
}

TEST_F(ShapeInferenceTest, CrossEntropyIsAScalar) {
  auto ce = CrossEntropyOp::create(builder, loc, arg({kDyn, kDyn, 256}),
                                   arg({kDyn, kDyn}, builder.getI32Type()),
                                   nullptr, APFloat(0.0));
  EXPECT_EQ(cast<RankedTensorType>(ce.getType()).getRank(), 0);
  EXPECT_TRUE(succeeded(finishAndVerify()));
}

TEST_F(ShapeInferenceTest, BuiltModuleVerifies) {
  Value x = arg({kDyn, kDyn, 192});
  Value w = arg({192});
  auto ln = LayerNormOp::create(builder, loc, x, w, w, Value(), APFloat(1e-5));
  ReluOp::create(builder, loc, ln);
  EXPECT_TRUE(succeeded(finishAndVerify()));
}

} // namespace
