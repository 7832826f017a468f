//===- MatmulMatch.cpp - Matrix products and their epilogues on buffers ---===//

#include "MatmulMatch.h"

#include "BufferUses.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace attn {
namespace {

bool isF32Memref(Value v, int64_t rank) {
  auto type = dyn_cast<MemRefType>(v.getType());
  return type && type.getRank() == rank && type.getElementType().isF32();
}

bool hasUnitInnerStride(Value v) {
  auto type = cast<MemRefType>(v.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(type.getStridesAndOffset(strides, offset)) &&
         strides.back() == 1;
}

/// Whether `map` is exactly (d_dims[0], d_dims[1], ...).
bool isDims(AffineMap map, ArrayRef<unsigned> dims) {
  if (map.getNumResults() != dims.size())
    return false;
  for (auto [expr, dim] : llvm::zip(map.getResults(), dims)) {
    auto d = dyn_cast<AffineDimExpr>(expr);
    if (!d || d.getPosition() != dim)
      return false;
  }
  return true;
}

/// The body's ops as text in which values are numbered by position (block
/// arguments `a<i>`, results `r<j>`, outside constants by their value), so
/// that two bodies computing the same function of their arguments have the
/// same key. Empty when the body uses anything else from outside, or ops
/// that are not scalar arith/math.
std::string bodyKey(Block &body) {
  std::string key;
  llvm::raw_string_ostream os(key);
  llvm::DenseMap<Value, unsigned> results;
  auto name = [&](Value v) -> bool {
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (arg.getOwner() != &body)
        return false;
      os << " a" << arg.getArgNumber();
      return true;
    }
    if (auto it = results.find(v); it != results.end()) {
      os << " r" << it->second;
      return true;
    }
    auto constant = v.getDefiningOp<arith::ConstantOp>();
    if (!constant || isa<ShapedType>(v.getType()))
      return false;
    os << " c(" << constant.getValue() << ")";
    return true;
  };
  for (Operation &op : body) {
    if (auto yield = dyn_cast<linalg::YieldOp>(op)) {
      os << " yield";
      if (yield.getNumOperands() != 1 || !name(yield.getOperand(0)))
        return "";
      continue;
    }
    if (!isa<arith::ArithDialect, math::MathDialect>(op.getDialect()) ||
        op.getNumRegions() != 0 || op.getNumResults() != 1 ||
        isa<ShapedType>(op.getResult(0).getType()))
      return "";
    os << " " << op.getName() << op.getAttrDictionary() << " :";
    for (Value operand : op.getOperands())
      if (!name(operand))
        return "";
    os << " -> " << op.getResult(0).getType() << ";";
    results[op.getResult(0)] = results.size();
  }
  return key;
}

/// The element `w` of the weight in a low-precision product's body: the
/// block argument `weight` widened (bf16), or converted and times `scale`
/// (i8).
bool isDequantizedElement(Value w, BlockArgument weight, Value scale) {
  if (!scale) {
    auto ext = w.getDefiningOp<arith::ExtFOp>();
    return ext && ext.getIn() == weight;
  }
  auto mul = w.getDefiningOp<arith::MulFOp>();
  if (!mul || mul.getRhs() != scale)
    return false;
  auto convert = mul.getLhs().getDefiningOp<arith::SIToFPOp>();
  return convert && convert.getIn() == weight;
}

/// The low-precision product (see matchMatmul): A [M, K] read (m, k), B
/// [N, K] read (n, k), the scales (n, k floordiv block), C (m, n).
std::optional<MatmulOperands> matchLowPrecisionMatmul(linalg::GenericOp op) {
  unsigned inputs = op.getNumDpsInputs();
  if (!op.hasPureBufferSemantics() || (inputs != 2 && inputs != 3) ||
      op.getNumDpsInits() != 1 || op.getNumLoops() != 3 ||
      op.getNumReductionLoops() != 1 ||
      op.getIteratorTypesArray()[2] != utils::IteratorType::reduction)
    return std::nullopt;
  MatmulOperands operands;
  operands.a = op.getDpsInputOperand(0)->get();
  operands.b = op.getDpsInputOperand(1)->get();
  operands.c = op.getDpsInitOperand(0)->get();
  operands.transposedB = true;
  if (inputs == 3)
    operands.scales = op.getDpsInputOperand(2)->get();
  auto bType = dyn_cast<MemRefType>(operands.b.getType());
  if (!bType || bType.getRank() != 2 ||
      !(inputs == 3 ? bType.getElementType().isSignlessInteger(8)
                    : bType.getElementType().isBF16()))
    return std::nullopt;
  for (Value v : {operands.a, operands.c})
    if (!isF32Memref(v, 2) || !hasUnitInnerStride(v))
      return std::nullopt;
  if (!hasUnitInnerStride(operands.b) ||
      (operands.scales && (!isF32Memref(operands.scales, 2) ||
                           !hasUnitInnerStride(operands.scales))))
    return std::nullopt;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (!isDims(maps[0], {0, 2}) || !isDims(maps[1], {1, 2}) ||
      !isDims(maps.back(), {0, 1}))
    return std::nullopt;
  if (operands.scales) {
    auto kBlock = dyn_cast<AffineBinaryOpExpr>(maps[2].getResult(1));
    if (maps[2].getNumResults() != 2 ||
        !isDims(maps[2].getMajorSubMap(1), {1}) || !kBlock ||
        kBlock.getKind() != AffineExprKind::FloorDiv ||
        kBlock.getLHS() != getAffineDimExpr(2, op.getContext()) ||
        !isa<AffineConstantExpr>(kBlock.getRHS()))
      return std::nullopt;
    operands.scaleBlock = cast<AffineConstantExpr>(kBlock.getRHS()).getValue();
  }
  // yield acc + a * w
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add || add.getLhs() != body.getArguments().back())
    return std::nullopt;
  auto mul = add.getRhs().getDefiningOp<arith::MulFOp>();
  if (!mul || mul.getLhs() != body.getArgument(0) ||
      !isDequantizedElement(mul.getRhs(), body.getArgument(1),
                            operands.scales ? body.getArgument(2) : Value()))
    return std::nullopt;
  return operands;
}

/// An f32 product C[b..., m, n] += A[b..., m, k] * B[b..., k, n] (A's or
/// B's last two dimensions either way round) with buffer semantics, named
/// or generic, b... the same leading loops of all three operands in the
/// same order (none for a 2-D product), every operand with a unit
/// innermost stride.
std::optional<MatmulOperands> matchContraction(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || !linalg::isaContractionOpInterface(op))
    return std::nullopt;
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || dims->m.size() != 1 || dims->n.size() != 1 ||
      dims->k.size() != 1)
    return std::nullopt;
  unsigned m = dims->m[0], n = dims->n[0], k = dims->k[0];
  MatmulOperands operands;
  operands.a = op.getDpsInputOperand(0)->get();
  operands.b = op.getDpsInputOperand(1)->get();
  operands.c = op.getDpsInitOperand(0)->get();
  operands.batchRank = dims->batch.size();
  for (Value v : {operands.a, operands.b, operands.c})
    if (!isF32Memref(v, operands.batchRank + 2) || !hasUnitInnerStride(v))
      return std::nullopt;
  // The batch loops first in every operand, then the two of the matrix.
  auto isBatchThen = [&](AffineMap map, unsigned first, unsigned second) {
    SmallVector<unsigned> want(dims->batch.begin(), dims->batch.end());
    want.append({first, second});
    return isDims(map, want);
  };
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (!isBatchThen(maps[2], m, n))
    return std::nullopt;
  if (isBatchThen(maps[0], k, m))
    operands.transposedA = true;
  else if (!isBatchThen(maps[0], m, k))
    return std::nullopt;
  if (isBatchThen(maps[1], n, k))
    operands.transposedB = true;
  else if (!isBatchThen(maps[1], k, n))
    return std::nullopt;
  return operands;
}

} // namespace

std::optional<MatmulOperands> matchMatmul(linalg::LinalgOp op) {
  if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation()))
    if (std::optional<MatmulOperands> operands =
            matchLowPrecisionMatmul(generic))
      return operands;
  std::optional<MatmulOperands> operands = matchContraction(op);
  if (!operands || operands->batchRank != 0)
    return std::nullopt;
  return operands;
}

std::optional<MatmulOperands> matchBatchedMatmul(linalg::LinalgOp op) {
  std::optional<MatmulOperands> operands = matchContraction(op);
  if (!operands || operands->batchRank == 0)
    return std::nullopt;
  return operands;
}

std::optional<Epilogue> matchEpilogue(linalg::GenericOp op, Value c) {
  if (!op.hasPureBufferSemantics() || op.getNumLoops() != 2 ||
      op.getNumDpsInits() != 1 || op.getNumParallelLoops() != op.getNumLoops())
    return std::nullopt;
  Epilogue epilogue;
  epilogue.op = op;
  epilogue.out = op.getDpsInitOperand(0)->get();
  if (!isF32Memref(epilogue.out, 2) || !hasUnitInnerStride(epilogue.out) ||
      !op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isIdentity())
    return std::nullopt;
  Block &body = op.getRegion().front();
  if (!body.getArguments().back().use_empty())
    return std::nullopt;
  bool seenProduct = false;
  std::string kinds;
  for (OpOperand *input : op.getDpsInputOperands()) {
    Value v = input->get();
    AffineMap map = op.getMatchingIndexingMap(input);
    if (v == c) {
      // C read once, element for element: the kernel's tile. (Read again,
      // it would be C's memory, which the fused kernel does not fill.)
      if (seenProduct || !map.isIdentity())
        return std::nullopt;
      seenProduct = true;
      epilogue.productInput = input->getOperandNumber();
      kinds += "p";
      continue;
    }
    bool full = map.isIdentity() && isF32Memref(v, 2);
    bool row = isDims(map, {1}) && isF32Memref(v, 1);
    if ((!full && !row) || !hasUnitInnerStride(v))
      return std::nullopt;
    epilogue.extras.push_back(v);
    epilogue.rowVector.push_back(row);
    kinds += row ? "r" : "f";
  }
  if (!seenProduct)
    return std::nullopt;
  std::string key = bodyKey(body);
  if (key.empty())
    return std::nullopt;
  epilogue.key = kinds + ":" + key;
  return epilogue;
}

bool isZeroFillOf(Operation *op, Value c) {
  auto fill = dyn_cast_or_null<linalg::FillOp>(op);
  return fill && fill.hasPureBufferSemantics() &&
         fill.getDpsInitOperand(0)->get() == c &&
         matchPattern(fill.getDpsInputOperand(0)->get(), m_PosZeroFloat());
}

linalg::FillOp precedingZeroFill(Operation *op, Value c) {
  Operation *prev = previousWithEffects(op);
  return isZeroFillOf(prev, c) ? cast<linalg::FillOp>(prev) : nullptr;
}

} // namespace attn
