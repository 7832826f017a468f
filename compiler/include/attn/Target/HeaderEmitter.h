//===- HeaderEmitter.h - The C header of a compiled model -------*- C++ -*-===//
//
// `attnc compile` writes, next to the object, a C99 header declaring the
// model's typed API (create/destroy/load/save/init and one function per entry
// point) on top of libattnrt's generic one.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TARGET_HEADEREMITTER_H
#define ATTN_TARGET_HEADEREMITTER_H

#include "attn/Target/ModelInfo.h"

#include <string>

namespace attn {

/// The text of the header of `info`'s model; `source` names the model file.
std::string emitHeader(const ModelInfo &info, llvm::StringRef source);

} // namespace attn

#endif // ATTN_TARGET_HEADEREMITTER_H
