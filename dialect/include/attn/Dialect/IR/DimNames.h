//===- DimNames.h - The symbolic names of the dims of values ----*- C++ -*-===//
//
// Which dims of a value are the symbolic sizes of an entry point's
// arguments (`B`, `T` of `tokens: i32[B, T]`, the `attn.dims` of the
// arguments), followed through the ops that keep a dim of an operand in
// their result.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_DIALECT_IR_DIMNAMES_H
#define ATTN_DIALECT_IR_DIMNAMES_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

namespace attn {

/// The symbolic name of each dim of `value`, a ranked tensor or an `index`
/// (one name: the size it is), null where a dim has none: a static dim, or
/// one an op computes (a concatenation's joined dim). The names start at the
/// `attn.dims` of the enclosing function's arguments (one string per dim,
/// the symbolic name of a dynamic one, "" for the others); a value the
/// analysis does not follow gets none.
llvm::SmallVector<mlir::StringAttr> getDimNames(mlir::Value value);

} // namespace attn

#endif // ATTN_DIALECT_IR_DIMNAMES_H
