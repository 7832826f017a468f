//===- GroupMatmulEpilogues.cpp - A product next to its fill and epilogue -===//
//
// `attn-group-matmul-epilogues`: on buffers, before the temporaries are
// planned (attn-reuse-buffers, attn-plan-arena), a matrix product C += A B
// is moved next to what attn-matmul-to-vector can fold into its kernel:
//  - the `linalg.fill` of zeros into C before it: the kernel then starts
//    its accumulators at zero instead of reading C;
//  - the element-wise op reading C after it (a linear's bias, activation
//    and residual, MatmulMatch.h), which is marked `attn.matmul_epilogue`:
//    the kernel applies it to each register tile of the last K block and
//    stores the result in the epilogue's output, without storing C first.
// Moving the product down to its epilogue keeps A and B alive until the
// epilogue's output is allocated, so that the planning passes never give
// that output the memory of A or B, which the fused kernel still reads
// while it writes the output.
//
// First, a copy of a buffer that only a fill writes becomes that fill (CSE
// merges a tile loop's zero init with one outside the loop, and
// bufferisation copies it at every tile).
//
// A product moves only past ops that write no memory, an epilogue is only
// marked when nothing but the fill, the product and the epilogue reads C
// (unless the epilogue writes its result into C), and the output does not
// share a buffer with A, B, or, other than element for element, with an
// input.
//
//===----------------------------------------------------------------------===//

#include "BufferUses.h"
#include "MatmulMatch.h"
#include "attn/Codegen/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace attn {
#define GEN_PASS_DEF_ATTNGROUPMATMULEPILOGUES
#include "attn/Codegen/Passes.h.inc"

namespace {

/// Whether `op` reads or writes through its buffer operand rather than
/// only viewing it, measuring it or freeing it.
bool touchesData(Operation *op) {
  return !isBufferView(op) && !isa<memref::DimOp, memref::DeallocOp>(op);
}

/// Whether `op` writes or frees no memory (allocating is fine).
bool writesNothing(Operation *op) {
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return op->hasTrait<OpTrait::HasRecursiveMemoryEffects>() &&
           op->getNumRegions() == 0;
  SmallVector<MemoryEffects::EffectInstance> list;
  effects.getEffects(list);
  return llvm::all_of(list, [](const MemoryEffects::EffectInstance &e) {
    return isa<MemoryEffects::Read, MemoryEffects::Allocate>(e.getEffect());
  });
}

struct GroupMatmulEpiloguesPass
    : impl::AttnGroupMatmulEpiloguesBase<GroupMatmulEpiloguesPass> {
  using Base::Base;


  void runOnOperation() override {
    getOperation().walk(
        [&](memref::CopyOp copy) { copyOfFillAsFill(copy); });
    SmallVector<std::pair<linalg::LinalgOp, MatmulOperands>> products;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (std::optional<MatmulOperands> operands = matchMatmul(op))
        products.emplace_back(op, *operands);
    });
    for (auto &[product, operands] : products)
      group(product, operands);
  }

  /// A copy of a buffer that only a `linalg.fill` writes becomes that fill
  /// of the destination. Inside a tile loop CSE merges a tile's zero init
  /// with an equal one outside the loop, and bufferisation then copies that
  /// buffer at every tile; as a fill, the product's kernel can start from
  /// zeros and a reduction's init is no copy.
  void copyOfFillAsFill(memref::CopyOp copy) {
    auto alloc = copy.getSource().getDefiningOp<memref::AllocOp>();
    if (!alloc || copy.getSource().getType() != copy.getTarget().getType())
      return;
    linalg::FillOp fill;
    for (Operation *user : alloc->getUsers()) {
      if (isa<memref::DeallocOp>(user))
        continue;
      if (auto f = dyn_cast<linalg::FillOp>(user)) {
        if (fill || !f.hasPureBufferSemantics())
          return;
        fill = f;
        continue;
      }
      // Reads only: copies from it and ops that take it as an input.
      if (auto c = dyn_cast<memref::CopyOp>(user)) {
        if (c.getSource() != alloc.getResult())
          return;
        continue;
      }
      auto linalgOp = dyn_cast<linalg::LinalgOp>(user);
      if (!linalgOp || llvm::any_of(linalgOp.getDpsInitsMutable(),
                                    [&](OpOperand &init) {
                                      return init.get() == alloc.getResult();
                                    }))
        return;
    }
    if (!fill || fill->getBlock() != alloc->getBlock() ||
        !fill->isBeforeInBlock(
            alloc->getBlock()->findAncestorOpInBlock(*copy)))
      return;
    OpBuilder b(copy);
    linalg::FillOp::create(b, copy.getLoc(), fill.getDpsInputOperand(0)->get(),
                           copy.getTarget());
    copy->erase();
  }

  void group(linalg::LinalgOp product, const MatmulOperands &operands) {
    Block *block = product->getBlock();
    Value c = operands.c;
    // The ops of this block that read or write C's buffer, in order.
    SmallVector<Operation *> users;
    collectUsers(rootBuffer(c), users);
    SmallVector<Operation *> before, after;
    for (Operation *user : users) {
      if (!touchesData(user) || user == product)
        continue;
      Operation *top = block->findAncestorOpInBlock(*user);
      if (!top || top == product)
        return;
      (top->isBeforeInBlock(product) ? before : after).push_back(top);
    }
    auto byPosition = [](Operation *x, Operation *y) {
      return x->isBeforeInBlock(y);
    };
    llvm::sort(before, byPosition);
    llvm::sort(after, byPosition);

    // The zero fill: the last access to C before the product.
    if (!before.empty() && isZeroFillOf(before.back(), c))
      before.back()->moveBefore(product);

    // The epilogue: the first access after the product.
    if (after.empty())
      return;
    auto generic = dyn_cast<linalg::GenericOp>(after.front());
    if (!generic)
      return;
    std::optional<Epilogue> epilogue = matchEpilogue(generic, c);
    if (!epilogue)
      return;
    // The fused kernel writes the output while it reads A and B, and never
    // fills C unless K spans several blocks: the output shares no buffer
    // with A, B or C (unless it is C), and no input reads C's buffer.
    Value out = epilogue->out, outRoot = rootBuffer(out), cRoot = rootBuffer(c);
    if (out != c && (after.size() > 1 || outRoot == cRoot))
      return;
    if (outRoot == rootBuffer(operands.a) || outRoot == rootBuffer(operands.b))
      return;
    for (Value extra : epilogue->extras)
      if ((extra != out && rootBuffer(extra) == outRoot) ||
          rootBuffer(extra) == cRoot)
        return;
    for (Operation *op = product->getNextNode(); op != generic;
         op = op->getNextNode())
      if (!writesNothing(op))
        return;
    // The zero fill right before the product (moved there above) moves
    // with it.
    Operation *fill = product->getPrevNode();
    bool withFill = isZeroFillOf(fill, c);
    product->moveBefore(generic);
    if (withFill)
      fill->moveBefore(product);
    generic->setAttr(kMatmulEpilogueAttr, UnitAttr::get(&getContext()));
  }
};

} // namespace

} // namespace attn
