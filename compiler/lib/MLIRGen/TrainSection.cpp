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

void Elaborator::emitTrain(const ast::TrainDecl &train) {
  llvm::StringMap<const ast::TrainEntry *> entries;
  bool ok = true;
  for (const ast::TrainEntry &entry : train.getEntries()) {
    if (!llvm::is_contained({"loss", "optimizer", "schedule", "clip_norm"},
                            entry.getKey())) {
      error(entry.getLoc()) << "unknown train setting '" << entry.getKey()
                            << "'; expected loss, optimizer, schedule or "
                               "clip_norm";
      ok = false;
      continue;
    }
    if (!entries.try_emplace(entry.getKey(), &entry).second) {
      error(entry.getLoc()) << "train setting '" << entry.getKey()
                            << "' is given twice";
      ok = false;
    }
  }

  // loss: a fn of the model returning a scalar.
  std::string lossName;
  if (const ast::TrainEntry *loss = entries.lookup("loss")) {
    auto *name = dyn_cast<ast::NameExpr>(&loss->getValue());
    const ast::FnDecl *fn = name ? root->fns.lookup(name->getName()) : nullptr;
    if (!fn) {
      error(loss->getValue().getLoc())
          << "loss must name a fn of the model";
      ok = false;
    } else {
      lossName = name->getName().str();
      auto func = module.lookupSymbol<func::FuncOp>(lossName);
      auto scalar = RankedTensorType::get({}, builder.getF32Type());
      // A missing func means the fn had errors, already reported.
      if (func && (func.getNumResults() != 1 ||
                   func.getResultTypes()[0] != scalar)) {
        error(loss->getValue().getLoc())
            << "loss fn '" << lossName
            << "' must return one scalar (a mean loss), e.g. "
               "cross_entropy(logits, targets)";
        ok = false;
      }
    }
  } else {
    error(train.getLoc()) << "the train section needs `loss = FN`";
    ok = false;
  }

  OptimizerKind optimizer = OptimizerKind::adam;
  NamedAttrList optimizerArgs;
  const ast::TrainEntry *optimizerEntry = entries.lookup("optimizer");
  const auto *optimizerCall =
      optimizerEntry ? dyn_cast<ast::CallExpr>(&optimizerEntry->getValue())
                     : nullptr;
  if (optimizerEntry && (!optimizerCall ||
                         !symbolizeOptimizerKind(optimizerCall->getCalleeName()))) {
    error(optimizerEntry->getValue().getLoc())
        << "optimizer must be adam(...) or adamw(...)";
    ok = false;
  } else {
    if (optimizerCall)
      optimizer = *symbolizeOptimizerKind(optimizerCall->getCalleeName());
    double decay = optimizer == OptimizerKind::adamw ? 0.01 : 0.0;
    Hyperparameter known[] = {{"lr", 1e-3, false},
                              {"beta1", 0.9, false},
                              {"beta2", 0.999, false},
                              {"eps", 1e-8, false},
                              {"weight_decay", decay, false}};
    if (optimizerCall) {
      ok &= succeeded(
          evalHyperparameters(*this, *optimizerCall, known, optimizerArgs));
    } else {
      for (const Hyperparameter &h : known)
        optimizerArgs.append(h.name, builder.getF64FloatAttr(h.fallback));
    }
  }

  ScheduleKind schedule = ScheduleKind::constant;
  NamedAttrList scheduleArgs;
  if (const ast::TrainEntry *entry = entries.lookup("schedule")) {
    const auto *call = dyn_cast<ast::CallExpr>(&entry->getValue());
    std::optional<ScheduleKind> kind =
        call ? symbolizeScheduleKind(call->getCalleeName()) : std::nullopt;
    if (!kind) {
      error(entry->getValue().getLoc())
          << "schedule must be constant(), cosine(warmup: W, steps: N) or "
             "warmup_rsqrt(warmup: W)";
      ok = false;
    } else {
      schedule = *kind;
      SmallVector<Hyperparameter> known;
      if (schedule == ScheduleKind::cosine)
        known = {{"warmup", 0, true}, {"steps", 0, true}};
      else if (schedule == ScheduleKind::warmup_rsqrt)
        known = {{"warmup", 4000, true}, {"d_model", 0, true}};
      bool valid =
          succeeded(evalHyperparameters(*this, *call, known, scheduleArgs));
      if (valid && schedule == ScheduleKind::cosine &&
          !call->getKeywordArg("steps") && call->getArgs().size() < 2) {
        error(call->getLoc()) << "cosine needs the number of steps";
        valid = false;
      }
      ok &= valid;
      // d_model 0 means "no d_model factor": the schedule is lr * min(...).
    }
  }

  double clipNorm = 0;
  if (const ast::TrainEntry *entry = entries.lookup("clip_norm")) {
    Arg arg{evalConstant(entry->getValue(), *root), entry->getValue().getLoc()};
    std::optional<double> value = expectNumber(arg, "clip_norm");
    if (value && *value < 0) {
      error(arg.loc) << "clip_norm must not be negative; 0 turns it off";
      value.reset();
    }
    ok &= value.has_value();
    clipNorm = value.value_or(0);
  }

  if (!ok)
    return;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(module.getBody());
  TrainOp::create(builder, train.getLoc(), lossName, optimizer,
                  optimizerArgs.getDictionary(&context), schedule,
                  scheduleArgs.getDictionary(&context),
                  APFloat(clipNorm));
}
