//===- AttnDialect.h - The attn dialect -------------------------*- C++ -*-===//
//
// The dialect class of `attn`, generated from AttnDialect.td.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_DIALECT_IR_ATTNDIALECT_H
#define ATTN_DIALECT_IR_ATTNDIALECT_H

#include "mlir/IR/Dialect.h"

#include "attn/Dialect/IR/AttnDialect.h.inc"

#endif // ATTN_DIALECT_IR_ATTNDIALECT_H
