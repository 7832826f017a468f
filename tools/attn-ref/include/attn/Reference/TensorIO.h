//===- TensorIO.h - .npy and safetensors files ------------------*- C++ -*-===//
//
// Minimal readers and writers of the two tensor file formats the project
// exchanges with PyTorch and NumPy, self-contained so that the reference
// shares no code with the runtime it checks. Unlike libattnrt they also read
// and write f64 (<f8, F64): the reference's results keep their precision.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_REFERENCE_TENSORIO_H
#define ATTN_REFERENCE_TENSORIO_H

#include "attn/Reference/Tensor.h"

#include "llvm/Support/Error.h"

#include <string>
#include <utility>
#include <vector>

namespace attn::reference {

/// Reads a .npy file: versions 1.0 to 3.0, little-endian, C order, dtypes
/// <f2 <f4 <f8 <i4 <i8 |b1 |u1 (|u1 read as bool).
llvm::Expected<Tensor> readNpy(llvm::StringRef path);

/// Writes `tensor` as a version 1.0 .npy file in the format of its element
/// type (f16 <f2, f32 <f4, f64 <f8, i32 <i4, i64 and index <i8, i1 |b1;
/// bf16, which NumPy lacks, as <f4), or every float as <f8 with `floatAsF64`.
llvm::Error writeNpy(llvm::StringRef path, const Tensor &tensor,
                     bool floatAsF64 = false);

/// Reads every tensor of a safetensors file, in file order (dtypes F16,
/// BF16, F32, F64, I32, I64, BOOL). The header is validated first: its
/// length, the JSON, each shape against its byte range, ranges inside the
/// data section.
llvm::Expected<std::vector<std::pair<std::string, Tensor>>>
readSafetensors(llvm::StringRef path);

/// Writes named tensors as a safetensors file, in the given order, each in
/// the format of its element type (every float as F64 with `floatAsF64`).
llvm::Error
writeSafetensors(llvm::StringRef path,
                 llvm::ArrayRef<std::pair<std::string, Tensor>> tensors,
                 bool floatAsF64 = false);

} // namespace attn::reference

#endif // ATTN_REFERENCE_TENSORIO_H
