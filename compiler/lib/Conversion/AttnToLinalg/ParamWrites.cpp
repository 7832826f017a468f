//===- ParamWrites.cpp - Compute parameter writes in their buffer ---------===//
//
// `attn-param-writes-in-place`: a value `attn.set_param` stores (a new
// weight, a moment, a gradient) is computed by some destination-style op into
// a fresh `tensor.empty`, then inserted into its slot of the flat buffer. Like
// upstream's empty-tensor elimination, but through the reshapes between the
// parameter's shape and the flat buffer (which upstream's does not follow),
// this gives the producing op the slot itself as its destination, so it
// writes there directly and the insert becomes a no-op. Only the tensor's
// undefined initial contents change, so the rewrite is always sound;
// bufferisation still decides, and copies where in-place would be wrong.
//
//===----------------------------------------------------------------------===//

#include "attn/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/Dominance.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNPARAMWRITESINPLACE
#include "attn/Conversion/Passes.h.inc"

namespace {

/// The writable buffer an insert chain starts from, or null.
bufferization::ToTensorOp chainRoot(tensor::InsertSliceOp insert) {
  Value dest = insert.getDest();
  while (auto previous = dest.getDefiningOp<tensor::InsertSliceOp>())
    dest = previous.getDest();
  auto root = dest.getDefiningOp<bufferization::ToTensorOp>();
  return root && root.getWritable() ? root : nullptr;
}

/// The operand holding the `tensor.empty` whose buffer ends up as `value`,
/// following reshapes, casts, destination-style ops (the result's tied init)
/// and loops (the result's init); null when there is none.
OpOperand *emptyDestinationOf(Value value) {
  OpOperand *found = nullptr;
  for (int step = 0; step < 64; ++step) {
    Operation *def = value.getDefiningOp();
    if (!def)
      return nullptr;
    auto result = cast<OpResult>(value);
    OpOperand *next = nullptr;
    if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp, tensor::CastOp>(def))
      next = &def->getOpOperand(0);
    else if (auto dps = dyn_cast<DestinationStyleOpInterface>(def))
      next = dps.getTiedOpOperand(result);
    else if (auto loop = dyn_cast<scf::ForOp>(def))
      next = &loop.getInitsMutable()[result.getResultNumber()];
    if (!next)
      return nullptr;
    found = next;
    value = next->get();
    if (value.getDefiningOp<tensor::EmptyOp>())
      return found;
  }
  return nullptr;
}

struct ParamWritesInPlacePass
    : impl::AttnParamWritesInPlaceBase<ParamWritesInPlacePass> {
  void runOnOperation() override {
    SmallVector<tensor::InsertSliceOp> inserts;
    getOperation().walk([&](tensor::InsertSliceOp insert) {
      if (chainRoot(insert))
        inserts.push_back(insert);
    });
    DominanceInfo dominance(getOperation());
    for (tensor::InsertSliceOp insert : inserts) {
      auto root = chainRoot(insert);
      if (insert.getType().getRank() != 1 || !insert.hasUnitStride())
        continue;
      std::optional<int64_t> offset = getConstantIntValue(insert.getMixedOffsets()[0]);
      std::optional<int64_t> size = getConstantIntValue(insert.getMixedSizes()[0]);
      if (!offset || !size)
        continue;
      OpOperand *operand = emptyDestinationOf(insert.getSource());
      if (!operand)
        continue;
      auto emptyType = cast<RankedTensorType>(operand->get().getType());
      if (!emptyType.hasStaticShape() || emptyType.getNumElements() != *size)
        continue;
      OpBuilder b(operand->getOwner());
      Location loc = operand->get().getLoc();
      auto flatType = RankedTensorType::get({*size}, emptyType.getElementType());
      // The buffer as it is just before the insert when that is available
      // there (then the slot is the very value an element-wise update reads,
      // and bufferisation sees the update as in place), else its first value.
      Value buffer = insert.getDest();
      if (!dominance.properlyDominates(buffer, operand->getOwner()))
        buffer = root.getResult();
      Value slot = tensor::ExtractSliceOp::create(
          b, loc, flatType, buffer,
          ArrayRef<OpFoldResult>{b.getIndexAttr(*offset)},
          ArrayRef<OpFoldResult>{b.getIndexAttr(*size)},
          ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
      if (emptyType.getRank() == 0) {
        slot = tensor::CollapseShapeOp::create(b, loc, emptyType, slot,
                                               ArrayRef<ReassociationIndices>{});
      } else if (emptyType.getRank() > 1) {
        ReassociationIndices all =
            llvm::to_vector(llvm::seq<int64_t>(0, emptyType.getRank()));
        slot = tensor::ExpandShapeOp::create(b, loc, emptyType, slot,
                                             ArrayRef<ReassociationIndices>{all});
      }
      operand->set(slot);
    }
  }
};

} // namespace
} // namespace attn
