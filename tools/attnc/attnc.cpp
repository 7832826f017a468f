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

#include "attn/Frontend/AST.h"
#include "attn/Frontend/Frontend.h"
#include "attn/InitAll.h"
#include "attn/MLIRGen/MLIRGen.h"
#include "attn/Target/HeaderEmitter.h"
#include "attn/Target/ModelInfo.h"
#include "attn/Target/ObjectEmitter.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace cl = llvm::cl;

namespace {
enum ExitCode { kSuccess = 0, kInputError = 1, kUsageError = 2 };

cl::opt<std::string> commandName(cl::Positional, cl::desc("<command>"),
                                 cl::Required);
cl::opt<std::string> inputFilename(cl::Positional, cl::desc("<input file>"),
                                   cl::Required);
cl::opt<std::string> outputFilename("o", cl::desc("Output file (default: "
                                                  "standard output for emit)"),
                                    cl::value_desc("file"), cl::init(""));
cl::opt<std::string>
    stageOption("stage", cl::desc("Stage to print with `emit`: tokens, ast, "
                                  "params, attn, attn-opt, attn-grad, "
                                  "loops, llvm-mlir, llvm, asm"),
                cl::value_desc("stage"), cl::init("attn-opt"));
cl::opt<std::string> targetOption("target",
                                  cl::desc("Target CPU: host (default), "
                                           "x86-64-v3 (AVX2), x86-64-v4 "
                                           "(AVX-512)"),
                                  cl::value_desc("target"), cl::init("host"));
cl::opt<bool> trainingOption(
    "training",
    cl::desc("Derive the training entry points (<loss>_grad, train_step) in "
             "the lowering pipeline (the attn-grad stage; `emit --stage "
             "attn-grad` runs it regardless)"),
    cl::init(false));
cl::opt<unsigned> optLevel("O", cl::desc("LLVM optimisation level (0-3)"),
                           cl::Prefix, cl::init(3));
cl::opt<std::string> headerFilename("header",
                                    cl::desc("C header to write with "
                                             "`compile` (default: the object's "
                                             "name with .h)"),
                                    cl::value_desc("file"), cl::init(""));

const char *kOverview = R"(attnc: ahead-of-time compiler for Transformer models

Commands:
  attnc check   MODEL.tfm                   parse and verify; prints diagnostics
  attnc emit    MODEL.tfm --stage S [-o F]  print one stage of the pipeline:
                tokens, ast, params, attn, attn-opt, attn-grad, loops,
                llvm-mlir, llvm, asm
  attnc compile MODEL.tfm -o NAME.o         object file + C header
  attnc build   MODEL.tfm -o NAME           standalone executable
  (an .mlir file of attn IR is accepted instead of a .tfm model)

Exit status: 0 on success, 1 on an error in the input, 2 on bad usage.
)";

int usageError(const llvm::Twine &message) {
  llvm::errs() << "attnc: error: " << message << "\n";
  return kUsageError;
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

/// Runs the pipeline from the attn stage up to `stage` on `module`. The
/// attn-grad stage runs with --training, or when it is the stage emitted.
LogicalResult runPipeline(ModuleOp module, attn::Stage from, attn::Stage to,
                          MLIRContext &context, bool emitting = false) {
  PassManager pm(&context);
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  DefaultTimingManager timing;
  applyDefaultTimingManagerCLOptions(timing);
  TimingScope timingScope = timing.getRootScope();
  pm.enableTiming(timingScope);
  attn::PipelineOptions options{to};
  options.target = targetOption;
  options.training =
      trainingOption || (emitting && to == attn::Stage::AttnGrad);
  attn::buildAttnPipeline(pm, options, from);
  return pm.run(module);
}

std::string printModule(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os);
  return text;
}

/// Lowers an attn module to optimised LLVM IR with its model metadata.
std::unique_ptr<llvm::Module> lowerToLLVM(ModuleOp module, MLIRContext &context,
                                          llvm::LLVMContext &llvmContext,
                                          const attn::CodegenOptions &options,
                                          attn::ModelInfo &info) {
  if (failed(runPipeline(module, attn::Stage::Attn, attn::Stage::AttnGrad,
                         context)))
    return nullptr;
  FailureOr<attn::ModelInfo> collected = attn::collectModelInfo(module);
  if (failed(collected))
    return nullptr;
  info = std::move(*collected);
  info.target = options.target;
  if (failed(runPipeline(module, attn::Stage::AttnGrad, attn::Stage::LLVMMLIR,
                         context)))
    return nullptr;
  return attn::translateToLLVMIR(module, info, options, llvmContext);
}

/// Writes the object (or assembly) of `module` to `path`.
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
  output->keep();
  return kSuccess;
}

/// Carries out the command on a verified attn module.
int runOnModule(ModuleOp module, llvm::StringRef command, attn::Stage stage,
                MLIRContext &context) {
  attn::CodegenOptions options;
  options.target = targetOption;
  options.optLevel = optLevel;
  if (command == "emit" && stage <= attn::Stage::LLVMMLIR) {
    if (failed(runPipeline(module, attn::Stage::Attn, stage, context,
                           /*emitting=*/true)))
      return kInputError;
    return writeOutput(outputFilename, printModule(module));
  }
  options.withMain = command == "build";
  llvm::LLVMContext llvmContext;
  attn::ModelInfo info;
  std::unique_ptr<llvm::Module> llvmModule =
      lowerToLLVM(module, context, llvmContext, options, info);
  if (!llvmModule)
    return kInputError;
  if (command == "emit" && stage == attn::Stage::LLVMIR) {
    std::string text;
    llvm::raw_string_ostream os(text);
    llvmModule->print(os, nullptr);
    return writeOutput(outputFilename, text);
  }
  if (command == "emit")
    return writeMachineCode(*llvmModule, options, /*assembly=*/true,
                            outputFilename);
  if (command == "compile") {
    std::string header = headerFilename;
    if (header.empty()) {
      llvm::SmallString<128> path(outputFilename.getValue());
      llvm::sys::path::replace_extension(path, "h");
      header = std::string(path);
    }
    if (header == outputFilename)
      return usageError("the header would overwrite the object " + header +
                        "; give --header");
    if (int status = writeMachineCode(*llvmModule, options, false,
                                      outputFilename))
      return status;
    return writeOutput(header, attn::emitHeader(info, inputFilename));
  }
  // build: an object in a temporary file, linked with the runtime.
  llvm::SmallString<128> objectPath;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile("attnc", "o",
                                                              objectPath)) {
    llvm::errs() << "attnc: error: cannot create a temporary file: "
                 << ec.message() << "\n";
    return kInputError;
  }
  llvm::FileRemover removeObject(objectPath);
  if (int status = writeMachineCode(*llvmModule, options, false, objectPath))
    return status;
  std::string error;
  if (failed(attn::linkExecutable(objectPath, outputFilename, error))) {
    llvm::errs() << "attnc: error: " << error << "\n";
    return kInputError;
  }
  return kSuccess;
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
  bool hasModel = llvm::any_of(program->getMainFile().getDecls(),
                               [](const auto &decl) {
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
  if (!cl::ParseCommandLineOptions(argc, argv, kOverview, &llvm::errs()))
    return kUsageError;

  llvm::StringRef command = commandName;
  if (!llvm::is_contained({"check", "emit", "compile", "build"}, command))
    return usageError("unknown command '" + command +
                      "'; expected check, emit, compile or build (see attnc "
                      "--help)");
  std::optional<attn::Stage> stage = attn::parseStage(stageOption);
  if (!stage)
    return usageError("unknown stage '" + stageOption + "'; expected one of " +
                      attn::allStageNames());
  if (!attn::isKnownTarget(targetOption))
    return usageError("unknown target '" + targetOption +
                      "'; expected host, x86-64-v3 or x86-64-v4");
  if (optLevel > 3)
    return usageError("optimisation level -O" + llvm::Twine(optLevel.getValue()) +
                      " is not one of -O0 to -O3");
  if ((command == "build" || command == "compile") && outputFilename.empty())
    return usageError(command + " needs an output file: -o NAME");

  std::string error;
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
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);

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
  return runOnModule(*module, command, *stage, context);
}
