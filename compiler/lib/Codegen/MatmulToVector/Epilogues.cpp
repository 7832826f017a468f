//===- Epilogues.cpp - A fused epilogue on vectors ------------------------===//
//
// The element-wise op after a product (a linear's bias, activation and
// residual, MatmulMatch.h), applied to the accumulators of a register tile
// (or to C's few rows after dot products) by cloning its body onto vectors,
// and stored into its output instead of C.
//
//===----------------------------------------------------------------------===//

#include "MatmulKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;

namespace attn {

/// The row-vector inputs of the epilogue at columns col..col+lanes.
SmallVector<Value> MatmulEmitter::readRowVectors(ImplicitLocOpBuilder &ib,
                                                 Value col) {
  SmallVector<Value> values;
  for (auto [extra, row] :
       llvm::zip(epilogue->extras, epilogue->match.rowVector))
    values.push_back(
        row ? vector::TransferReadOp::create(ib, vecType, extra,
                                             ValueRange{index(ib, 0), col},
                                             zeroF, ArrayRef<bool>{false})
            : Value());
  return values;
}

/// out[row, col..col+lanes] = epilogue(acc, inputs there); `rowVectors`
/// holds the row-vector inputs already read (null for the others).
void MatmulEmitter::storeEpilogue(ImplicitLocOpBuilder &ib, Value acc,
                                  Value row, Value col,
                                  ArrayRef<Value> rowVectors) {
  Block *body = &epilogue->body();
  IRMapping map;
  unsigned e = 0;
  for (BlockArgument arg : body->getArguments().drop_back()) {
    if (arg.getArgNumber() == epilogue->match.productInput) {
      map.map(arg, acc);
      continue;
    }
    Value v = rowVectors[e];
    if (!v)
      v = vector::TransferReadOp::create(ib, vecType, epilogue->extras[e],
                                         ValueRange{row, col}, zeroF,
                                         ArrayRef<bool>{false});
    map.map(arg, v);
    ++e;
  }
  // Constants (inside the body or captured from outside) as splats.
  auto lookup = [&](Value v) -> Value {
    if (Value mapped = map.lookupOrNull(v))
      return mapped;
    auto constant = v.getDefiningOp<arith::ConstantOp>();
    Value splat = arith::ConstantOp::create(
        ib, DenseElementsAttr::get(VectorType::get({lanes}, v.getType()),
                                   ArrayRef<Attribute>{constant.getValue()}));
    map.map(v, splat);
    return splat;
  };
  for (Operation &op : body->without_terminator()) {
    if (isa<arith::ConstantOp>(op))
      continue;
    OperationState state(ib.getLoc(), op.getName());
    for (Value operand : op.getOperands())
      state.addOperands(lookup(operand));
    state.addAttributes(op.getAttrs());
    state.addTypes(VectorType::get({lanes}, op.getResult(0).getType()));
    map.map(op.getResult(0), ib.create(state)->getResult(0));
  }
  vector::TransferWriteOp::create(
      ib, lookup(body->getTerminator()->getOperand(0)), epilogue->out,
      ValueRange{row, col}, ArrayRef<bool>{false});
}

/// The epilogue over the few rows a few-rows kernel just stored into C
/// (still in cache), one vector at a time: dot products end in scalars.
void MatmulEmitter::emitEpilogueOverRows(Value nBegin, Value nEnd) {
  forLoop(b, index(0), rowsOfA(), index(1),
          [&](ImplicitLocOpBuilder &ib, Value row) {
            forLoop(ib, nBegin, nEnd, index(ib, lanes),
                    [&](ImplicitLocOpBuilder &jb, Value col) {
                      Value c = vector::TransferReadOp::create(
                          jb, vecType, ops.c, ValueRange{row, col}, zeroF,
                          ArrayRef<bool>{false});
                      storeEpilogue(jb, c, row, col, readRowVectors(jb, col));
                    });
          });
}

} // namespace attn
