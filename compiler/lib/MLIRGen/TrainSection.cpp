//===- TrainSection.cpp - The train { } section of a model ----------------===//
//
// Turns `train { loss = ..., optimizer = ..., schedule = ..., clip_norm = ...
// }` into one `attn.train` op with every hyperparameter spelled out: the
// values written, and PyTorch's defaults for the rest (torch.optim.Adam:
// lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight decay 0; AdamW: weight decay
// 0.01).
//
//===----------------------------------------------------------------------===//

#include "Elaborator.h"

#include "attn/Frontend/Suggestions.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace attn;
using namespace attn::mlirgen;

namespace {
/// A hyperparameter: its name, its default, and whether it must be a whole
/// number.
struct Hyperparameter {
  llvm::StringRef name;
  double fallback;
  bool integer;
};
} // namespace

/// Evaluates `name(key: value, ...)` against `known` into `attrs`.
static LogicalResult evalHyperparameters(Elaborator &elab,
                                         const ast::CallExpr &call,
                                         ArrayRef<Hyperparameter> known,
                                         NamedAttrList &attrs) {
  Frame frame{elab.root.get(), {}, {}, /*constantOnly=*/true};
  CallArgs args = elab.evalArgs(call, frame);
  if (args.hasPoison())
    return failure();
  SmallVector<Formal> formals;
  for (const Hyperparameter &h : known)
    formals.push_back({h.name, false});
  auto bound = elab.bindArgs(args, formals);
  if (!bound)
    return failure();
  // Each value is checked on its own, so that every bad one is reported.
  bool ok = true;
  for (auto [h, arg] : llvm::zip(known, *bound)) {
    if (h.integer) {
      std::optional<int64_t> value =
          arg ? elab.expectInt(*arg, h.name)
              : std::optional<int64_t>(static_cast<int64_t>(h.fallback));
      if (value && *value < 0) {
        elab.error(arg->loc) << h.name << " must not be negative";
        value.reset();
      }
      ok &= value.has_value();
      if (value)
        attrs.append(h.name, elab.builder.getI64IntegerAttr(*value));
      continue;
    }
    std::optional<double> value =
        arg ? elab.expectNumber(*arg, h.name) : h.fallback;
    bool inUnit = h.name == "beta1" || h.name == "beta2";
    if (value && (*value < 0 || (inUnit && *value >= 1))) {
      elab.error(arg->loc) << h.name << " must be "
                           << (inUnit ? "in [0, 1)" : "non-negative")
                           << ", got " << formatNumber(*value);
      value.reset();
    }
    ok &= value.has_value();
    if (value)
      attrs.append(h.name, elab.builder.getF64FloatAttr(*value));
  }
  return success(ok);
}

/// "a, b or c": the choices a message lists.
static std::string alternatives(ArrayRef<std::string> choices) {
  std::string text;
  for (auto [i, choice] : llvm::enumerate(choices)) {
    if (i > 0)
      text += i + 1 == choices.size() ? " or " : ", ";
    text += choice;
  }
  return text;
}

/// The settings a train section may give.
static constexpr llvm::StringLiteral kTrainSettings[] = {
    "loss", "optimizer", "schedule", "clip_norm"};

/// The hyperparameters of optimizer `kind`, with PyTorch's defaults.
static SmallVector<Hyperparameter> optimizerHyperparameters(OptimizerKind kind) {
  double decay = 0.0;
  switch (kind) {
  case OptimizerKind::adam:
    break;
  case OptimizerKind::adamw:
    decay = 0.01;
    break;
  }
  return {{"lr", 1e-3, false},
          {"beta1", 0.9, false},
          {"beta2", 0.999, false},
          {"eps", 1e-8, false},
          {"weight_decay", decay, false}};
}

/// The hyperparameters of schedule `kind`, with their defaults.
static SmallVector<Hyperparameter> scheduleHyperparameters(ScheduleKind kind) {
  switch (kind) {
  case ScheduleKind::constant:
    return {};
  case ScheduleKind::cosine:
    return {{"warmup", 0, true}, {"steps", 0, true}};
  case ScheduleKind::warmup_rsqrt:
    // d_model 0 means "no d_model factor": the schedule is lr * min(...).
    return {{"warmup", 4000, true}, {"d_model", 0, true}};
  }
  llvm_unreachable("unknown schedule");
}

/// How a message shows a call of schedule `kind`: its name and the
/// hyperparameters it needs.
static std::string scheduleUsage(ScheduleKind kind) {
  switch (kind) {
  case ScheduleKind::constant:
    return "constant()";
  case ScheduleKind::cosine:
    return "cosine(warmup: W, steps: N)";
  case ScheduleKind::warmup_rsqrt:
    return "warmup_rsqrt(warmup: W)";
  }
  llvm_unreachable("unknown schedule");
}

/// The entries of `train` by key; false after reporting an unknown or
/// repeated one.
static bool collectTrainEntries(
    Elaborator &elab, const ast::TrainDecl &train,
    llvm::StringMap<const ast::TrainEntry *> &entries) {
  bool ok = true;
  for (const ast::TrainEntry &entry : train.getEntries()) {
    if (!llvm::is_contained(kTrainSettings, entry.getKey())) {
      SmallVector<std::string> settings;
      for (StringRef setting : kTrainSettings)
        settings.push_back(setting.str());
      elab.error(entry.getLoc())
          << "unknown train setting '" << entry.getKey() << "'; expected "
          << alternatives(settings)
          << didYouMean(entry.getKey(),
                        SmallVector<StringRef>(std::begin(kTrainSettings),
                                               std::end(kTrainSettings)));
      ok = false;
      continue;
    }
    if (!entries.try_emplace(entry.getKey(), &entry).second) {
      elab.error(entry.getLoc()) << "train setting '" << entry.getKey()
                                 << "' is given twice";
      ok = false;
    }
  }
  return ok;
}

/// `loss = FN`: a fn of the model returning a scalar. Its name, or nothing
/// after an error.
static std::optional<std::string>
evalLoss(Elaborator &elab, const ast::TrainDecl &train,
         const ast::TrainEntry *loss) {
  if (!loss) {
    elab.error(train.getLoc()) << "the train section needs `loss = FN`";
    return std::nullopt;
  }
  auto *name = dyn_cast<ast::NameExpr>(&loss->getValue());
  const ast::FnDecl *fn =
      name ? elab.root->fns.lookup(name->getName()) : nullptr;
  if (!fn) {
    elab.error(loss->getValue().getLoc())
        << "loss must name a fn of the model";
    return std::nullopt;
  }
  std::string lossName = name->getName().str();
  auto func = elab.module.lookupSymbol<func::FuncOp>(lossName);
  auto scalar = RankedTensorType::get({}, elab.builder.getF32Type());
  // A missing func means the fn had errors, already reported.
  if (func &&
      (func.getNumResults() != 1 || func.getResultTypes()[0] != scalar)) {
    elab.error(loss->getValue().getLoc())
        << "loss fn '" << lossName
        << "' must return one scalar (a mean loss), e.g. "
           "cross_entropy(logits, targets)";
    return std::nullopt;
  }
  return lossName;
}

/// `optimizer = adam(...)`, Adam with PyTorch's defaults when absent.
static LogicalResult evalOptimizer(Elaborator &elab,
                                   const ast::TrainEntry *entry,
                                   OptimizerKind &optimizer,
                                   NamedAttrList &optimizerArgs) {
  optimizer = OptimizerKind::adam;
  if (!entry) {
    for (const Hyperparameter &h : optimizerHyperparameters(optimizer))
      optimizerArgs.append(h.name, elab.builder.getF64FloatAttr(h.fallback));
    return success();
  }
  const auto *call = dyn_cast<ast::CallExpr>(&entry->getValue());
  std::optional<OptimizerKind> kind =
      call ? symbolizeOptimizerKind(call->getCalleeName()) : std::nullopt;
  if (!kind) {
    SmallVector<std::string> calls;
    for (StringRef word :
         enumKeywords<OptimizerKind>(getMaxEnumValForOptimizerKind()))
      calls.push_back((word + "(...)").str());
    InFlightDiagnostic diag = elab.error(entry->getValue().getLoc());
    diag << "optimizer must be " << alternatives(calls);
    if (call)
      diag << didYouMean(
          call->getCalleeName(),
          enumKeywords<OptimizerKind>(getMaxEnumValForOptimizerKind()));
    return failure();
  }
  optimizer = *kind;
  return evalHyperparameters(elab, *call, optimizerHyperparameters(optimizer),
                             optimizerArgs);
}

/// `schedule = cosine(...)`, the constant learning rate when absent.
static LogicalResult evalSchedule(Elaborator &elab,
                                  const ast::TrainEntry *entry,
                                  ScheduleKind &schedule,
                                  NamedAttrList &scheduleArgs) {
  schedule = ScheduleKind::constant;
  if (!entry)
    return success();
  const auto *call = dyn_cast<ast::CallExpr>(&entry->getValue());
  std::optional<ScheduleKind> kind =
      call ? symbolizeScheduleKind(call->getCalleeName()) : std::nullopt;
  if (!kind) {
    SmallVector<std::string> calls;
    for (unsigned value = 0; value <= getMaxEnumValForScheduleKind(); ++value)
      calls.push_back(scheduleUsage(static_cast<ScheduleKind>(value)));
    InFlightDiagnostic diag = elab.error(entry->getValue().getLoc());
    diag << "schedule must be " << alternatives(calls);
    if (call)
      diag << didYouMean(
          call->getCalleeName(),
          enumKeywords<ScheduleKind>(getMaxEnumValForScheduleKind()));
    return failure();
  }
  schedule = *kind;
  if (failed(evalHyperparameters(elab, *call, scheduleHyperparameters(schedule),
                                 scheduleArgs)))
    return failure();
  if (schedule == ScheduleKind::cosine && !call->getKeywordArg("steps") &&
      call->getArgs().size() < 2) {
    elab.error(call->getLoc()) << "cosine needs the number of steps";
    return failure();
  }
  return success();
}

/// `clip_norm = C`: 0 (no clipping) when absent; nothing after an error.
static std::optional<double> evalClipNorm(Elaborator &elab,
                                          const ast::TrainEntry *entry) {
  if (!entry)
    return 0.0;
  Arg arg{elab.evalConstant(entry->getValue(), *elab.root),
          entry->getValue().getLoc()};
  std::optional<double> value = elab.expectNumber(arg, "clip_norm");
  if (value && *value < 0) {
    elab.error(arg.loc) << "clip_norm must not be negative; 0 turns it off";
    return std::nullopt;
  }
  return value;
}

void Elaborator::emitTrain(const ast::TrainDecl &train) {
  llvm::StringMap<const ast::TrainEntry *> entries;
  bool ok = collectTrainEntries(*this, train, entries);
  // Each setting is checked on its own, so that every bad one is reported.
  std::optional<std::string> lossName =
      evalLoss(*this, train, entries.lookup("loss"));
  OptimizerKind optimizer;
  NamedAttrList optimizerArgs;
  ok &= succeeded(evalOptimizer(*this, entries.lookup("optimizer"), optimizer,
                                optimizerArgs));
  ScheduleKind schedule;
  NamedAttrList scheduleArgs;
  ok &= succeeded(evalSchedule(*this, entries.lookup("schedule"), schedule,
                               scheduleArgs));
  std::optional<double> clipNorm =
      evalClipNorm(*this, entries.lookup("clip_norm"));
  if (!ok || !lossName || !clipNorm)
    return;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(module.getBody());
  TrainOp::create(builder, train.getLoc(), *lossName, optimizer,
                  optimizerArgs.getDictionary(&context), schedule,
                  scheduleArgs.getDictionary(&context), APFloat(*clipNorm));
}
