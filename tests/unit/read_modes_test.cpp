// --io pread and the CUDA upload against the mapped bytes: every way to a tensor's bytes gives the same bytes.
#include <ATen/core/Tensor.h>
#include <ATen/ops/from_blob.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "precdetect/analyze/analyzer.h"
#include "precdetect/analyze/device.h"
#include "precdetect/core/error.h"
#include "precdetect/cuda/cuda_upload.h"
#include "precdetect/cuda/torch_dtype.h"
#include "precdetect/load/record_values.h"
#include "precdetect/load/safetensors/safetensors.h"
#include "stats_reference.h"
#include "test_util.h"
#include "torch_values.h"

namespace precdetect {
namespace {

/// A safetensors file on disk: a 1-byte pad (misaligning every tensor after it), then one tensor per dtype and
/// size, sizes that end mid-part and mid-staging-buffer.
class ReadModes : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = std::filesystem::temp_directory_path() / fmt::format("precdetect-read-modes-{}.safetensors", getpid());
    std::string header = R"({"pad":{"dtype":"U8","shape":[1],"data_offsets":[0,1]})";
    std::string data = "\x7f";
    uint32_t seed = 1;
    for (DType dtype : {DType::BF16, DType::F16, DType::F32, DType::F64, DType::F8_E4M3})
      for (size_t numel : {1, 7, 1'000'003}) {
        std::string bytes = testing::random_tensor_bytes(dtype, numel, seed++);
        header += fmt::format(R"(,"{}_{}":{{"dtype":"{}","shape":[{}],"data_offsets":[{},{}]}})", dtype_name(dtype),
                              numel, dtype_name(dtype), numel, data.size(), data.size() + bytes.size());
        data += bytes;
      }
    std::ofstream(path_, std::ios::binary) << testing::safetensors_bytes(header + "}", data);
  }
  static void TearDownTestSuite() { std::filesystem::remove(path_); }

  static Checkpoint open(ReadMode mode) {
    Checkpoint checkpoint{.format = FileFormat::kSafetensors};
    testing::AsModelFolder model(path_.parent_path());
    checkpoint.files.push_back(map_file(path_, mode));
    checkpoint.tensors = read_safetensors_header(*checkpoint.files.front()).tensors;
    return checkpoint;
  }

  static std::filesystem::path path_;
};
std::filesystem::path ReadModes::path_;

/// The stored bytes of a tensor, whatever its device, layout and dtype.
std::string bytes_of(const at::Tensor& tensor) {
  at::Tensor bytes = tensor.cpu().contiguous().reshape(-1).view(at::kByte);
  return {reinterpret_cast<const char*>(bytes.data_ptr()), static_cast<size_t>(bytes.numel())};
}

/// The record's values through read_values (our gather, byte swap and alignment copy), as a tensor.
at::Tensor read_tensor(const Checkpoint& checkpoint, const TensorRecord& record) {
  return testing::tensor_of(read_values(checkpoint, record));
}

/// The same values as libtorch views them (as_strided and a byte flip over the whole storage): the reference.
at::Tensor torch_view(const Checkpoint& checkpoint, const TensorRecord& record) {
  std::vector<std::byte> storage(record.storage_nbytes / (dtype_bits(record.dtype) / 8) *
                                 (dtype_bits(record.dtype) / 8));
  checkpoint.files[record.file]->read(record.offset, storage);
  at::Tensor bytes = at::from_blob(storage.data(), {static_cast<int64_t>(storage.size())}, at::kByte).clone();
  return view_storage(bytes.view(torch_scalar_type(record.dtype)), record).contiguous();
}

/// A transposed view of a 2-D storage, and the same storage marked big-endian: layouts torch.save can produce.
std::vector<TensorRecord> unusual_layouts(const TensorRecord& record) {
  TensorRecord transposed = record, big_endian = record;
  transposed.shape = {1000, 1000};
  transposed.stride = {1, 1000};
  transposed.numel = 1'000'000;
  transposed.storage_offset = 3;
  big_endian.big_endian = true;
  return {transposed, big_endian};
}

TEST_F(ReadModes, PreadReadsWhatTheMappingHolds) {
  Checkpoint mapped = open(ReadMode::kMmap), pread = open(ReadMode::kPread);
  const ByteSource& file = *pread.files.front();
  EXPECT_FALSE(file.zero_copy());
  uint64_t length = file.size() - 5;  // many 8 MiB parts, starting and ending off any boundary
  std::string read(length, '\0');
  file.read(3, {reinterpret_cast<std::byte*>(read.data()), length});
  auto view = mapped.files.front()->view(3, length);
  EXPECT_EQ(read, std::string(reinterpret_cast<const char*>(view.data()), length));
  try {
    file.read(4, {reinterpret_cast<std::byte*>(read.data()), length + 5});
    FAIL() << "read past the end";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOffsetPastEnd);
  }
}

TEST_F(ReadModes, PreadTensorsEqualMappedOnes) {
  Checkpoint mapped = open(ReadMode::kMmap), pread = open(ReadMode::kPread);
  for (size_t i = 1; i < mapped.tensors.size(); ++i) {
    SCOPED_TRACE(mapped.tensors[i].name);
    EXPECT_EQ(bytes_of(read_tensor(pread, pread.tensors[i])), bytes_of(read_tensor(mapped, mapped.tensors[i])));
    EXPECT_EQ(bytes_of(read_tensor(mapped, mapped.tensors[i])), bytes_of(torch_view(mapped, mapped.tensors[i])));
  }
  for (const TensorRecord& record : unusual_layouts(mapped.tensors.back() /* F8 1M */)) {
    EXPECT_EQ(bytes_of(read_tensor(pread, record)), bytes_of(torch_view(mapped, record)));
    EXPECT_EQ(bytes_of(read_tensor(mapped, record)), bytes_of(torch_view(mapped, record)));
  }
}

TEST_F(ReadModes, CudaUploadEqualsTheCpuTensor) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device: the CUDA path is tested on GPU machines";
  for (ReadMode mode : {ReadMode::kMmap, ReadMode::kPread}) {
    Checkpoint checkpoint = open(mode);
    std::vector<TensorRecord> records(checkpoint.tensors.begin() + 1, checkpoint.tensors.end());
    for (const TensorRecord& layout : unusual_layouts(records.back())) records.push_back(layout);
    CudaUploader uploader(0, /*buffer_bytes=*/40'009);  // many chunks per tensor, split mid-element
    c10::Stream stream = c10::impl::VirtualGuardImpl(c10::DeviceType::CUDA).getStream({c10::DeviceType::CUDA, 0});
    for (const TensorRecord& record : records) {
      SCOPED_TRACE(record.name);
      CudaUploader::Upload upload = uploader.upload(checkpoint, record, stream);
      upload.ready_on(stream);  // the current stream, which the copies below to the CPU run on
      const at::Tensor& uploaded = upload.values;
      EXPECT_TRUE(uploaded.is_cuda());
      EXPECT_EQ(uploaded.sizes(), torch_view(checkpoint, record).sizes());
      EXPECT_EQ(bytes_of(uploaded), bytes_of(torch_view(checkpoint, record)));
    }
  }
}

/// Every tensor after the pad.
std::vector<const TensorRecord*> records_of(const Checkpoint& checkpoint) {
  std::vector<const TensorRecord*> records;
  for (size_t i = 1; i < checkpoint.tensors.size(); ++i) records.push_back(&checkpoint.tensors[i]);
  return records;
}

TEST_F(ReadModes, AnalyzerMatchesTheReferenceInBothReadModes) {
  LinkedCheckpoint mapped = link_checkpoint(open(ReadMode::kMmap), nullptr, "model");
  LinkedCheckpoint pread = link_checkpoint(open(ReadMode::kPread), nullptr, "model");
  std::vector<const TensorRecord*> records = records_of(mapped);
  std::vector<TensorStats> from_mmap = Analyzer({}).analyze(mapped, records);
  std::vector<TensorStats> from_pread = Analyzer({}).analyze(pread, records_of(pread));
  ASSERT_EQ(from_mmap.size(), records.size());
  ASSERT_EQ(from_pread.size(), records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    SCOPED_TRACE(records[i]->name);
    std::vector<double> values = testing::torch_decoded(bytes_of(torch_view(mapped, *records[i])), records[i]->dtype);
    testing::expect_same_stats(from_mmap[i], testing::reference_stats(values, records[i]->dtype), 1e-12);
    testing::expect_same_stats(from_pread[i], from_mmap[i], 0.0);
  }
}

/// --io's default: the CPU kernel reads the mapping, the CUDA path (which copies every byte to staging) preads.
TEST_F(ReadModes, EachDeviceReadsTheWayItPrefers) {
  EXPECT_EQ(Analyzer({}).preferred_read_mode(), ReadMode::kMmap);
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device: the CUDA path is tested on GPU machines";
  EXPECT_EQ(Analyzer({.cuda = true}).preferred_read_mode(), ReadMode::kPread);
}

/// The whole checkpoint at once: on CUDA one tensor is computed while the next is staged, so results handed to
/// the wrong tensor would show here.
TEST_F(ReadModes, CudaAnalyzerAgreesWithTheCpuOne) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device: the CUDA path is tested on GPU machines";
  for (ReadMode mode : {ReadMode::kMmap, ReadMode::kPread}) {
    LinkedCheckpoint checkpoint = link_checkpoint(open(mode), nullptr, "model");
    std::vector<TensorStats> on_cpu = Analyzer({}).analyze(checkpoint, records_of(checkpoint));
    std::vector<TensorStats> on_gpu = Analyzer({.cuda = true}).analyze(checkpoint, records_of(checkpoint));
    ASSERT_EQ(on_gpu.size(), on_cpu.size());
    for (size_t i = 0; i < on_cpu.size(); ++i) testing::expect_same_stats(on_gpu[i], on_cpu[i], 1e-12);
  }
}

}  // namespace
}  // namespace precdetect
