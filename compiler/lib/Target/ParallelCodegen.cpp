//===- ParallelCodegen.cpp - LLVM code generation on threads --------------===//
//
// LLVM optimises and compiles one module on one thread, the largest part of
// a big model's compile time (docs/Codegen.md, Compile time). The module is
// split into parts
// (llvm::SplitModule, balanced by the size of what each part defines), and
// each part is optimised and compiled on a thread of its own in a
// LLVMContext of its own (a context is not thread-safe; a part moves into
// it as bitcode). The entry points and the loops they outline are already
// separate functions whose only calls into each other are through the
// optnone glue of an entry point, which LLVM does not inline into anyway,
// so a part loses nothing to the split.
//
// A part calls functions another part defines, so the functions local to
// the model become hidden globals; they are renamed `<model>.<name>` first,
// so that objects of two models still link into one program without
// clashing (what internal linkage gave before).
//
//===----------------------------------------------------------------------===//

#include "attn/Target/ParallelCodegen.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Transforms/Utils/SplitModule.h"

#include <atomic>
#include <thread>

using namespace mlir;

namespace attn {

/// Parts per thread: SplitModule balances the parts by the size of the IR
/// they define, which is not quite the time LLVM takes on them; threads
/// taking the next part as they finish even that out.
static constexpr unsigned kPartsPerThread = 2;

/// Optimises and compiles one part, given as bitcode, in a context of its
/// own.
static LogicalResult compilePart(llvm::StringRef bitcode,
                                 const CodegenOptions &options,
                                 llvm::SmallVectorImpl<char> &object,
                                 std::string &error) {
  llvm::LLVMContext context;
  llvm::Expected<std::unique_ptr<llvm::Module>> part = llvm::parseBitcodeFile(
      llvm::MemoryBufferRef(bitcode, "part"), context);
  if (!part) {
    error = llvm::toString(part.takeError());
    return failure();
  }
  if (failed(optimizeLLVMModule(**part, options, error)))
    return failure();
  llvm::raw_svector_ostream os(object);
  return emitMachineCode(**part, options, /*assembly=*/false, os, error);
}

FailureOr<llvm::SmallVector<llvm::SmallVector<char, 0>>>
compileToObjects(std::unique_ptr<llvm::Module> module,
                 const CodegenOptions &options, unsigned jobs,
                 llvm::StringRef modelName, std::string &error) {
  assert(jobs >= 2 && "one thread compiles the module whole");
  for (llvm::GlobalValue &value : module->global_values())
    if (value.hasLocalLinkage() && value.hasName() && !value.isDeclaration())
      value.setName(modelName + "." + value.getName());
  llvm::SmallVector<std::string> parts;
  unsigned numParts = jobs * kPartsPerThread;
  llvm::SplitModule(*module, numParts, [&](std::unique_ptr<llvm::Module> part) {
    std::string bitcode;
    llvm::raw_string_ostream os(bitcode);
    llvm::WriteBitcodeToFile(*part, os);
    parts.push_back(std::move(bitcode));
  });
  module.reset();

  // The threads' timers would each count the whole process: the caller
  // times the parallel step as one.
  CodegenOptions partOptions = options;
  partOptions.timers = nullptr;
  llvm::SmallVector<llvm::SmallVector<char, 0>> objects(parts.size());
  std::vector<std::string> errors(parts.size());
  std::atomic<size_t> next{0};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < jobs; ++t)
    threads.emplace_back([&] {
      for (size_t i = next++; i < parts.size(); i = next++)
        if (failed(compilePart(parts[i], partOptions, objects[i],
                               errors[i])) &&
            errors[i].empty())
          errors[i] = "code generation failed";
    });
  for (std::thread &thread : threads)
    thread.join();
  for (std::string &message : errors)
    if (!message.empty()) {
      error = message;
      return failure();
    }
  return objects;
}

} // namespace attn
