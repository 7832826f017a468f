//===- ProgramLoader.cpp - Parses a file and the files it imports ---------===//
//
// Import resolution: paths relative to the importing file, one parse per file
// identity, cycle and depth checks, errors at the import's path string.
//
//===----------------------------------------------------------------------===//

#include "attn/Frontend/ProgramLoader.h"

#include "attn/Frontend/Lexer.h"
#include "attn/Frontend/Parser.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace attn;
using namespace attn::frontend;

static std::optional<llvm::sys::fs::UniqueID> getFileID(llvm::StringRef path) {
  llvm::sys::fs::UniqueID id;
  if (llvm::sys::fs::getUniqueID(path, id))
    return std::nullopt;
  return id;
}

std::unique_ptr<ast::Program> ProgramLoader::load() {
  assert(sourceMgr.getNumBuffers() != 0 && "no main buffer to parse");
  unsigned mainID = sourceMgr.getMainFileID();
  // A buffer read from standard input has no identity; it can still import.
  loadBuffer(
      mainID,
      getFileID(sourceMgr.getMemoryBuffer(mainID)->getBufferIdentifier()));
  if (diags.getNumErrors() != 0)
    return nullptr;
  return std::make_unique<ast::Program>(std::move(files));
}

void ProgramLoader::loadBuffer(unsigned bufferID,
                               std::optional<llvm::sys::fs::UniqueID> id) {
  Lexer lexer(bufferID, diags);
  std::unique_ptr<ast::SourceFile> file = parseSourceFile(lexer);

  active.push_back({id, lexer.getBufferIdentifier().str()});
  for (std::unique_ptr<ast::Import> &import : file->getMutableImports())
    resolveImport(*import, bufferID);
  active.pop_back();

  if (id)
    loaded[*id] = file.get();
  files.push_back(std::move(file));
}

void ProgramLoader::resolveImport(ast::Import &import, unsigned importerID) {
  llvm::StringRef importerPath =
      sourceMgr.getMemoryBuffer(importerID)->getBufferIdentifier();
  llvm::SmallString<256> path;
  if (llvm::sys::path::is_absolute(import.getPath())) {
    path = import.getPath();
  } else {
    path = llvm::sys::path::parent_path(importerPath);
    llvm::sys::path::append(path, import.getPath());
  }
  // Drop `./` so diagnostics show the path a user would write; `..` stays,
  // since it does not cancel a symbolic link before it.
  llvm::sys::path::remove_dots(path, /*remove_dot_dot=*/false);

  std::optional<llvm::sys::fs::UniqueID> id = getFileID(path);
  if (!id) {
    std::error_code error =
        llvm::sys::fs::access(path, llvm::sys::fs::AccessMode::Exist);
    diags.emitError(import.getLoc())
        << "cannot open imported file '" << path
        << "': " << (error ? error.message() : "cannot identify the file");
    return;
  }
  if (const ast::SourceFile *file = loaded.lookup(*id)) {
    import.setFile(file);
    return;
  }

  for (size_t i = 0, e = active.size(); i != e; ++i) {
    if (active[i].id != id)
      continue;
    mlir::InFlightDiagnostic diag = diags.emitError(import.getLoc());
    diag << "import cycle: ";
    for (const ActiveFile &file : llvm::ArrayRef(active).drop_front(i))
      diag << file.path << " -> ";
    diag << active[i].path;
    return;
  }
  if (active.size() >= kMaxImportDepth) {
    diags.emitError(import.getLoc())
        << "imports are nested too deeply; the limit is " << kMaxImportDepth
        << " files";
    return;
  }

  // Reading a device or a pipe could block forever or never end.
  if (!llvm::sys::fs::is_regular_file(path)) {
    diags.emitError(import.getLoc())
        << "imported path '" << path << "' is not a regular file";
    return;
  }
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer) {
    diags.emitError(import.getLoc()) << "cannot read imported file '" << path
                                     << "': " << buffer.getError().message();
    return;
  }

  // With the import as include location, a diagnostic in the imported file
  // is followed by "Included from FILE:LINE:".
  llvm::SMLoc includeLoc;
  if (auto fileLoc = llvm::dyn_cast<mlir::FileLineColLoc>(import.getLoc()))
    includeLoc = sourceMgr.FindLocForLineAndColumn(
        importerID, fileLoc.getLine(), fileLoc.getColumn());
  unsigned bufferID =
      sourceMgr.AddNewSourceBuffer(std::move(*buffer), includeLoc);
  loadBuffer(bufferID, id);
  import.setFile(loaded.lookup(*id));
}
