//===- ArenaSize.cpp - The activation arena's size at given dims ----------===//

#include "attn/Target/ArenaSize.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

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
    if (t.kind != 1) // the caches: sized by the context, not by the call
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
    if (isa<arith::AddIOp>(def))
      return *a + *b;
    if (isa<arith::SubIOp>(def))
      return *a - *b;
    if (isa<arith::MulIOp>(def))
      return *a * *b;
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
  memref::AllocOp arena;
  func.walk([&](memref::AllocOp alloc) {
    if (alloc->hasAttr("attn.arena"))
      arena = alloc;
  });
  if (!arena)
    return 0;
  if (arena.getDynamicSizes().size() != 1)
    return std::nullopt;
  SizeEvaluator evaluator(func, entry, batch);
  return evaluator.evaluate(arena.getDynamicSizes().front());
}

void collectArenaSizes(ModuleOp module, ModelInfo &info) {
  for (EntryInfo &entry : info.entries) {
    auto func = module.lookupSymbol<func::FuncOp>(entry.name);
    if (!func || func.isExternal())
      continue;
    std::optional<int64_t> one = evaluateArenaBytes(func, entry, 1);
    std::optional<int64_t> two = evaluateArenaBytes(func, entry, 2);
    if (!one || !two)
      continue;
    // Activations grow linearly with the batch at a fixed sequence length.
    entry.arenaBytesPerBatch = *two - *one;
    entry.arenaBytes = *one;
  }
}

} // namespace attn
