//===- Elaborator.h - Semantic analysis and IR generation -------*- C++ -*-===//
//
// The elaborator walks the AST of a model the way an interpreter would: it
// evaluates constants, instantiates blocks and builtin layers into a tree of
// instances (naming every parameter by its PyTorch path), and evaluates each
// model `fn` into `attn` ops, inlining the fns of blocks it calls. Shapes are
// inferred by the ops themselves; errors are diagnostics at the `.tfm`
// location, and an erroneous value becomes "poison" so that one mistake is
// reported once.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIRGEN_ELABORATOR_H
#define ATTN_MLIRGEN_ELABORATOR_H

#include "attn/Dialect/IR/AttnOps.h"
#include "attn/Dialect/IR/DimNames.h"
#include "attn/Frontend/AST.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attn {
namespace mlirgen {

class Instance;

/// A value during elaboration: a compile-time constant, a tensor, a run-time
/// size, a layer, a bare word (`causal`, `relu`, `f32`), or poison after an
/// error.
class EvalValue {
public:
  enum class Kind { Poison, Int, Float, Bool, Tensor, Size, Layer, Word, List };

  EvalValue() = default;
  static EvalValue poison() { return EvalValue(); }
  static EvalValue ofInt(int64_t v);
  static EvalValue ofFloat(double v);
  static EvalValue ofBool(bool v);
  static EvalValue ofTensor(mlir::Value v);
  /// A run-time size (an `index` value), e.g. the symbolic dim `T`.
  static EvalValue ofSize(mlir::Value v, llvm::StringRef name);
  static EvalValue ofLayer(Instance *layer);
  static EvalValue ofWord(llvm::StringRef word);
  static EvalValue ofList(std::vector<EvalValue> elements);

  Kind getKind() const { return kind; }
  bool isPoison() const { return kind == Kind::Poison; }
  bool isNumber() const { return kind == Kind::Int || kind == Kind::Float; }
  bool isConstant() const { return isNumber() || kind == Kind::Bool; }
  bool isTensor() const { return kind == Kind::Tensor; }

  int64_t getInt() const { return intValue; }
  /// The value of a number as a double, whether it is an Int or a Float.
  double getNumber() const;
  bool getBool() const { return intValue != 0; }
  mlir::Value getValue() const { return value; }
  mlir::RankedTensorType getTensorType() const;
  Instance *getLayer() const { return layer; }
  llvm::StringRef getWord() const { return word; }
  llvm::ArrayRef<EvalValue> getElements() const { return elements; }

  /// What the value is, for diagnostics: "a tensor", "the integer 3", ...
  std::string describe() const;

private:
  Kind kind = Kind::Poison;
  int64_t intValue = 0;
  double floatValue = 0;
  mlir::Value value;
  Instance *layer = nullptr;
  std::string word;
  std::vector<EvalValue> elements;
};

/// The kinds of layers an instance can be.
enum class LayerKind {
  Model,
  Block,
  Repeat,
  Linear,
  Embedding,
  LayerNorm,
  RmsNorm,
  MultiHeadAttention,
  FeedForward,
};

/// A parameter an instance owns under a local name (`weight`,
/// `in_proj_weight`).
struct ParamRef {
  std::string symbol;
  mlir::RankedTensorType type;
  /// Its declaration, whose initialiser an `init` statement may change.
  ParamOp op;
};

/// A parameter initialiser, evaluated: the kind and its arguments in the
/// dialect's order (`normal`: mean, std; `uniform`: lo, hi; `xavier_uniform`:
/// gain).
struct Initializer {
  InitKind kind;
  llvm::SmallVector<double, 2> args;
};

/// A buffer an instance owns: its declaration and its declared type.
struct BufferRef {
  const ast::BufferDecl *decl;
  mlir::RankedTensorType type;
};

/// One layer of the model: the model itself, a block instance, a stack, or a
/// builtin layer, with its constants, members and configuration.
class Instance {
public:
  Instance(LayerKind kind, std::string path, mlir::Location loc)
      : kind(kind), path(std::move(path)), loc(loc) {}

  LayerKind kind;
  /// The dotted path from the model: "" for the model, "h.0", "h.0.attn".
  std::string path;
  mlir::Location loc;
  /// The block or model this instantiates; null for builtin layers.
  const ast::TopLevelDecl *decl = nullptr;
  /// What the instance is, for diagnostics: "block decoder_layer", "linear".
  std::string typeName;

  /// Block arguments and `let` constants.
  llvm::StringMap<EvalValue> constants;
  /// Sub-layers by member name, in declaration order in `layerOrder`.
  llvm::StringMap<std::unique_ptr<Instance>> layers;
  /// Parameters by local name.
  llvm::StringMap<ParamRef> params;
  llvm::StringMap<BufferRef> buffers;
  llvm::StringMap<const ast::FnDecl *> fns;
  /// The instances of a stack, in order.
  std::vector<Instance *> stack;

  // Configuration of builtin layers.
  int64_t features = 0;
  int64_t heads = 0;
  double eps = 0;
  double dropout = 0;
  Activation activation = Activation::none;

  /// The full name of a member: `path.name`, or `name` at the model level.
  std::string qualify(llvm::StringRef name) const;
};

/// The MLIR element type of a language element type.
mlir::Type getElementType(mlir::Builder &builder, ast::ElementType type);

/// Prints a tensor type as the model language writes it: f32[?, ?, 192].
std::string describeType(mlir::RankedTensorType type);
/// Prints the type of `tensor` as the model language writes it, its dims by
/// name where getDimNames knows them: f32[B, T, 192].
std::string describeTensor(mlir::Value tensor);
/// Prints an element type as the model language writes it: f32, bool.
std::string describeElementType(mlir::Type type);

/// Prints a number for a diagnostic as Python would: 0.1, 2.5, 1e-09.
std::string formatNumber(double value);

/// The keywords of an enum of the dialect (AttnEnums.td), in declaration
/// order, read from the enum itself so that the words the language accepts
/// and the cases the dialect has are one list. The cases are numbered from 0
/// to `maxValue`; a number with no case is skipped.
template <typename EnumT>
llvm::SmallVector<llvm::StringRef> enumKeywords(unsigned maxValue) {
  llvm::SmallVector<llvm::StringRef> words;
  for (unsigned value = 0; value <= maxValue; ++value) {
    llvm::StringRef word = stringifyEnum(static_cast<EnumT>(value));
    if (!word.empty())
      words.push_back(word);
  }
  return words;
}

/// The activations a model names (`relu`, `gelu`, ...): every case of
/// Activation but `none`, which means "no activation" and is no function.
llvm::SmallVector<llvm::StringRef> activationKeywords();
/// The activation `name` spells, if it is one of activationKeywords().
std::optional<Activation> lookupActivation(llvm::StringRef name);
/// The attention masks a model names: every case of MaskKind.
llvm::SmallVector<llvm::StringRef> maskKeywords();
/// The element types a model names, in the order of ast::ElementType.
llvm::SmallVector<llvm::StringRef> elementTypeKeywords();
/// The builtin layers that take `init:`, in the order LANGUAGE.md lists
/// them.
llvm::SmallVector<llvm::StringRef> builtinLayersTakingInit();
/// The builtin functions a model calls, activations included.
llvm::SmallVector<llvm::StringRef> builtinFunctionNames();

/// An argument of a call, evaluated, with where it was written.
struct Arg {
  EvalValue value;
  mlir::Location loc;
  /// The expression it was evaluated from, for diagnostics that quote it;
  /// null for a value no source text gives (a stack's input to its second
  /// layer).
  const ast::Expr *expr = nullptr;
};

/// The evaluated arguments of a call.
struct CallArgs {
  mlir::Location loc;
  llvm::StringRef callee;
  std::vector<Arg> positional;
  std::vector<std::pair<std::string, Arg>> keywords;
  /// The call as written, for diagnostics that quote it.
  const ast::CallExpr *call = nullptr;

  bool hasPoison() const;
};

/// A formal parameter of a builtin function or layer constructor.
struct Formal {
  llvm::StringRef name;
  bool required;
};

/// The scope a fn body is evaluated in.
struct Frame {
  Instance *instance;
  llvm::StringMap<EvalValue> locals;
  /// For model fns: the symbolic dims, by name, as (argument, axis).
  llvm::StringMap<std::pair<mlir::Value, int64_t>> symbolicDims;
  /// Whether only compile-time constants may be computed (lets, sizes).
  bool constantOnly = false;
};

class Elaborator {
public:
  Elaborator(mlir::MLIRContext &context, mlir::ModuleOp module);

  /// Elaborates the program's model into the module, reporting errors in
  /// source order.
  mlir::LogicalResult run(const ast::Program &program);
  /// Elaborates the program's model into the module, reporting errors as
  /// it finds them.
  void elaborate(const ast::Program &program);

  //===--------------------------------------------------------------------===//
  // Diagnostics (Elaborator.cpp)
  //===--------------------------------------------------------------------===//

  mlir::InFlightDiagnostic error(mlir::Location loc);

  /// An operand of an expression as a diagnostic names it: its role
  /// ("the left operand"), the source text that gave it, if any, and its
  /// value.
  struct Operand {
    llvm::StringRef role;
    const ast::Expr *expr;
    mlir::Value value;
  };
  /// Reports at `loc` that the operands of `whole` do not go together,
  /// naming each: "`x + y`: the left operand `x` is f32[B, T, 192], the
  /// right operand `y` is f32[B, T, 128]; REASON".
  void reportOperands(mlir::Location loc, const ast::Expr *whole,
                      llvm::ArrayRef<Operand> operands,
                      const llvm::Twine &reason);
  /// Why a matrix product of `lhs` and `rhs` has no result type, in the
  /// terms of MatmulOp's shape inference.
  static std::string explainMatmulShapes(const Operand &lhs,
                                         const Operand &rhs);

  //===--------------------------------------------------------------------===//
  // Instances and parameters (Instances.cpp)
  //===--------------------------------------------------------------------===//

  std::unique_ptr<Instance> instantiateModel(const ast::ModelDecl &model);
  /// Evaluates the members of a model or block into `instance`.
  void populateMembers(Instance &instance, const ast::TopLevelDecl &decl);
  /// Instantiates `callee(args)` as member `path` of `scope`.
  std::unique_ptr<Instance> instantiateLayer(const ast::CallExpr &call,
                                             std::string path, Instance &scope);
  /// `weightInit` is the initialiser `init:` gave, if any.
  std::unique_ptr<Instance>
  instantiateBuiltinLayer(llvm::StringRef name, CallArgs &args,
                          const std::optional<Initializer> &weightInit,
                          std::string path);
  std::unique_ptr<Instance> instantiateBlock(const ast::BlockDecl &block,
                                             CallArgs &args, std::string path);
  /// Adds an `attn.param` and records it in `instance` as `localName`.
  void declareParam(Instance &instance, llvm::StringRef localName,
                    llvm::ArrayRef<int64_t> shape, const Initializer &init,
                    mlir::Location loc);

  //===--------------------------------------------------------------------===//
  // Initialisers (Initializers.cpp)
  //===--------------------------------------------------------------------===//

  /// Evaluates `normal(0.02)`, `zeros()`, ... in `frame`.
  mlir::FailureOr<Initializer> evalInitializer(const ast::CallExpr &init,
                                               Frame &frame);
  /// The initialiser the `init:` argument of layer call `call` gives its
  /// weights, into `init` (left empty without `init:`); fails after
  /// reporting a bad initialiser or a layer that takes none.
  mlir::LogicalResult evalLayerInit(const ast::CallExpr &call, Frame &frame,
                                    std::optional<Initializer> &init);
  /// Sets the initialiser of the parameters of `instance` that statement
  /// `decl` names.
  void applyInitDecl(Instance &instance, const ast::InitDecl &decl);

  //===--------------------------------------------------------------------===//
  // Constants (ConstantEval.cpp)
  //===--------------------------------------------------------------------===//

  EvalValue evalConstantBinary(ast::BinaryOp op, const EvalValue &lhs,
                               const EvalValue &rhs, mlir::Location loc);
  /// Evaluates `expr` in `instance`'s scope, requiring a constant.
  EvalValue evalConstant(const ast::Expr &expr, Instance &instance);
  /// Checks that `arg` is an integer constant (an integral float is taken).
  std::optional<int64_t> expectInt(const Arg &arg, llvm::StringRef what);
  std::optional<double> expectNumber(const Arg &arg, llvm::StringRef what);
  std::optional<bool> expectBool(const Arg &arg, llvm::StringRef what);
  /// Checks that `arg` is a bare word among `allowed`.
  std::optional<std::string> expectWord(const Arg &arg, llvm::StringRef what,
                                        llvm::ArrayRef<llvm::StringRef> allowed);
  /// Checks that `arg` is a tensor.
  mlir::Value expectTensor(const Arg &arg, llvm::StringRef what);

  //===--------------------------------------------------------------------===//
  // Fn bodies and expressions (Elaborator.cpp)
  //===--------------------------------------------------------------------===//

  /// Emits model fn `fn` as an exported `func.func`.
  void emitEntryPoint(const ast::FnDecl &fn);
  /// Evaluates the body of `fn` of `instance` with `args` bound to its
  /// arguments; the returned values, or std::nullopt after an error.
  std::optional<std::vector<EvalValue>> callFn(const ast::FnDecl &fn,
                                               Instance &instance,
                                               CallArgs &args);
  EvalValue eval(const ast::Expr &expr, Frame &frame);
  EvalValue evalName(const ast::NameExpr &expr, Frame &frame);
  EvalValue evalMember(const ast::MemberExpr &expr, Frame &frame);
  EvalValue evalCall(const ast::CallExpr &expr, Frame &frame);
  EvalValue evalBinary(const ast::BinaryExpr &expr, Frame &frame);
  EvalValue evalUnary(const ast::UnaryExpr &expr, Frame &frame);
  /// Evaluates the arguments of `call` in `frame`, but for keyword argument
  /// `exceptKeyword`, which the caller evaluates itself.
  CallArgs evalArgs(const ast::CallExpr &call, Frame &frame,
                    llvm::StringRef exceptKeyword = "");
  /// Calls a layer instance (its forward), a stack, or a block fn.
  EvalValue callLayer(Instance &layer, CallArgs &args);
  /// The value of a parameter of `instance`.
  mlir::Value readParam(const ParamRef &param, mlir::Location loc);
  /// The value of `buffer` of `instance`, computed where it is read.
  EvalValue evalBuffer(const BufferRef &buffer, Instance &instance,
                       mlir::Location loc);
  /// A rank-0 tensor holding constant `value`, of `elementType`.
  mlir::Value materialize(const EvalValue &value, mlir::Type elementType,
                          mlir::Location loc);

  //===--------------------------------------------------------------------===//
  // Builtin functions and layers (Builtins.cpp)
  //===--------------------------------------------------------------------===//

  /// Binds `args` to `formals` (positionally, then by keyword); std::nullopt
  /// after reporting a mismatch.
  std::optional<std::vector<std::optional<Arg>>>
  bindArgs(CallArgs &args, llvm::ArrayRef<Formal> formals);
  bool isBuiltinFunction(llvm::StringRef name) const;
  bool isBuiltinLayer(llvm::StringRef name) const;
  EvalValue callBuiltinFunction(CallArgs &args, Frame &frame);
  EvalValue callBuiltinLayer(Instance &layer, CallArgs &args);
  /// The size of `axis` of `tensor` as an `index` value.
  mlir::Value sizeOf(mlir::Value tensor, int64_t axis, mlir::Location loc);

  /// Reports a shape error of an op being built, in place of the
  /// dialect's own message.
  using ShapeErrorReporter = llvm::function_ref<void()>;

  /// Runs `infer` at `loc`; on failure reports through `report`, or the
  /// dialect's message with the types of `operands` written as the language
  /// writes them.
  mlir::LogicalResult inferTypes(
      mlir::Location loc, mlir::ValueRange operands,
      llvm::function_ref<mlir::LogicalResult(std::optional<mlir::Location>)>
          infer,
      ShapeErrorReporter report);

  /// Creates an op whose result types are inferred, or reports the shape
  /// error at `loc` and returns null: through `report` when given, else as
  /// the dialect words it with its operands' types written as the language
  /// writes them (f32[B, T, 192]).
  template <typename OpTy, typename... Args>
  OpTy tryCreateReporting(mlir::Location loc, ShapeErrorReporter report,
                          Args &&...args) {
    mlir::OperationState state(loc, OpTy::getOperationName());
    // A one-result op's builder asserts that it gets one result type: a
    // placeholder, replaced by the inferred types once the operands are in
    // place (an op with an optional result, as sdpa, takes any number).
    mlir::Type placeholder = builder.getNoneType();
    OpTy::build(builder, state, mlir::TypeRange(placeholder),
                std::forward<Args>(args)...);
    state.types.clear();
    llvm::SmallVector<mlir::Type> types;
    auto infer = [&](std::optional<mlir::Location> at) {
      return OpTy::inferReturnTypes(
          builder.getContext(), at, state.operands,
          state.attributes.getDictionary(builder.getContext()),
          state.getRawProperties(), state.regions, types);
    };
    if (mlir::failed(inferTypes(loc, state.operands, infer, report)))
      return nullptr;
    state.addTypes(types);
    return mlir::cast<OpTy>(builder.create(state));
  }

  template <typename OpTy, typename... Args>
  OpTy tryCreate(mlir::Location loc, Args &&...args) {
    return tryCreateReporting<OpTy>(loc, nullptr, std::forward<Args>(args)...);
  }

  /// As tryCreate, for a one-result op: its result, or null.
  template <typename OpTy, typename... Args>
  mlir::Value tryBuild(mlir::Location loc, Args &&...args) {
    OpTy op = tryCreate<OpTy>(loc, std::forward<Args>(args)...);
    return op ? op->getResult(0) : mlir::Value();
  }

  //===--------------------------------------------------------------------===//
  // The train section (TrainSection.cpp)
  //===--------------------------------------------------------------------===//

  void emitTrain(const ast::TrainDecl &train);

  mlir::MLIRContext &context;
  mlir::ModuleOp module;
  mlir::OpBuilder builder;
  llvm::StringMap<const ast::BlockDecl *> blocks;
  std::unique_ptr<Instance> root;
  /// Blocks being instantiated, innermost last: a block found here again is
  /// recursive.
  std::vector<const ast::BlockDecl *> instantiating;
  /// Fns being evaluated, innermost last, to refuse recursion.
  std::vector<std::pair<const ast::FnDecl *, Instance *>> calling;
  /// Buffers being evaluated, innermost last: a buffer found here again is
  /// defined in terms of itself.
  std::vector<const ast::BufferDecl *> evaluatingBuffers;
  unsigned numErrors = 0;
  /// Fn calls inlined and layers instantiated so far, to stop models that
  /// would take unbounded time or memory (a call tree or stacks of stacks
  /// that grow exponentially).
  uint64_t numCalls = 0;
  uint64_t numInstances = 0;
  /// Expressions being evaluated, nested: one expression's nesting is bounded
  /// by the parser, but fn calls and buffer reads stack them.
  unsigned evalDepth = 0;
  bool reportedEvalDepth = false;
};

} // namespace mlirgen
} // namespace attn

#endif // ATTN_MLIRGEN_ELABORATOR_H
