//===- AttnInterfaces.td - Op interfaces of attn -----------*- tablegen -*-===//
//
// The gradient interface every differentiable op implements, so the autodiff
// pass builds the backward graph op by op without a table of special cases;
// the element-wise interface, so passes recognise element-wise ops without
// lists of them and the lowering builds each from its scalar body.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_INTERFACES_TD
#define ATTN_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Attn_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::attn";
  let description = [{
    The reverse-mode rule of an op. Given the adjoints of its results (null for
    a result that does not influence the loss), the op builds, at the
    builder's insertion point, the adjoints of its operands and appends them
    to `operandGrads` in operand order, null for an operand that is not
    differentiable (integer ids, boolean masks, sizes).

    Adjoints have the type of the value they belong to: an op whose operands
    were broadcast reduces the adjoint back to the operand's shape.
  }];
  let methods = [
    InterfaceMethod<
      /*desc=*/"Builds the adjoints of the operands from those of the results.",
      /*retTy=*/"::llvm::LogicalResult",
      /*methodName=*/"buildGradient",
      /*args=*/(ins "::mlir::OpBuilder &":$builder,
                    "::mlir::ValueRange":$resultGrads,
                    "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>
  ];
}

def Attn_ElementwiseOpInterface : OpInterface<"ElementwiseOpInterface"> {
  let cppNamespace = "::attn";
  let description = [{
    An op whose result element at each index is a function of the operand
    elements at that index alone (operands broadcast by NumPy's rules): no
    element depends on another position, its position in the tensor or a
    random stream. Passes rely on that (attn-incremental-decoding runs it on
    new positions only; canonicalisation moves a slice of its result onto
    its operands), and `convert-attn-to-linalg` lowers every such op to one
    element-wise `linalg.generic` around `buildScalar`.
  }];
  let methods = [
    InterfaceMethod<
      /*desc=*/[{Builds, in arith and math, one result element of type
                 `resultElement` from one element of each operand.}],
      /*retTy=*/"::mlir::Value",
      /*methodName=*/"buildScalar",
      /*args=*/(ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc,
                    "::mlir::ValueRange":$operands,
                    "::mlir::Type":$resultElement)>
  ];
}

#endif // ATTN_INTERFACES_TD
