//===- attn-ref.cpp - Runs attn IR with the reference evaluator -----------===//
//
// The command line of the reference evaluator: reads attn IR (the output of
// `attnc emit --stage attn`), weights from a safetensors file and inputs from
// .npy files, runs one function and writes its results as .npy files, or
// prints them when no output is named.
//
//===----------------------------------------------------------------------===//

#include "attn/InitAll.h"
#include "attn/Reference/Evaluator.h"
#include "attn/Reference/TensorIO.h"

#include "attn/Dialect/IR/AttnOps.h"
#include "attn/abi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace attn::reference;

namespace {

llvm::cl::OptionCategory category("attn-ref options");

llvm::cl::opt<std::string> inputFile(llvm::cl::Positional,
                                     llvm::cl::desc("<attn IR file>"),
                                     llvm::cl::init("-"),
                                     llvm::cl::cat(category));
llvm::cl::opt<std::string> function("entry",
                                    llvm::cl::desc("The entry point (function) "
                                                   "to run"),
                                    llvm::cl::value_desc("name"),
                                    llvm::cl::init(ATTN_ENTRY_FORWARD),
                                    llvm::cl::cat(category));
// --fn, the name attn-ref and the executables took first, is accepted for
// --entry, the one name attnc, the executables and attn-ref share.
llvm::cl::alias functionFnAlias("fn", llvm::cl::desc("Alias for --entry"),
                                llvm::cl::aliasopt(function),
                                llvm::cl::cat(category));
llvm::cl::opt<std::string> weights("w",
                                   llvm::cl::desc("Parameters (safetensors)"),
                                   llvm::cl::value_desc("file"),
                                   llvm::cl::cat(category));
llvm::cl::alias weightsLong("weights", llvm::cl::aliasopt(weights));
llvm::cl::list<std::string> inputs(
    "in",
    llvm::cl::desc("An argument: NAME=FILE.npy, where NAME is the "
                   "argument's name in the model (attn.name), or argN or N "
                   "for position N; or FILE.npy for the next argument in "
                   "order"),
    llvm::cl::value_desc("NAME=FILE"), llvm::cl::cat(category));
llvm::cl::opt<std::string>
    output("o",
           llvm::cl::desc("Result file (.npy); several results are written "
                          "to OUT.0.npy, OUT.1.npy, ...; without -o the "
                          "results are printed"),
           llvm::cl::value_desc("file"), llvm::cl::cat(category));
llvm::cl::opt<bool> writeF64("f64",
                             llvm::cl::desc("Write float results as <f8 "
                                            "instead of their own type"),
                             llvm::cl::cat(category));
llvm::cl::opt<bool> fdGrad(
    "fd-grad",
    llvm::cl::desc("Write the gradient of the function's scalar result with "
                   "respect to every parameter, by central finite "
                   "differences, to the safetensors file -o names"),
    llvm::cl::cat(category));
llvm::cl::opt<double> fdStep("fd-step", llvm::cl::desc("Step of --fd-grad"),
                             llvm::cl::init(1e-5), llvm::cl::cat(category));
llvm::cl::opt<std::string> fdMask(
    "fd-mask",
    llvm::cl::desc("With --fd-grad: a safetensors file of 0/1 tensors named "
                   "as parameters; only the elements marked 1 are "
                   "differentiated (the others are written as NaN); "
                   "parameters it does not name are skipped entirely"),
    llvm::cl::value_desc("file"), llvm::cl::cat(category));
llvm::cl::opt<bool>
    training("training",
             llvm::cl::desc("Run as a training entry point (a dropout that "
                            "draws random numbers is then an error)"),
             llvm::cl::cat(category));

llvm::cl::opt<uint64_t> seed(
    "seed",
    llvm::cl::desc("The value of the function's dropout seed argument "
                   "(attn.seed, ATTN_ARG_SEED): the seed the compiled entry "
                   "point is called with, exactly"),
    llvm::cl::cat(category));
llvm::cl::opt<std::string> hyper(
    "hyper",
    llvm::cl::desc("The hyperparameter argument (attn.hyper, "
                   "ATTN_ARG_HYPER): KEY=VALUE,... with keys lr, beta1, "
                   "beta2, eps, weight_decay, clip_norm, step; unnamed ones "
                   "are the model's attn.train values and step 1"),
    llvm::cl::value_desc("k=v,..."), llvm::cl::cat(category));
llvm::cl::opt<std::string> moments(
    "moments",
    llvm::cl::desc("Adam's moments before the call (safetensors with "
                   "optim.m.NAME and optim.v.NAME, as in a checkpoint, whose "
                   "weights and optim.step are ignored; absent moments are "
                   "zero)"),
    llvm::cl::value_desc("file"), llvm::cl::cat(category));
llvm::cl::opt<std::string> gradsOut(
    "grads-out",
    llvm::cl::desc("After the call, write every parameter's gradient buffer "
                   "(what attn.set_param grad wrote) to this safetensors "
                   "file"),
    llvm::cl::value_desc("file"), llvm::cl::cat(category));
llvm::cl::opt<std::string> stateOut(
    "state-out",
    llvm::cl::desc("After the call, write every parameter's value and "
                   "moments (NAME, optim.m.NAME, optim.v.NAME) to this "
                   "safetensors file"),
    llvm::cl::value_desc("file"), llvm::cl::cat(category));

/// Exit statuses, as attnc's.
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

int fail(const llvm::Twine &message, int status = kExitError) {
  llvm::errs() << "attn-ref: error: " << message << "\n";
  return status;
}

/// The index of the argument an --in NAME designates: the argument whose
/// attn.name (its name in the model) is NAME, else argN or N for position N.
std::optional<unsigned> findArgument(func::FuncOp fn, llvm::StringRef name) {
  for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i)
    if (auto attr = fn.getArgAttrOfType<StringAttr>(i, "attn.name");
        attr && attr.getValue() == name)
      return i;
  llvm::StringRef digits = name;
  digits.consume_front("arg");
  unsigned index;
  if (!digits.getAsInteger(10, index) && index < fn.getNumArguments())
    return index;
  return std::nullopt;
}

/// Converts a tensor read from a file to the element type of an argument:
/// floats to floats (rounded to the argument's format), integers to integers
/// that can hold them, booleans to booleans.
FailureOr<Tensor> convertInput(Tensor tensor, Type type, llvm::StringRef file) {
  std::optional<DType> want = getDType(type);
  DType have = tensor.getDType();
  bool sameKind = want && ((isFloat(*want) && isFloat(have)) ||
                           (isInteger(*want) && isInteger(have)) ||
                           (*want == DType::Bool && have == DType::Bool));
  if (!sameKind) {
    std::string typeText;
    llvm::raw_string_ostream os(typeText);
    os << type;
    fail(file + ": holds " + getDTypeName(have) +
         " elements, the argument is " + typeText);
    return failure();
  }
  for (double &value : tensor.getData()) {
    double converted = convertTo(*want, value);
    if (isInteger(*want) && converted != value) {
      fail(file + ": value " + llvm::Twine(static_cast<int64_t>(value)) +
           " does not fit in " + getDTypeName(*want));
      return failure();
    }
    value = converted;
  }
  tensor.setDType(*want);
  return tensor;
}

/// Prints a tensor as nested lists, enough digits to round-trip an f32.
void printTensor(llvm::raw_ostream &os, const Tensor &tensor) {
  llvm::ArrayRef<int64_t> shape = tensor.getShape();
  llvm::SmallVector<int64_t> strides = getStrides(shape);
  std::function<void(int64_t, int64_t)> print = [&](int64_t dim,
                                                    int64_t offset) {
    if (dim == tensor.getRank()) {
      os << llvm::format("%.10g", tensor[offset]);
      return;
    }
    os << "[";
    for (int64_t i = 0; i < shape[dim]; ++i) {
      if (i)
        os << ", ";
      print(dim + 1, offset + i * strides[dim]);
    }
    os << "]";
  };
  print(0, 0);
  os << "\n";
}

/// The hyperparameter vector of --hyper (abi.h's attn_hyper_index order):
/// the attn.train defaults overridden by KEY=VALUE pairs.
FailureOr<Tensor> hyperVector(ModuleOp module, llvm::StringRef spec) {
  // Those of the optimizer are its argument names in attn.train.
  struct HyperKey {
    llvm::StringLiteral name;
    attn_hyper_index slot;
  };
  static constexpr HyperKey keys[] = {
      {"lr", ATTN_HYPER_LR},
      {"beta1", ATTN_HYPER_BETA1},
      {"beta2", ATTN_HYPER_BETA2},
      {"eps", ATTN_HYPER_EPS},
      {"weight_decay", ATTN_HYPER_WEIGHT_DECAY},
      {"clip_norm", ATTN_HYPER_CLIP_NORM},
      {"step", ATTN_HYPER_STEP}};
  static_assert(std::size(keys) == ATTN_HYPER_COUNT, "a key for every slot");
  // torch.optim.Adam's defaults where the train section names nothing.
  double values[ATTN_HYPER_COUNT] = {};
  values[ATTN_HYPER_LR] = 1e-3;
  values[ATTN_HYPER_BETA1] = 0.9;
  values[ATTN_HYPER_BETA2] = 0.999;
  values[ATTN_HYPER_EPS] = 1e-8;
  values[ATTN_HYPER_STEP] = 1.0;
  for (attn::TrainOp train : module.getOps<attn::TrainOp>()) {
    for (const HyperKey &key : keys)
      if (auto attr = train.getOptimizerArgs().getAs<FloatAttr>(key.name))
        values[key.slot] = attr.getValueAsDouble();
    values[ATTN_HYPER_CLIP_NORM] = train.getClipNorm().convertToDouble();
  }
  llvm::SmallVector<llvm::StringRef> pairs;
  spec.split(pairs, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef pair : pairs) {
    auto [name, text] = pair.split('=');
    llvm::StringRef wanted = name.trim();
    const HyperKey *key = llvm::find_if(
        keys, [&](const HyperKey &k) { return k.name == wanted; });
    double value;
    if (key == std::end(keys) || text.trim().getAsDouble(value)) {
      std::string names;
      llvm::raw_string_ostream os(names);
      llvm::interleaveComma(keys, os,
                            [&](const HyperKey &k) { os << k.name; });
      fail("--hyper: expected KEY=NUMBER with KEY one of " + names +
               "; got '" + pair + "'",
           kExitUsage);
      return failure();
    }
    values[key->slot] = value;
  }
  Tensor vector(DType::F32, {static_cast<int64_t>(ATTN_HYPER_COUNT)});
  for (auto [index, value] : llvm::enumerate(values))
    vector[index] = convertTo(DType::F32, value);
  return vector;
}

/// Writes chosen buffers of every parameter to a safetensors file, each
/// under its prefix.
int writeBuffers(Evaluator &evaluator, llvm::StringRef path,
                 llvm::ArrayRef<std::pair<attn::ParamBuffer, llvm::StringRef>>
                     which) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (auto [buffer, prefix] : which)
    for (const std::string &name : evaluator.getParameterNames()) {
      FailureOr<Tensor> value = evaluator.getBuffer(buffer, name);
      if (failed(value))
        return kExitError;
      tensors.emplace_back((prefix + name).str(), std::move(*value));
    }
  if (llvm::Error error = writeSafetensors(path, tensors, writeF64))
    return fail(llvm::toString(std::move(error)));
  return 0;
}

/// Gives every parameter its value from the safetensors file of -w, which
/// must hold exactly the model's parameters.
int loadWeights(Evaluator &evaluator) {
  auto tensors = readSafetensors(weights);
  if (!tensors)
    return fail(llvm::toString(tensors.takeError()));
  for (auto &[name, tensor] : *tensors) {
    if (!evaluator.declaresParameter(name))
      return fail(weights + ": tensor '" + name +
                  "' is not a parameter of the model");
    if (failed(evaluator.setParameter(name, std::move(tensor))))
      return kExitError;
  }
  llvm::SmallVector<std::string> unset = evaluator.getUnsetParameters();
  if (!unset.empty())
    return fail(weights + ": no tensor for parameter '" + unset.front() +
                "'" +
                (unset.size() > 1
                     ? " (and " + std::to_string(unset.size() - 1) + " more)"
                     : std::string()));
  return 0;
}

/// Sets Adam's moments from the checkpoint --moments names.
int loadMoments(Evaluator &evaluator) {
  auto tensors = readSafetensors(moments);
  if (!tensors)
    return fail(llvm::toString(tensors.takeError()));
  for (auto &[name, tensor] : *tensors) {
    llvm::StringRef param = name;
    attn::ParamBuffer buffer = attn::ParamBuffer::first_moment;
    // A checkpoint's weights and step count are not moments.
    if (param == "optim.step" || evaluator.declaresParameter(param))
      continue;
    if (!param.consume_front("optim.m.")) {
      buffer = attn::ParamBuffer::second_moment;
      if (!param.consume_front("optim.v.") ||
          !evaluator.declaresParameter(param))
        param = "";
    }
    if (param.empty() || !evaluator.declaresParameter(param))
      return fail(moments + ": tensor '" + name +
                  "' is not optim.m.NAME or optim.v.NAME of a parameter");
    if (failed(evaluator.setBuffer(buffer, param, std::move(tensor))))
      return kExitError;
  }
  return 0;
}

/// Reads the arguments --in names into `args`, by name or in order.
int readInputs(func::FuncOp fn,
               llvm::SmallVectorImpl<std::optional<Tensor>> &args) {
  unsigned nextPositional = 0;
  for (llvm::StringRef spec : inputs) {
    auto [name, path] = spec.split('=');
    std::optional<unsigned> index;
    if (path.empty()) {
      path = name;
      index = nextPositional++;
    } else {
      index = findArgument(fn, name);
    }
    if (!index || *index >= fn.getNumArguments())
      return fail("'" + function + "' has no argument '" + name + "' (it has " +
                      llvm::Twine(fn.getNumArguments()) + ")",
                  kExitUsage);
    if (args[*index])
      return fail("argument " + llvm::Twine(*index) + " is given twice",
                  kExitUsage);
    auto tensor = readNpy(path);
    if (!tensor)
      return fail(llvm::toString(tensor.takeError()));
    FailureOr<Tensor> converted =
        convertInput(std::move(*tensor), fn.getArgumentTypes()[*index], path);
    if (failed(converted))
      return kExitError;
    args[*index] = std::move(*converted);
  }
  return 0;
}

/// Fills the seed and hyperparameter arguments of the training entry points
/// from --seed and --hyper, where --in gave none.
int fillTrainingArguments(ModuleOp module, func::FuncOp fn,
                          llvm::SmallVectorImpl<std::optional<Tensor>> &args) {
  for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i) {
    if (args[i])
      continue;
    if (fn.getArgAttr(i, "attn.seed")) {
      if (!seed.getNumOccurrences())
        return fail("'" + function + "' takes a dropout seed: pass --seed N",
                    kExitUsage);
      args[i] = Tensor::scalar(
          DType::I64, static_cast<double>(static_cast<int64_t>(seed)));
    } else if (fn.getArgAttr(i, "attn.dropout_row")) {
      // The call is the whole batch: its rows are rows 0 to B - 1.
      args[i] = Tensor::scalar(DType::I64, 0);
    } else if (fn.getArgAttr(i, "attn.hyper")) {
      FailureOr<Tensor> vector = hyperVector(module, hyper);
      if (failed(vector))
        return kExitUsage;
      args[i] = std::move(*vector);
    }
  }
  return 0;
}

/// The arguments of `fn` from the command line, every one required.
int readArguments(ModuleOp module, func::FuncOp fn,
                  llvm::SmallVectorImpl<Tensor> &argValues) {
  llvm::SmallVector<std::optional<Tensor>> args(fn.getNumArguments());
  if (int status = readInputs(fn, args))
    return status;
  if (int status = fillTrainingArguments(module, fn, args))
    return status;
  for (auto [index, arg] : llvm::enumerate(args)) {
    if (!arg)
      return fail("no value for argument " + llvm::Twine(index) + " of '" +
                      function + "' (pass --in arg" + llvm::Twine(index) +
                      "=FILE.npy)",
                  kExitUsage);
    argValues.push_back(std::move(*arg));
  }
  return 0;
}

/// --fd-grad: writes the gradient of the function with respect to every
/// parameter (those --fd-mask names, when given) by finite differences.
int writeFiniteDifferenceGradients(Evaluator &evaluator,
                                   llvm::ArrayRef<Tensor> argValues) {
  if (output.empty())
    return fail("--fd-grad needs -o FILE.safetensors", kExitUsage);
  std::optional<llvm::StringMap<Tensor>> masks;
  if (!fdMask.empty()) {
    auto tensors = readSafetensors(fdMask);
    if (!tensors)
      return fail(llvm::toString(tensors.takeError()));
    masks.emplace();
    for (auto &[name, tensor] : *tensors)
      (*masks)[name] = std::move(tensor);
  }
  std::vector<std::pair<std::string, Tensor>> gradients;
  for (const std::string &name : evaluator.getParameterNames()) {
    const Tensor *mask = nullptr;
    if (masks) {
      auto it = masks->find(name);
      if (it == masks->end())
        continue;
      mask = &it->second;
    }
    FailureOr<Tensor> gradient = evaluator.gradientByFiniteDifferences(
        function, argValues, name, fdStep, mask);
    if (failed(gradient))
      return kExitError;
    gradients.emplace_back(name, std::move(*gradient));
  }
  if (llvm::Error error = writeSafetensors(output, gradients, writeF64))
    return fail(llvm::toString(std::move(error)));
  return 0;
}

/// Writes the results to -o (one .npy file each), or prints them.
int writeResults(llvm::ArrayRef<Tensor> results) {
  if (output.empty()) {
    for (auto [index, tensor] : llvm::enumerate(results)) {
      llvm::outs() << "result " << index << ": " << tensor.describe() << "\n";
      printTensor(llvm::outs(), tensor);
    }
    return 0;
  }
  llvm::StringRef stem = output;
  stem.consume_back(".npy");
  for (auto [index, tensor] : llvm::enumerate(results)) {
    std::string path = results.size() == 1
                           ? output.getValue()
                           : (stem + "." + llvm::Twine(index) + ".npy").str();
    if (llvm::Error error = writeNpy(path, tensor, writeF64))
      return fail(llvm::toString(std::move(error)));
  }
  return 0;
}

/// Runs the function, then writes the buffers --grads-out and --state-out
/// name and the results.
int runFunction(Evaluator &evaluator, llvm::ArrayRef<Tensor> argValues) {
  FailureOr<llvm::SmallVector<Tensor>> results =
      evaluator.run(function, argValues);
  if (failed(results))
    return kExitError;
  if (!gradsOut.empty())
    if (int status = writeBuffers(evaluator, gradsOut,
                                  {{attn::ParamBuffer::grad, ""}}))
      return status;
  if (!stateOut.empty())
    if (int status = writeBuffers(
            evaluator, stateOut,
            {{attn::ParamBuffer::value, ""},
             {attn::ParamBuffer::first_moment, "optim.m."},
             {attn::ParamBuffer::second_moment, "optim.v."}}))
      return status;
  return writeResults(*results);
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  llvm::cl::HideUnrelatedOptions(category);
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "attn-ref: runs attn IR with the reference evaluator (double "
      "precision, no lowering)\n\n"
      "  attn-ref MODEL.mlir --entry forward -w W.safetensors \\\n"
      "           --in tokens=tokens.npy -o logits.npy\n");

  DialectRegistry registry;
  attn::registerAllDialects(registry);
  MLIRContext context(registry);
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> file =
      mlir::openInputFile(inputFile, &error);
  if (!file)
    return fail(error);
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return kExitError;

  auto fn = module->lookupSymbol<func::FuncOp>(function);
  if (!fn || fn.isExternal())
    return fail("the module has no function '" + function + "'", kExitUsage);

  EvaluatorOptions evaluatorOptions;
  evaluatorOptions.training = training;
  if (seed.getNumOccurrences())
    evaluatorOptions.seed = seed;
  Evaluator evaluator(*module, evaluatorOptions);
  if (!weights.empty())
    if (int status = loadWeights(evaluator))
      return status;
  if (!moments.empty())
    if (int status = loadMoments(evaluator))
      return status;
  llvm::SmallVector<Tensor> argValues;
  if (int status = readArguments(*module, fn, argValues))
    return status;
  if (fdGrad)
    return writeFiniteDifferenceGradients(evaluator, argValues);
  return runFunction(evaluator, argValues);
}
