//===- BufferUses.cpp - How a temporary buffer is used --------------------===//

#include "BufferUses.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

namespace attn {

bool isBufferView(Operation *op) {
  return isa<ViewLikeOpInterface, memref::CastOp, memref::CollapseShapeOp,
             memref::ExpandShapeOp>(op);
}

Value rootBuffer(Value value, bool arenaSlots) {
  while (Operation *def = value.getDefiningOp()) {
    if (arenaSlots && isa<memref::ViewOp>(def))
      break;
    if (auto view = dyn_cast<ViewLikeOpInterface>(def))
      value = view.getViewSource();
    else if (isBufferView(def))
      value = def->getOperand(0);
    else
      break;
  }
  return value;
}

/// Whether `value` (a buffer or a view of it) only ever reaches ops that
/// read or write through it.
bool staysLocal(Value value, memref::DeallocOp &dealloc, int depth) {
  if (depth > 16)
    return false;
  for (OpOperand &use : value.getUses()) {
    Operation *user = use.getOwner();
    if (auto d = dyn_cast<memref::DeallocOp>(user)) {
      if (depth > 0 || dealloc)
        return false;
      dealloc = d;
      continue;
    }
    if (isa<func::ReturnOp, func::CallOp, memref::ExtractAlignedPointerAsIndexOp,
            memref::ExtractStridedMetadataOp>(user) ||
        user->hasTrait<OpTrait::IsTerminator>())
      return false;
    if (isBufferView(user)) {
      for (Value result : user->getResults())
        if (!staysLocal(result, dealloc, depth + 1))
          return false;
      continue;
    }
    // Other users must not return a buffer aliasing this one.
    for (Value result : user->getResults())
      if (isa<BaseMemRefType>(result.getType()))
        return false;
  }
  return true;
}

/// Every op using `value` or a view of it.
void collectUsers(Value value, SmallVectorImpl<Operation *> &users) {
  for (Operation *user : value.getUsers()) {
    users.push_back(user);
    if (isBufferView(user))
      for (Value result : user->getResults())
        collectUsers(result, users);
  }
}

Operation *previousWithEffects(Operation *op) {
  Operation *prev = op->getPrevNode();
  while (prev && prev->getNumRegions() == 0 && isMemoryEffectFree(prev))
    prev = prev->getPrevNode();
  return prev;
}

/// A size value traced back through memref.dim of reshapes and allocations
/// to where it was first computed, so that equal sizes compare equal.
Value canonicalSize(Value size) {
  for (int step = 0; step < 16; ++step) {
    auto dim = size.getDefiningOp<memref::DimOp>();
    if (!dim)
      return size;
    std::optional<int64_t> index = dim.getConstantIndex();
    if (!index)
      return size;
    Value source = dim.getSource();
    auto type = cast<MemRefType>(source.getType());
    Operation *def = source.getDefiningOp();
    Value next;
    if (auto expand = dyn_cast_or_null<memref::ExpandShapeOp>(def)) {
      OpFoldResult out = expand.getMixedOutputShape()[*index];
      next = dyn_cast<Value>(out);
    } else if (auto alloc = dyn_cast_or_null<memref::AllocOp>(def)) {
      if (type.isDynamicDim(*index))
        next = alloc.getDynamicSizes()[type.getDynamicDimIndex(*index)];
    } else if (auto collapse = dyn_cast_or_null<memref::CollapseShapeOp>(def)) {
      ReassociationIndices group = collapse.getReassociationIndices()[*index];
      if (group.size() == 1) {
        OpBuilder b(dim);
        Value c = arith::ConstantIndexOp::create(b, dim.getLoc(), group[0]);
        next = memref::DimOp::create(b, dim.getLoc(), collapse.getSrc(), c);
      }
    }
    if (!next)
      return size;
    size = next;
  }
  return size;
}

} // namespace attn
