//===- attnc-fuzz.cpp - libFuzzer target of the .tfm frontend -------------===//
//
// Runs arbitrary bytes through what `attnc check` runs on a model: the lexer
// (as the token dump), the parser with import loading, and semantic analysis
// with IR generation and verification. Any crash, hang, leak or sanitizer
// report is a bug: every input must end in success or in diagnostics.
//
// Imports are confined to the working directory: the input is named
// `fuzz.tfm`, so its imports resolve against the directory the fuzzer runs
// in (`make fuzz` runs it in a fresh one holding a copy of
// test/Frontend/Inputs), and an input that imports an absolute path or a
// path with a `..` component only goes as far as the parser. The files that
// can be imported are thus a fixed, small set of regular files, and a run
// neither reads arbitrary files nor blocks on a device or a pipe.
//
//===----------------------------------------------------------------------===//

#include "attn/Frontend/AST.h"
#include "attn/Frontend/Diagnostics.h"
#include "attn/Frontend/Frontend.h"
#include "attn/Frontend/Lexer.h"
#include "attn/Frontend/Parser.h"
#include "attn/InitAll.h"
#include "attn/MLIRGen/MLIRGen.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>

using namespace mlir;
using namespace attn;

/// The name of the input's buffer: imports resolve against its directory,
/// the fuzzer's working directory.
static constexpr const char *kBufferName = "fuzz.tfm";

/// The context every input shares. Making one per input would cost more than
/// the frontend itself; what it keeps between inputs is uniqued attributes,
/// types and locations, which no later input can observe. No threads: the
/// fuzzer runs one input at a time and a thread pool would only slow it.
static MLIRContext &getContext() {
  static MLIRContext *context = [] {
    DialectRegistry registry;
    attn::registerAllDialects(registry);
    auto *context =
        new MLIRContext(registry, MLIRContext::Threading::DISABLED);
    context->loadAllAvailableDialects();
    return context;
  }();
  return *context;
}

/// Whether `path` could name a file outside the working directory.
static bool escapesWorkingDirectory(llvm::StringRef path) {
  if (llvm::sys::path::is_absolute(path))
    return true;
  return llvm::any_of(llvm::make_range(llvm::sys::path::begin(path),
                                       llvm::sys::path::end(path)),
                      [](llvm::StringRef part) { return part == ".."; });
}

/// Whether the main buffer imports only paths inside the working directory.
/// Parses it on its own, imports unfollowed, to read the paths as the loader
/// will (after escapes). The imported files, copies of the test inputs, only
/// import each other.
static bool importsStayInside(llvm::SourceMgr &sourceMgr,
                              MLIRContext &context) {
  frontend::SourceDiagnostics diags(sourceMgr, context);
  frontend::Lexer lexer(sourceMgr.getMainFileID(), diags);
  std::unique_ptr<ast::SourceFile> file = frontend::parseSourceFile(lexer);
  return llvm::none_of(file->getImports(), [](const auto &import) {
    return escapesWorkingDirectory(import->getPath());
  });
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  MLIRContext &context = getContext();
  // Diagnostics are the expected outcome of almost every input; swallowing
  // them keeps the fuzzer's output to its own status lines.
  ScopedDiagnosticHandler silence(&context,
                                  [](Diagnostic &) { return success(); });

  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(reinterpret_cast<const char *>(data), size),
          kBufferName),
      llvm::SMLoc());

  (void)frontend::emitTokens(sourceMgr, context, llvm::nulls());
  if (!importsStayInside(sourceMgr, context))
    return 0;
  std::unique_ptr<ast::Program> program =
      frontend::parseProgram(sourceMgr, context);
  if (!program)
    return 0;
  OwningOpRef<ModuleOp> module = generateModule(*program, context);
  return 0;
}
