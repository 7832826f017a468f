//===- EntryPoints.cpp - Building derived entry points --------------------===//
//
// The helpers that the passes deriving entry points share.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/Transforms/EntryPoints.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace attn::entry {

func::FuncOp create(OpBuilder &b, func::FuncOp like, unsigned numArgs,
                    StringRef name, ArrayRef<std::pair<Type, StringRef>> extra,
                    TypeRange results) {
  SmallVector<Type> inputs(like.getArgumentTypes().take_front(numArgs));
  for (auto [type, attr] : extra)
    inputs.push_back(type);
  auto function = func::FuncOp::create(b, like.getLoc(), name,
                                       b.getFunctionType(inputs, results));
  for (unsigned i = 0; i < numArgs; ++i)
    if (DictionaryAttr attrs = like.getArgAttrDict(i))
      function.setArgAttrs(i, attrs);
  for (auto [index, entry] : llvm::enumerate(extra))
    function.setArgAttr(numArgs + index, entry.second, b.getUnitAttr());
  function.addEntryBlock();
  return function;
}

void eraseDeadOps(func::FuncOp function) {
  Block &body = function.getBody().front();
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (op.use_empty() && isMemoryEffectFree(&op) &&
        !op.hasTrait<OpTrait::IsTerminator>())
      op.erase();
}

} // namespace attn::entry
