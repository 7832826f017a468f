//===- AttnInterfaces.td - Op interfaces of attn -----------*- tablegen -*-===//
//
// The gradient interface every differentiable op implements, so the autodiff
// pass builds the backward graph op by op without a table of special cases.
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

#endif // ATTN_INTERFACES_TD
