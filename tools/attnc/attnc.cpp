//===- attnc.cpp - The attnc compiler driver ------------------------------===//
//
// `attnc check|emit|compile|build FILE`: reads a model (`.tfm`) or `attn` IR
// (`.mlir`), runs the pipeline as far as the command needs, and prints a
// stage, writes an object file, or links a standalone executable. Exit
// status: 0 on success, 1 on a diagnosed error in the input, 2 on bad
// command-line use.
//
//===----------------------------------------------------------------------===//

#include "Linker.h"

#include "attn/Codegen/CpuCostModel.h"
#include "attn/Dialect/Transforms/EntryPoints.h"
#include "attn/EntryPoints/LowPrecisionWeights.h"
#include "attn/EntryPoints/Passes.h"
#include "attn/Frontend/AST.h"
#include "attn/Frontend/Frontend.h"
#include "attn/InitAll.h"
#include "attn/MLIRGen/MLIRGen.h"
#include "attn/Target/ArenaSize.h"
#include "attn/Target/CudaTarget.h"
#include "attn/Target/HeaderEmitter.h"
#include "attn/Target/ModelInfo.h"
#include "attn/Target/ObjectEmitter.h"
#include "attn/Target/ParallelCodegen.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <mutex>
#include <sys/resource.h>
#include <thread>
#include <time.h>
#include <vector>

using namespace mlir;
namespace cl = llvm::cl;

namespace {
enum ExitCode { kSuccess = 0, kInputError = 1, kUsageError = 2 };

cl::OptionCategory attncCategory("attnc options");

// Optional for the parser, so that a bare `attnc` gets attnc's usage and a
// missing input file a message naming the command, not LLVM's count of
// positional arguments.
cl::opt<std::string> commandName(cl::Positional, cl::desc("<command>"),
                                 cl::cat(attncCategory));
cl::opt<std::string> inputFilename(cl::Positional, cl::desc("<input file>"),
                                   cl::cat(attncCategory));
cl::opt<std::string> outputFilename("o",
                                    cl::desc("Output file (default: "
                                             "standard output for emit)"),
                                    cl::value_desc("file"), cl::init(""),
                                    cl::cat(attncCategory));
/// `--stage`'s help, naming the stages.
const std::string &stageHelp() {
  static const std::string help =
      "Stage to print with `emit` (default: attn-opt): " +
      attn::allStageNames().str();
  return help;
}
cl::opt<std::string> stageOption("stage", cl::desc(stageHelp()),
                                 cl::value_desc("stage"), cl::init("attn-opt"),
                                 cl::cat(attncCategory));
cl::opt<std::string> targetOption("target",
                                  cl::desc("Target: host (default), an x86-64 "
                                           "CPU LLVM names (x86-64-v3: AVX2, "
                                           "x86-64-v4: AVX-512, znver4, "
                                           "sapphirerapids, ...), or cuda"),
                                  cl::value_desc("target"), cl::init("host"),
                                  cl::cat(attncCategory));
cl::opt<unsigned> optLevel("O", cl::desc("LLVM optimisation level (0-3)"),
                           cl::Prefix, cl::init(3), cl::cat(attncCategory));
cl::opt<std::string> headerFilename("header",
                                    cl::desc("C header to write with "
                                             "`compile` (default: the object's "
                                             "name with .h)"),
                                    cl::value_desc("file"), cl::init(""),
                                    cl::cat(attncCategory));
cl::opt<std::string> weightsOption(
    "weights",
    cl::desc("How the inference entry points read the weights of matrix "
             "products: f32 (default), bf16, or int8 (one scale per 32 "
             "elements of a row); bf16 and int8 build no training entry "
             "points (CPU targets)"),
    cl::value_desc("format"), cl::init("f32"), cl::cat(attncCategory));
cl::opt<std::string> precisionOption(
    "precision",
    cl::desc("How matrix products compute: f32 (default); bf16 (operands "
             "rounded to bf16, f32 accumulation, on CPUs with AVX512-BF16); "
             "or tf32 (GPU targets: tensor cores, operands read as TF32, f32 "
             "accumulation); parameters and optimizer state stay f32"),
    cl::value_desc("p"), cl::init("f32"), cl::cat(attncCategory));
cl::opt<std::string> amxOption(
    "amx",
    cl::desc("Where --precision bf16 multiplies: auto (default: AMX tiles "
             "where the target has AMX-BF16, else AVX512-BF16 vectors), off "
             "(AVX512-BF16 vectors), or emulate (the AMX kernel with each "
             "tile instruction done by f32 vector instructions, to check it "
             "on any AVX-512 CPU; slow)"),
    cl::value_desc("mode"), cl::init("auto"), cl::cat(attncCategory));
cl::list<std::string> entryOption(
    "entry",
    cl::desc("Generate only these entry points and those they call "
             "(default: all), e.g. --entry forward,prefill,decode_step "
             "(--fn is its other name; the executables and attn-ref choose "
             "their entry point with --entry too)"),
    cl::value_desc("a,b"), cl::CommaSeparated, cl::cat(attncCategory));
// --fn, the name the executables and attn-ref took first, is accepted for
// --entry everywhere.
cl::alias entryFnAlias("fn", cl::desc("Alias for --entry"),
                       cl::aliasopt(entryOption), cl::cat(attncCategory));
cl::opt<bool> printIRAfterAll("print-ir-after-all",
                              cl::desc("Print the IR after every pass "
                                       "(to standard error)"),
                              cl::cat(attncCategory));
cl::list<std::string>
    printIRAfter("print-ir-after",
                 cl::desc("Print the IR after the passes named (their "
                          "attnc-opt argument, e.g. attn-plan-arena)"),
                 cl::value_desc("pass"), cl::CommaSeparated,
                 cl::cat(attncCategory));
cl::opt<std::string> dumpDir("dump-dir",
                             cl::desc("Write every stage the command goes "
                                      "through to DIR, one file per stage"),
                             cl::value_desc("dir"), cl::init(""),
                             cl::cat(attncCategory));
cl::opt<bool> verifyEach("verify-each",
                         cl::desc("Verify the IR after every pass (default: "
                                  "after every stage)"),
                         cl::cat(attncCategory));
cl::opt<unsigned> jobsOption(
    "jobs",
    cl::desc("Threads for LLVM's optimisation and code generation of an "
             "object (default: the CPUs there are; 1 with --dump-dir)"),
    cl::value_desc("n"), cl::init(0), cl::cat(attncCategory));
cl::opt<unsigned> errorLimit("error-limit",
                             cl::desc("Stop printing errors after N of them "
                                      "(default: 20; 0: no limit)"),
                             cl::value_desc("n"), cl::init(20),
                             cl::cat(attncCategory));
cl::opt<bool> timingOption("timing",
                           cl::desc("Print the time of every MLIR pass, and "
                                    "of LLVM's optimisation and code "
                                    "generation (-time-passes: of each LLVM "
                                    "pass)"),
                           cl::cat(attncCategory));

/// The overview `--help` starts with.
std::string overview() {
  return llvm::formatv(
             R"(attnc: ahead-of-time compiler for Transformer models

Commands:
  attnc check   MODEL.tfm                   parse and verify; prints diagnostics
  attnc emit    MODEL.tfm [--stage S] [-o F]
                print one stage of the pipeline (default: attn-opt):
                {0}
  attnc compile MODEL.tfm -o NAME.o         object file + C header
  attnc build   MODEL.tfm -o NAME           standalone executable
  (an .mlir file of attn IR is accepted instead of a .tfm model)

Exit status: 0 on success, 1 on an error in the input, 2 on bad usage.
)",
             attn::allStageNames())
      .str();
}

int usageError(const llvm::Twine &message) {
  llvm::errs() << "attnc: error: " << message << "\n";
  return kUsageError;
}

/// Whether `path` (an output named on the command line) can be written,
/// checked before the compile so that a missing or read-only directory is
/// one line naming the file, not the linker's error after the whole work.
LogicalResult checkWritable(llvm::StringRef path) {
  if (path.empty() || path == "-")
    return success();
  namespace fs = llvm::sys::fs;
  llvm::SmallString<128> directory(llvm::sys::path::parent_path(path));
  if (directory.empty())
    directory = ".";
  std::error_code ec;
  if (fs::is_directory(path))
    ec = std::make_error_code(std::errc::is_a_directory);
  else if (!fs::exists(directory))
    ec = std::make_error_code(std::errc::no_such_file_or_directory);
  else if (!fs::is_directory(directory))
    ec = std::make_error_code(std::errc::not_a_directory);
  else if (fs::exists(path))
    ec = fs::access(path, fs::AccessMode::Write);
  else
    ec = fs::access(directory, fs::AccessMode::Write);
  if (!ec)
    return success();
  llvm::errs() << "attnc: error: cannot write '" << path
               << "': " << ec.message() << "\n";
  return failure();
}

/// Writes `text` to `path` only once everything succeeded, so a failed run
/// never truncates the user's file ("-" or "" is standard output).
int writeOutput(llvm::StringRef path, llvm::StringRef text) {
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(path.empty() ? "-" : path, &error);
  if (!output) {
    llvm::errs() << "attnc: error: " << error << "\n";
    return kInputError;
  }
  output->os() << text;
  output->keep();
  return kSuccess;
}

/// Writes `text` as file NN-NAME of --dump-dir, numbered in the order the
/// stages are written.
LogicalResult dumpStage(llvm::StringRef name, llvm::StringRef extension,
                        llvm::StringRef text) {
  static int counter = 0;
  if (dumpDir.empty())
    return success();
  if (std::error_code ec = llvm::sys::fs::create_directories(dumpDir)) {
    llvm::errs() << "attnc: error: cannot create " << dumpDir << ": "
                 << ec.message() << "\n";
    return failure();
  }
  llvm::SmallString<128> path(dumpDir.getValue());
  llvm::sys::path::append(
      path, llvm::formatv("{0:2}-{1}.{2}", counter++, name, extension).str());
  std::replace(path.begin(), path.end(), ' ', '0');
  return success(writeOutput(path, text) == kSuccess);
}

std::string printModule(ModuleOp module);

/// --timing on a loaded machine: MLIR's report gives wall time, which other
/// processes inflate. This table sums the CPU time (user + system) of the
/// thread that runs each pass, by stage and pass (`PassCpuTimer` records it
/// for one pass manager), and is printed once at the end.
class PassCpuTimes {
public:
  void add(llvm::StringRef stage, llvm::StringRef pass, double seconds) {
    std::lock_guard<std::mutex> lock(mutex);
    times[(stage + ": " + pass).str()] += seconds;
  }

  /// Notes the process's peak memory so far, after `step`.
  void notePeakMemory(llvm::StringRef step) {
    std::lock_guard<std::mutex> lock(mutex);
    peaks.push_back({step.str(), peakMiB()});
  }

  static long peakMiB() {
    rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss / 1024;
  }

  /// Each stage's total, then the passes by decreasing CPU time.
  void print(llvm::raw_ostream &os) {
    std::lock_guard<std::mutex> lock(mutex);
    llvm::SmallVector<std::pair<std::string, double>> rows(times.begin(),
                                                           times.end());
    llvm::sort(rows, [](const auto &a, const auto &b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    double total = 0;
    std::map<std::string, double> byStage;
    for (const auto &[name, time] : rows) {
      total += time;
      byStage[llvm::StringRef(name).split(": ").first.str()] += time;
    }
    std::string rule = "===" + std::string(73, '-') + "===\n";
    os << rule
       << "      MLIR passes: CPU time (user + system) of the threads running "
          "them\n"
       << rule;
    os << llvm::formatv("  {0,8:f3} s  all passes\n", total);
    for (const auto &[stage, time] : byStage)
      os << llvm::formatv("  {0,8:f3} s  stage {1}\n", time, stage);
    for (const auto &[name, time] : rows)
      if (time >= 0.01)
        os << llvm::formatv("  {0,8:f3} s  {1}\n", time, name);
    os << "  peak memory so far (MiB):";
    for (const auto &[step, mib] : peaks)
      os << " " << step << " " << mib << ";";
    os << "\n";
  }

private:
  std::mutex mutex;
  std::map<std::string, double> times;
  std::vector<std::pair<std::string, long>> peaks;
};

/// Records the CPU time of each pass of one stage's pass manager. Pass
/// manager adaptors (nested pipelines) are left out: the passes they run
/// are counted themselves, on whichever thread runs them.
class PassCpuTimer : public PassInstrumentation {
public:
  PassCpuTimer(PassCpuTimes &table, llvm::StringRef stage)
      : table(table), stage(stage.str()) {}

  void runBeforePass(Pass *, Operation *) override {
    starts().push_back(threadCpuSeconds());
  }
  void runAfterPass(Pass *pass, Operation *) override { record(pass); }
  void runAfterPassFailed(Pass *pass, Operation *) override { record(pass); }

private:
  static double threadCpuSeconds() {
    timespec now;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return now.tv_sec + now.tv_nsec * 1e-9;
  }
  static llvm::SmallVector<double> &starts() {
    thread_local llvm::SmallVector<double> stack;
    return stack;
  }
  void record(Pass *pass) {
    double elapsed = threadCpuSeconds() - starts().pop_back_val();
    if (pass->getName().contains("OpToOpPassAdaptor"))
      return;
    llvm::StringRef name = pass->getArgument();
    table.add(stage, name.empty() ? pass->getName() : name, elapsed);
  }

  PassCpuTimes &table;
  std::string stage;
};

/// The CPU-time table of --timing; null without it.
PassCpuTimes *passCpuTimes = nullptr;

/// Whether the training entry points (<loss>_grad, train_step) are
/// derived: always, unless --entry names none of them.
bool wantsTraining() {
  if (weightsOption != "f32")
    return false;
  return entryOption.empty() ||
         llvm::any_of(entryOption, [](const std::string &name) {
           return attn::entry::isTrainingName(name);
         });
}

/// The fns whose gradient --entry asks for beside the loss's: `F` for each
/// `F_grad` the model does not define itself (read from the attn module,
/// before the pipeline adds gradient entry points).
std::vector<std::string> gradFnsOfEntries(ModuleOp module) {
  std::vector<std::string> fns;
  for (llvm::StringRef name : entryOption)
    if (name.ends_with(attn::entry::kGradSuffix) &&
        !module.lookupSymbol(name))
      fns.push_back(
          name.drop_back(attn::entry::kGradSuffix.size()).str());
  return fns;
}

/// gradFnsOfEntries of the module being compiled.
std::vector<std::string> requestedGradFns;

/// Runs the pipeline from stage `from` to `to` on `module`, one stage at a
/// time so that --dump-dir sees each.
LogicalResult runPipeline(ModuleOp module, attn::Stage from, attn::Stage to,
                          MLIRContext &context) {
  for (auto stage = static_cast<int>(from) + 1; stage <= static_cast<int>(to);
       ++stage) {
    auto next = static_cast<attn::Stage>(stage);
    PassManager pm(&context);
    if (failed(applyPassManagerCLOptions(pm)))
      return failure();
    // Verifying the whole module after each of the ~60 passes took 10 % of
    // a compile; once per stage still stops a broken pass before the next
    // stage (--verify-each finds which pass).
    pm.enableVerifier(verifyEach);
    DefaultTimingManager timing;
    applyDefaultTimingManagerCLOptions(timing);
    if (timingOption)
      timing.setEnabled(true);
    TimingScope timingScope = timing.getRootScope();
    pm.enableTiming(timingScope);
    if (passCpuTimes) {
      pm.addInstrumentation(
          std::make_unique<PassCpuTimer>(*passCpuTimes, attn::stageName(next)));
    }
    if (printIRAfterAll || !printIRAfter.empty())
      pm.enableIRPrinting(
          /*shouldPrintBeforePass=*/[](Pass *, Operation *) { return false; },
          /*shouldPrintAfterPass=*/
          [](Pass *pass, Operation *) {
            return printIRAfterAll ||
                   llvm::is_contained(printIRAfter, pass->getArgument());
          },
          /*printModuleScope=*/false, /*printAfterOnlyOnChange=*/false);
    // The stage-by-stage runs see where the whole run goes: the training
    // entries' forward pass is kept at attn-opt for attn-grad.
    attn::PipelineOptions options{next};
    options.target = targetOption;
    options.precision = precisionOption;
    options.amx = amxOption;
    options.training = wantsTraining() && to >= attn::Stage::AttnGrad;
    options.gradFns = requestedGradFns;
    attn::buildAttnPipeline(pm, options, static_cast<attn::Stage>(stage - 1));
    if (failed(pm.run(module)))
      return failure();
    if (!verifyEach && failed(verify(module))) {
      module.emitError() << "invalid IR after the " << attn::stageName(next)
                         << " stage (--verify-each finds the pass)";
      return failure();
    }
    if (passCpuTimes)
      passCpuTimes->notePeakMemory(attn::stageName(next));
    if (failed(dumpStage(attn::stageName(next), "mlir", printModule(module))))
      return failure();
  }
  return success();
}

/// --weights bf16|int8: the products of the entry points read the
/// runtime's low-precision copy of their weights (attn-quantize-weights),
/// before the model's metadata, which describes that copy, is read.
LogicalResult quantizeWeights(ModuleOp module) {
  if (weightsOption == "f32")
    return success();
  attn::AttnQuantizeWeightsOptions quantize;
  quantize.format = weightsOption;
  PassManager pm(module.getContext());
  pm.addPass(attn::createAttnQuantizeWeights(quantize));
  return pm.run(module);
}

/// --entry: keeps only the entry points named and those they call
/// (attn-select-entry-points). Fails with a usage message naming the entry
/// points there are when a name is not one of them.
LogicalResult selectEntryPoints(ModuleOp module) {
  if (entryOption.empty())
    return success();
  attn::AttnSelectEntryPointsOptions select;
  select.entries.assign(entryOption.begin(), entryOption.end());
  PassManager pm(module.getContext());
  pm.addPass(attn::createAttnSelectEntryPoints(select));
  std::string message;
  ScopedDiagnosticHandler capture(module.getContext(), [&](Diagnostic &d) {
    message = d.str();
    return success();
  });
  if (succeeded(pm.run(module)))
    return success();
  usageError("--entry: " + message);
  return failure();
}

std::string printModule(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os);
  return text;
}

/// Lowers an attn module to LLVM IR with its model metadata, not optimised
/// yet.
std::unique_ptr<llvm::Module> lowerToLLVM(ModuleOp module, MLIRContext &context,
                                          llvm::LLVMContext &llvmContext,
                                          const attn::CodegenOptions &options,
                                          attn::ModelInfo &info, int &status) {
  status = kInputError;
  if (failed(runPipeline(module, attn::Stage::Attn, attn::Stage::AttnGrad,
                         context)))
    return nullptr;
  if (failed(selectEntryPoints(module))) {
    status = kUsageError;
    return nullptr;
  }
  if (failed(quantizeWeights(module)))
    return nullptr;
  FailureOr<attn::ModelInfo> collected = attn::collectModelInfo(module);
  if (failed(collected))
    return nullptr;
  info = std::move(*collected);
  info.target = options.target;
  info.precision = precisionOption == "bf16"   ? ATTN_PRECISION_BF16
                   : precisionOption == "tf32" ? ATTN_PRECISION_TF32
                                               : ATTN_PRECISION_F32;
  attn::PipelineOptions pipeline;
  pipeline.target = options.target;
  pipeline.precision = precisionOption;
  pipeline.amx = amxOption;
  switch (attn::cpuCostModel(pipeline).bf16Kernel) {
  case attn::CpuCostModel::Bf16Kernel::Vectors:
    info.amxTiles = ATTN_AMX_OFF;
    break;
  case attn::CpuCostModel::Bf16Kernel::AmxTiles:
    info.amxTiles = ATTN_AMX_TILES;
    break;
  case attn::CpuCostModel::Bf16Kernel::EmulatedAmxTiles:
    info.amxTiles = ATTN_AMX_EMULATED;
    break;
  }
  if (info.weightFormat == ATTN_WEIGHTS_INT8 &&
      attn::vectorTargetFor(options.target).int16Dot)
    info.int8RowBits = 16;
  if (failed(runPipeline(module, attn::Stage::AttnGrad, attn::Stage::Loops,
                         context)))
    return nullptr;
  attn::collectArenaSizes(module, info);
  if (failed(runPipeline(module, attn::Stage::Loops, attn::Stage::LLVMMLIR,
                         context)))
    return nullptr;
  std::unique_ptr<llvm::Module> llvmModule =
      attn::translateToLLVMIR(module, info, options, llvmContext);
  if (passCpuTimes)
    passCpuTimes->notePeakMemory("llvm");
  return llvmModule;
}

/// Runs LLVM's optimisation pipeline on the whole module (the `llvm` stage,
/// which --dump-dir writes).
int optimizeWhole(llvm::Module &module, const attn::CodegenOptions &options) {
  std::string error;
  if (failed(attn::optimizeLLVMModule(module, options, error))) {
    llvm::errs() << "attnc: error: " << error << "\n";
    return kInputError;
  }
  if (!dumpDir.empty()) {
    std::string text;
    llvm::raw_string_ostream os(text);
    module.print(os, nullptr);
    if (failed(dumpStage("llvm", "ll", text)))
      return kInputError;
  }
  return kSuccess;
}

/// The threads --jobs asks for: the CPUs there are by default; one with
/// --dump-dir (which writes the whole optimised module) or without a C
/// compiler driver to join the parts.
unsigned codegenJobs() {
  // The parts are joined by the C compiler driver (`cc -r`).
  if (!dumpDir.empty() || !attn::findCompilerDriver())
    return 1;
  if (jobsOption > 0)
    return jobsOption;
  return std::max(1u, std::thread::hardware_concurrency());
}

/// Writes the object (or assembly) of `module` (optimised) to `path`.
int writeMachineCode(llvm::Module &module, const attn::CodegenOptions &options,
                     bool assembly, llvm::StringRef path) {
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(path.empty() ? "-" : path, &error);
  if (!output) {
    llvm::errs() << "attnc: error: " << error << "\n";
    return kInputError;
  }
  if (failed(attn::emitMachineCode(module, options, assembly, output->os(),
                                   error))) {
    llvm::errs() << "attnc: error: " << error << "\n";
    return kInputError;
  }
  if (passCpuTimes)
    passCpuTimes->notePeakMemory(assembly ? "asm" : "object");
  output->keep();
  return kSuccess;
}

/// Writes the object of `module` (not optimised yet) to `path`: optimised
/// and compiled on codegenJobs() threads, the parts linked into one
/// relocatable object.
int writeObject(std::unique_ptr<llvm::Module> module,
                const attn::CodegenOptions &options, llvm::StringRef modelName,
                llvm::StringRef path) {
  unsigned jobs = codegenJobs();
  // Standard output gets the one-thread object (the parts are joined into
  // a file).
  if (jobs <= 1 || path.empty() || path == "-") {
    if (int status = optimizeWhole(*module, options))
      return status;
    return writeMachineCode(*module, options, /*assembly=*/false, path);
  }
  std::optional<llvm::Timer> timer;
  if (options.timers) {
    timer.emplace("parallel",
                  llvm::formatv("LLVM optimisation and code generation on {0} "
                                "threads",
                                jobs)
                      .str(),
                  *options.timers);
    timer->startTimer();
  }
  std::string error;
  FailureOr<llvm::SmallVector<llvm::SmallVector<char, 0>>> objects =
      attn::compileToObjects(std::move(module), options, jobs, modelName,
                             error);
  if (timer)
    timer->stopTimer();
  if (failed(objects)) {
    llvm::errs() << "attnc: error: " << error << "\n";
    return kInputError;
  }
  if (passCpuTimes)
    passCpuTimes->notePeakMemory("object");
  // Each part in a temporary file, then `cc -r` into `path`.
  llvm::SmallVector<std::string> partPaths;
  llvm::SmallVector<llvm::FileRemover> removers;
  removers.reserve(objects->size());
  for (llvm::SmallVector<char, 0> &object : *objects) {
    llvm::SmallString<128> partPath;
    int fd;
    if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
            "attnc-part", "o", fd, partPath)) {
      llvm::errs() << "attnc: error: cannot create a temporary file: "
                   << ec.message() << "\n";
      return kInputError;
    }
    removers.emplace_back(partPath);
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os.write(object.data(), object.size());
    os.close();
    if (os.has_error()) {
      llvm::errs() << "attnc: error: cannot write " << partPath << "\n";
      return kInputError;
    }
    partPaths.push_back(std::string(partPath));
  }
  if (failed(attn::linkRelocatable(partPaths, path, error))) {
    llvm::errs() << "attnc: error: " << error << "\n";
    return kInputError;
  }
  return kSuccess;
}

/// The C header `compile` writes: --header, else the object's name with .h.
std::string headerPath() {
  if (!headerFilename.empty())
    return headerFilename;
  llvm::SmallString<128> path(outputFilename.getValue());
  llvm::sys::path::replace_extension(path, "h");
  return std::string(path);
}

/// `--stage ptx`: the device code of each kernel module, as the driver's
/// JIT will read it (the objects of llvm-mlir's `gpu.binary` ops).
std::string kernelAssembly(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.walk([&](gpu::BinaryOp binary) {
    for (Attribute attr : binary.getObjectsAttr()) {
      auto object = cast<gpu::ObjectAttr>(attr);
      os << "// kernel module @" << binary.getSymName() << "\n"
         << object.getObject().getValue() << "\n";
    }
  });
  return text;
}

/// Carries out the command on a verified attn module.
int runOnModule(ModuleOp module, llvm::StringRef command, attn::Stage stage,
                MLIRContext &context) {
  requestedGradFns = gradFnsOfEntries(module);
  attn::CodegenOptions options;
  options.target = targetOption;
  options.optLevel = optLevel;
  if (failed(dumpStage("attn", "mlir", printModule(module))))
    return kInputError;
  bool ptx = stage == attn::Stage::Ptx;
  if (ptx && !attn::cudaChip(targetOption)) {
    usageError("--stage ptx needs a GPU target (--target cuda)");
    return kUsageError;
  }
  if (command == "emit" && (stage <= attn::Stage::LLVMMLIR || ptx)) {
    if (ptx)
      stage = attn::Stage::LLVMMLIR;
    if (stage <= attn::Stage::AttnOpt) {
      if (failed(runPipeline(module, attn::Stage::Attn, stage, context)))
        return kInputError;
    } else {
      if (failed(runPipeline(module, attn::Stage::Attn, attn::Stage::AttnGrad,
                             context)))
        return kInputError;
      if (failed(selectEntryPoints(module)))
        return kUsageError;
      if (failed(quantizeWeights(module)))
        return kInputError;
      if (failed(runPipeline(module, attn::Stage::AttnGrad, stage, context)))
        return kInputError;
    }
    return writeOutput(outputFilename,
                       ptx ? kernelAssembly(module) : printModule(module));
  }
  options.withMain = command == "build";
  // --timing: the LLVM half in one report (user, system and wall time),
  // printed when this function returns.
  std::optional<llvm::TimerGroup> llvmTimers;
  if (timingOption) {
    llvmTimers.emplace("attnc-llvm", "LLVM: translation, optimisation, code "
                                     "generation");
    options.timers = &*llvmTimers;
  }
  llvm::LLVMContext llvmContext;
  attn::ModelInfo info;
  int status;
  std::unique_ptr<llvm::Module> llvmModule =
      lowerToLLVM(module, context, llvmContext, options, info, status);
  if (!llvmModule)
    return status;
  if (command == "emit") {
    if (int status = optimizeWhole(*llvmModule, options))
      return status;
    if (stage == attn::Stage::LLVMIR) {
      std::string text;
      llvm::raw_string_ostream os(text);
      llvmModule->print(os, nullptr);
      return writeOutput(outputFilename, text);
    }
    return writeMachineCode(*llvmModule, options, /*assembly=*/true,
                            outputFilename);
  }
  if (command == "compile") {
    std::string header = headerPath();
    if (int status = writeObject(std::move(llvmModule), options, info.name,
                                 outputFilename))
      return status;
    return writeOutput(header, attn::emitHeader(info, inputFilename));
  }
  // build: an object in a temporary file, linked with the runtime.
  llvm::SmallString<128> objectPath;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("attnc", "o", objectPath)) {
    llvm::errs() << "attnc: error: cannot create a temporary file: "
                 << ec.message() << "\n";
    return kInputError;
  }
  llvm::FileRemover removeObject(objectPath);
  if (int status =
          writeObject(std::move(llvmModule), options, info.name, objectPath))
    return status;
  std::string error;
  if (failed(attn::linkExecutable(objectPath, outputFilename, error))) {
    llvm::errs() << "attnc: error: " << error << "\n";
    return kInputError;
  }
  return kSuccess;
}

/// The arguments of the passes attnc's pipeline runs for --target, nested
/// pass managers included, read from the pipeline's textual form: a name
/// followed by `(` anchors a nested pass manager, `{...}` holds options.
llvm::SmallVector<std::string> pipelinePassNames(MLIRContext &context) {
  PassManager pm(&context);
  attn::PipelineOptions options{attn::Stage::LLVMMLIR};
  options.target = targetOption;
  options.precision = precisionOption;
  options.amx = amxOption;
  options.training = true;
  attn::buildAttnPipeline(pm, options);
  std::string text;
  llvm::raw_string_ostream os(text);
  pm.printAsTextualPipeline(os);
  llvm::SmallVector<std::string> names;
  std::string token;
  int braces = 0;
  for (char c : text) {
    if (c == '{' || c == '}') {
      braces += c == '{' ? 1 : -1;
      continue;
    }
    if (braces > 0)
      continue;
    if (c != '(' && c != ')' && c != ',') {
      token += c;
      continue;
    }
    llvm::StringRef name = llvm::StringRef(token).trim();
    if (c != '(' && !name.empty() && !llvm::is_contained(names, name))
      names.push_back(name.str());
    token.clear();
  }
  return names;
}

/// The name among `candidates` closest to `name`, if one is within a third
/// of its length in edits (a typo, not another word).
std::optional<std::string> closestName(llvm::StringRef name,
                                       llvm::ArrayRef<std::string> candidates) {
  unsigned limit = std::max<unsigned>(1, name.size() / 3);
  std::optional<std::string> best;
  unsigned bestDistance = limit + 1;
  for (llvm::StringRef candidate : candidates) {
    unsigned distance =
        name.edit_distance(candidate, /*AllowReplacements=*/true,
                           /*MaxEditDistance=*/limit);
    if (distance < bestDistance) {
      bestDistance = distance;
      best = candidate.str();
    }
  }
  return best;
}

/// --print-ir-after: a name that is not a pass of the pipeline would print
/// nothing, so it is a usage error (with the closest pass name for a typo).
LogicalResult checkPrintIRAfter(MLIRContext &context) {
  if (printIRAfter.empty())
    return success();
  llvm::SmallVector<std::string> names = pipelinePassNames(context);
  for (const std::string &name : printIRAfter) {
    if (llvm::is_contained(names, name))
      continue;
    if (PassInfo::lookup(name)) {
      usageError("--print-ir-after: pass '" + name +
                 "' does not run in attnc's pipeline (--target " +
                 targetOption + ")");
      return failure();
    }
    std::string message = "--print-ir-after: unknown pass '" + name + "'";
    if (std::optional<std::string> suggestion = closestName(name, names))
      message += "; did you mean '" + *suggestion + "'?";
    usageError(message);
    return failure();
  }
  return success();
}

/// Parses `.tfm` input and handles the frontend-only stages; the module
/// otherwise, or null with `status` set.
OwningOpRef<ModuleOp> loadModel(llvm::SourceMgr &sourceMgr,
                                MLIRContext &context, llvm::StringRef command,
                                attn::Stage stage, int &status) {
  bool emit = command == "emit";
  status = kSuccess;
  if (emit && stage == attn::Stage::Tokens) {
    std::string text;
    llvm::raw_string_ostream os(text);
    status = failed(attn::frontend::emitTokens(sourceMgr, context, os))
                 ? kInputError
                 : writeOutput(outputFilename, text);
    return nullptr;
  }
  std::unique_ptr<attn::ast::Program> program =
      attn::frontend::parseProgram(sourceMgr, context);
  if (!program) {
    status = kInputError;
    return nullptr;
  }
  // A file of blocks only is a library for other files to import: it
  // checks clean, but has no model to emit.
  bool hasModel =
      llvm::any_of(program->getMainFile().getDecls(), [](const auto &decl) {
        return isa<attn::ast::ModelDecl>(decl.get());
      });
  if (command == "check" && !hasModel)
    return nullptr;
  if (emit && stage == attn::Stage::AST) {
    std::string text;
    llvm::raw_string_ostream os(text);
    attn::frontend::printAST(*program, os);
    status = writeOutput(outputFilename, text);
    return nullptr;
  }
  OwningOpRef<ModuleOp> module = attn::generateModule(*program, context);
  if (!module) {
    status = kInputError;
    return nullptr;
  }
  if (emit && stage == attn::Stage::Params) {
    std::string text;
    llvm::raw_string_ostream os(text);
    attn::printParameterTable(*module, os);
    status = writeOutput(outputFilename, text);
    return nullptr;
  }
  return module;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  // Pass names, for --mlir-print-ir-after=PASS and friends.
  attn::registerAllPasses();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  registerAsmPrinterCLOptions();
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "attnc " << ATTN_VERSION << " (LLVM/MLIR " << LLVM_VERSION_STRING
       << ")\n";
  });
  // --help lists attnc's own options; --help-hidden everything (MLIR's
  // --mlir-* options and LLVM's code generation flags work too).
  cl::HideUnrelatedOptions(attncCategory);
  if (!cl::ParseCommandLineOptions(argc, argv, overview(), &llvm::errs()))
    return kUsageError;

  llvm::StringRef command = commandName;
  if (command.empty()) {
    llvm::errs() << overview() << "\nOptions: attnc --help\n";
    return kUsageError;
  }
  if (!llvm::is_contained({"check", "emit", "compile", "build"}, command))
    return usageError("unknown command '" + command +
                      "'; expected check, emit, compile or build (see attnc "
                      "--help)");
  if (inputFilename.empty())
    return usageError(command + " needs an input file: attnc " + command +
                      " MODEL.tfm");
  std::optional<attn::Stage> stage = attn::parseStage(stageOption);
  if (!stage)
    return usageError("unknown stage '" + stageOption + "'; expected one of " +
                      attn::allStageNames());
  if (!attn::isKnownTarget(targetOption))
    return usageError("unknown target '" + targetOption +
                      "'; expected host, an x86-64 CPU with AVX2 and FMA as "
                      "LLVM names it (x86-64-v3, x86-64-v4, znver3, znver4, "
                      "sapphirerapids, ...), cuda, cuda-sm_80 or cuda-sm_90");
  if (!attn::parseWeightFormat(weightsOption))
    return usageError("unknown weight format '" + weightsOption +
                      "'; expected f32, bf16 or int8");
  if (precisionOption != "f32" && precisionOption != "bf16" &&
      precisionOption != "tf32")
    return usageError("unknown precision '" + precisionOption +
                      "'; expected f32, bf16 or tf32");
  if (precisionOption == "tf32" && !attn::mapsLoopsForGpu(targetOption))
    return usageError("--precision tf32 is for GPU targets (tensor cores); "
                      "--target " + targetOption +
                      " computes its products in f32 or bf16");
  if (precisionOption == "bf16" && attn::mapsLoopsForGpu(targetOption))
    return usageError("--precision bf16 is for CPU targets; --target " +
                      targetOption + " computes its products in f32 or tf32");
  if (precisionOption == "bf16" && amxOption != "emulate" &&
      attn::isKnownTarget(targetOption) && !attn::hasBf16Dot(targetOption))
    return usageError("--precision bf16 needs a CPU with AVX512-BF16 "
                      "(znver4, sapphirerapids, ...); --target " +
                      targetOption + " has none");
  if (amxOption != "auto" && amxOption != "off" && amxOption != "emulate")
    return usageError("unknown --amx '" + amxOption +
                      "'; expected auto, off or emulate");
  if (amxOption == "emulate" && attn::isKnownTarget(targetOption) &&
      attn::vectorTargetFor(targetOption).lanes != 16)
    return usageError("--amx emulate needs an AVX-512 CPU; --target " +
                      targetOption + " has none");
  if (amxOption != "auto" && precisionOption != "bf16")
    return usageError("--amx " + amxOption +
                      " chooses where --precision bf16 multiplies; this "
                      "build's precision is " + precisionOption);
  if (weightsOption != "f32" && attn::cudaChip(targetOption))
    return usageError("--weights " + weightsOption +
                      " is for CPU targets; --target " + targetOption +
                      " reads f32 weights");
  if (weightsOption != "f32" &&
      llvm::any_of(entryOption, [](const std::string &name) {
        return attn::entry::isTrainingName(name);
      }))
    return usageError("--weights " + weightsOption +
                      " builds inference entry points only; --entry " +
                      "names a training entry point (train with --weights "
                      "f32)");
  if (optLevel > 3)
    return usageError("optimisation level -O" +
                      llvm::Twine(optLevel.getValue()) +
                      " is not one of -O0 to -O3");
  if ((command == "build" || command == "compile") && outputFilename.empty())
    return usageError(command + " needs an output file: -o NAME");
  if (command == "compile" && headerPath() == outputFilename)
    return usageError("the header would overwrite the object " +
                      outputFilename + "; give --header");
  if (failed(checkWritable(outputFilename)) ||
      (command == "compile" && failed(checkWritable(headerPath()))))
    return kInputError;

  std::string error;
  // build's libraries are looked up before the compile, like its output, so
  // a missing runtime is not reported after all the work.
  attn::RuntimeLibraries libraries;
  if (command == "build" &&
      failed(attn::findRuntimeLibraries(libraries, error))) {
    llvm::errs() << "attnc: error: " << error << "\n";
    return kInputError;
  }

  std::unique_ptr<llvm::MemoryBuffer> input =
      openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << "attnc: error: " << error << "\n";
    return kInputError;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());

  DialectRegistry registry;
  attn::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // A model's errors point at its source; a dump of the IR they arose in
  // says nothing to its author (--mlir-print-op-on-diagnostic brings it).
  context.printOpOnDiagnostic(false);
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  // --error-limit: a file that is no model at all (a text corpus) gives a
  // screenful of errors, not one per line. Registered after the printing
  // handler, this one sees each diagnostic first and swallows the errors
  // past the limit (with their notes).
  unsigned errors = 0;
  ScopedDiagnosticHandler limitErrors(&context, [&](Diagnostic &diagnostic) {
    if (diagnostic.getSeverity() != DiagnosticSeverity::Error ||
        errorLimit == 0 || ++errors <= errorLimit)
      return failure();
    if (errors == errorLimit + 1)
      llvm::errs() << "attnc: error: too many errors emitted, stopping now "
                      "[--error-limit N]\n";
    return success();
  });
  if (failed(checkPrintIRAfter(context)))
    return kUsageError;

  OwningOpRef<ModuleOp> module;
  if (llvm::StringRef(inputFilename).ends_with(".mlir")) {
    if (command == "emit" && *stage < attn::Stage::Attn)
      return usageError("stage '" + stageOption + "' needs a .tfm model");
    module = parseSourceFile<ModuleOp>(sourceMgr, &context);
    if (!module)
      return kInputError;
  } else {
    int status;
    module = loadModel(sourceMgr, context, command, *stage, status);
    if (!module)
      return status;
  }
  if (command == "check")
    return kSuccess;
  PassCpuTimes cpuTimes;
  if (timingOption)
    passCpuTimes = &cpuTimes;
  int status = runOnModule(*module, command, *stage, context);
  if (timingOption) {
    cpuTimes.print(llvm::errs());
    rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    auto seconds = [](const timeval &t) { return t.tv_sec + t.tv_usec * 1e-6; };
    llvm::errs() << llvm::formatv(
        "  {0,8:f3} s  attnc in all (user + system; peak memory {1} MiB)\n",
        seconds(usage.ru_utime) + seconds(usage.ru_stime),
        PassCpuTimes::peakMiB());
  }
  return status;
}
