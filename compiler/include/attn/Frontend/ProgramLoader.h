//===- ProgramLoader.h - Parses a file and the files it imports -*- C++ -*-===//
//
// Follows `import "path"` from the main buffer of a `llvm::SourceMgr`: each
// imported file is added to the source manager (so its diagnostics name it
// and show how it was included), parsed once however often it is imported,
// and checked for import cycles.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_FRONTEND_PROGRAMLOADER_H
#define ATTN_FRONTEND_PROGRAMLOADER_H

#include "attn/Frontend/AST.h"
#include "attn/Frontend/Diagnostics.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FileSystem/UniqueID.h"
#include "llvm/Support/SourceMgr.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attn {
namespace frontend {

/// The deepest chain of nested imports followed.
constexpr unsigned kMaxImportDepth = 256;

class ProgramLoader {
public:
  ProgramLoader(llvm::SourceMgr &sourceMgr, SourceDiagnostics &diags)
      : sourceMgr(sourceMgr), diags(diags) {}

  /// Parses the main buffer and, transitively, every file it imports.
  /// Returns null when any error was reported.
  std::unique_ptr<ast::Program> load();

private:
  /// Parses buffer `bufferID`, then the files it imports, then appends it to
  /// `files`.
  void loadBuffer(unsigned bufferID, std::optional<llvm::sys::fs::UniqueID> id);
  /// Points `import` at the file it names, loading that file if need be.
  void resolveImport(ast::Import &import, unsigned importerID);

  llvm::SourceMgr &sourceMgr;
  SourceDiagnostics &diags;
  /// Files parsed completely, by identity, so that a file imported twice (by
  /// any spelling of its path) is parsed once.
  llvm::DenseMap<llvm::sys::fs::UniqueID, const ast::SourceFile *> loaded;
  /// The chain of files whose imports are being followed, outermost first:
  /// importing one of them again closes a cycle.
  struct ActiveFile {
    std::optional<llvm::sys::fs::UniqueID> id;
    std::string path;
  };
  llvm::SmallVector<ActiveFile, 8> active;
  /// Every parsed file, each after the files it imports.
  std::vector<std::unique_ptr<ast::SourceFile>> files;
};

} // namespace frontend
} // namespace attn

#endif // ATTN_FRONTEND_PROGRAMLOADER_H
