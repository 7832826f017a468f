//===- TensorIOTest.cpp - The reference's .npy and safetensors I/O --------===//
//
// Round trips through .npy, files written byte by byte as NumPy and the
// safetensors format lay them out, and the errors on malformed files.
//
//===----------------------------------------------------------------------===//

#include "ReferenceTestUtils.h"

#include "attn/Reference/TensorIO.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

using namespace attn::reference;
using namespace attn::reference::testing;

namespace {

class TensorIOTest : public ::testing::Test {
protected:
  ~TensorIOTest() override {
    for (const std::string &path : paths)
      llvm::sys::fs::remove(path);
  }

  std::string tempPath(llvm::StringRef suffix) {
    llvm::SmallString<128> path;
    EXPECT_FALSE(
        llvm::sys::fs::createTemporaryFile("attn-ref-io", suffix, path));
    paths.push_back(path.str().str());
    return paths.back();
  }

  std::string writeBytes(llvm::StringRef suffix, llvm::StringRef bytes) {
    std::string path = tempPath(suffix);
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    EXPECT_FALSE(ec);
    os << bytes;
    return path;
  }

  std::vector<std::string> paths;
};

// Tests that every element type survives a .npy round trip, and that f64
// output keeps what f32 would round away.
TEST_F(TensorIOTest, NpyRoundTrip) {
  for (const Tensor &tensor :
       {f32({2, 3}, {1.5, -2, 0, 3.25, 1e-3, -7}),
        i32({3}, {-1, 0, 2147483647}), Tensor(DType::I64, {1, 2}, {-5, 1e15}),
        boolean({2, 2}, {1, 0, 0, 1}), Tensor::scalar(DType::F64, 0.1)}) {
    std::string path = tempPath("npy");
    ASSERT_FALSE(static_cast<bool>(writeNpy(path, tensor)));
    llvm::Expected<Tensor> read = readNpy(path);
    ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
    EXPECT_EQ(read->getDType(), tensor.getDType());
    expectTensor(
        *read, tensor.getShape(),
        std::vector<double>(tensor.getData().begin(), tensor.getData().end()),
        tensor.getDType() == DType::F32 ? 1e-7 : 0.0);
  }
  std::string path = tempPath("npy");
  ASSERT_FALSE(
      static_cast<bool>(writeNpy(path, f32({1}, {0.1}), /*floatAsF64=*/true)));
  llvm::Expected<Tensor> read = readNpy(path);
  ASSERT_TRUE(static_cast<bool>(read));
  EXPECT_EQ(read->getDType(), DType::F64);
  EXPECT_EQ((*read)[0], 0.1);
}

// Tests reading a file laid out as numpy.save writes it (version 1.0, the
// header padded to 64 bytes), with a 1-tuple shape.
TEST_F(TensorIOTest, NpyFromNumPy) {
  std::string header = "{'descr': '<i8', 'fortran_order': False, 'shape': "
                       "(2,), }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size());
  bytes += '\0';
  bytes += header;
  bytes +=
      std::string("\x07\0\0\0\0\0\0\0\xfe\xff\xff\xff\xff\xff\xff\xff", 16);
  llvm::Expected<Tensor> read = readNpy(writeBytes("npy", bytes));
  ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
  EXPECT_EQ(read->getDType(), DType::I64);
  expectTensor(*read, {2}, {7, -2});
}

// Tests that Fortran order, unknown dtypes and truncated data are refused
// with a message naming the problem.
TEST_F(TensorIOTest, NpyErrors) {
  auto npy = [](llvm::StringRef dict, llvm::StringRef data) {
    std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
    bytes += static_cast<char>(dict.size());
    bytes += '\0';
    return bytes + dict.str() + data.str();
  };
  auto error = [&](llvm::StringRef bytes) {
    llvm::Expected<Tensor> read = readNpy(writeBytes("npy", bytes));
    return read ? std::string("no error") : llvm::toString(read.takeError());
  };
  EXPECT_NE(
      error(npy("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }",
                "abcd"))
          .find("Fortran"),
      std::string::npos);
  EXPECT_NE(
      error(npy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }",
                "abcdefgh"))
          .find("unsupported dtype '<c8'"),
      std::string::npos);
  EXPECT_NE(
      error(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                "abcd"))
          .find("holds 4 data bytes, expected 8"),
      std::string::npos);
  EXPECT_NE(error("not numpy").find("not a .npy file"), std::string::npos);
}

/// A safetensors file: the 8-byte little-endian header length, the JSON
/// header, the data.
std::string safetensors(llvm::StringRef header, llvm::StringRef data) {
  std::string bytes(8, '\0');
  uint64_t length = header.size();
  for (int i = 0; i < 8; ++i)
    bytes[i] = static_cast<char>((length >> (8 * i)) & 0xff);
  return bytes + header.str() + data.str();
}

// Tests reading two f32 tensors and the metadata entry, in data order.
TEST_F(TensorIOTest, Safetensors) {
  // 1.0f = 00 00 80 3f, 2.0f = 00 00 00 40, -0.5f = 00 00 00 bf.
  std::string data("\x00\x00\x00\xbf\x00\x00\x80\x3f\x00\x00\x00\x40", 12);
  std::string path = writeBytes(
      "safetensors",
      safetensors(
          R"({"__metadata__":{"format":"pt"},)"
          R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]},)"
          R"("a.weight":{"dtype":"F32","shape":[],"data_offsets":[0,4]}})",
          data));
  auto tensors = readSafetensors(path);
  ASSERT_TRUE(static_cast<bool>(tensors))
      << llvm::toString(tensors.takeError());
  ASSERT_EQ(tensors->size(), 2u);
  EXPECT_EQ((*tensors)[0].first, "a.weight");
  expectTensor((*tensors)[0].second, {}, {-0.5});
  EXPECT_EQ((*tensors)[1].first, "b");
  expectTensor((*tensors)[1].second, {2}, {1.0, 2.0});
}

// Tests that written safetensors files read back in order, every float as
// F64 when asked.
TEST_F(TensorIOTest, SafetensorsRoundTrip) {
  std::vector<std::pair<std::string, Tensor>> tensors = {
      {"z.last", f32({2}, {0.1, -3})},
      {"a.first", Tensor(DType::BF16, {1, 1}, {1.5})},
      {"ids", i32({3}, {4, -5, 6})}};
  for (bool asF64 : {false, true}) {
    std::string path = tempPath("safetensors");
    ASSERT_FALSE(static_cast<bool>(writeSafetensors(path, tensors, asF64)));
    auto read = readSafetensors(path);
    ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
    ASSERT_EQ(read->size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ((*read)[i].first, tensors[i].first);
      const Tensor &expected = tensors[i].second;
      expectTensor((*read)[i].second, expected.getShape(),
                   std::vector<double>(expected.getData().begin(),
                                       expected.getData().end()),
                   asF64 || i != 0 ? 0.0 : 1e-7);
    }
    EXPECT_EQ((*read)[0].second.getDType(), asF64 ? DType::F64 : DType::F32);
    EXPECT_EQ((*read)[1].second.getDType(), asF64 ? DType::F64 : DType::BF16);
    EXPECT_EQ((*read)[2].second.getDType(), DType::I32);
  }
}

// Tests that a byte range that does not match the shape, or runs past the
// data, is refused.
TEST_F(TensorIOTest, SafetensorsErrors) {
  auto error = [&](llvm::StringRef header, llvm::StringRef data) {
    auto read =
        readSafetensors(writeBytes("safetensors", safetensors(header, data)));
    return read ? std::string("no error") : llvm::toString(read.takeError());
  };
  EXPECT_NE(
      error(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", "abcd")
          .find("holds 4 bytes, its shape [2] needs 8"),
      std::string::npos);
  EXPECT_NE(
      error(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "abcd")
          .find("outside the data section"),
      std::string::npos);
  EXPECT_NE(error(R"({"a":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}})",
                  "abcdefgh")
                .find("unsupported dtype C64"),
            std::string::npos);
  EXPECT_NE(error("{not json", "").find("bad JSON header"), std::string::npos);
}

} // namespace
