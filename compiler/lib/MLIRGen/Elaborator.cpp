//===- Elaborator.cpp - Evaluating a model into attn IR -------------------===//
//
// The driver of the elaboration and the evaluation of fn bodies: name
// resolution, expressions, calls of fns, layers and stacks. Every model fn
// becomes an exported `func.func`; the fns of blocks and the model's fns it
// calls are inlined where they are called, so the IR of an entry point is
// one straight-line body of `attn` ops.
//
//===----------------------------------------------------------------------===//

#include "Elaborator.h"

#include "attn/Frontend/Frontend.h"
#include "attn/Frontend/Suggestions.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringSet.h"

#include <numeric>

using namespace mlir;
using namespace attn;
using namespace attn::mlirgen;

/// Nesting of fn calls beyond which elaboration stops: deeper than any real
/// model, and a guard for the native stack.
static constexpr size_t kMaxCallDepth = 200;
/// Fn calls inlined in one compilation beyond which elaboration stops: real
/// models inline hundreds; reaching it takes 0.05 s (1 s under sanitizers).
static constexpr uint64_t kMaxCalls = uint64_t(1) << 16;
/// Nesting of expressions, through fn calls and buffer reads, beyond which
/// elaboration stops: a guard for the native stack (about 1 KB a level, over
/// 3 KB under ASan), which the call depth alone is not, as each fn body may
/// nest its expression as deeply as the parser allows.
static constexpr unsigned kMaxEvalDepth = 1024;

Elaborator::Elaborator(MLIRContext &context, ModuleOp module)
    : context(context), module(module), builder(&context) {}

InFlightDiagnostic Elaborator::error(Location loc) {
  return mlir::emitError(loc);
}

void Elaborator::reportOperands(Location loc, const ast::Expr *whole,
                                ArrayRef<Operand> operands,
                                const llvm::Twine &reason) {
  InFlightDiagnostic diag = error(loc);
  if (whole)
    diag << "`" << frontend::printExpr(*whole) << "`: ";
  llvm::interleaveComma(operands, diag, [&](const Operand &operand) {
    diag << operand.role << " ";
    if (operand.expr)
      diag << "`" << frontend::printExpr(*operand.expr) << "` ";
    diag << "is " << describeTensor(operand.value);
  });
  diag << "; " << reason.str();
}

std::string Elaborator::explainMatmulShapes(const Operand &lhs,
                                            const Operand &rhs) {
  auto a = cast<RankedTensorType>(lhs.value.getType());
  auto b = cast<RankedTensorType>(rhs.value.getType());
  if (a.getRank() < 2 || b.getRank() < 2)
    return "a matrix product needs operands of rank 2 or more";
  if (a.getElementType() != b.getElementType())
    return "their element types differ";
  int64_t inner = a.getShape().back(), rows = b.getShape()[b.getRank() - 2];
  if (!ShapedType::isDynamic(inner) && !ShapedType::isDynamic(rows) &&
      inner != rows)
    return ("the last dimension of " + lhs.role + " (" + Twine(inner) +
            ") is not the second-to-last of " + rhs.role + " (" + Twine(rows) +
            ")")
        .str();
  return "their batch dimensions cannot be broadcast together";
}

/// Rewrites the types a diagnostic of the dialect quotes
/// ('tensor<?x?x192xf32>') as the language writes them (f32[B, T, 192]),
/// naming the dims after the operand of that type: the first one not named
/// yet, when several have it.
static std::string describeQuotedTypes(StringRef message, ValueRange operands,
                                       MLIRContext *context) {
  std::string text;
  SmallVector<bool> named(operands.size(), false);
  while (true) {
    size_t start = message.find("'tensor<");
    size_t end = message.find(">'", start);
    if (start == StringRef::npos || end == StringRef::npos)
      break;
    text += message.take_front(start);
    StringRef quoted = message.slice(start + 1, end + 1);
    message = message.drop_front(end + 2);
    auto type = dyn_cast_or_null<RankedTensorType>(parseType(quoted, context));
    if (!type) {
      text += ("'" + quoted + "'").str();
      continue;
    }
    std::optional<size_t> match;
    for (auto [i, operand] : llvm::enumerate(operands))
      if (operand.getType() == type && (!match || (named[*match] && !named[i])))
        match = i;
    if (match)
      named[*match] = true;
    text += match ? describeTensor(operands[*match]) : describeType(type);
  }
  return text + message.str();
}

LogicalResult Elaborator::inferTypes(
    Location loc, ValueRange operands,
    function_ref<LogicalResult(std::optional<Location>)> infer,
    ShapeErrorReporter report) {
  std::string message;
  LogicalResult inferred = success();
  {
    ScopedDiagnosticHandler capture(&context, [&](Diagnostic &diag) {
      message = diag.str();
      return success();
    });
    inferred = infer(loc);
  }
  if (succeeded(inferred))
    return success();
  if (report)
    report();
  else
    error(loc) << describeQuotedTypes(message, operands, &context);
  return failure();
}

bool CallArgs::hasPoison() const {
  for (const Arg &arg : positional)
    if (arg.value.isPoison())
      return true;
  for (const auto &keyword : keywords)
    if (keyword.second.value.isPoison())
      return true;
  return false;
}

namespace {
/// Where a diagnostic is, for putting diagnostics in source order: files in
/// the order their first diagnostic came, then line and column.
struct SourcePosition {
  unsigned file = 0;
  unsigned line = 0;
  unsigned column = 0;

  bool operator<(const SourcePosition &other) const {
    return std::tie(file, line, column) <
           std::tie(other.file, other.line, other.column);
  }
};
} // namespace

LogicalResult Elaborator::run(const ast::Program &program) {
  // The elaboration reaches a block's body where the block is used and the
  // train section after every fn; its diagnostics are held back and given
  // in source order. A remark stays after the error it explains.
  std::vector<std::pair<SourcePosition, Diagnostic>> held;
  {
    // Count errors, and report an error once even when it comes from a
    // block instantiated many times.
    llvm::StringSet<> reported;
    llvm::StringMap<unsigned> files;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      if (diag.getSeverity() == DiagnosticSeverity::Error) {
        std::string key;
        llvm::raw_string_ostream os(key);
        os << diag.getLocation() << ": " << diag.str();
        if (!reported.insert(key).second)
          return success();
        ++numErrors;
      }
      SourcePosition position;
      if (diag.getSeverity() != DiagnosticSeverity::Error && !held.empty())
        position = held.back().first;
      else if (auto loc = dyn_cast<FileLineColLoc>(diag.getLocation()))
        position = {
            files.try_emplace(loc.getFilename(), files.size()).first->second,
            loc.getLine(), loc.getColumn()};
      else
        position = {~0u, 0, 0};
      held.emplace_back(position, std::move(diag));
      return success();
    });
    elaborate(program);
  }
  // Source order; reports at the same position keep the order they were
  // made in (an index sort: std::stable_sort's buffer API is deprecated).
  std::vector<size_t> order(held.size());
  std::iota(order.begin(), order.end(), 0);
  llvm::sort(order, [&](size_t a, size_t b) {
    if (held[a].first < held[b].first || held[b].first < held[a].first)
      return held[a].first < held[b].first;
    return a < b;
  });
  for (size_t index : order)
    context.getDiagEngine().emit(std::move(held[index].second));
  return success(numErrors == 0);
}

void Elaborator::elaborate(const ast::Program &program) {
  const ast::SourceFile &mainFile = program.getMainFile();
  for (const auto &file : program.getFiles()) {
    for (const auto &decl : file->getDecls()) {
      auto *block = dyn_cast<ast::BlockDecl>(decl.get());
      if (!block)
        continue;
      auto [it, inserted] = blocks.try_emplace(block->getName(), block);
      if (!inserted) {
        error(block->getLoc())
            << "block '" << block->getName() << "' is already defined";
        mlir::emitRemark(it->second->getLoc()) << "previous definition is here";
      }
    }
  }

  // Models of imported files are not compiled: a file is imported for its
  // blocks.
  const ast::ModelDecl *model = nullptr;
  for (const auto &decl : mainFile.getDecls()) {
    auto *candidate = dyn_cast<ast::ModelDecl>(decl.get());
    if (!candidate)
      continue;
    if (model) {
      error(candidate->getLoc()) << "a file holds exactly one model; '"
                                 << model->getName() << "' came first";
      continue;
    }
    model = candidate;
  }
  if (!model) {
    error(FileLineColLoc::get(&context, mainFile.getPath(), 1, 1))
        << "no model in '" << mainFile.getPath()
        << "'; a compiled file needs one `model NAME { ... }`";
    return;
  }

  module->setAttr("attn.model", builder.getStringAttr(model->getName()));
  module.setSymNameAttr(builder.getStringAttr(model->getName()));
  root = instantiateModel(*model);

  const ast::TrainDecl *train = nullptr;
  bool hasFn = false;
  for (const ast::MemberPtr &member : model->getMembers()) {
    if (auto *fn = dyn_cast<ast::FnDecl>(member.get())) {
      hasFn = true;
      if (root->fns.lookup(fn->getName()) == fn)
        emitEntryPoint(*fn);
      continue;
    }
    if (auto *section = dyn_cast<ast::TrainDecl>(member.get())) {
      if (train) {
        error(section->getLoc()) << "a model has at most one train section";
        continue;
      }
      train = section;
    }
  }
  if (!hasFn)
    error(model->getLoc()) << "model '" << model->getName()
                           << "' has no fn; it needs at least one entry point";
  if (train)
    emitTrain(*train);
}

//===----------------------------------------------------------------------===//
// Entry points and fn bodies
//===----------------------------------------------------------------------===//

Type mlirgen::getElementType(Builder &builder, ast::ElementType type) {
  switch (type) {
  case ast::ElementType::F32:
    return builder.getF32Type();
  case ast::ElementType::BF16:
    return builder.getBF16Type();
  case ast::ElementType::I32:
    return builder.getI32Type();
  case ast::ElementType::Bool:
    return builder.getI1Type();
  }
  llvm_unreachable("unknown element type");
}

/// Whether constant `value` stands for an element of `elementType` without
/// changing: a bool tensor takes true and false, an integer tensor integers
/// in its range, a float tensor numbers and bools within its range.
static bool fitsElementType(const EvalValue &value, Type elementType) {
  if (auto floatType = dyn_cast<FloatType>(elementType)) {
    APFloat element(value.getNumber());
    bool losesInfo;
    APFloat::opStatus status =
        element.convert(floatType.getFloatSemantics(),
                        APFloat::rmNearestTiesToEven, &losesInfo);
    return !(status & APFloat::opOverflow);
  }
  if (elementType.isInteger(1))
    return value.getKind() == EvalValue::Kind::Bool;
  return value.getKind() == EvalValue::Kind::Int &&
         llvm::isIntN(elementType.getIntOrFloatBitWidth(), value.getInt());
}

/// Evaluates the statements of `fn` in `frame`; the returned values, or
/// std::nullopt when the body had an error or no `return`.
static std::optional<std::vector<EvalValue>>
evalBody(Elaborator &elab, const ast::FnDecl &fn, Frame &frame) {
  std::optional<std::vector<EvalValue>> results;
  for (const auto &stmt : fn.getBody()) {
    if (results) {
      elab.error(stmt->getLoc()) << "statement after return is never run";
      return std::nullopt;
    }
    if (auto *assign = dyn_cast<ast::AssignStmt>(stmt.get())) {
      frame.locals[assign->getName()] = elab.eval(assign->getValue(), frame);
      continue;
    }
    auto *ret = cast<ast::ReturnStmt>(stmt.get());
    results.emplace();
    for (const ast::ExprPtr &value : ret->getValues())
      results->push_back(elab.eval(*value, frame));
  }
  if (!results)
    elab.error(fn.getLoc())
        << "fn '" << fn.getName() << "' ends without a return";
  return results;
}

void Elaborator::emitEntryPoint(const ast::FnDecl &fn) {
  Frame frame{root.get(), {}, {}, /*constantOnly=*/false};
  SmallVector<Type> argTypes;
  SmallVector<Attribute> argDims;
  bool ok = true;
  for (const ast::FnArg &arg : fn.getArgs()) {
    const ast::TypeExpr *type = arg.getType();
    if (!type) {
      error(arg.getLoc()) << "argument '" << arg.getName() << "' of model fn '"
                          << fn.getName() << "' needs a type, e.g. i32[B, T]";
      ok = false;
      continue;
    }
    SmallVector<int64_t> shape;
    SmallVector<Attribute> dimNames;
    for (const ast::ExprPtr &dim : type->getDims()) {
      auto *name = dyn_cast<ast::NameExpr>(dim.get());
      if (name && !root->constants.count(name->getName())) {
        shape.push_back(ShapedType::kDynamic);
        dimNames.push_back(builder.getStringAttr(name->getName()));
        continue;
      }
      Arg size{evalConstant(*dim, *root), dim->getLoc()};
      std::optional<int64_t> value = expectInt(size, "a dimension");
      if (value && *value <= 0) {
        error(dim->getLoc()) << "a dimension must be positive, got " << *value;
        value.reset();
      }
      ok &= value.has_value();
      shape.push_back(value.value_or(1));
      dimNames.push_back(builder.getStringAttr(""));
    }
    argTypes.push_back(RankedTensorType::get(
        shape, getElementType(builder, type->getElementType())));
    argDims.push_back(builder.getArrayAttr(dimNames));
  }
  if (!ok)
    return;

  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(module.getBody());
  auto func = func::FuncOp::create(builder, fn.getLoc(), fn.getName(),
                                   builder.getFunctionType(argTypes, {}));
  Block *entry = func.addEntryBlock();
  builder.setInsertionPointToStart(entry);
  for (auto [index, arg] : llvm::enumerate(fn.getArgs())) {
    BlockArgument value = entry->getArgument(index);
    value.setLoc(arg.getLoc());
    frame.locals[arg.getName()] = EvalValue::ofTensor(value);
    func.setArgAttr(index, "attn.name", builder.getStringAttr(arg.getName()));
    func.setArgAttr(index, "attn.dims", argDims[index]);
    for (auto [axis, name] : llvm::enumerate(
             cast<ArrayAttr>(argDims[index]).getAsRange<StringAttr>()))
      if (!name.getValue().empty())
        frame.symbolicDims.try_emplace(name.getValue(), value, axis);
  }

  calling.push_back({&fn, root.get()});
  std::optional<std::vector<EvalValue>> results = evalBody(*this, fn, frame);
  calling.pop_back();
  // A fn with errors leaves no function behind: later checks (the train
  // section's loss) must not mistake a half-built one for the real thing.
  auto discard = [&] { func.erase(); };
  if (!results)
    return discard();
  SmallVector<Value> values;
  const auto *ret = cast<ast::ReturnStmt>(fn.getBody().back().get());
  for (auto [value, expr] : llvm::zip(*results, ret->getValues())) {
    if (value.isPoison())
      return discard();
    if (value.isConstant()) {
      Type elementType = builder.getI32Type();
      if (value.getKind() == EvalValue::Kind::Float)
        elementType = builder.getF32Type();
      else if (value.getKind() == EvalValue::Kind::Bool)
        elementType = builder.getI1Type();
      if (!fitsElementType(value, elementType)) {
        error(expr->getLoc()) << value.describe() << " does not fit in "
                              << describeElementType(elementType)
                              << ", the type an entry point returns it as";
        return discard();
      }
      values.push_back(materialize(value, elementType, expr->getLoc()));
      continue;
    }
    if (!value.isTensor()) {
      error(expr->getLoc())
          << "an entry point returns tensors, not " << value.describe();
      return discard();
    }
    values.push_back(value.getValue());
  }
  func::ReturnOp::create(builder, ret->getLoc(), values);
  func.setType(
      builder.getFunctionType(argTypes, ValueRange(values).getTypes()));
}

std::optional<std::vector<EvalValue>>
Elaborator::callFn(const ast::FnDecl &fn, Instance &instance, CallArgs &args) {
  if (llvm::is_contained(calling, std::make_pair(&fn, &instance))) {
    error(args.loc) << "fn '" << fn.getName()
                    << "' calls itself; recursion is not supported";
    return std::nullopt;
  }
  if (calling.size() >= kMaxCallDepth) {
    error(args.loc) << "calls are nested too deeply";
    return std::nullopt;
  }
  if (++numCalls > kMaxCalls) {
    // Reported once; every later call fails the same way.
    if (numCalls == kMaxCalls + 1)
      error(args.loc) << "more than " << kMaxCalls
                      << " fn calls to inline; the model is too large to "
                         "compile";
    return std::nullopt;
  }
  SmallVector<Formal> formals;
  for (const ast::FnArg &arg : fn.getArgs())
    formals.push_back({arg.getName(), true});
  auto bound = bindArgs(args, formals);
  if (!bound)
    return std::nullopt;
  Frame frame{&instance, {}, {}, /*constantOnly=*/false};
  for (auto [formal, arg] : llvm::zip(fn.getArgs(), *bound)) {
    frame.locals[formal.getName()] = arg->value;
    const ast::TypeExpr *type = formal.getType();
    if (!type)
      continue;
    // A typed argument: element type, rank and constant dims must match,
    // and its symbolic dims name the sizes of the tensor passed.
    Value tensor =
        expectTensor(*arg, "argument '" + formal.getName().str() + "'");
    if (!tensor)
      return std::nullopt;
    auto actual = cast<RankedTensorType>(tensor.getType());
    bool matches =
        actual.getElementType() ==
            getElementType(builder, type->getElementType()) &&
        actual.getRank() == static_cast<int64_t>(type->getDims().size());
    // The declared type as written, with constants evaluated, for the
    // diagnostic: f32[B, T, 192].
    std::string declared;
    llvm::raw_string_ostream os(declared);
    os << ast::getElementTypeName(type->getElementType()) << "[";
    for (auto [axis, dim] : llvm::enumerate(type->getDims())) {
      if (axis)
        os << ", ";
      auto *name = dyn_cast<ast::NameExpr>(dim.get());
      if (name && !instance.constants.count(name->getName())) {
        os << name->getName();
        if (matches)
          frame.symbolicDims.try_emplace(name->getName(), tensor, axis);
        continue;
      }
      std::optional<int64_t> size = expectInt(
          Arg{evalConstant(*dim, instance), dim->getLoc()}, "a dimension");
      if (!size)
        return std::nullopt;
      os << *size;
      matches = matches &&
                (actual.isDynamicDim(axis) || actual.getDimSize(axis) == *size);
    }
    os << "]";
    if (!matches) {
      error(arg->loc) << "argument '" << formal.getName() << "' of fn '"
                      << fn.getName() << "' is declared " << declared
                      << ", got " << arg->value.describe();
      return std::nullopt;
    }
  }
  calling.push_back({&fn, &instance});
  std::optional<std::vector<EvalValue>> results = evalBody(*this, fn, frame);
  calling.pop_back();
  return results;
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

EvalValue Elaborator::eval(const ast::Expr &expr, Frame &frame) {
  if (evalDepth >= kMaxEvalDepth) {
    // Reported once; every later expression this deep fails the same way.
    if (!reportedEvalDepth)
      error(expr.getLoc()) << "expressions are nested more than "
                           << kMaxEvalDepth
                           << " deep through fn calls and buffers";
    reportedEvalDepth = true;
    return EvalValue::poison();
  }
  ++evalDepth;
  llvm::scope_exit leave([&] { --evalDepth; });
  switch (expr.getKind()) {
  case ast::Expr::Kind::IntLit:
    return EvalValue::ofInt(cast<ast::IntLitExpr>(expr).getValue());
  case ast::Expr::Kind::FloatLit:
    return EvalValue::ofFloat(cast<ast::FloatLitExpr>(expr).getValue());
  case ast::Expr::Kind::BoolLit:
    return EvalValue::ofBool(cast<ast::BoolLitExpr>(expr).getValue());
  case ast::Expr::Kind::Name:
    return evalName(cast<ast::NameExpr>(expr), frame);
  case ast::Expr::Kind::Member:
    return evalMember(cast<ast::MemberExpr>(expr), frame);
  case ast::Expr::Kind::Call:
    return evalCall(cast<ast::CallExpr>(expr), frame);
  case ast::Expr::Kind::Unary:
    return evalUnary(cast<ast::UnaryExpr>(expr), frame);
  case ast::Expr::Kind::Binary:
    return evalBinary(cast<ast::BinaryExpr>(expr), frame);
  case ast::Expr::Kind::List: {
    std::vector<EvalValue> elements;
    for (const ast::ExprPtr &element :
         cast<ast::ListExpr>(expr).getElements()) {
      elements.push_back(eval(*element, frame));
      if (elements.back().isPoison())
        return EvalValue::poison();
    }
    return EvalValue::ofList(std::move(elements));
  }
  }
  llvm_unreachable("unknown expression kind");
}

/// Words that name an option value (`mask: causal`, `activation: gelu`) or an
/// element type (`cast(x, f32)`) where no variable of that name exists.
static bool isWord(llvm::StringRef name) {
  return symbolizeMaskKind(name) || symbolizeActivation(name) ||
         ast::lookupElementType(name);
}

Value Elaborator::readParam(const ParamRef &param, Location loc) {
  return GetParamOp::create(builder, loc, param.type, param.symbol);
}

/// Whether `value` is computed from a parameter of the model.
static bool readsParam(Value value) {
  SmallVector<Value> worklist{value};
  llvm::SmallPtrSet<Operation *, 16> seen;
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val().getDefiningOp();
    if (!op || !seen.insert(op).second)
      continue;
    if (isa<GetParamOp>(op))
      return true;
    llvm::append_range(worklist, op->getOperands());
  }
  return false;
}

EvalValue Elaborator::evalBuffer(const BufferRef &buffer, Instance &instance,
                                 Location loc) {
  const ast::BufferDecl &decl = *buffer.decl;
  if (llvm::is_contained(evaluatingBuffers, &decl)) {
    error(loc) << "buffer '" << decl.getName()
               << "' is defined in terms of itself";
    return EvalValue::poison();
  }
  // A buffer is computed where it is used, from constants only, so that it
  // folds to a constant.
  Frame frame{&instance, {}, {}, /*constantOnly=*/false};
  evaluatingBuffers.push_back(&decl);
  EvalValue value = eval(decl.getValue(), frame);
  evaluatingBuffers.pop_back();
  if (value.isPoison())
    return value;
  Location valueLoc = decl.getValue().getLoc();
  if (!value.isTensor()) {
    error(valueLoc) << "buffer '" << decl.getName()
                    << "' must be a tensor, got " << value.describe();
    return EvalValue::poison();
  }
  if (readsParam(value.getValue())) {
    error(valueLoc) << "buffer '" << decl.getName()
                    << "' reads a parameter; a buffer is computed from "
                       "constants only";
    return EvalValue::poison();
  }
  RankedTensorType type = value.getTensorType();
  if (type.getElementType() != buffer.type.getElementType() ||
      failed(verifyCompatibleShape(type, buffer.type))) {
    error(valueLoc) << "buffer '" << decl.getName() << "' is declared "
                    << describeType(buffer.type) << ", got "
                    << value.describe();
    return EvalValue::poison();
  }
  return value;
}

/// Reports that a run-time value was used where only constants are allowed.
static EvalValue notConstant(Elaborator &elab, Location loc,
                             llvm::StringRef what) {
  elab.error(loc) << what << " is not a compile-time constant";
  return EvalValue::poison();
}

/// The names a value can be read by in `frame`: what evalName resolves, but
/// the fns, which are called rather than read.
static SmallVector<StringRef> valueNames(Frame &frame) {
  Instance &instance = *frame.instance;
  SmallVector<StringRef> names;
  appendKeys(names, frame.locals);
  appendKeys(names, instance.constants);
  appendKeys(names, frame.symbolicDims);
  appendKeys(names, instance.layers);
  appendKeys(names, instance.params);
  appendKeys(names, instance.buffers);
  llvm::append_range(names, maskKeywords());
  llvm::append_range(names, activationKeywords());
  llvm::append_range(names, elementTypeKeywords());
  return names;
}

EvalValue Elaborator::evalName(const ast::NameExpr &expr, Frame &frame) {
  llvm::StringRef name = expr.getName();
  Instance &instance = *frame.instance;
  if (auto it = frame.locals.find(name); it != frame.locals.end())
    return it->second;
  if (auto it = instance.constants.find(name); it != instance.constants.end())
    return it->second;
  if (auto it = frame.symbolicDims.find(name); it != frame.symbolicDims.end()) {
    auto [tensor, axis] = it->second;
    return EvalValue::ofSize(sizeOf(tensor, axis, expr.getLoc()), name);
  }
  if (auto it = instance.layers.find(name); it != instance.layers.end())
    return EvalValue::ofLayer(it->second.get());
  if (auto it = instance.params.find(name); it != instance.params.end()) {
    if (frame.constantOnly)
      return notConstant(*this, expr.getLoc(),
                         "parameter '" + name.str() + "'");
    return EvalValue::ofTensor(readParam(it->second, expr.getLoc()));
  }
  if (auto it = instance.buffers.find(name); it != instance.buffers.end()) {
    if (frame.constantOnly)
      return notConstant(*this, expr.getLoc(), "buffer '" + name.str() + "'");
    return evalBuffer(it->second, instance, expr.getLoc());
  }
  if (isWord(name))
    return EvalValue::ofWord(name);
  if (instance.fns.count(name) || isBuiltinFunction(name)) {
    error(expr.getLoc()) << "'" << name
                         << "' is a function; call it with arguments";
    return EvalValue::poison();
  }
  InFlightDiagnostic diag = error(expr.getLoc());
  diag << "undefined name '" << name << "'";
  if (!frame.constantOnly || frame.instance != root.get())
    diag << " in " << instance.typeName;
  diag << didYouMean(name, valueNames(frame));
  return EvalValue::poison();
}

EvalValue Elaborator::evalMember(const ast::MemberExpr &expr, Frame &frame) {
  EvalValue base = eval(expr.getBase(), frame);
  if (base.isPoison())
    return base;
  llvm::StringRef member = expr.getMember();
  if (base.getKind() != EvalValue::Kind::Layer) {
    error(expr.getLoc()) << "cannot take member '" << member << "' of "
                         << base.describe();
    return EvalValue::poison();
  }
  Instance &layer = *base.getLayer();
  if (auto it = layer.layers.find(member); it != layer.layers.end())
    return EvalValue::ofLayer(it->second.get());
  if (auto it = layer.params.find(member); it != layer.params.end()) {
    if (frame.constantOnly)
      return notConstant(*this, expr.getLoc(),
                         "parameter '" + it->second.symbol + "'");
    return EvalValue::ofTensor(readParam(it->second, expr.getLoc()));
  }
  if (auto it = layer.constants.find(member); it != layer.constants.end())
    return it->second;
  if (auto it = layer.buffers.find(member); it != layer.buffers.end()) {
    if (frame.constantOnly)
      return notConstant(*this, expr.getLoc(),
                         "buffer '" + layer.qualify(member) + "'");
    return evalBuffer(it->second, layer, expr.getLoc());
  }
  SmallVector<StringRef> members;
  appendKeys(members, layer.layers);
  appendKeys(members, layer.params);
  appendKeys(members, layer.constants);
  appendKeys(members, layer.buffers);
  error(expr.getLoc()) << layer.typeName << " '" << layer.path
                       << "' has no member '" << member << "'"
                       << didYouMean(member, members);
  return EvalValue::poison();
}

CallArgs Elaborator::evalArgs(const ast::CallExpr &call, Frame &frame,
                              llvm::StringRef exceptKeyword) {
  CallArgs args{call.getLoc(), call.getCalleeName(), {}, {}, &call};
  for (const ast::ExprPtr &arg : call.getArgs())
    args.positional.push_back({eval(*arg, frame), arg->getLoc(), arg.get()});
  for (const ast::KeywordArg &keyword : call.getKeywordArgs())
    if (keyword.getName() != exceptKeyword)
      args.keywords.push_back({keyword.getName().str(),
                               Arg{eval(keyword.getValue(), frame),
                                   keyword.getLoc(), &keyword.getValue()}});
  return args;
}

/// The single value of a fn call used in an expression.
static EvalValue singleResult(Elaborator &elab,
                              std::optional<std::vector<EvalValue>> results,
                              const ast::CallExpr &call) {
  if (!results)
    return EvalValue::poison();
  if (results->size() != 1) {
    elab.error(call.getLoc())
        << "'" << call.getCalleeName() << "' returns " << results->size()
        << " values; an expression needs one";
    return EvalValue::poison();
  }
  return results->front();
}

EvalValue Elaborator::evalCall(const ast::CallExpr &call, Frame &frame) {
  const ast::Expr &callee = call.getCallee();
  if (auto *member = dyn_cast<ast::MemberExpr>(&callee)) {
    // `inst.fn(...)` or `inst.sublayer(...)`.
    EvalValue base = eval(member->getBase(), frame);
    if (base.isPoison())
      return base;
    if (base.getKind() != EvalValue::Kind::Layer) {
      error(member->getLoc()) << "cannot call member '" << member->getMember()
                              << "' of " << base.describe();
      return EvalValue::poison();
    }
    Instance &layer = *base.getLayer();
    if (frame.constantOnly)
      return notConstant(*this, call.getLoc(), "a layer call");
    CallArgs args = evalArgs(call, frame);
    args.callee = member->getMember();
    if (args.hasPoison())
      return EvalValue::poison();
    if (const ast::FnDecl *fn = layer.fns.lookup(member->getMember()))
      return singleResult(*this, callFn(*fn, layer, args), call);
    if (auto it = layer.layers.find(member->getMember());
        it != layer.layers.end())
      return callLayer(*it->second, args);
    if (auto it = layer.constants.find(member->getMember());
        it != layer.constants.end() && it->second.isPoison())
      return EvalValue::poison();
    SmallVector<StringRef> callees;
    appendKeys(callees, layer.fns);
    appendKeys(callees, layer.layers);
    error(member->getLoc()) << layer.typeName << " '" << layer.path
                            << "' has no fn or layer '" << member->getMember()
                            << "'" << didYouMean(member->getMember(), callees);
    return EvalValue::poison();
  }

  auto *nameExpr = dyn_cast<ast::NameExpr>(&callee);
  if (!nameExpr) {
    error(call.getLoc()) << "only named functions and layers can be called";
    return EvalValue::poison();
  }
  llvm::StringRef name = nameExpr->getName();
  Instance &instance = *frame.instance;
  std::optional<EvalValue> layerValue;
  if (auto it = frame.locals.find(name); it != frame.locals.end())
    layerValue = it->second;
  else if (auto it = instance.layers.find(name); it != instance.layers.end())
    layerValue = EvalValue::ofLayer(it->second.get());
  else if (auto it = instance.constants.find(name);
           it != instance.constants.end() && it->second.isPoison())
    layerValue = it->second;
  // A name bound to an erroneous value (a failed member or statement) has
  // been reported already.
  if (layerValue && layerValue->isPoison())
    return EvalValue::poison();
  if (layerValue && layerValue->getKind() == EvalValue::Kind::Layer) {
    if (frame.constantOnly)
      return notConstant(*this, call.getLoc(), "a layer call");
    CallArgs args = evalArgs(call, frame);
    if (args.hasPoison())
      return EvalValue::poison();
    return callLayer(*layerValue->getLayer(), args);
  }
  if (layerValue) {
    error(call.getLoc()) << "'" << name << "' is " << layerValue->describe()
                         << ", which cannot be called";
    return EvalValue::poison();
  }
  if (const ast::FnDecl *fn = instance.fns.lookup(name)) {
    if (frame.constantOnly)
      return notConstant(*this, call.getLoc(), "a fn call");
    CallArgs args = evalArgs(call, frame);
    if (args.hasPoison())
      return EvalValue::poison();
    return singleResult(*this, callFn(*fn, instance, args), call);
  }
  if (isBuiltinFunction(name)) {
    CallArgs args = evalArgs(call, frame);
    if (args.hasPoison())
      return EvalValue::poison();
    return callBuiltinFunction(args, frame);
  }
  if (isBuiltinLayer(name) || blocks.count(name)) {
    error(call.getLoc()) << "'" << name
                         << "' is a layer; declare it as a member (`l = "
                         << name << "(...)`) and call the member";
    return EvalValue::poison();
  }
  std::string what;
  if (auto it = instance.constants.find(name); it != instance.constants.end())
    what = it->second.describe();
  else if (instance.params.count(name))
    what = "a parameter";
  else if (instance.buffers.count(name))
    what = "a buffer";
  else if (frame.symbolicDims.count(name))
    what = "the size " + name.str();
  if (!what.empty()) {
    error(call.getLoc()) << "'" << name << "' is " << what
                         << ", which cannot be called";
    return EvalValue::poison();
  }
  // A misspelt callee is a fn, a builtin, or a layer or local holding one.
  SmallVector<StringRef> callees = builtinFunctionNames();
  appendKeys(callees, instance.fns);
  appendKeys(callees, instance.layers);
  appendKeys(callees, frame.locals);
  error(call.getLoc()) << "undefined function '" << name << "'"
                       << didYouMean(name, callees);
  return EvalValue::poison();
}

EvalValue Elaborator::callLayer(Instance &layer, CallArgs &args) {
  switch (layer.kind) {
  case LayerKind::Model:
    error(args.loc) << "the model cannot be called";
    return EvalValue::poison();
  case LayerKind::Repeat: {
    // `layers(x, extra...)`: thread the first argument through the stack.
    if (args.positional.empty()) {
      error(args.loc) << "a stack is called with at least one argument";
      return EvalValue::poison();
    }
    CallArgs step = args;
    for (Instance *child : layer.stack) {
      EvalValue out = callLayer(*child, step);
      if (out.isPoison())
        return out;
      // The next layer's input is this one's output, which no source text
      // spells.
      step.positional[0].value = out;
      step.positional[0].expr = nullptr;
    }
    return step.positional[0].value;
  }
  case LayerKind::Block: {
    const ast::FnDecl *forward = layer.fns.lookup("forward");
    if (!forward) {
      error(args.loc) << layer.typeName << " has no fn forward to call";
      return EvalValue::poison();
    }
    std::optional<std::vector<EvalValue>> results =
        callFn(*forward, layer, args);
    if (!results)
      return EvalValue::poison();
    if (results->size() != 1) {
      error(args.loc) << layer.typeName << " returns " << results->size()
                      << " values; an expression needs one";
      return EvalValue::poison();
    }
    return results->front();
  }
  default:
    return callBuiltinLayer(layer, args);
  }
}

Value Elaborator::materialize(const EvalValue &value, Type elementType,
                              Location loc) {
  auto type = RankedTensorType::get({}, elementType);
  Attribute element;
  if (isa<FloatType>(elementType))
    element = builder.getFloatAttr(elementType, value.getNumber());
  else
    element = builder.getIntegerAttr(
        elementType, value.getKind() == EvalValue::Kind::Float
                         ? static_cast<int64_t>(value.getNumber())
                         : value.getInt());
  return arith::ConstantOp::create(builder, loc, type,
                                   DenseElementsAttr::get(type, element));
}

EvalValue Elaborator::evalUnary(const ast::UnaryExpr &expr, Frame &frame) {
  EvalValue operand = eval(expr.getOperand(), frame);
  if (operand.isPoison())
    return operand;
  if (operand.getKind() == EvalValue::Kind::Int)
    return evalConstantBinary(ast::BinaryOp::Sub, EvalValue::ofInt(0), operand,
                              expr.getLoc());
  if (operand.getKind() == EvalValue::Kind::Float)
    return EvalValue::ofFloat(-operand.getNumber());
  if (operand.isTensor() &&
      isa<FloatType>(operand.getTensorType().getElementType()))
    return EvalValue::ofTensor(
        NegOp::create(builder, expr.getLoc(), operand.getValue()));
  error(expr.getLoc()) << "cannot negate " << operand.describe();
  return EvalValue::poison();
}

EvalValue Elaborator::evalBinary(const ast::BinaryExpr &expr, Frame &frame) {
  EvalValue lhs = eval(expr.getLHS(), frame);
  EvalValue rhs = eval(expr.getRHS(), frame);
  if (lhs.isPoison() || rhs.isPoison())
    return EvalValue::poison();
  ast::BinaryOp op = expr.getOp();
  Location loc = expr.getLoc();
  if (lhs.isConstant() && rhs.isConstant())
    return evalConstantBinary(op, lhs, rhs, loc);
  if (!(lhs.isTensor() || lhs.isConstant()) ||
      !(rhs.isTensor() || rhs.isConstant())) {
    error(loc) << "operator '" << ast::getBinaryOpSpelling(op)
               << "' cannot combine " << lhs.describe() << " and "
               << rhs.describe();
    return EvalValue::poison();
  }
  // At least one side is a tensor: the other becomes a rank-0 tensor of its
  // element type.
  Type elementType =
      (lhs.isTensor() ? lhs : rhs).getTensorType().getElementType();
  const EvalValue &other = lhs.isTensor() ? rhs : lhs;
  if (other.isConstant()
          ? !fitsElementType(other, elementType)
          : other.getTensorType().getElementType() != elementType) {
    // A constant of the tensor's kind that is out of range cannot be fixed
    // by a cast.
    bool outOfRange = other.isConstant() &&
                      (isa<FloatType>(elementType)
                           ? other.isNumber()
                           : other.getKind() == (elementType.isInteger(1)
                                                     ? EvalValue::Kind::Bool
                                                     : EvalValue::Kind::Int));
    InFlightDiagnostic diag = error(loc);
    diag << "operator '" << ast::getBinaryOpSpelling(op) << "' combines "
         << lhs.describe() << " and " << rhs.describe();
    if (outOfRange)
      diag << ", which does not fit in " << describeElementType(elementType);
    else
      diag << "; cast one of them first";
    return EvalValue::poison();
  }
  Value a =
      lhs.isTensor() ? lhs.getValue() : materialize(lhs, elementType, loc);
  Value b =
      rhs.isTensor() ? rhs.getValue() : materialize(rhs, elementType, loc);
  Type aElement = cast<RankedTensorType>(a.getType()).getElementType();
  // A shape error names the expression and both operands by their text.
  Operand left{"the left operand", &expr.getLHS(), a};
  Operand right{"the right operand", &expr.getRHS(), b};
  auto notBroadcast = [&] {
    reportOperands(loc, &expr, {left, right},
                   "their shapes cannot be broadcast together");
  };
  Operation *result = nullptr;
  if (ast::isComparison(op)) {
    static const CompareKind kinds[] = {CompareKind::eq, CompareKind::ne,
                                        CompareKind::lt, CompareKind::le,
                                        CompareKind::gt, CompareKind::ge};
    result = tryCreateReporting<CompareOp>(loc, notBroadcast,
                                           kinds[static_cast<int>(op)], a, b);
  } else if (!isa<FloatType>(aElement)) {
    error(loc) << "operator '" << ast::getBinaryOpSpelling(op)
               << "' needs f32 tensors, got " << lhs.describe() << " and "
               << rhs.describe() << "; cast them with cast(x, f32)";
    return EvalValue::poison();
  } else {
    switch (op) {
    case ast::BinaryOp::Add:
      result = tryCreateReporting<AddOp>(loc, notBroadcast, a, b);
      break;
    case ast::BinaryOp::Sub:
      result = tryCreateReporting<SubOp>(loc, notBroadcast, a, b);
      break;
    case ast::BinaryOp::Mul:
      result = tryCreateReporting<MulOp>(loc, notBroadcast, a, b);
      break;
    case ast::BinaryOp::Div:
      result = tryCreateReporting<DivOp>(loc, notBroadcast, a, b);
      break;
    case ast::BinaryOp::MatMul:
      if (!lhs.isTensor() || !rhs.isTensor()) {
        error(loc) << "operator '@' needs two tensors, got " << lhs.describe()
                   << " and " << rhs.describe();
        return EvalValue::poison();
      }
      result = tryCreateReporting<MatmulOp>(
          loc,
          [&] {
            reportOperands(loc, &expr, {left, right},
                           explainMatmulShapes(left, right));
          },
          a, b);
      break;
    default:
      error(loc) << "operator '" << ast::getBinaryOpSpelling(op)
                 << "' applies to constants only";
      return EvalValue::poison();
    }
  }
  if (!result)
    return EvalValue::poison();
  return EvalValue::ofTensor(result->getResult(0));
}
