//===- Linker.cpp - Linking standalone executables ------------------------===//
//
// Finds libattncli and libattnrt relative to the attnc executable (beside
// it, or in ../lib: build/lib in a build tree, PREFIX/lib in an install) and
// a C compiler driver, links into a temporary file and renames it into
// place.
//
//===----------------------------------------------------------------------===//

#include "Linker.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

using namespace mlir;

namespace attn {

/// The path of the runtime library `fileName`: the one $`envVar` names
/// when set (an explicit choice wins), else the first that exists of
/// `fileName` beside the attnc executable and in ../lib from it. The
/// executable's path has its symbolic links resolved, so a link to attnc
/// elsewhere on PATH still finds the install it belongs to.
static FailureOr<std::string> findRuntimeLibrary(const char *envVar,
                                                 llvm::StringRef fileName,
                                                 llvm::StringRef what,
                                                 std::string &error) {
  const char *named = std::getenv(envVar);
  if (named && *named) {
    if (llvm::sys::fs::exists(named))
      return std::string(named);
    error = ("cannot find the " + what + " '" + named + "' that " + envVar +
             " names")
                .str();
    return failure();
  }
  static int anchor;
  std::string exe = llvm::sys::fs::getMainExecutable("attnc", &anchor);
  llvm::SmallString<256> beside(llvm::sys::path::parent_path(exe));
  llvm::SmallString<256> lib(llvm::sys::path::parent_path(beside));
  llvm::sys::path::append(lib, "lib");
  for (llvm::StringRef directory : {beside.str(), lib.str()}) {
    llvm::SmallString<256> path(directory);
    llvm::sys::path::append(path, fileName);
    if (llvm::sys::fs::exists(path))
      return std::string(path);
  }
  error = ("cannot find the " + what + " " + fileName + " in " + beside +
           " or " + lib + " (set " + envVar + " to its path)")
              .str();
  return failure();
}

LogicalResult findRuntimeLibraries(RuntimeLibraries &libraries,
                                   std::string &error) {
  FailureOr<std::string> runtime = findRuntimeLibrary(
      "ATTN_RUNTIME_LIB", "libattnrt.a", "runtime library", error);
  if (failed(runtime))
    return failure();
  FailureOr<std::string> cli = findRuntimeLibrary(
      "ATTN_CLI_LIB", "libattncli.a", "command-line library", error);
  if (failed(cli))
    return failure();
  libraries = {*cli, *runtime};
  return success();
}

std::optional<std::string> findCompilerDriver() {
  for (llvm::StringRef name : {"cc", "clang-22", "gcc", "clang"})
    if (llvm::ErrorOr<std::string> driver = llvm::sys::findProgramByName(name))
      return *driver;
  return std::nullopt;
}

/// `line` without the linker's path in front (`/usr/bin/ld: `): what a user
/// needs to read, not which program said it.
static llvm::StringRef withoutToolName(llvm::StringRef line) {
  auto [tool, rest] = line.split(':');
  llvm::StringRef name = llvm::sys::path::filename(tool);
  if (!rest.empty() && !tool.contains(' ') &&
      (name == "ld" || name.starts_with("ld.") || name.starts_with("ld64")))
    return rest.trim();
  return line.trim();
}

/// The linker's first message in `output` (the driver's and the linker's
/// combined output), with the line after it when it only names where the
/// error is (``in function `main':``).
static std::string firstLinkerMessage(llvm::StringRef output) {
  llvm::SmallVector<llvm::StringRef> lines;
  output.split(lines, '\n', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  // collect2's and clang's summaries ("ld returned 1 exit status") say
  // nothing new.
  llvm::erase_if(lines, [](llvm::StringRef line) {
    return line.starts_with("collect2:") ||
           line.contains("linker command failed");
  });
  if (lines.empty())
    return "";
  std::string message = withoutToolName(lines[0]).str();
  if (llvm::StringRef(message).ends_with(":") && lines.size() > 1)
    message += " " + withoutToolName(lines[1]).str();
  return message;
}

/// Runs the C compiler driver with `args` (after the driver's name) and
/// `-o` a temporary file, renamed to `outputPath` on success. The driver's
/// output is captured, so a failure is one line naming the file.
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
  llvm::SmallString<128> logPath;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("attnc-link", "log", logPath)) {
    error = "cannot create a temporary file: " + ec.message();
    return failure();
  }
  llvm::FileRemover removeLog(logPath);
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, logPath.str(),
                                                logPath.str()};
  std::string message;
  int status = llvm::sys::ExecuteAndWait(*driver, argv, std::nullopt,
                                         redirects, 0, 0, &message);
  if (status != 0) {
    llvm::sys::fs::remove(temporary);
    if (llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> log =
            llvm::MemoryBuffer::getFile(logPath)) {
      std::string linkerMessage = firstLinkerMessage((*log)->getBuffer());
      if (!linkerMessage.empty())
        message = linkerMessage;
    }
    error = "cannot link '" + outputPath.str() + "'" +
            (message.empty() ? "" : ": " + message);
    return failure();
  }
  if (std::error_code ec = llvm::sys::fs::rename(temporary, outputPath)) {
    llvm::sys::fs::remove(temporary);
    error = "cannot write '" + outputPath.str() + "': " + ec.message();
    return failure();
  }
  return success();
}

LogicalResult linkExecutable(llvm::StringRef objectPath,
                             llvm::StringRef outputPath, std::string &error) {
  RuntimeLibraries libraries;
  if (failed(findRuntimeLibraries(libraries, error)))
    return failure();
  // The object's `main` calls attn_main (libattncli), which calls into
  // libattnrt: the command line comes first for the static link.
  return runDriver(
      {objectPath.str(), libraries.cli, libraries.runtime, "-lm", "-lpthread"},
      outputPath, error);
}

LogicalResult linkRelocatable(llvm::ArrayRef<std::string> objectPaths,
                              llvm::StringRef outputPath, std::string &error) {
  llvm::SmallVector<std::string> args = {"-r", "-nostdlib"};
  args.append(objectPaths.begin(), objectPaths.end());
  return runDriver(args, outputPath, error);
}

} // namespace attn
