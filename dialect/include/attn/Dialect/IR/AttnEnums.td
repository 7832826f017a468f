//===- AttnEnums.td - Enumerated attributes of attn --------*- tablegen -*-===//
//
// The small closed vocabularies the ops are parameterised by: mask kinds,
// activations, reductions, comparisons, initialisers, optimizers, schedules.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_ENUMS_TD
#define ATTN_ENUMS_TD

include "mlir/IR/EnumAttr.td"

// Integer-backed enums print as bare keywords in op formats (`mask causal`),
// like arith's predicates.
class Attn_I32Enum<string name, string summary, list<I32EnumAttrCase> cases>
    : I32EnumAttr<name, summary, cases> {
  let cppNamespace = "::attn";
}

def Attn_ParamBuffer : Attn_I32Enum<"ParamBuffer",
    "the per-parameter buffer a get_param/set_param addresses", [
  I32EnumAttrCase<"value", 0>,
  I32EnumAttrCase<"grad", 1>,
  I32EnumAttrCase<"first_moment", 2>,
  I32EnumAttrCase<"second_moment", 3>,
  I32EnumAttrCase<"weights", 4>,
  I32EnumAttrCase<"weight_scales", 5>
]>;

def Attn_MaskKind : Attn_I32Enum<"MaskKind", "attention mask kind", [
  I32EnumAttrCase<"none", 0>,
  I32EnumAttrCase<"causal", 1>
]>;

def Attn_Activation : Attn_I32Enum<"Activation", "element-wise activation", [
  I32EnumAttrCase<"none", 0>,
  I32EnumAttrCase<"relu", 1>,
  I32EnumAttrCase<"gelu", 2>,
  I32EnumAttrCase<"gelu_tanh", 3>,
  I32EnumAttrCase<"silu", 4>,
  I32EnumAttrCase<"tanh", 5>,
  I32EnumAttrCase<"sigmoid", 6>
]>;

def Attn_ReduceKind : Attn_I32Enum<"ReduceKind", "reduction kind", [
  I32EnumAttrCase<"sum", 0>,
  I32EnumAttrCase<"mean", 1>,
  I32EnumAttrCase<"max", 2>
]>;

def Attn_CompareKind : Attn_I32Enum<"CompareKind", "comparison predicate", [
  I32EnumAttrCase<"eq", 0>,
  I32EnumAttrCase<"ne", 1>,
  I32EnumAttrCase<"lt", 2>,
  I32EnumAttrCase<"le", 3>,
  I32EnumAttrCase<"gt", 4>,
  I32EnumAttrCase<"ge", 5>
]>;

def Attn_InitKind : Attn_I32Enum<"InitKind", "parameter initialiser", [
  I32EnumAttrCase<"zeros", 0>,
  I32EnumAttrCase<"ones", 1>,
  I32EnumAttrCase<"normal", 2>,
  I32EnumAttrCase<"uniform", 3>,
  I32EnumAttrCase<"xavier_uniform", 4>
]>;

def Attn_OptimizerKind : Attn_I32Enum<"OptimizerKind", "optimizer", [
  I32EnumAttrCase<"adam", 0>,
  I32EnumAttrCase<"adamw", 1>
]>;

def Attn_ScheduleKind : Attn_I32Enum<"ScheduleKind", "learning-rate schedule", [
  I32EnumAttrCase<"constant", 0>,
  I32EnumAttrCase<"cosine", 1>,
  I32EnumAttrCase<"warmup_rsqrt", 2>
]>;

#endif // ATTN_ENUMS_TD
