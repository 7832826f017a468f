//===- AttnOps.h - Operations of the attn dialect ---------------*- C++ -*-===//
//
// The ops, enums, attributes and interfaces of `attn`, generated from ODS.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_DIALECT_IR_ATTNOPS_H
#define ATTN_DIALECT_IR_ATTNOPS_H

#include "attn/Dialect/IR/AttnDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "attn/Dialect/IR/AttnEnums.h.inc"

#include "attn/Dialect/IR/AttnInterfaces.h.inc"

namespace attn {
/// The key/value cache held by a model context, for the side effects of the
/// ops that read and append to it.
struct KVCacheResource
    : public mlir::SideEffects::Resource::Base<KVCacheResource> {
  llvm::StringRef getName() final { return "attn.kv_cache"; }
};

/// The parameter buffers of a model context (values, gradients, Adam's
/// moments), for the side effects of attn.set_param.
struct ParamResource : public mlir::SideEffects::Resource::Base<ParamResource> {
  llvm::StringRef getName() final { return "attn.params"; }
};
} // namespace attn

#define GET_OP_CLASSES
#include "attn/Dialect/IR/AttnOps.h.inc"

namespace attn {
/// Where each parameter lives in the flat parameter buffer (and in the
/// gradient and moment buffers, laid out the same).
struct ParamSlot {
  ParamOp param;
  int64_t offset; // in f32 elements
};

/// The layout of the parameter buffer: parameters in declaration order, each
/// starting at a multiple of 16 elements (64 bytes, one cache line), so the
/// generated code may load any parameter with aligned vector loads; the
/// elements between parameters are zeros (the runtime allocates the buffers
/// zeroed and nothing writes there).
llvm::SmallVector<ParamSlot> computeParamLayout(mlir::ModuleOp module,
                                                int64_t &numElements);

/// A constant of the static float tensor type `type` with every element
/// `value`.
mlir::Value createSplat(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::RankedTensorType type, double value);

/// Whether `value` is a tensor of floats (the values that have adjoints).
bool isFloatTensor(mlir::Value value);

/// `activation` applied to the scalar `x`, in arith and math: the scalar
/// body of the activation ops and of `attn.linear`'s fused epilogue.
mlir::Value applyActivation(mlir::OpBuilder &b, mlir::Location loc,
                            Activation activation, mlir::Value x);

/// The element-wise op of `activation` (attn.relu, attn.gelu, ...) applied
/// to `x`; `x` itself for Activation::none.
mlir::Value createActivation(mlir::OpBuilder &b, mlir::Location loc,
                             Activation activation, mlir::Value x);
} // namespace attn

#endif // ATTN_DIALECT_IR_ATTNOPS_H
