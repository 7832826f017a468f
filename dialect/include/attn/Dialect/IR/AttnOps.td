//===- AttnOps.td - Operations of the attn dialect ---------*- tablegen -*-===//
//
// Every op a Transformer model is made of, from element-wise arithmetic to
// attention, losses, optimizer updates and the key/value cache.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_OPS_TD
#define ATTN_OPS_TD

include "attn/Dialect/IR/AttnDialect.td"
include "attn/Dialect/IR/AttnEnums.td"
include "attn/Dialect/IR/AttnInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Attn_FloatTensor : RankedTensorOf<[AnyFloat]>;
def Attn_IndexTensor : RankedTensorOf<[I32, I64]>;
def Attn_BoolTensor : RankedTensorOf<[I1]>;
def Attn_Tensor : RankedTensorOf<[AnyFloat, I32, I64, I1]>;
def Attn_ScalarF32 : TensorRankOf<[F32], [0]> {
  let builderCall = "::mlir::RankedTensorType::get({}, $_builder.getF32Type())";
}
def Attn_ScalarI32 : TensorRankOf<[I32], [0]>;
// The dropout seed of a training entry point (ABI: ATTN_ARG_SEED).
def Attn_Seed : TensorRankOf<[I64], [0]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getI64Type())">;

class Attn_F64Constraint<string pred, string what> : AttrConstraint<
    CPred<"::llvm::cast<::mlir::FloatAttr>($_self).getValueAsDouble() " # pred>,
    what>;
def Attn_NonNegativeF64 : ConfinedAttr<F64Attr,
    [Attn_F64Constraint<">= 0.0", "whose value is non-negative">]>;
def Attn_PositiveF64 : ConfinedAttr<F64Attr,
    [Attn_F64Constraint<"> 0.0", "whose value is positive">]>;
def Attn_UnitIntervalF64 : ConfinedAttr<F64Attr,
    [Attn_F64Constraint<">= 0.0", "whose value is non-negative">,
     Attn_F64Constraint<"<= 1.0", "whose value is at most 1">]>;

// Result types are inferred; a stated result type may be more static than the
// inferred one (a `?` the frontend knows to be 8), never less or different.
defvar Attn_Infer = InferTypeOpAdaptorWithIsCompatible;

// The reverse-mode rule of a differentiable op (AttnGradients.cpp), which the
// autodiff pass calls op by op.
defvar Attn_Grad = DeclareOpInterfaceMethods<Attn_GradientOpInterface>;
defvar Attn_Elementwise =
    DeclareOpInterfaceMethods<Attn_ElementwiseOpInterface>;

// The parameter buffers of the model context (values, gradients, moments).
def Attn_ParamResource : Resource<"::attn::ParamResource">;

//===----------------------------------------------------------------------===//
// Parameters, the model's training configuration, sizes
//===----------------------------------------------------------------------===//

def Attn_ParamOp : Attn_Op<"param", [Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "A trainable tensor of the model's parameter table";
  let description = [{
    Declares one parameter of the model, named by its full dotted path
    (PyTorch's `state_dict` name), with its shape and its initialiser. The
    initialiser's arguments are: `normal [mean, std]`, `uniform [lo, hi]`,
    `xavier_uniform [gain]` (bounds from the fan-in and fan-out of a 2-D
    shape), `zeros []`, `ones []`.

    ```mlir
    attn.param @"h.0.attn.in_proj_weight" : tensor<576x192xf32> init xavier_uniform [1.0]
    attn.param @"wte.weight" : tensor<256x192xf32> init normal [0.0, 1.0]
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<Attn_FloatTensor>:$type,
                       Attn_InitKind:$init,
                       DenseF64ArrayAttr:$init_args);
  let assemblyFormat = [{
    $sym_name `:` $type `init` $init $init_args attr-dict
  }];
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
  }];
  let hasVerifier = 1;
}

def Attn_GetParamOp : Attn_Op<"get_param",
    [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Reads a parameter of the model, or its gradient or moments";
  let description = [{
    The current value of the parameter named by the symbol; its type is the
    parameter's. With a buffer, the same-shaped tensor kept for the parameter
    in that buffer of the context: `grad` (written by the gradient entry
    point), `first_moment` and `second_moment` (Adam's state). The
    low-precision copy of a product weight (`attnc --weights`) is read from
    `weights` (the parameter's shape, bf16 or i8) and, for i8, from
    `weight_scales` (`[N, K / block]` f32 for a weight `[N, K]`); see
    `attn.dequantize`.

    A function reads a buffer of a parameter before it writes it with
    `attn.set_param`, never after: reads are pure so that they fold and CSE.

    ```mlir
    %w = attn.get_param @"wte.weight" : tensor<256x192xf32>
    %m = attn.get_param @"wte.weight" first_moment : tensor<256x192xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$name,
                       DefaultValuedAttr<Attn_ParamBuffer,
                           "::attn::ParamBuffer::value">:$buffer);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$name ($buffer^)? attr-dict `:` type($result)";
  let builders = [
    OpBuilder<(ins "::mlir::Type":$type, "::llvm::StringRef":$name), [{
      build($_builder, $_state, type, name, ::attn::ParamBuffer::value);
    }]>
  ];
}

def Attn_DequantizeOp : Attn_Op<"dequantize", [Pure]> {
  let summary = "A product weight in f32, from its low-precision copy";
  let description = [{
    `values` (`[N, K]`, bf16 or i8) as f32: bf16 widened, exactly; i8 times
    the scale of its block, `scales[n, k / block]` for `scales` of
    `[N, K / block]`. With `attnc --weights`, the inference entry points read
    the weights of their matrix products this way (`attn.get_param` of the
    `weights` and `weight_scales` buffers); the lowering folds the
    conversion into the product's loads, so the f32 matrix is never stored.

    ```mlir
    %q = attn.get_param @"h.0.mlp.linear1.weight" weights : tensor<768x192xi8>
    %s = attn.get_param @"h.0.mlp.linear1.weight" weight_scales : tensor<768x6xf32>
    %w = attn.dequantize %q, %s : (tensor<768x192xi8>, tensor<768x6xf32>) -> tensor<768x192xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[BF16, I8]>:$values,
                       Optional<RankedTensorOf<[F32]>>:$scales);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $values (`,` $scales^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Attn_SetParamOp : Attn_Op<"set_param",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>,
     MemoryEffects<[MemWrite<Attn_ParamResource>]>]> {
  let summary = "Writes a parameter, its gradient or its moments";
  let description = [{
    Stores a tensor of the parameter's type into one of the parameter's
    buffers in the context (see `attn.get_param`): the training entry points
    write the new weights and moments (`train_step`) or the gradients
    (`<loss>_grad`) in place.

    ```mlir
    attn.set_param @"wte.weight" grad, %g : tensor<256x192xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$name, Attn_ParamBuffer:$buffer,
                       Attn_FloatTensor:$value);
  let assemblyFormat = "$name $buffer `,` $value attr-dict `:` type($value)";
}

def Attn_GetParamBufferOp : Attn_Op<"get_param_buffer", [Pure]> {
  let summary = "Reads one buffer of every parameter at once, flat";
  let description = [{
    The whole buffer (`value`, `grad`, `first_moment` or `second_moment`) as
    the runtime keeps it: every parameter flattened at its offset in the
    parameter layout (declaration order, each starting at a multiple of 16
    elements), zeros between them. The optimizer step reads the gradients
    and moments this way, so that it is one loop over all parameters, not
    one per parameter. Same ordering rule as `attn.get_param`.

    ```mlir
    %g = attn.get_param_buffer grad : tensor<1024xf32>
    ```
  }];
  let arguments = (ins Attn_ParamBuffer:$buffer);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = "$buffer attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Attn_SetParamBufferOp : Attn_Op<"set_param_buffer",
    [MemoryEffects<[MemWrite<Attn_ParamResource>]>]> {
  let summary = "Writes one buffer of every parameter at once, flat";
  let description = [{
    Stores a whole buffer, laid out as `attn.get_param_buffer` reads it.
    The elements between parameters must stay zero.

    ```mlir
    attn.set_param_buffer first_moment, %m : tensor<1024xf32>
    ```
  }];
  let arguments = (ins Attn_ParamBuffer:$buffer, Attn_FloatTensor:$value);
  let assemblyFormat = "$buffer `,` $value attr-dict `:` type($value)";
  let hasVerifier = 1;
}

def Attn_TrainOp : Attn_Op<"train",
    [HasParent<"::mlir::ModuleOp">,
     DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "How the training step of the model is built";
  let description = [{
    The `train { }` section of a model: the function whose scalar result is
    minimised, the optimizer and its hyperparameters, the learning-rate
    schedule and global-norm gradient clipping (0 disables it). The values are
    the defaults of the compiled binary's `train` command.

    Optimizer keys: `lr`, `beta1`, `beta2`, `eps`, `weight_decay` (`adamw`
    decays the weights decoupled from the gradient). Schedule keys:
    `constant` none; `cosine` `warmup`, `steps`; `warmup_rsqrt` `warmup`,
    `d_model`.

    ```mlir
    attn.train loss @loss optimizer adamw {beta1 = 0.9 : f64, lr = 1.0e-03 : f64}
        schedule cosine {steps = 5000 : i64, warmup = 100 : i64} clip_norm 1.0
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$loss,
                       Attn_OptimizerKind:$optimizer,
                       DictionaryAttr:$optimizer_args,
                       Attn_ScheduleKind:$schedule,
                       DictionaryAttr:$schedule_args,
                       Attn_NonNegativeF64:$clip_norm);
  let assemblyFormat = [{
    `loss` $loss `optimizer` $optimizer $optimizer_args
    `schedule` $schedule $schedule_args `clip_norm` $clip_norm attr-dict
  }];
  let hasVerifier = 1;
}

def Attn_DimOp : Attn_Op<"dim", [Pure]> {
  let summary = "The size of one dimension of a tensor";
  let description = [{
    The run-time size of dimension `axis` of `input`: how the symbolic sizes
    of a model (`T` in `positions(T)`) reach the ops that need them. Folds to
    a constant when the dimension is static.

    ```mlir
    %t = attn.dim %tokens, 1 : tensor<?x?xi32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$input, I64Attr:$axis);
  let results = (outs Index:$result);
  let assemblyFormat = "$input `,` $axis attr-dict `:` type($input)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Element-wise
//===----------------------------------------------------------------------===//

class Attn_UnaryOp<string mnemonic, string what, list<Trait> traits = []>
    : Attn_Op<mnemonic,
              !listconcat([Pure, SameOperandsAndResultType, Attn_Grad,
                           Attn_Elementwise],
                          traits)> {
  let summary = "Element-wise " # what;
  let description = [{
    Applies the function to every element; the result has the input's type.

    ```mlir
    %y = attn.}] # mnemonic # [{ %x : tensor<?x?x192xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Attn_NegOp : Attn_UnaryOp<"neg", "negation"> { let hasFolder = 1; }
def Attn_ReluOp : Attn_UnaryOp<"relu", "rectified linear unit, max(x, 0)">;
def Attn_GeluOp : Attn_UnaryOp<"gelu",
    "Gaussian error linear unit, exact form x * Phi(x) with erf">;
def Attn_GeluTanhOp : Attn_UnaryOp<"gelu_tanh",
    "Gaussian error linear unit, tanh approximation">;
def Attn_SiluOp : Attn_UnaryOp<"silu", "sigmoid linear unit, x * sigmoid(x)">;
def Attn_TanhOp : Attn_UnaryOp<"tanh", "hyperbolic tangent">;
def Attn_SigmoidOp : Attn_UnaryOp<"sigmoid", "logistic sigmoid">;
def Attn_ExpOp : Attn_UnaryOp<"exp", "exponential">;
def Attn_LogOp : Attn_UnaryOp<"log", "natural logarithm">;
def Attn_SqrtOp : Attn_UnaryOp<"sqrt", "square root">;

class Attn_BinaryOp<string mnemonic, string what, list<Trait> traits = []>
    : Attn_Op<mnemonic, !listconcat([Pure, Attn_Infer, Attn_Grad,
                                    Attn_Elementwise], traits)> {
  let summary = "Element-wise " # what # " with broadcasting";
  let description = [{
    Combines the operands element by element after broadcasting them to a
    common shape by NumPy's rules: shapes are aligned on their last
    dimension, a dimension of size 1 (or a missing one) stretches to the
    other's size, and two dynamic dimensions are taken to be equal (checked
    when the program runs). Both operands have the same element type.

    ```mlir
    %y = attn.}] # mnemonic # [{ %x, %b : (tensor<?x?x192xf32>, tensor<192xf32>) -> tensor<?x?x192xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$lhs, Attn_FloatTensor:$rhs);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
}

def Attn_AddOp : Attn_BinaryOp<"add", "addition", [Commutative]>;
def Attn_SubOp : Attn_BinaryOp<"sub", "subtraction">;
def Attn_MulOp : Attn_BinaryOp<"mul", "multiplication", [Commutative]>;
def Attn_DivOp : Attn_BinaryOp<"div", "division">;

def Attn_CompareOp : Attn_Op<"compare",
    [Pure, Attn_Infer, Attn_Grad, Attn_Elementwise]> {
  let summary = "Element-wise comparison with broadcasting";
  let description = [{
    Compares the operands element by element, broadcast as for `attn.add`;
    the result is boolean (`i1`). Operands are of any one element type.

    ```mlir
    %pad = attn.compare eq, %tokens, %zero : (tensor<?x?xi32>, tensor<i32>) -> tensor<?x?xi1>
    ```
  }];
  let arguments = (ins Attn_CompareKind:$predicate, Attn_Tensor:$lhs,
                       Attn_Tensor:$rhs);
  let results = (outs Attn_BoolTensor:$result);
  let assemblyFormat = [{
    $predicate `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
}

def Attn_SelectOp : Attn_Op<"select",
    [Pure, Attn_Infer, Attn_Grad, Attn_Elementwise]> {
  let summary = "Element-wise choice between two tensors";
  let description = [{
    `true_value` where `condition` holds, `false_value` elsewhere; the three
    operands are broadcast together as for `attn.add`.

    ```mlir
    %y = attn.select %mask, %x, %zero : (tensor<?x?xi1>, tensor<?x?xf32>, tensor<f32>) -> tensor<?x?xf32>
    ```
  }];
  let arguments = (ins Attn_BoolTensor:$condition, Attn_Tensor:$true_value,
                       Attn_Tensor:$false_value);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $true_value `,` $false_value attr-dict `:`
    functional-type(operands, results)
  }];
}

def Attn_CastOp : Attn_Op<"cast", [Pure, Attn_Grad, Attn_Elementwise]> {
  let summary = "Element-wise conversion to another element type";
  let description = [{
    Converts every element, with the shape unchanged: floats round to
    nearest, float to integer truncates toward zero, booleans become 0 and 1.

    ```mlir
    %f = attn.cast %mask : tensor<?x?xi1> to tensor<?x?xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$input);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Attn_DropoutOp : Attn_Op<"dropout",
    [AllTypesMatch<["input", "result"]>, Attn_Grad]> {
  let summary = "Inverted dropout in training, the identity elsewhere";
  let description = [{
    With a `seed` (the training entry points' ATTN_ARG_SEED), zeroes each
    element with probability `rate` and scales the others by 1 / (1 - rate);
    without one (inference) it is the identity. The random stream is
    counter-based: element `i` (row-major) is kept iff
    `attn_dropout_bits(seed, stream, i) >> 40 >= rate * 2^24` (abi.h), so
    the backward pass draws the same mask (the adjoint of a dropout is the
    same dropout applied to the output's adjoint) and a run is reproducible.
    `stream` numbers the dropouts of one entry point.

    ```mlir
    %y = attn.dropout %x rate 1.000000e-01 : tensor<?x?x192xf32>
    %y = attn.dropout %x rate 1.000000e-01 seed %seed stream 3 : tensor<?x?x192xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input, Optional<Attn_Seed>:$seed,
                       F64Attr:$rate, OptionalAttr<I64Attr>:$stream);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $input `rate` $rate (`seed` $seed^ `stream` $stream)? attr-dict `:`
    type($input)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "::llvm::APFloat":$rate), [{
      build($_builder, $_state, input.getType(), input, ::mlir::Value(),
            rate, ::mlir::IntegerAttr());
    }]>
  ];
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Shape
//===----------------------------------------------------------------------===//

def Attn_ReshapeOp : Attn_Op<"reshape", [Pure, Attn_Grad]> {
  let summary = "Reinterprets the elements with another shape";
  let description = [{
    The same elements in row-major order with the result's shape. One index
    operand gives each dynamic dimension of the result, in order. When both
    shapes are static their element counts must agree.

    ```mlir
    %y = attn.reshape %x [%b, %t] : tensor<?x?x192xf32> -> tensor<?x?x6x32xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$input, Variadic<Index>:$dynamic_sizes);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = [{
    $input (` ` `[` $dynamic_sizes^ `]`)? attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Attn_TransposeOp : Attn_Op<"transpose", [Pure, Attn_Infer, Attn_Grad]> {
  let summary = "Permutes the dimensions of a tensor";
  let description = [{
    Result dimension `i` is input dimension `permutation[i]`.

    ```mlir
    %wt = attn.transpose %w, [1, 0] : (tensor<256x192xf32>) -> tensor<192x256xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $permutation attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
}

def Attn_SplitHeadsOp : Attn_Op<"split_heads", [Pure, Attn_Infer, Attn_Grad]> {
  let summary = "Splits the features into heads: [B, T, h*k] to [B, h, T, k]";
  let description = [{
    Head `i` takes the contiguous features `[i*k, (i+1)*k)`, as PyTorch's
    `nn.MultiheadAttention` does.

    ```mlir
    %q4 = attn.split_heads %q, 6 : (tensor<?x?x192xf32>) -> tensor<?x6x?x32xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input, ConfinedAttr<I64Attr,
                       [IntPositive]>:$heads);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $heads attr-dict `:` functional-type(operands, results)
  }];
}

def Attn_MergeHeadsOp : Attn_Op<"merge_heads", [Pure, Attn_Infer, Attn_Grad]> {
  let summary = "Joins the heads: [B, h, T, k] to [B, T, h*k]";
  let description = [{
    The inverse of `attn.split_heads`.

    ```mlir
    %y = attn.merge_heads %o : (tensor<?x6x?x32xf32>) -> tensor<?x?x192xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Attn_ConcatOp : Attn_Op<"concat", [Pure, Attn_Infer, Attn_Grad]> {
  let summary = "Joins tensors along one dimension";
  let description = [{
    The inputs agree in rank, element type and every dimension but `axis`.

    ```mlir
    %y = attn.concat %a, %b axis 1 : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Variadic<Attn_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = [{
    $inputs `axis` $axis attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
}

def Attn_SliceOp : Attn_Op<"slice", [Pure, Attn_Infer, Attn_Grad]> {
  let summary = "The elements [start, end) of one dimension";
  let description = [{
    Keeps indices `start <= i < end` of dimension `axis`; `0 <= start < end`,
    and `end` is within the dimension when it is static.

    ```mlir
    %q = attn.slice %qkv axis 2 [0, 192] : (tensor<?x?x576xf32>) -> tensor<?x?x192xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$input, I64Attr:$axis, I64Attr:$start,
                       I64Attr:$end);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = [{
    $input `axis` $axis ` ` `[` $start `,` $end `]` attr-dict `:`
    functional-type(operands, results)
  }];
  let hasFolder = 1;
}

def Attn_TakeOp : Attn_Op<"take", [Pure, Attn_Infer, Attn_Grad]> {
  let summary = "One index of one dimension, which is removed";
  let description = [{
    The slice at `index` of dimension `axis`, without that dimension. A
    negative index counts from the end, as in Python (`-1` is the last).

    ```mlir
    %last = attn.take %x axis 1 index -1 : (tensor<?x?x192xf32>) -> tensor<?x192xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$input, I64Attr:$axis, I64Attr:$index);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = [{
    $input `axis` $axis `index` $index attr-dict `:`
    functional-type(operands, results)
  }];
  // Sinks through ops that treat every index of a leading axis alike
  // (AttnCanonicalize.cpp): `prefill` then applies the head to its last
  // position only.
  let hasCanonicalizer = 1;
}

def Attn_BroadcastOp : Attn_Op<"broadcast", [Pure, Attn_Grad]> {
  let summary = "Stretches a tensor to a larger shape by NumPy's rules";
  let description = [{
    Broadcasts `input` to the result's shape (aligned on the last
    dimension). One index operand gives each dynamic result dimension.

    ```mlir
    %y = attn.broadcast %b [%n] : tensor<192xf32> -> tensor<?x192xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$input, Variadic<Index>:$dynamic_sizes);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = [{
    $input (` ` `[` $dynamic_sizes^ `]`)? attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Attn_GatherOp : Attn_Op<"gather", [Pure, Attn_Infer, Attn_Grad]> {
  let summary = "Rows of a table at integer ids (an embedding lookup)";
  let description = [{
    `result[i..., :] = table[ids[i...], :]` for a table `[n, d]`; the result
    is `[ids..., d]`. Ids outside `[0, n)` are an error at run time.

    ```mlir
    %x = attn.gather %w, %tokens : (tensor<256x192xf32>, tensor<?x?xi32>) -> tensor<?x?x192xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$table, Attn_IndexTensor:$ids);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $table `,` $ids attr-dict `:` functional-type(operands, results)
  }];
}

def Attn_PositionsOp : Attn_Op<"positions", [Pure, Attn_Grad]> {
  let summary = "The positions start .. start+n-1";
  let description = [{
    A rank-1 `i32` tensor of `length` elements counting from `start` (0 when
    absent): incremental decoding starts where the key/value cache ends.

    ```mlir
    %p = attn.positions %t : tensor<?xi32>
    %q = attn.positions %n start %len : tensor<?xi32>
    ```
  }];
  let arguments = (ins Index:$length, Optional<Index>:$start);
  let results = (outs 1DTensorOf<[I32]>:$result);
  let assemblyFormat = "$length (`start` $start^)? attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Attn_SinusoidalOp : Attn_Op<"sinusoidal", [Pure, Attn_Grad]> {
  let summary = "The sinusoidal position table of Vaswani et al.";
  let description = [{
    A `[length, d]` table with `PE[i, 2j] = sin(p / 10000^(2j/d))` and
    `PE[i, 2j+1] = cos(p / 10000^(2j/d))` for position `p = start + i`
    (`start` is 0 when absent); `d` is the result's static last dimension.

    ```mlir
    %pe = attn.sinusoidal %t : tensor<?x512xf32>
    ```
  }];
  let arguments = (ins Index:$length, Optional<Index>:$start);
  let results = (outs 2DTensorOf<[AnyFloat]>:$result);
  let assemblyFormat = "$length (`start` $start^)? attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Attn_RopeOp : Attn_Op<"rope", [Pure, Attn_Infer, Attn_Grad]> {
  let summary = "Rotary position embedding in the half-rotation form";
  let description = [{
    Rotates each pair of features `(j, j + D/2)` of `input: [..., T, D]`
    (`D` static and even) by the angle `positions[t] * base^(-2j/D)`, as
    Hugging Face's Llama applies rotary embeddings:
    `input * cos + rotate_half(input) * sin` with
    `rotate_half(x) = concat(-x[..., D/2:], x[..., :D/2])` and the angles
    repeated over both halves. `positions: [T]` numbers the rows. With
    `inverse` the rotation is by the opposite angle (sin negated): the
    adjoint of the rotation, which the gradient uses.

    ```mlir
    %q = attn.rope %x, %pos base 1.000000e+04 : (tensor<?x4x?x32xf32>, tensor<?xi32>) -> tensor<?x4x?x32xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input, 1DTensorOf<[I32]>:$positions,
                       Attn_PositiveF64:$base, UnitAttr:$inverse);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $positions `base` $base (`inverse` $inverse^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Contractions and reductions
//===----------------------------------------------------------------------===//

def Attn_MatmulOp : Attn_Op<"matmul", [Pure, Attn_Infer, Attn_Grad]> {
  let summary = "Batched matrix product over the last two dimensions";
  let description = [{
    `[..., M, K] x [..., K, N] -> [..., M, N]`, the leading (batch)
    dimensions broadcast by NumPy's rules, as `torch.matmul` for operands of
    rank 2 and more.

    ```mlir
    %y = attn.matmul %x, %wt : (tensor<?x?x192xf32>, tensor<192x256xf32>) -> tensor<?x?x256xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$lhs, Attn_FloatTensor:$rhs);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
}

def Attn_LinearOp : Attn_Op<"linear",
    [Pure, Attn_Infer, AttrSizedOperandSegments, Attn_Grad]> {
  let summary = "x * weight^T + bias, with an optional activation and residual";
  let description = [{
    `activation(x @ weight^T + bias) + residual` for `x: [..., in]`,
    `weight: [out, in]` (PyTorch's `nn.Linear` layout), `bias: [out]` and a
    residual of the result's shape `[..., out]`. Bias and residual are
    optional; the activation defaults to `none`. Fusion folds the epilogue
    into the product.

    ```mlir
    %h = attn.linear %x, %w, %b activation gelu : (tensor<?x?x192xf32>, tensor<768x192xf32>, tensor<768xf32>) -> tensor<?x?x768xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input, Attn_FloatTensor:$weight,
                       Optional<Attn_FloatTensor>:$bias,
                       Optional<Attn_FloatTensor>:$residual,
                       DefaultValuedAttr<Attn_Activation,
                           "::attn::Activation::none">:$activation);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? (`residual` $residual^)?
    (`activation` $activation^)? attr-dict `:` functional-type(operands, results)
  }];
}

def Attn_ReduceOp : Attn_Op<"reduce", [Pure, Attn_Infer, Attn_Grad]> {
  let summary = "Sum, mean or max over one dimension, optionally masked";
  let description = [{
    Reduces dimension `axis`, which the result drops. With a `mask` (only for
    `mean`), the elements whose mask is true are ignored, as `mean(x, axis:
    1, mask: m)` in the model language; the mask's shape is the leading
    dimensions of the input up to at least `axis`, and a row with every
    element masked has mean 0.

    ```mlir
    %m = attn.reduce mean %x axis 1 mask %pad : (tensor<?x?x128xf32>, tensor<?x?xi1>) -> tensor<?x128xf32>
    ```
  }];
  let arguments = (ins Attn_ReduceKind:$kind, Attn_FloatTensor:$input,
                       I64Attr:$axis, Optional<Attn_BoolTensor>:$mask);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $kind $input `axis` $axis (`mask` $mask^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def Attn_SoftmaxOp : Attn_Op<"softmax", [Pure, SameOperandsAndResultType,
     Attn_Grad]> {
  let summary = "Softmax over one dimension";
  let description = [{
    `exp(x - max) / sum(exp(x - max))` along `axis`.

    ```mlir
    %p = attn.softmax %x axis 2 : tensor<?x?x256xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = "$input `axis` $axis attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Attn_LogSoftmaxOp : Attn_Op<"log_softmax",
    [Pure, SameOperandsAndResultType, Attn_Grad]> {
  let summary = "Log-softmax over one dimension";
  let description = [{
    `x - max - log(sum(exp(x - max)))` along `axis`.

    ```mlir
    %lp = attn.log_softmax %x axis 2 : tensor<?x?x256xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = "$input `axis` $axis attr-dict `:` type($input)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

def Attn_LayerNormOp : Attn_Op<"layer_norm", [Pure, Attn_Infer, Attn_Grad]> {
  let summary = "Layer normalisation over the last dimension";
  let description = [{
    `(y - mean) / sqrt(var + eps) * weight + bias` with `y = input +
    residual` (the residual is optional: fusion puts the add of a post-norm
    block here), the biased variance over the last dimension `d`, and
    `weight`, `bias` of shape `[d]`, as `nn.LayerNorm`.

    ```mlir
    %y = attn.layer_norm %x, %w, %b eps 1.000000e-05 : (tensor<?x?x192xf32>, tensor<192xf32>, tensor<192xf32>) -> tensor<?x?x192xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input, Attn_FloatTensor:$weight,
                       Attn_FloatTensor:$bias,
                       Optional<Attn_FloatTensor>:$residual,
                       Attn_NonNegativeF64:$eps);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias (`residual` $residual^)? `eps` $eps attr-dict
    `:` functional-type(operands, results)
  }];
}

def Attn_RmsNormOp : Attn_Op<"rms_norm", [Pure, Attn_Infer, Attn_Grad]> {
  let summary = "Root-mean-square normalisation over the last dimension";
  let description = [{
    `y / sqrt(mean(y^2) + eps) * weight` with `y = input + residual` (the
    residual is optional), `weight` of shape `[d]`, as `nn.RMSNorm`.

    ```mlir
    %y = attn.rms_norm %x, %w eps 9.9999999999999995E-7 : (tensor<?x?x192xf32>, tensor<192xf32>) -> tensor<?x?x192xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input, Attn_FloatTensor:$weight,
                       Optional<Attn_FloatTensor>:$residual,
                       Attn_NonNegativeF64:$eps);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`residual` $residual^)? `eps` $eps attr-dict
    `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def Attn_SdpaOp : Attn_Op<"sdpa",
    [Pure, Attn_Infer, AttrSizedOperandSegments, Attn_Grad]> {
  let summary = "Scaled dot-product attention";
  let description = [{
    `softmax(q k^T * scale + bias) v` per batch and head, for `q: [B, H, T,
    D]`, `k: [B, H_kv, S, D]`, `v: [B, H_kv, S, Dv]`; the result is `[B, H,
    T, Dv]`. Grouped-query attention: with static head counts, `H_kv` may be
    any divisor of `H`, and query head `h` reads key and value head `h /
    (H / H_kv)` (PyTorch's `repeat_interleave` of `k` and `v` over the
    heads); a dynamic head count is the other operands'. `scale` defaults to
    `1/sqrt(D)`. `bias` is `-inf` for a masked
    pair: with `mask causal`, key `s` is masked for query `t` when `s > t +
    S - T` (aligned to the last query, as in incremental decoding); with a
    `key_padding` operand `[B, S]`, the keys where it is true. A query whose
    keys are all masked gets zeros. `dropout` applies to the attention
    weights when a `seed` is given (training entry points), with the stream
    of `attn.dropout` indexed over the `[B, H, T, S]` weights.

    With `logsumexp`, a second result `[B, H, T]` holds each query's
    `log(sum_s exp(scaled score))` over its visible keys (before dropout),
    0 for a query whose keys are all masked: the statistics `attn.sdpa_grad`
    needs, which the forward pass computes anyway (`attn-share-attention-
    stats` asks for them in training entry points).

    ```mlir
    %o = attn.sdpa %q, %k, %v mask causal : (tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>) -> tensor<?x6x?x32xf32>
    %o2, %lse = attn.sdpa %q, %k, %v logsumexp : (tensor<2x6x16x32xf32>, tensor<2x6x16x32xf32>, tensor<2x6x16x32xf32>) -> (tensor<2x6x16x32xf32>, tensor<2x6x16xf32>)
    %o3 = attn.sdpa %q, %k2, %v2 mask causal : (tensor<?x6x?x32xf32>, tensor<?x2x?x32xf32>, tensor<?x2x?x32xf32>) -> tensor<?x6x?x32xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$query, Attn_FloatTensor:$key,
                       Attn_FloatTensor:$value,
                       Optional<Attn_BoolTensor>:$key_padding,
                       Optional<Attn_Seed>:$seed,
                       DefaultValuedAttr<Attn_MaskKind,
                           "::attn::MaskKind::none">:$mask,
                       OptionalAttr<F64Attr>:$scale,
                       DefaultValuedAttr<F64Attr, "0.0">:$dropout,
                       OptionalAttr<I64Attr>:$stream,
                       UnitAttr:$return_logsumexp);
  let results = (outs Attn_FloatTensor:$result,
                      Optional<Attn_FloatTensor>:$logsumexp);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`key_padding` $key_padding^)?
    (`mask` $mask^)? (`scale` $scale^)? (`dropout` $dropout^)?
    (`seed` $seed^ `stream` $stream)? (`logsumexp` $return_logsumexp^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

// The result type is always tensor<f32>, which ODS infers by itself; the
// shape check is the verifier.
def Attn_CrossEntropyOp : Attn_Op<"cross_entropy", [Pure, Attn_Grad]> {
  let summary = "Mean cross-entropy of logits against integer targets";
  let description = [{
    `logits: [..., C]` against `targets: [...]` of class ids: the mean over
    the targets not equal to `ignore_index` of `-log_softmax(logits)[target]`,
    with label smoothing `e` mixing in `e/C` of the uniform distribution, as
    `torch.nn.functional.cross_entropy`. With every target ignored the loss
    is 0 (PyTorch gives NaN). The result is a rank-0 `f32`.

    ```mlir
    %l = attn.cross_entropy %logits, %t ignore_index 0 label_smoothing 1.000000e-01 : (tensor<?x?x256xf32>, tensor<?x?xi32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$logits, Attn_IndexTensor:$targets,
                       OptionalAttr<I64Attr>:$ignore_index,
                       DefaultValuedAttr<Attn_UnitIntervalF64, "0.0">:$label_smoothing);
  let results = (outs Attn_ScalarF32:$result);
  let assemblyFormat = [{
    $logits `,` $targets (`ignore_index` $ignore_index^)?
    (`label_smoothing` $label_smoothing^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Training: gradients of the composite ops, optimizer
//===----------------------------------------------------------------------===//

def Attn_ActivationGradOp : Attn_Op<"activation_grad",
    [Pure, SameOperandsAndResultType]> {
  let summary = "Adjoint of an element-wise activation";
  let description = [{
    `grad_output * f'(input)` for the activation `f` (not `none`).

    ```mlir
    %dx = attn.activation_grad gelu %x, %dy : tensor<?x?x768xf32>
    ```
  }];
  let arguments = (ins Attn_Activation:$activation,
                       Attn_FloatTensor:$input, Attn_FloatTensor:$grad_output);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $activation $input `,` $grad_output attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def Attn_SoftmaxGradOp : Attn_Op<"softmax_grad",
    [Pure, SameOperandsAndResultType]> {
  let summary = "Adjoint of softmax, from its output";
  let description = [{
    `y * (dy - sum(dy * y, axis))` where `y` is the softmax's output.

    ```mlir
    %dx = attn.softmax_grad %y, %dy axis 2 : tensor<?x?x256xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$output, Attn_FloatTensor:$grad_output,
                       I64Attr:$axis);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $output `,` $grad_output `axis` $axis attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def Attn_LogSoftmaxGradOp : Attn_Op<"log_softmax_grad",
    [Pure, SameOperandsAndResultType]> {
  let summary = "Adjoint of log-softmax, from its output";
  let description = [{
    `dy - exp(y) * sum(dy, axis)` where `y` is the log-softmax's output.

    ```mlir
    %dx = attn.log_softmax_grad %y, %dy axis 2 : tensor<?x?x256xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$output, Attn_FloatTensor:$grad_output,
                       I64Attr:$axis);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $output `,` $grad_output `axis` $axis attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def Attn_LayerNormGradOp : Attn_Op<"layer_norm_grad", [Pure, Attn_Infer]> {
  let summary = "Adjoints of layer normalisation";
  let description = [{
    From the normalised input `input` (with any residual already added), the
    weight and the adjoint of the output, the adjoints of the input, the
    weight and the bias; statistics are recomputed.

    ```mlir
    %dx, %dw, %db = attn.layer_norm_grad %x, %w, %dy eps 1.000000e-05 : (tensor<?x?x192xf32>, tensor<192xf32>, tensor<?x?x192xf32>) -> (tensor<?x?x192xf32>, tensor<192xf32>, tensor<192xf32>)
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input, Attn_FloatTensor:$weight,
                       Attn_FloatTensor:$grad_output,
                       Attn_NonNegativeF64:$eps);
  let results = (outs Attn_FloatTensor:$grad_input,
                      Attn_FloatTensor:$grad_weight,
                      Attn_FloatTensor:$grad_bias);
  let assemblyFormat = [{
    $input `,` $weight `,` $grad_output `eps` $eps attr-dict `:`
    functional-type(operands, results)
  }];
}

def Attn_RmsNormGradOp : Attn_Op<"rms_norm_grad", [Pure, Attn_Infer]> {
  let summary = "Adjoints of RMS normalisation";
  let description = [{
    The adjoints of the input and of the weight of `attn.rms_norm`.

    ```mlir
    %dx, %dw = attn.rms_norm_grad %x, %w, %dy eps 9.9999999999999995E-7 : (tensor<?x?x192xf32>, tensor<192xf32>, tensor<?x?x192xf32>) -> (tensor<?x?x192xf32>, tensor<192xf32>)
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input, Attn_FloatTensor:$weight,
                       Attn_FloatTensor:$grad_output,
                       Attn_NonNegativeF64:$eps);
  let results = (outs Attn_FloatTensor:$grad_input,
                      Attn_FloatTensor:$grad_weight);
  let assemblyFormat = [{
    $input `,` $weight `,` $grad_output `eps` $eps attr-dict `:`
    functional-type(operands, results)
  }];
}

def Attn_SdpaGradOp : Attn_Op<"sdpa_grad",
    [Pure, Attn_Infer, AttrSizedOperandSegments]> {
  let summary = "Adjoints of scaled dot-product attention";
  let description = [{
    The adjoints of query, key and value of an `attn.sdpa` with the same
    operands and attributes, from its output and the output's adjoint. The
    scores are recomputed tile by tile; no `T x S` matrix is kept. An
    optional `logsumexp` operand is that `attn.sdpa`'s second result; without
    it the lowering recomputes it in a pass over the keys of its own. With
    fewer key/value heads than query heads, the adjoint of a key or value
    head is the sum over the query heads of its group.

    ```mlir
    %dq, %dk, %dv = attn.sdpa_grad %q, %k, %v, %o, %do mask causal : (tensor<2x6x16x32xf32>, tensor<2x6x16x32xf32>, tensor<2x6x16x32xf32>, tensor<2x6x16x32xf32>, tensor<2x6x16x32xf32>) -> (tensor<2x6x16x32xf32>, tensor<2x6x16x32xf32>, tensor<2x6x16x32xf32>)
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$query, Attn_FloatTensor:$key,
                       Attn_FloatTensor:$value, Attn_FloatTensor:$output,
                       Attn_FloatTensor:$grad_output,
                       Optional<Attn_FloatTensor>:$logsumexp,
                       Optional<Attn_BoolTensor>:$key_padding,
                       Optional<Attn_Seed>:$seed,
                       DefaultValuedAttr<Attn_MaskKind,
                           "::attn::MaskKind::none">:$mask,
                       OptionalAttr<F64Attr>:$scale,
                       DefaultValuedAttr<F64Attr, "0.0">:$dropout,
                       OptionalAttr<I64Attr>:$stream);
  let results = (outs Attn_FloatTensor:$grad_query,
                      Attn_FloatTensor:$grad_key,
                      Attn_FloatTensor:$grad_value);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $output `,` $grad_output
    (`logsumexp` $logsumexp^)? (`key_padding` $key_padding^)? (`mask` $mask^)? (`scale` $scale^)?
    (`dropout` $dropout^)? (`seed` $seed^ `stream` $stream)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Attn_CrossEntropyGradOp : Attn_Op<"cross_entropy_grad",
    [Pure, Attn_Infer]> {
  let summary = "Adjoint of cross-entropy with respect to the logits";
  let description = [{
    `grad_loss * (softmax(logits) - smoothed one-hot(targets)) / count` for
    the targets not ignored, zero for the ignored ones; attributes as in
    `attn.cross_entropy`.

    ```mlir
    %dl = attn.cross_entropy_grad %logits, %t, %g : (tensor<?x?x256xf32>, tensor<?x?xi32>, tensor<f32>) -> tensor<?x?x256xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$logits, Attn_IndexTensor:$targets,
                       Attn_ScalarF32:$grad_loss,
                       OptionalAttr<I64Attr>:$ignore_index,
                       DefaultValuedAttr<Attn_UnitIntervalF64, "0.0">:$label_smoothing);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $targets `,` $grad_loss (`ignore_index` $ignore_index^)?
    (`label_smoothing` $label_smoothing^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def Attn_GatherGradOp : Attn_Op<"gather_grad", [Pure]> {
  let summary = "Adjoint of gather: a scatter-add into the table's shape";
  let description = [{
    `result[ids[i...], :] += grad_output[i..., :]` into a zero `[n, d]`
    tensor: rows gathered several times accumulate.

    ```mlir
    %dw = attn.gather_grad %tokens, %dx : (tensor<?x?xi32>, tensor<?x?x192xf32>) -> tensor<256x192xf32>
    ```
  }];
  let arguments = (ins Attn_IndexTensor:$ids, Attn_FloatTensor:$grad_output);
  let results = (outs 2DTensorOf<[AnyFloat]>:$result);
  let assemblyFormat = [{
    $ids `,` $grad_output attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Attn_GlobalNormOp : Attn_Op<"global_norm", [Pure]> {
  let summary = "The Euclidean norm of several tensors taken together";
  let description = [{
    `sqrt(sum over inputs of sum(x^2))`, used to clip gradients by their
    global norm.

    ```mlir
    %n = attn.global_norm %g0, %g1 : tensor<256x192xf32>, tensor<192xf32>
    ```
  }];
  let arguments = (ins Variadic<Attn_FloatTensor>:$inputs);
  let results = (outs Attn_ScalarF32:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs)";
  let hasVerifier = 1;
}

def Attn_AdamUpdateOp : Attn_Op<"adam_update", [Pure, Attn_Infer]> {
  let summary = "One Adam or AdamW step of one parameter";
  let description = [{
    With `t = step` (counted from 1): `m = beta1 m + (1-beta1) g`, `v =
    beta2 v + (1-beta2) g^2`, `p -= lr * (m/(1-beta1^t)) / (sqrt(v/(1-beta2^t))
    + eps)`; weight decay is added to the gradient (Adam, `torch.optim.Adam`)
    or, with `decoupled`, applied as `p -= lr * weight_decay * p` (AdamW).
    Returns the new parameter and moments. The hyperparameters are f32
    scalars, so that a compiled binary takes them at run time.

    ```mlir
    %p1, %m1, %v1 = attn.adam_update %p, %g, %m, %v, %lr, %step, %beta1, %beta2, %eps, %wd decoupled : (...)
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$param, Attn_FloatTensor:$grad,
                       Attn_FloatTensor:$first_moment,
                       Attn_FloatTensor:$second_moment, Attn_ScalarF32:$lr,
                       Attn_ScalarF32:$step, Attn_ScalarF32:$beta1,
                       Attn_ScalarF32:$beta2, Attn_ScalarF32:$eps,
                       Attn_ScalarF32:$weight_decay, UnitAttr:$decoupled);
  let results = (outs Attn_FloatTensor:$new_param,
                      Attn_FloatTensor:$new_first_moment,
                      Attn_FloatTensor:$new_second_moment);
  let assemblyFormat = [{
    $param `,` $grad `,` $first_moment `,` $second_moment `,` $lr `,` $step
    `,` $beta1 `,` $beta2 `,` $eps `,` $weight_decay
    (`decoupled` $decoupled^)? attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Decoding: the key/value cache of the model context
//===----------------------------------------------------------------------===//

def Attn_KVCacheResource
    : Resource<"::attn::KVCacheResource">;

def Attn_KVCacheAppendOp : Attn_Op<"kv_cache_append",
    [Attn_Infer, MemoryEffects<[MemRead<Attn_KVCacheResource>,
                                MemWrite<Attn_KVCacheResource>]>]> {
  let summary = "Appends keys and values to a cache slot and reads it whole";
  let description = [{
    Appends the new keys and values `[B, H, t, D]` along the sequence
    dimension to slot `slot` of the key/value cache held by the model context,
    and returns everything the slot holds, `[B, H, S, D]` with `S` the length
    so far. An attention layer of an incrementally decoded model owns one
    slot.

    ```mlir
    %k, %v = attn.kv_cache_append %k1, %v1 slot 0 : (tensor<?x6x1x32xf32>, tensor<?x6x1x32xf32>) -> (tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>)
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$new_keys,
                       Attn_FloatTensor:$new_values,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$slot);
  let results = (outs Attn_FloatTensor:$keys, Attn_FloatTensor:$values);
  let assemblyFormat = [{
    $new_keys `,` $new_values `slot` $slot attr-dict `:`
    functional-type(operands, results)
  }];
}

def Attn_KVCacheReadOp : Attn_Op<"kv_cache_read",
    [MemoryEffects<[MemRead<Attn_KVCacheResource>]>]> {
  let summary = "Reads the keys and values held by a cache slot";
  let description = [{
    Everything slot `slot` of the key/value cache holds, without appending:
    how the decoder of an encoder-decoder model reuses the cross-attention
    keys and values of `memory` computed at the first step.

    ```mlir
    %k, %v = attn.kv_cache_read slot 1 : tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$slot);
  let results = (outs Attn_FloatTensor:$keys, Attn_FloatTensor:$values);
  let assemblyFormat = "`slot` $slot attr-dict `:` type($keys) `,` type($values)";
  let hasVerifier = 1;
}

def Attn_KVCacheLengthOp : Attn_Op<"kv_cache_length",
    [MemoryEffects<[MemRead<Attn_KVCacheResource>]>]> {
  let summary = "How many positions the key/value cache holds";
  let description = [{
    The number of positions appended to the cache before this call of the
    entry point: where the positions of the new tokens start.

    ```mlir
    %len = attn.kv_cache_length : index
    ```
  }];
  let results = (outs Index:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

#endif // ATTN_OPS_TD
