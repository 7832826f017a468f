//===- Initializers.cpp - Parameter initialisers -------------------------===//
//
// The initialisers a model chooses: evaluating `normal(0.02)` and its kin
// (their arguments are compile-time constants), the `init:` argument that
// gives a builtin layer's weights one, and the `init path = ...` statements
// that set the initialiser of the parameters a dotted path names inside a
// model or block, as `nn.init.normal_` on a module's parameters would.
//
//===----------------------------------------------------------------------===//

#include "Elaborator.h"

#include "attn/Frontend/Suggestions.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>

using namespace mlir;
using namespace attn;
using namespace attn::mlirgen;

FailureOr<Initializer> Elaborator::evalInitializer(const ast::CallExpr &init,
                                                   Frame &frame) {
  CallArgs callArgs = evalArgs(init, frame);
  llvm::StringRef name = init.getCalleeName();
  if (callArgs.hasPoison())
    return failure();
  auto number = [&](const std::optional<Arg> &arg, llvm::StringRef what,
                    double fallback) -> std::optional<double> {
    if (!arg)
      return fallback;
    return expectNumber(*arg, what);
  };
  // The initialisers a model names are the cases of InitKind.
  std::optional<InitKind> initKind = symbolizeInitKind(name);
  if (!initKind) {
    SmallVector<StringRef> initialisers =
        enumKeywords<InitKind>(getMaxEnumValForInitKind());
    error(init.getLoc()) << "unknown initialiser '" << name
                         << "'; expected normal, uniform, zeros, ones or "
                            "xavier_uniform"
                         << didYouMean(name, initialisers);
    return failure();
  }
  Initializer result{*initKind, {}};
  switch (result.kind) {
  case InitKind::zeros:
  case InitKind::ones:
    if (!bindArgs(callArgs, {}))
      return failure();
    return result;
  case InitKind::normal: {
    // PyTorch's nn.init.normal_(p, mean, std) puts the mean first: a second
    // positional argument is refused rather than read as the mean, as
    // normal(0.0, 0.02) would otherwise draw every value as 0.02.
    if (callArgs.positional.size() > 1) {
      error(callArgs.positional[1].loc)
          << "normal takes the standard deviation alone by position and the "
             "mean by keyword, as normal(std, mean: m); for N(0, 0.02) write "
             "normal(0.02)";
      return failure();
    }
    auto bound = bindArgs(callArgs, {{"std", true}, {"mean", false}});
    if (!bound)
      return failure();
    std::optional<double> std =
        number((*bound)[0], "the standard deviation", 0);
    std::optional<double> mean = number((*bound)[1], "the mean", 0);
    if (!std || !mean)
      return failure();
    if (*std < 0) {
      error((*bound)[0]->loc) << "the standard deviation must not be negative";
      return failure();
    }
    result.args = {*mean, *std};
    return result;
  }
  case InitKind::uniform: {
    auto bound = bindArgs(callArgs, {{"lo", true}, {"hi", true}});
    if (!bound)
      return failure();
    std::optional<double> lo = number((*bound)[0], "the lower bound", 0);
    std::optional<double> hi = number((*bound)[1], "the upper bound", 0);
    if (!lo || !hi)
      return failure();
    if (*lo > *hi) {
      error(callArgs.loc) << "uniform(" << formatNumber(*lo) << ", "
                          << formatNumber(*hi)
                          << ") has its lower bound above its upper bound";
      return failure();
    }
    result.args = {*lo, *hi};
    return result;
  }
  case InitKind::xavier_uniform: {
    auto bound = bindArgs(callArgs, {{"gain", false}});
    if (!bound)
      return failure();
    std::optional<double> gain = number((*bound)[0], "the gain", 1.0);
    if (!gain)
      return failure();
    result.args = {*gain};
    return result;
  }
  }
  llvm_unreachable("unknown initialiser");
}

LogicalResult Elaborator::evalLayerInit(const ast::CallExpr &call, Frame &frame,
                                        std::optional<Initializer> &init) {
  const ast::KeywordArg *initArg = nullptr;
  for (const ast::KeywordArg &keyword : call.getKeywordArgs())
    if (keyword.getName() == "init")
      initArg = &keyword;
  if (!initArg)
    return success();
  llvm::StringRef layer = call.getCalleeName();
  SmallVector<StringRef> takingInit = builtinLayersTakingInit();
  if (!llvm::is_contained(takingInit, layer)) {
    // An unknown layer is reported by the caller, once.
    if (!isBuiltinLayer(layer) && !blocks.count(layer))
      return success();
    if (blocks.count(layer)) {
      error(initArg->getLoc())
          << "block '" << layer
          << "' takes no 'init:'; an 'init NAME = ...' statement in it or "
             "around it sets the initialisers of its parameters";
      return failure();
    }
    InFlightDiagnostic diag = error(initArg->getLoc());
    diag << "'" << layer << "' takes no 'init:'; only ";
    for (auto [i, name] : llvm::enumerate(takingInit))
      diag << (i == 0                       ? ""
               : i + 1 == takingInit.size() ? " and "
                                            : ", ")
           << name;
    diag << " do";
    return failure();
  }
  auto *initCall = dyn_cast<ast::CallExpr>(&initArg->getValue());
  if (!initCall || initCall->getCalleeName().empty()) {
    error(initArg->getValue().getLoc())
        << "'init:' takes an initialiser such as 'normal(0.02)' or 'zeros()'";
    return failure();
  }
  FailureOr<Initializer> value = evalInitializer(*initCall, frame);
  if (failed(value))
    return failure();
  init = std::move(*value);
  return success();
}

/// Appends the parameters of `instance` and of the layers inside it to
/// `params`, each with its name relative to the instance (`mlp.linear1.bias`).
static void
collectParams(Instance &instance, const std::string &prefix,
              std::vector<std::pair<std::string, ParamRef *>> &params) {
  for (auto &entry : instance.params)
    params.emplace_back(prefix + entry.getKey().str(), &entry.getValue());
  for (auto &entry : instance.layers)
    collectParams(*entry.getValue(), prefix + entry.getKey().str() + ".",
                  params);
}

/// Whether dotted `name` matches `path`, whose `*` parts match any one part.
/// With `inside`, whether `name` is a parameter of a layer that `path`
/// matches instead.
static bool matchesPath(ArrayRef<std::string> path, llvm::StringRef name,
                        bool inside = false) {
  SmallVector<StringRef> parts;
  name.split(parts, '.');
  if (inside ? parts.size() <= path.size() : parts.size() != path.size())
    return false;
  for (auto [pattern, part] : llvm::zip_first(path, parts))
    if (pattern != "*" && pattern != part)
      return false;
  return true;
}

/// The candidates for "did you mean" of an `init` path that matched nothing:
/// each parameter's name with the parts the path globs written `*`, so that
/// `h.*.mlp.lienar2.weight` is one edit from `h.*.mlp.linear2.weight`.
static std::vector<std::string>
globbedNames(ArrayRef<std::string> path,
             ArrayRef<std::pair<std::string, ParamRef *>> params) {
  std::vector<std::string> names;
  for (const auto &param : params) {
    SmallVector<StringRef> parts;
    llvm::StringRef(param.first).split(parts, '.');
    std::string name;
    for (auto [i, part] : llvm::enumerate(parts)) {
      if (i)
        name += ".";
      name += i < path.size() && path[i] == "*" ? "*" : part.str();
    }
    names.push_back(name);
  }
  // The copies of a stack are one candidate.
  llvm::sort(names);
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

/// Whether `path` may name parameters of a member of `instance` that failed
/// (it is poison, its error reported), which are missing from the table.
static bool mayNameFailedMember(Instance &instance,
                                ArrayRef<std::string> path) {
  if (path.front() != "*") {
    auto member = instance.constants.find(path.front());
    return member != instance.constants.end() && member->second.isPoison();
  }
  return llvm::any_of(instance.constants, [](const auto &entry) {
    return entry.getValue().isPoison();
  });
}

/// Reports an `init` statement whose path names no parameter: a path to a
/// layer gets an example of the paths of its parameters, a misspelt one the
/// closest parameter's.
static void reportNoMatch(Elaborator &elab, Instance &instance,
                          const ast::InitDecl &decl,
                          ArrayRef<std::pair<std::string, ParamRef *>> params) {
  ArrayRef<std::string> path = decl.getPath();
  std::string written = decl.getPathString();
  InFlightDiagnostic diag = elab.error(decl.getLoc());
  const auto *inside = llvm::find_if(params, [&](const auto &param) {
    return matchesPath(path, param.first, /*inside=*/true);
  });
  if (inside != params.end()) {
    SmallVector<StringRef> parts;
    llvm::StringRef(inside->first).split(parts, '.');
    diag << "'" << written << "' names a layer, not a parameter; name its "
         << "parameters, such as '" << written << "."
         << llvm::join(llvm::drop_begin(parts, path.size()), ".") << "'";
    return;
  }
  std::vector<std::string> names = globbedNames(path, params);
  SmallVector<StringRef> candidates(names.begin(), names.end());
  diag << "'" << written << "' names no parameter of " << instance.typeName
       << didYouMean(written, candidates);
}

void Elaborator::applyInitDecl(Instance &instance, const ast::InitDecl &decl) {
  Frame frame{&instance, {}, {}, /*constantOnly=*/true};
  FailureOr<Initializer> init = evalInitializer(decl.getInit(), frame);
  if (failed(init))
    return;
  std::vector<std::pair<std::string, ParamRef *>> params;
  collectParams(instance, "", params);
  // In declaration order, for diagnostics that do not depend on how layers
  // are stored.
  llvm::sort(params, [](const auto &a, const auto &b) {
    return a.second->op->isBeforeInBlock(b.second->op);
  });
  SmallVector<ParamRef *> matches;
  for (auto &[name, param] : params)
    if (matchesPath(decl.getPath(), name))
      matches.push_back(param);

  std::string path = decl.getPathString();
  if (matches.empty()) {
    if (!mayNameFailedMember(instance, decl.getPath()))
      reportNoMatch(*this, instance, decl, params);
    return;
  }
  if (init->kind == InitKind::xavier_uniform) {
    for (ParamRef *param : matches) {
      if (param->type.getRank() >= 2)
        continue;
      error(decl.getInit().getLoc())
          << "xavier_uniform needs a parameter of rank 2 or more; '"
          << param->symbol << "' has rank " << param->type.getRank();
      return;
    }
  }
  for (ParamRef *param : matches) {
    param->op.setInit(init->kind);
    param->op.setInitArgs(init->args);
  }
}
