// The legacy torch.save layout and the pre-0.4 tar layout, written here byte by byte from their documented
// structure (docs/using.md; tests/pre04_tar.py writes the same tar in Python), read through memory sources.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>

#include "precdetect/core/error.h"
#include "precdetect/load/checkpoint.h"
#include "precdetect/load/file_format.h"
#include "precdetect/load/torch/torch_formats.h"
#include "test_util.h"

namespace precdetect {
namespace {

using namespace std::string_literals;
using testing::raw_bytes;
using testing::unicode;

const std::string kFloatStorage = "ctorch\nFloatStorage\n";

/// Opens one in-memory file with `read`; returns the checkpoint.
template <typename Read>
Checkpoint read_one(const std::string& bytes, const char* name, Read read) {
  Checkpoint checkpoint;
  checkpoint.files.push_back(memory_source(bytes, name));
  read(checkpoint, 0);
  return checkpoint;
}

// Legacy: magic number, protocol 1001, sys_info, the objects, the storage keys, then each storage as an int64
// count and its bytes.
std::string legacy_file(const std::vector<float>& values) {
  const std::string magic = "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19\x2e"s;
  const std::string protocol = "\x80\x02M\xe9\x03."s;
  const std::string sys_info = "\x80\x02}" + unicode("little_endian") + "\x88s.";
  const std::string objects = "\x80\x02}" + unicode("layer.w") + "ctorch._utils\n_rebuild_tensor_v2\n((" +
                              unicode("storage") + kFloatStorage + unicode("0") + unicode("cpu") + "K" +
                              static_cast<char>(values.size()) + "NtQK\x01K\x02\x85K\x01\x85\x89}tRs."s;
  const std::string keys = "\x80\x02]" + unicode("0") + "a.";
  return magic + protocol + sys_info + objects + keys + raw_bytes(std::vector<int64_t>{int64_t(values.size())}) +
         raw_bytes(values);
}

TEST(TorchLegacy, ReadsAViewOfAStorageAfterThePickles) {
  std::string bytes = legacy_file({1.5f, -2.0f, 3.25f});
  Checkpoint checkpoint = read_one(bytes, "old.pt", read_torch_legacy);
  ASSERT_EQ(checkpoint.tensors.size(), 1u);
  const TensorRecord& w = checkpoint.tensors[0];
  EXPECT_EQ(w.name, "layer.w");
  EXPECT_EQ(w.dtype, DType::F32);
  EXPECT_EQ(w.shape, std::vector<int64_t>{2});
  EXPECT_EQ(w.storage_offset, 1u);                       // the view starts at the second value
  EXPECT_EQ(w.offset + w.storage_nbytes, bytes.size());  // the storage is the file's last 12 bytes
  EXPECT_EQ(w.storage_nbytes, 12u);
}

TEST(TorchLegacy, AStorageCutShortIsNamed) {
  std::string bytes = legacy_file({1.5f, -2.0f, 3.25f});
  try {
    read_one(bytes.substr(0, bytes.size() - 4), "old.pt", read_torch_legacy);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidLegacy);
    EXPECT_NE(std::string(e.what()).find("old.pt: storage `0`"), std::string::npos) << e.what();
  }
}

/// A ustar member: a 512-byte header (name, octal size, type '0', the "ustar" magic), the data padded to 512.
std::string tar_member(const std::string& name, const std::string& data) {
  std::string header(512, '\0');
  header.replace(0, name.size(), name);
  std::string size = fmt::format("{:011o}", data.size());
  header.replace(124, size.size(), size);
  header[156] = '0';
  header.replace(257, 5, "ustar");
  return header + data + std::string((512 - data.size() % 512) % 512, '\0');
}

// storages: a count, (key, location, type), an int64 count and the bytes; tensors: a count, (key, storage key,
// type), int32 rank, 4 pad bytes, sizes, strides, offset; pickle: the graph, tensors by persistent id.
std::string tar_file(const std::vector<float>& values) {
  std::string storages = "\x80\x02K\x01."s + "\x80\x02" + unicode("0") + unicode("cpu") + kFloatStorage + "\x87." +
                         raw_bytes(std::vector<int64_t>{int64_t(values.size())}) + raw_bytes(values) + "\x80\x02].";
  std::string tensors = "\x80\x02K\x01."s + "\x80\x02Kd" + unicode("0") + "N\x87." +
                        raw_bytes(std::vector<int32_t>{2, 0}) + raw_bytes(std::vector<int64_t>{2, 2, 2, 1, 0});
  std::string graph = "\x80\x02}" + unicode("net.w") + "KdQs.";
  return tar_member("storages", storages) + tar_member("tensors", tensors) + tar_member("pickle", graph) +
         std::string(1024, '\0');
}

TEST(TorchTar, ReadsTensorsFromTheTensorsTable) {
  std::string bytes = tar_file({1, 2, 3, 4});
  ASSERT_EQ(detect_format(*memory_source(bytes)), FileFormat::kTorchTar);
  Checkpoint checkpoint = read_one(bytes, "old.tar", read_torch_tar);
  ASSERT_EQ(checkpoint.tensors.size(), 1u);
  const TensorRecord& w = checkpoint.tensors[0];
  EXPECT_EQ(w.name, "net.w");
  EXPECT_EQ(w.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(w.numel, 4u);
  EXPECT_EQ(w.storage_nbytes, 16u);
  float first = 0;
  std::memcpy(&first, bytes.data() + w.offset, 4);
  EXPECT_EQ(first, 1.0f);
}

TEST(TorchTar, DamageIsNamedWithTheOffsetOfTheRecord) {
  std::string bytes = tar_file({1, 2, 3, 4});
  std::string short_data = bytes.substr(0, 512 + 20);  // the storages member cut inside its data
  try {
    read_one(short_data, "old.tar", read_torch_tar);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidLegacy);
    EXPECT_NE(std::string(e.what()).find("old.tar: invalid torch tar archive at offset 512: member `storages`"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace precdetect
