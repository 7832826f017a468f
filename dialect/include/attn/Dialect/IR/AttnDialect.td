//===- AttnDialect.td - The attn dialect declaration -------*- tablegen -*-===//
//
// The dialect itself: name, namespace and the hooks it implements.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_DIALECT_TD
#define ATTN_DIALECT_TD

include "mlir/IR/OpBase.td"

def Attn_Dialect : Dialect {
  let name = "attn";
  let cppNamespace = "::attn";
  let summary = "Graph-level operations of Transformer models";
  let description = [{
    The `attn` dialect holds what a model written in the `.tfm` language
    computes, at the granularity a Transformer is reasoned about: element-wise
    arithmetic with NumPy broadcasting, shape manipulation, matrix products,
    normalisation, scaled dot-product attention, losses, and the ops the
    training step and incremental decoding need. It works on ranked tensors
    whose dimensions are static or dynamic (`?`, the symbolic sizes of the
    model such as `B` and `T`).

    The op set is closed: every op the frontend emits is an `attn` op, an
    `arith.constant` or a `func` op, so every op has a gradient rule and a
    lowering. Parameters live in a model-level table of `attn.param` symbols
    read with `attn.get_param`.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
  let hasConstantMaterializer = 1;
}

class Attn_Op<string mnemonic, list<Trait> traits = []>
    : Op<Attn_Dialect, mnemonic, traits>;

#endif // ATTN_DIALECT_TD
