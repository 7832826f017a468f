//===- attnc.cpp - The attnc compiler driver ------------------------------===//
//
// `attnc check|emit FILE`: reads a model (`.tfm`) or `attn` IR (`.mlir`),
// runs the pipeline up to the requested stage and prints it. Exit status: 0 on
// success, 1 on a diagnosed error in the input, 2 on bad command-line use.
//
//===----------------------------------------------------------------------===//

#include "attn/Frontend/AST.h"
#include "attn/Frontend/Frontend.h"
#include "attn/InitAll.h"
#include "attn/MLIRGen/MLIRGen.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
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
                                                  "standard output)"),
                                    cl::value_desc("file"), cl::init("-"));
cl::opt<std::string>
    stageOption("stage", cl::desc("Stage to print with `emit`: tokens, ast, "
                                  "params, attn, attn-opt, loops, "
                                  "llvm-mlir, llvm, asm"),
                cl::value_desc("stage"), cl::init("attn-opt"));

const char *kOverview = R"(attnc: ahead-of-time compiler for Transformer models

Commands:
  attnc check MODEL.tfm              parse and verify; prints diagnostics
  attnc emit  MODEL.tfm --stage S    print one stage of the pipeline
                                     (tokens, ast, params, attn, attn-opt)
  attnc emit  FILE.mlir --stage S    run attn IR through the pipeline to S

Exit status: 0 on success, 1 on an error in the input, 2 on bad usage.
)";

/// Writes `text` to the output file only once everything succeeded, so a
/// failed run never truncates the user's file.
int writeOutput(llvm::StringRef text) {
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << "attnc: error: " << error << "\n";
    return kInputError;
  }
  output->os() << text;
  output->keep();
  return kSuccess;
}

/// Runs the pipeline on a verified `attn` module up to `stage` and prints it.
int emitModule(ModuleOp module, attn::Stage stage, MLIRContext &context) {
  PassManager pm(&context);
  if (failed(applyPassManagerCLOptions(pm)))
    return kUsageError;
  DefaultTimingManager timing;
  applyDefaultTimingManagerCLOptions(timing);
  TimingScope timingScope = timing.getRootScope();
  pm.enableTiming(timingScope);
  attn::buildAttnPipeline(pm, attn::PipelineOptions{stage});
  if (failed(pm.run(module)))
    return kInputError;
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os);
  return writeOutput(text);
}

/// Handles `.mlir` input: `attn` IR entering the pipeline at the attn stage.
int runOnMLIR(llvm::SourceMgr &sourceMgr, MLIRContext &context,
              attn::Stage stage, bool emit) {
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return kInputError;
  if (!emit)
    return kSuccess;
  if (stage < attn::Stage::Attn || stage == attn::Stage::Params) {
    llvm::errs() << "attnc: error: stage '" << attn::stageName(stage)
                 << "' needs a .tfm model as input\n";
    return kUsageError;
  }
  return emitModule(*module, stage, context);
}

/// Handles `.tfm` input through the frontend.
int runOnModel(llvm::SourceMgr &sourceMgr, MLIRContext &context,
               attn::Stage stage, bool emit) {
  if (emit && stage == attn::Stage::Tokens) {
    std::string text;
    llvm::raw_string_ostream os(text);
    if (failed(attn::frontend::emitTokens(sourceMgr, context, os)))
      return kInputError;
    return writeOutput(text);
  }
  std::unique_ptr<attn::ast::Program> program =
      attn::frontend::parseProgram(sourceMgr, context);
  if (!program)
    return kInputError;
  // A file of blocks only is a library for other files to import: it
  // checks clean, but has no model to emit.
  bool hasModel = llvm::any_of(program->getMainFile().getDecls(),
                               [](const auto &decl) {
                                 return isa<attn::ast::ModelDecl>(decl.get());
                               });
  if (!emit && !hasModel)
    return kSuccess;
  if (emit && stage == attn::Stage::AST) {
    std::string text;
    llvm::raw_string_ostream os(text);
    attn::frontend::printAST(*program, os);
    return writeOutput(text);
  }
  OwningOpRef<ModuleOp> module = attn::generateModule(*program, context);
  if (!module)
    return kInputError;
  if (!emit)
    return kSuccess;
  if (stage == attn::Stage::Params) {
    std::string text;
    llvm::raw_string_ostream os(text);
    attn::printParameterTable(*module, os);
    return writeOutput(text);
  }
  return emitModule(*module, stage, context);
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
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

  bool emit = commandName == "emit";
  if (!emit && commandName != "check") {
    llvm::errs() << "attnc: error: unknown command '" << commandName
                 << "'; expected check or emit (see attnc --help)\n";
    return kUsageError;
  }
  std::optional<attn::Stage> stage = attn::parseStage(stageOption);
  if (!stage) {
    llvm::errs() << "attnc: error: unknown stage '" << stageOption
                 << "'; expected one of " << attn::allStageNames() << "\n";
    return kUsageError;
  }
  if (emit && !attn::isStageImplemented(*stage)) {
    llvm::errs() << "attnc: error: stage '" << stageOption
                 << "' is not implemented yet (code generation is not "
                    "built)\n";
    return kUsageError;
  }

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

  if (llvm::StringRef(inputFilename).ends_with(".mlir"))
    return runOnMLIR(sourceMgr, context, *stage, emit);
  return runOnModel(sourceMgr, context, *stage, emit);
}
