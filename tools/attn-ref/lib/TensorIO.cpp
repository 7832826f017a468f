//===- TensorIO.cpp - .npy and safetensors files for the reference --------===//
//
// Decoding and encoding of little-endian element data, the .npy header
// dictionary and the safetensors JSON header.
//
//===----------------------------------------------------------------------===//

#include "attn/Reference/TensorIO.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/APInt.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace attn::reference;
using llvm::Expected;
using llvm::StringRef;
using llvm::Twine;

static llvm::Error ioError(StringRef path, const Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 path + ": " + message);
}

namespace {

/// How elements are stored in a file.
enum class Format { F16, BF16, F32, F64, I32, I64, Bool };

} // namespace

static size_t formatSize(Format format) {
  switch (format) {
  case Format::F16:
  case Format::BF16:
    return 2;
  case Format::F32:
  case Format::I32:
    return 4;
  case Format::F64:
  case Format::I64:
    return 8;
  case Format::Bool:
    return 1;
  }
  llvm_unreachable("unknown format");
}

static DType formatDType(Format format) {
  switch (format) {
  case Format::F16:
    return DType::F16;
  case Format::BF16:
    return DType::BF16;
  case Format::F32:
    return DType::F32;
  case Format::F64:
    return DType::F64;
  case Format::I32:
    return DType::I32;
  case Format::I64:
    return DType::I64;
  case Format::Bool:
    return DType::Bool;
  }
  llvm_unreachable("unknown format");
}

static double decodeElement(Format format, const char *p) {
  using namespace llvm::support;
  switch (format) {
  case Format::F16:
  case Format::BF16: {
    llvm::APFloat value(format == Format::F16 ? llvm::APFloat::IEEEhalf()
                                              : llvm::APFloat::BFloat(),
                        llvm::APInt(16, endian::read16le(p)));
    bool losesInfo = false;
    value.convert(llvm::APFloat::IEEEdouble(),
                  llvm::APFloat::rmNearestTiesToEven, &losesInfo);
    return value.convertToDouble();
  }
  case Format::F32: {
    uint32_t bits = endian::read32le(p);
    float value;
    std::memcpy(&value, &bits, sizeof(value));
    return value;
  }
  case Format::F64: {
    uint64_t bits = endian::read64le(p);
    double value;
    std::memcpy(&value, &bits, sizeof(value));
    return value;
  }
  case Format::I32:
    return static_cast<int32_t>(endian::read32le(p));
  case Format::I64:
    return static_cast<double>(static_cast<int64_t>(endian::read64le(p)));
  case Format::Bool:
    return *p != 0 ? 1.0 : 0.0;
  }
  llvm_unreachable("unknown format");
}

static void encodeElement(Format format, double value, llvm::raw_ostream &os) {
  using namespace llvm::support;
  char bytes[8];
  switch (format) {
  case Format::F16:
  case Format::BF16: {
    llvm::APFloat half(value);
    bool losesInfo = false;
    half.convert(format == Format::F16 ? llvm::APFloat::IEEEhalf()
                                       : llvm::APFloat::BFloat(),
                 llvm::APFloat::rmNearestTiesToEven, &losesInfo);
    endian::write16le(bytes, half.bitcastToAPInt().getZExtValue());
    break;
  }
  case Format::F32: {
    auto narrow = static_cast<float>(value);
    uint32_t bits;
    std::memcpy(&bits, &narrow, sizeof(bits));
    endian::write32le(bytes, bits);
    break;
  }
  case Format::F64: {
    uint64_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    endian::write64le(bytes, bits);
    break;
  }
  case Format::I32:
    endian::write32le(bytes,
                      static_cast<uint32_t>(static_cast<int32_t>(value)));
    break;
  case Format::I64:
    endian::write64le(bytes,
                      static_cast<uint64_t>(static_cast<int64_t>(value)));
    break;
  case Format::Bool:
    bytes[0] = value != 0.0 ? 1 : 0;
    break;
  }
  os.write(bytes, formatSize(format));
}

/// How a tensor of `dtype` is stored; every float as f64 with `floatAsF64`.
static Format fileFormat(DType dtype, bool floatAsF64) {
  if (floatAsF64 && isFloat(dtype))
    return Format::F64;
  switch (dtype) {
  case DType::F16:
    return Format::F16;
  case DType::BF16:
    return Format::BF16;
  case DType::F32:
    return Format::F32;
  case DType::F64:
    return Format::F64;
  case DType::I32:
    return Format::I32;
  case DType::I64:
  case DType::Index:
    return Format::I64;
  case DType::Bool:
    return Format::Bool;
  }
  llvm_unreachable("unknown dtype");
}

static StringRef npyDescr(Format format) {
  switch (format) {
  case Format::F16:
    return "<f2";
  case Format::BF16:
    llvm_unreachable("NumPy has no bf16");
  case Format::F32:
    return "<f4";
  case Format::F64:
    return "<f8";
  case Format::I32:
    return "<i4";
  case Format::I64:
    return "<i8";
  case Format::Bool:
    return "|b1";
  }
  llvm_unreachable("unknown format");
}

static StringRef safetensorsDType(Format format) {
  switch (format) {
  case Format::F16:
    return "F16";
  case Format::BF16:
    return "BF16";
  case Format::F32:
    return "F32";
  case Format::F64:
    return "F64";
  case Format::I32:
    return "I32";
  case Format::I64:
    return "I64";
  case Format::Bool:
    return "BOOL";
  }
  llvm_unreachable("unknown format");
}

/// Decodes `count` elements stored in `format` from `data`.
static std::vector<double> decodeAll(Format format, const char *data,
                                     int64_t count) {
  std::vector<double> values(count);
  size_t size = formatSize(format);
  for (int64_t i = 0; i < count; ++i)
    values[i] = decodeElement(format, data + i * size);
  return values;
}

/// The element count of a shape read from a file, or nothing when a size is
/// negative or the product overflows.
static std::optional<int64_t>
checkedNumElements(llvm::ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t size : shape) {
    if (size < 0 || (size != 0 && count > INT64_MAX / size))
      return std::nullopt;
    count *= size;
  }
  return count;
}

//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

static std::optional<Format> parseNpyDescr(StringRef descr) {
  // The byte-order mark is '<' or '|' (not applicable) for what we read.
  if (descr.size() != 3 || (descr[0] != '<' && descr[0] != '|'))
    return std::nullopt;
  return llvm::StringSwitch<std::optional<Format>>(descr.drop_front())
      .Case("f2", Format::F16)
      .Case("f4", Format::F32)
      .Case("f8", Format::F64)
      .Case("i4", Format::I32)
      .Case("i8", Format::I64)
      .Case("b1", Format::Bool)
      .Case("u1", Format::Bool)
      .Default(std::nullopt);
}

/// The text after `'key':` in a header dictionary, or "" if absent.
static StringRef npyField(StringRef header, StringRef key) {
  size_t at = header.find(("'" + key + "'").str());
  if (at == StringRef::npos)
    return "";
  StringRef rest = header.drop_front(at + key.size() + 2).ltrim();
  if (!rest.consume_front(":"))
    return "";
  return rest.ltrim();
}

Expected<Tensor> attn::reference::readNpy(StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!file)
    return ioError(path, file.getError().message());
  StringRef bytes = (*file)->getBuffer();
  if (!bytes.starts_with("\x93NUMPY") || bytes.size() < 10)
    return ioError(path, "not a .npy file");
  auto major = static_cast<uint8_t>(bytes[6]);
  size_t headerStart = major == 1 ? 10 : 12;
  if (major < 1 || major > 3 || bytes.size() < headerStart)
    return ioError(path, "unsupported .npy version " + Twine(major));
  size_t headerLength = major == 1
                            ? llvm::support::endian::read16le(bytes.data() + 8)
                            : llvm::support::endian::read32le(bytes.data() + 8);
  if (bytes.size() < headerStart + headerLength)
    return ioError(path, "truncated header");
  StringRef header = bytes.substr(headerStart, headerLength);

  StringRef descrText = npyField(header, "descr");
  char quote = descrText.empty() ? 0 : descrText.front();
  size_t descrEnd = descrText.find(quote, 1);
  if ((quote != '\'' && quote != '"') || descrEnd == StringRef::npos)
    return ioError(path, "header has no 'descr'");
  StringRef descr = descrText.substr(1, descrEnd - 1);
  std::optional<Format> format = parseNpyDescr(descr);
  if (!format)
    return ioError(path, "unsupported dtype '" + descr +
                             "' (expected <f2, <f4, <f8, <i4, <i8 or |b1)");
  if (!npyField(header, "fortran_order").starts_with("False"))
    return ioError(path, "Fortran-order arrays are not supported");

  StringRef shapeText = npyField(header, "shape");
  size_t close = shapeText.find(')');
  if (!shapeText.consume_front("(") || close == StringRef::npos)
    return ioError(path, "header has no 'shape'");
  llvm::SmallVector<int64_t> shape;
  llvm::SmallVector<StringRef> parts;
  shapeText.take_front(close - 1).split(parts, ',');
  for (StringRef part : parts) {
    part = part.trim();
    if (part.empty())
      continue;
    int64_t size;
    if (part.getAsInteger(10, size) || size < 0)
      return ioError(path, "bad shape entry '" + part + "'");
    shape.push_back(size);
  }
  std::optional<int64_t> count = checkedNumElements(shape);
  if (!count)
    return ioError(path, "shape is too large");
  size_t dataStart = headerStart + headerLength;
  uint64_t needed = static_cast<uint64_t>(*count) * formatSize(*format);
  if (bytes.size() - dataStart != needed)
    return ioError(path, "holds " + Twine(bytes.size() - dataStart) +
                             " data bytes, expected " + Twine(needed));
  return Tensor(formatDType(*format), shape,
                decodeAll(*format, bytes.data() + dataStart, *count));
}

llvm::Error attn::reference::writeNpy(StringRef path, const Tensor &tensor,
                                      bool floatAsF64) {
  // NumPy has no bf16: it is written as f32, which holds it exactly.
  Format format = fileFormat(tensor.getDType(), floatAsF64);
  if (format == Format::BF16)
    format = Format::F32;
  StringRef descr = npyDescr(format);

  // NumPy writes a 1-tuple as "(n,)".
  std::string shape;
  for (int64_t size : tensor.getShape())
    shape += (shape.empty() ? "" : ", ") + std::to_string(size);
  if (tensor.getRank() == 1)
    shape += ",";
  std::string dict = "{'descr': '" + descr.str() +
                     "', 'fortran_order': False, 'shape': (" + shape + "), }";
  // Pads with spaces so the data starts on a 64-byte boundary, as NumPy does.
  size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';

  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return ioError(path, ec.message());
  os << "\x93NUMPY" << '\x01' << '\x00';
  char length[2];
  llvm::support::endian::write16le(length, static_cast<uint16_t>(dict.size()));
  os.write(length, 2);
  os << dict;
  for (double value : tensor.getData())
    encodeElement(format, value, os);
  os.close();
  if (os.has_error())
    return ioError(path, os.error().message());
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// safetensors
//===----------------------------------------------------------------------===//

static std::optional<Format> parseSafetensorsDType(StringRef dtype) {
  return llvm::StringSwitch<std::optional<Format>>(dtype)
      .Case("F16", Format::F16)
      .Case("BF16", Format::BF16)
      .Case("F32", Format::F32)
      .Case("F64", Format::F64)
      .Case("I32", Format::I32)
      .Case("I64", Format::I64)
      .Case("BOOL", Format::Bool)
      .Default(std::nullopt);
}

Expected<std::vector<std::pair<std::string, Tensor>>>
attn::reference::readSafetensors(StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!file)
    return ioError(path, file.getError().message());
  StringRef bytes = (*file)->getBuffer();
  if (bytes.size() < 8)
    return ioError(path, "too short for a safetensors file");
  uint64_t headerLength = llvm::support::endian::read64le(bytes.data());
  if (headerLength > bytes.size() - 8)
    return ioError(path, "header length " + Twine(headerLength) +
                             " runs past the end of the file");
  StringRef data = bytes.drop_front(8 + headerLength);
  Expected<llvm::json::Value> header =
      llvm::json::parse(bytes.substr(8, headerLength));
  if (!header)
    return ioError(path,
                   "bad JSON header: " + llvm::toString(header.takeError()));
  const llvm::json::Object *entries = header->getAsObject();
  if (!entries)
    return ioError(path, "the header is not a JSON object");

  // llvm::json::Object is unordered; order tensors by their data offsets,
  // which is the file's order.
  std::vector<std::tuple<uint64_t, std::string, Tensor>> tensors;
  for (const auto &[key, value] : *entries) {
    std::string name = key.str();
    if (name == "__metadata__")
      continue;
    const llvm::json::Object *entry = value.getAsObject();
    std::optional<StringRef> dtypeName =
        entry ? entry->getString("dtype") : std::nullopt;
    const llvm::json::Array *shapeArray =
        entry ? entry->getArray("shape") : nullptr;
    const llvm::json::Array *offsets =
        entry ? entry->getArray("data_offsets") : nullptr;
    if (!dtypeName || !shapeArray || !offsets || offsets->size() != 2)
      return ioError(path, "tensor '" + name +
                               "' lacks dtype, shape or data_offsets");
    std::optional<Format> format = parseSafetensorsDType(*dtypeName);
    if (!format)
      return ioError(path, "tensor '" + name + "' has unsupported dtype " +
                               *dtypeName);
    llvm::SmallVector<int64_t> shape;
    for (const llvm::json::Value &size : *shapeArray) {
      std::optional<int64_t> dim = size.getAsInteger();
      if (!dim || *dim < 0)
        return ioError(path, "tensor '" + name + "' has a bad shape");
      shape.push_back(*dim);
    }
    std::optional<int64_t> begin = (*offsets)[0].getAsInteger();
    std::optional<int64_t> end = (*offsets)[1].getAsInteger();
    std::optional<int64_t> count = checkedNumElements(shape);
    if (!begin || !end || !count || *begin < 0 || *end < *begin ||
        static_cast<uint64_t>(*end) > data.size())
      return ioError(path, "tensor '" + name +
                               "' has data_offsets outside the data section");
    uint64_t needed = static_cast<uint64_t>(*count) * formatSize(*format);
    if (static_cast<uint64_t>(*end - *begin) != needed)
      return ioError(path, "tensor '" + name + "' holds " +
                               Twine(*end - *begin) + " bytes, its shape " +
                               formatShape(shape) + " needs " + Twine(needed));
    tensors.emplace_back(
        *begin, name,
        Tensor(formatDType(*format), shape,
               decodeAll(*format, data.data() + *begin, *count)));
  }
  llvm::sort(tensors, [](const auto &a, const auto &b) {
    return std::get<0>(a) < std::get<0>(b);
  });
  std::vector<std::pair<std::string, Tensor>> result;
  for (auto &[offset, name, tensor] : tensors)
    result.emplace_back(std::move(name), std::move(tensor));
  return result;
}

llvm::Error attn::reference::writeSafetensors(
    StringRef path, llvm::ArrayRef<std::pair<std::string, Tensor>> tensors,
    bool floatAsF64) {
  llvm::json::Object header;
  uint64_t offset = 0;
  for (const auto &[name, tensor] : tensors) {
    Format format = fileFormat(tensor.getDType(), floatAsF64);
    uint64_t size = tensor.getNumElements() * formatSize(format);
    header[name] = llvm::json::Object{
        {"dtype", safetensorsDType(format)},
        {"shape", llvm::json::Array(tensor.getShape())},
        {"data_offsets", llvm::json::Array{offset, offset + size}}};
    offset += size;
  }
  std::string text;
  llvm::raw_string_ostream(text) << llvm::json::Value(std::move(header));
  // The data section starts 8-byte aligned, as the safetensors writers do.
  text.append((8 - text.size() % 8) % 8, ' ');

  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return ioError(path, ec.message());
  char length[8];
  llvm::support::endian::write64le(length, text.size());
  os.write(length, 8);
  os << text;
  for (const auto &[name, tensor] : tensors) {
    Format format = fileFormat(tensor.getDType(), floatAsF64);
    for (double value : tensor.getData())
      encodeElement(format, value, os);
  }
  os.close();
  if (os.has_error())
    return ioError(path, os.error().message());
  return llvm::Error::success();
}
