//===- DimNames.cpp - The symbolic names of the dims of values ------------===//
//
// Which dims of a value are the symbolic sizes an entry point's arguments
// name (`B`, `T` of `tokens: i32[B, T]`): the names start at the
// `attn.dims` of the arguments and follow each op that keeps a dim of an
// operand in its result. The frontend's errors print shapes with them
// (f32[B, T, 192], not tensor<?x?x192xf32>), and the model's metadata
// names the dims of the entry points' results with them.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/IR/DimNames.h"

#include "attn/Dialect/IR/AttnOps.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace attn;

namespace {
/// A value's dim names: one per dim of a tensor, a single one for an index.
using Names = SmallVector<StringAttr, 4>;

/// Computes dim names bottom-up over the ops that define a value, each op
/// once, without recursion (a deep model is a long chain of ops).
class DimNameAnalysis {
public:
  Names namesOf(Value root) {
    SmallVector<Value> stack{root};
    while (!stack.empty()) {
      Value value = stack.back();
      if (known.count(value)) {
        stack.pop_back();
        continue;
      }
      Operation *op = value.getDefiningOp();
      bool ready = true;
      if (op)
        for (Value operand : op->getOperands())
          if (!known.count(operand)) {
            stack.push_back(operand);
            ready = false;
          }
      if (!ready)
        continue;
      stack.pop_back();
      known[value] = compute(value);
    }
    return known[root];
  }

private:
  /// The names of `value`, whose operands' names are known.
  Names compute(Value value) {
    if (auto arg = dyn_cast<BlockArgument>(value))
      return argumentNames(arg);
    Operation *op = value.getDefiningOp();
    Names unnamed(rankOf(value));
    if (value != op->getResult(0))
      return unnamed;
    Names names =
        TypeSwitch<Operation *, Names>(op)
            .Case([&](DimOp dim) {
              return Names{nameAt(dim.getInput(), dim.getAxis())};
            })
            .Case([&](LinearOp linear) {
              Names input = of(linear.getInput());
              input.back() = {};
              return input;
            })
            .Case([&](MatmulOp matmul) {
              Names a = of(matmul.getLhs()), b = of(matmul.getRhs());
              Names batch = broadcast({Names(ArrayRef(a).drop_back(2)),
                                       Names(ArrayRef(b).drop_back(2))});
              batch.push_back(a[a.size() - 2]);
              batch.push_back(b.back());
              return batch;
            })
            .Case([&](TransposeOp transpose) {
              Names input = of(transpose.getInput()), result;
              for (int64_t axis : transpose.getPermutation())
                result.push_back(input[axis]);
              return result;
            })
            .Case([&](SplitHeadsOp split) {
              Names x = of(split.getInput());
              return Names{x[0], {}, x[1], {}};
            })
            .Case([&](MergeHeadsOp merge) {
              Names x = of(merge.getInput());
              return Names{x[0], x[2], {}};
            })
            .Case([&](ReshapeOp reshape) {
              // Each dynamic dim of the result takes its size operand's.
              Names result(rankOf(value));
              auto sizes = reshape.getDynamicSizes();
              auto type = cast<RankedTensorType>(value.getType());
              for (int64_t axis = 0, next = 0; axis < type.getRank(); ++axis)
                if (type.isDynamicDim(axis))
                  result[axis] = of(sizes[next++]).front();
              return result;
            })
            .Case([&](ConcatOp concat) {
              // The joined dim is a sum; the others are every input's.
              Names result = broadcast(namesOfAll(concat.getInputs()));
              result[concat.getAxis()] = {};
              return result;
            })
            .Case([&](SliceOp slice) {
              Names x = of(slice.getInput());
              x[slice.getAxis()] = {};
              return x;
            })
            .Case([&](TakeOp take) {
              Names x = of(take.getInput());
              x.erase(x.begin() + take.getAxis());
              return x;
            })
            .Case([&](ReduceOp reduce) {
              Names x = of(reduce.getInput());
              x.erase(x.begin() + reduce.getAxis());
              return x;
            })
            .Case([&](GatherOp gather) {
              Names ids = of(gather.getIds());
              ids.push_back({});
              return ids;
            })
            .Case([&](SdpaOp sdpa) {
              Names q = of(sdpa.getQuery());
              q.back() = of(sdpa.getValue()).back();
              return q;
            })
            .Case<PositionsOp, SinusoidalOp>([&](Operation *positions) {
              Names result(rankOf(value));
              result.front() = of(positions->getOperand(0)).front();
              return result;
            })
            .Default([&](Operation *other) {
              // Element-wise ops broadcast their operands; the others that
              // keep their input's shape (softmax, norms, dropout) keep its
              // names.
              if (isa<ElementwiseOpInterface>(other))
                return broadcast(namesOfAll(other->getOperands()));
              if (other->getNumOperands() != 0 &&
                  other->getOperand(0).getType() == value.getType())
                return of(other->getOperand(0));
              return unnamed;
            });
    // Names that do not fit the value's rank name nothing.
    if (names.size() != unnamed.size())
      return unnamed;
    // A static dim is its size; a name only ever stands for a dynamic one.
    if (auto type = dyn_cast<RankedTensorType>(value.getType()))
      for (auto [axis, name] : llvm::enumerate(names))
        if (!type.isDynamicDim(axis))
          name = {};
    return names;
  }

  /// The names an entry point's `attn.dims` gives its argument.
  Names argumentNames(BlockArgument arg) {
    Names names(rankOf(arg));
    auto func = dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp());
    if (!func || arg.getOwner() != &func.getFunctionBody().front())
      return names;
    auto dims =
        func.getArgAttrOfType<ArrayAttr>(arg.getArgNumber(), "attn.dims");
    if (!dims || dims.size() != names.size())
      return names;
    for (auto [name, dim] : llvm::zip(names, dims.getAsRange<StringAttr>()))
      if (!dim.getValue().empty())
        name = dim;
    return names;
  }

  /// The names of dims aligned on the last one, by NumPy's broadcasting: a
  /// dim takes the first name any operand gives it.
  static Names broadcast(ArrayRef<Names> operands) {
    size_t rank = 0;
    for (const Names &operand : operands)
      rank = std::max(rank, operand.size());
    Names result(rank);
    for (const Names &operand : operands)
      for (auto [i, name] : llvm::enumerate(operand)) {
        StringAttr &slot = result[rank - operand.size() + i];
        if (!slot)
          slot = name;
      }
    return result;
  }

  static size_t rankOf(Value value) {
    if (auto type = dyn_cast<RankedTensorType>(value.getType()))
      return type.getRank();
    return 1;
  }

  Names of(Value value) { return known.lookup(value); }
  SmallVector<Names> namesOfAll(ValueRange values) {
    return llvm::map_to_vector(values, [&](Value v) { return of(v); });
  }
  StringAttr nameAt(Value value, int64_t axis) {
    Names names = of(value);
    return axis < static_cast<int64_t>(names.size()) ? names[axis]
                                                     : StringAttr();
  }

  llvm::DenseMap<Value, Names> known;
};
} // namespace

SmallVector<StringAttr> attn::getDimNames(Value value) {
  Names names = DimNameAnalysis().namesOf(value);
  return SmallVector<StringAttr>(names.begin(), names.end());
}
