//===- ParamWrites.cpp - Compute parameter writes in their buffer ---------===//
//
// `attn-param-writes-in-place`: a value `attn.set_param` stores (a new
// weight, a moment, a gradient) is computed by some destination-style op into
// a fresh `tensor.empty`, then materialised into its slot of the flat buffer
// (a subview that attn-bind-params also reads as a tensor). Like upstream's
// empty-tensor elimination, but through the reshapes between the parameter's
// shape and the flat slot (which upstream's does not follow), this gives the
// producing op the slot itself as its destination, so it writes there
// directly and the write-back becomes a no-op. Only the tensor's
// undefined initial contents change, so the rewrite is always sound;
// bufferisation still decides, and copies where in-place would be wrong.
//
//===----------------------------------------------------------------------===//

#include "attn/EntryPoints/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNPARAMWRITESINPLACE
#include "attn/EntryPoints/Passes.h.inc"

namespace {

/// The writable tensor attn-bind-params reads the slot `write` stores into
/// as, or null.
bufferization::ToTensorOp slotTensor(
    bufferization::MaterializeInDestinationOp write) {
  Value dest = write.getDest();
  if (!isa<BaseMemRefType>(dest.getType()))
    return nullptr;
  for (Operation *user : dest.getUsers())
    if (auto read = dyn_cast<bufferization::ToTensorOp>(user))
      if (read.getWritable() && read.getRestrict())
        return read;
  return nullptr;
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
    SmallVector<bufferization::MaterializeInDestinationOp> writes;
    getOperation().walk([&](bufferization::MaterializeInDestinationOp write) {
      if (slotTensor(write))
        writes.push_back(write);
    });
    for (bufferization::MaterializeInDestinationOp write : writes) {
      Value slot = slotTensor(write).getResult();
      auto slotType = cast<RankedTensorType>(slot.getType());
      if (slotType.getRank() != 1 || !slotType.hasStaticShape())
        continue;
      int64_t size = slotType.getDimSize(0);
      OpOperand *operand = emptyDestinationOf(write.getSource());
      if (!operand)
        continue;
      auto emptyType = cast<RankedTensorType>(operand->get().getType());
      if (!emptyType.hasStaticShape() || emptyType.getNumElements() != size)
        continue;
      OpBuilder b(operand->getOwner());
      Location loc = operand->get().getLoc();
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
