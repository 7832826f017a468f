//===- AttnDialect.cpp - The attn dialect ---------------------------------===//
//
// Registration of the dialect's ops and attributes, and how it materialises
// the constants its folds produce.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/IR/AttnDialect.h"
#include "attn/Dialect/IR/AttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace attn;

#include "attn/Dialect/IR/AttnDialect.cpp.inc"
#include "attn/Dialect/IR/AttnEnums.cpp.inc"
#include "attn/Dialect/IR/AttnInterfaces.cpp.inc"

void AttnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "attn/Dialect/IR/AttnOps.cpp.inc"
      >();
}

Operation *AttnDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  auto typed = dyn_cast<TypedAttr>(value);
  if (!typed || typed.getType() != type)
    return nullptr;
  return arith::ConstantOp::create(builder, loc, type, typed);
}
