// A file that shrinks while mapped: guarded reads give zeros and a named error, never SIGBUS; unguarded faults
// still take the default action.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "precdetect/analyze/analyzer.h"
#include "precdetect/core/error.h"
#include "precdetect/core/sanitizer.h"
#include "precdetect/load/safetensors/safetensors.h"
#include "precdetect/load/source/byte_source.h"
#include "stats_reference.h"
#include "test_util.h"

namespace precdetect {
namespace {

const size_t kPage = static_cast<size_t>(::sysconf(_SC_PAGESIZE));

class ShrinkingFile : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() / fmt::format("precdetect-shrinking-{}", getpid());
    as_model_.emplace(path_.parent_path());
  }
  void TearDown() override { std::filesystem::remove(path_); }
  void write(const std::string& bytes) { std::ofstream(path_, std::ios::binary) << bytes; }
  std::filesystem::path path_;
  std::optional<testing::AsModelFolder> as_model_;
};

/// Sums bytes through a volatile pointer: the compiler must really read each one.
uint64_t sum_of(std::span<const std::byte> bytes) {
  uint64_t sum = 0;
  const volatile std::byte* data = bytes.data();
  for (size_t i = 0; i < bytes.size(); ++i) sum += static_cast<uint8_t>(data[i]);
  return sum;
}

TEST_F(ShrinkingFile, LostPagesReadAsZerosAndReleaseNamesTheFile) {
  write(std::string(3 * kPage, '\x01'));
  std::unique_ptr<ByteSource> source = map_file(path_);
  std::span<const std::byte> bytes = source->view(0, 3 * kPage);
  std::filesystem::resize_file(path_, kPage + 10);
  // The page holding the new end keeps its bytes (the kernel zero-fills past the end within it); the rest fault.
  EXPECT_EQ(sum_of(bytes.first(kPage + 10)), kPage + 10);
  EXPECT_EQ(sum_of(bytes.subspan(2 * kPage)), 0u);
  try {
    source->release(0, 3 * kPage);
    FAIL() << "release() vouched for bytes that read as zeros";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find(path_.string()), std::string::npos) << e.what();
    std::string expected = fmt::format("shrank while being read (mapped at {} bytes, now {})", 3 * kPage, kPage + 10);
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
}

TEST_F(ShrinkingFile, AnIntactFileIsVouchedFor) {
  write(std::string(3 * kPage, '\x01'));
  std::unique_ptr<ByteSource> source = map_file(path_);
  EXPECT_EQ(sum_of(source->view(0, 3 * kPage)), 3 * kPage);
  EXPECT_NO_THROW(source->release(0, 3 * kPage));
}

TEST_F(ShrinkingFile, TheAnalyzerFailsTheModelInsteadOfCrashing) {
  std::string data = testing::random_tensor_bytes(DType::F32, 8 * kPage, 3);
  write(testing::safetensors_bytes(
      fmt::format(R"({{"w":{{"dtype":"F32","shape":[{}],"data_offsets":[0,{}]}}}})", 8 * kPage, data.size()), data));
  Checkpoint checkpoint{.format = FileFormat::kSafetensors};
  checkpoint.files.push_back(map_file(path_));
  checkpoint.tensors = read_safetensors_header(*checkpoint.files.front()).tensors;
  LinkedCheckpoint model = link_checkpoint(std::move(checkpoint), nullptr, path_.string());
  std::filesystem::resize_file(path_, 4 * kPage);
  const TensorRecord* record = &model.tensors.front();
  try {
    Analyzer({}).analyze(model, std::span(&record, 1));
    FAIL() << "statistics of a file that shrank mid-read were returned";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shrank while being read"), std::string::npos) << e.what();
  }
}

#ifdef PRECDETECT_UNDER_ASAN
// AddressSanitizer's handler comes first in the chain (the sanitized build): it reports the fault and exits 1.
const auto kDiedOfTheFault = ::testing::ExitedWithCode(1);
#else
const auto kDiedOfTheFault = ::testing::KilledBySignal(SIGBUS);
#endif

TEST_F(ShrinkingFile, AFaultOutsideGuardedMappingsStillKills) {
  write(std::string(2 * kPage, '\x01'));
  std::unique_ptr<ByteSource> guarded = map_file(path_);  // installs the handler
  EXPECT_EXIT(
      {
        int fd = ::open(path_.c_str(), O_RDONLY);
        auto* raw = static_cast<const volatile char*>(::mmap(nullptr, 2 * kPage, PROT_READ, MAP_PRIVATE, fd, 0));
        std::filesystem::resize_file(path_, 0);
        (void)raw[kPage];
        std::exit(0);
      },
      kDiedOfTheFault, "");
}

}  // namespace
}  // namespace precdetect
