//===- ArenaSize.cpp - The activation arena's size at given dims ----------===//

#include "attn/Target/ArenaSize.h"

#include "attn/EntryPoints/ArgAttributes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace attn {
namespace {

/// Evaluates index arithmetic on the dims of a function's arguments.
class SizeEvaluator {
public:
  SizeEvaluator(func::FuncOp func, const EntryInfo &entry, int64_t batch)
      : func(func), entry(entry), batch(batch) {}

  std::optional<int64_t> evaluate(Value value, int depth = 0) {
    if (depth > 256)
      return std::nullopt;
    if (auto it = known.find(value); it != known.end())
      return it->second;
    std::optional<int64_t> result = compute(value, depth);
    if (result)
      known[value] = *result;
    return result;
  }

private:
  std::optional<int64_t> argumentDim(BlockArgument arg, int64_t index) {
    if (arg.getOwner() != &func.getBody().front() ||
        arg.getArgNumber() >= entry.args.size())
      return std::nullopt;
    const TensorInfo &t = entry.args[arg.getArgNumber()];
    if (index < 0 || index >= static_cast<int64_t>(t.shape.size()))
      return std::nullopt;
    if (t.shape[index] >= 0)
      return t.shape[index];
    // The caches are sized by the context, not by the call.
    if (t.kind != ATTN_ARG_INPUT)
      return std::nullopt;
    if (index < static_cast<int64_t>(t.maxShape.size()) &&
        t.maxShape[index] >= 0)
      return t.maxShape[index];
    // The leading dim of an input is the batch; any other dim without a
    // bound has no size to report at.
    if (index == 0)
      return batch;
    return std::nullopt;
  }

  std::optional<int64_t> compute(Value value, int depth) {
    Operation *def = value.getDefiningOp();
    if (!def)
      return std::nullopt;
    if (auto constant = dyn_cast<arith::ConstantOp>(def)) {
      if (auto attr = dyn_cast<IntegerAttr>(constant.getValue()))
        return attr.getInt();
      return std::nullopt;
    }
    if (auto dim = dyn_cast<memref::DimOp>(def)) {
      auto arg = dyn_cast<BlockArgument>(dim.getSource());
      std::optional<int64_t> index = dim.getConstantIndex();
      if (!arg || !index)
        return std::nullopt;
      return argumentDim(arg, *index);
    }
    if (def->getNumOperands() != 2)
      return std::nullopt;
    std::optional<int64_t> a = evaluate(def->getOperand(0), depth + 1);
    std::optional<int64_t> b = evaluate(def->getOperand(1), depth + 1);
    if (!a || !b)
      return std::nullopt;
    uint64_t ua = static_cast<uint64_t>(*a), ub = static_cast<uint64_t>(*b);
    // A size too large for int64 is no figure.
    int64_t result;
    if (isa<arith::AddIOp>(def))
      return llvm::AddOverflow(*a, *b, result) ? std::nullopt
                                               : std::optional(result);
    if (isa<arith::SubIOp>(def))
      return llvm::SubOverflow(*a, *b, result) ? std::nullopt
                                               : std::optional(result);
    if (isa<arith::MulIOp>(def))
      return llvm::MulOverflow(*a, *b, result) ? std::nullopt
                                               : std::optional(result);
    if (isa<arith::AndIOp>(def))
      return *a & *b;
    if (isa<arith::MaxUIOp>(def))
      return static_cast<int64_t>(std::max(ua, ub));
    if (isa<arith::MinUIOp>(def))
      return static_cast<int64_t>(std::min(ua, ub));
    if (isa<arith::MaxSIOp>(def))
      return std::max(*a, *b);
    if (isa<arith::MinSIOp>(def))
      return std::min(*a, *b);
    if (isa<arith::DivUIOp>(def) && ub != 0)
      return static_cast<int64_t>(ua / ub);
    if (isa<arith::CeilDivUIOp>(def) && ub != 0)
      return static_cast<int64_t>((ua + ub - 1) / ub);
    return std::nullopt;
  }

  func::FuncOp func;
  const EntryInfo &entry;
  int64_t batch;
  llvm::DenseMap<Value, int64_t> known;
};

} // namespace

std::optional<int64_t> evaluateArenaBytes(func::FuncOp func,
                                          const EntryInfo &entry,
                                          int64_t batch) {
  // The arena's allocation: on the host (CPU targets) or the device's
  // (attn-gpu-map-loops keeps the mark).
  Operation *arena = nullptr;
  func.walk([&](Operation *op) {
    if (isa<memref::AllocOp, gpu::AllocOp>(op) && op->hasAttr(kArenaAllocAttr))
      arena = op;
  });
  if (!arena)
    return 0;
  OperandRange sizes = isa<memref::AllocOp>(arena)
                           ? cast<memref::AllocOp>(arena).getDynamicSizes()
                           : cast<gpu::AllocOp>(arena).getDynamicSizes();
  if (sizes.size() != 1)
    return std::nullopt;
  SizeEvaluator evaluator(func, entry, batch);
  return evaluator.evaluate(sizes.front());
}

/// The number of slots of `func`'s arena (its `attn.arena` attribute).
static int64_t arenaSlots(func::FuncOp func) {
  int64_t slots = 0;
  func.walk([&](Operation *op) {
    if (auto attr = op->getAttrOfType<IntegerAttr>(kArenaAllocAttr))
      slots = attr.getInt();
  });
  return slots;
}

void collectArenaSizes(ModuleOp module, ModelInfo &info) {
  for (EntryInfo &entry : info.entries) {
    auto func = module.lookupSymbol<func::FuncOp>(entry.name);
    if (!func || func.isExternal())
      continue;
    std::optional<int64_t> one = evaluateArenaBytes(func, entry, 1);
    std::optional<int64_t> many =
        evaluateArenaBytes(func, entry, kArenaBatchRange);
    if (!one || !many || *many < *one)
      continue;
    // Each temporary's bytes grow linearly with the batch, and a slot takes
    // the largest of its occupants: the arena grows convexly, faster at
    // larger batches once a batch-sized occupant outgrows a fixed-size one
    // in its slot (f(2) - f(1) can be less than f(8) - f(7)). The chord
    // from batch 1 to kArenaBatchRange is above a convex function between
    // the two; each occupant's rounding up to 64 bytes (at most 63 per
    // slot) is added on top.
    // The result is rounded up to 64 bytes too.
    int64_t slack = 63 * arenaSlots(func);
    int64_t perBatch =
        (*many - *one + slack + kArenaBatchRange - 2) / (kArenaBatchRange - 1) +
        slack;
    entry.arenaBytesPerBatch = (perBatch + 63) / 64 * 64;
    entry.arenaBytes = *one;
  }
  // An entry point calling another (train_step calls <loss>_grad) passes
  // its arena on: it needs the larger of the two, unknown when either is.
  for (EntryInfo &entry : info.entries) {
    auto func = module.lookupSymbol<func::FuncOp>(entry.name);
    if (!func || func.isExternal())
      continue;
    func.walk([&](func::CallOp call) {
      auto callee = llvm::find_if(info.entries, [&](const EntryInfo &e) {
        return e.name == call.getCallee();
      });
      if (callee == info.entries.end() || callee->name == entry.name)
        return;
      if (entry.arenaBytes < 0 || callee->arenaBytes < 0) {
        entry.arenaBytes = entry.arenaBytesPerBatch = -1;
        return;
      }
      entry.arenaBytes = std::max(entry.arenaBytes, callee->arenaBytes);
      entry.arenaBytesPerBatch =
          std::max(entry.arenaBytesPerBatch, callee->arenaBytesPerBatch);
    });
  }
}

} // namespace attn
