//===- Linker.cpp - Linking standalone executables ------------------------===//
//
// Finds libattncli and libattnrt next to attnc (build/lib or an install's
// lib/) and a C compiler driver, links into a temporary file and renames it
// into place.
//
//===----------------------------------------------------------------------===//

#include "Linker.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

using namespace mlir;

namespace attn {

/// A library of the runtime: $`envVar`, else ../lib/`fileName` relative to
/// the attnc executable.
static std::string findRuntimeLibrary(const char *envVar,
                                      llvm::StringRef fileName) {
  if (const char *path = std::getenv(envVar))
    return path;
  static int anchor;
  std::string exe = llvm::sys::fs::getMainExecutable("attnc", &anchor);
  llvm::SmallString<256> path(llvm::sys::path::parent_path(exe));
  llvm::sys::path::append(path, "..", "lib", fileName);
  return std::string(path);
}

std::optional<std::string> findCompilerDriver() {
  for (llvm::StringRef name : {"cc", "clang-22", "gcc", "clang"})
    if (llvm::ErrorOr<std::string> driver = llvm::sys::findProgramByName(name))
      return *driver;
  return std::nullopt;
}

/// Runs the C compiler driver with `args` (after the driver's name) and
/// `-o` a temporary file, renamed to `outputPath` on success.
static LogicalResult runDriver(llvm::ArrayRef<std::string> args,
                               llvm::StringRef outputPath,
                               std::string &error) {
  std::optional<std::string> driver = findCompilerDriver();
  if (!driver) {
    error = "cannot find a C compiler driver (cc, clang-22, gcc) to link with";
    return failure();
  }
  std::string temporary = (outputPath + ".attnc-tmp").str();
  llvm::SmallVector<llvm::StringRef> argv = {*driver};
  argv.append(args.begin(), args.end());
  argv.append({"-o", temporary});
  std::string message;
  int status = llvm::sys::ExecuteAndWait(*driver, argv, std::nullopt, {}, 0, 0,
                                         &message);
  if (status != 0) {
    llvm::sys::fs::remove(temporary);
    error = "linking " + outputPath.str() + " failed" +
            (message.empty() ? "" : ": " + message);
    return failure();
  }
  if (std::error_code ec = llvm::sys::fs::rename(temporary, outputPath)) {
    llvm::sys::fs::remove(temporary);
    error = "cannot write " + outputPath.str() + ": " + ec.message();
    return failure();
  }
  return success();
}

LogicalResult linkExecutable(llvm::StringRef objectPath,
                             llvm::StringRef outputPath, std::string &error) {
  // The object's `main` calls attn_main (libattncli), which calls into
  // libattnrt: the command line comes first for the static link.
  std::string cli = findRuntimeLibrary("ATTN_CLI_LIB", "libattncli.a");
  std::string runtime = findRuntimeLibrary("ATTN_RUNTIME_LIB", "libattnrt.a");
  if (!llvm::sys::fs::exists(runtime)) {
    error = "cannot find the runtime library " + runtime +
            " (set ATTN_RUNTIME_LIB to its path)";
    return failure();
  }
  if (!llvm::sys::fs::exists(cli)) {
    error = "cannot find the command-line library " + cli +
            " (set ATTN_CLI_LIB to its path)";
    return failure();
  }
  return runDriver({objectPath.str(), cli, runtime, "-lm", "-lpthread"},
                   outputPath, error);
}

LogicalResult linkRelocatable(llvm::ArrayRef<std::string> objectPaths,
                              llvm::StringRef outputPath, std::string &error) {
  llvm::SmallVector<std::string> args = {"-r", "-nostdlib"};
  args.append(objectPaths.begin(), objectPaths.end());
  return runDriver(args, outputPath, error);
}

} // namespace attn
