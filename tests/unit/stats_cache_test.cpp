// The results cache: statistics come back for the same bytes of the same file (whatever the tensor is called
// there), never for a changed file or other bytes, and a damaged cache file is rebuilt rather than failing a scan.
#include "precdetect/analyze/stats_cache.h"

#include <gtest/gtest.h>

#include <chrono>

#include "precdetect/load/checkpoint.h"
#include "precdetect/load/source/decoded_source.h"
#include "precdetect/load/source/joined_source.h"
#include "test_util.h"

namespace precdetect {
namespace {

class StatsCacheTest : public testing::TempDir {
 protected:
  /// The identity of a weights file holding `text`.
  std::string identity_of(const std::string& text) {
    write("w.bin", text);
    Checkpoint checkpoint;
    checkpoint.files.push_back(map_file(root_ / "w.bin"));
    return StatsCache::file_identity(checkpoint, 0);
  }
};

TensorRecord record(const std::string& name, uint64_t offset) {
  return {.name = name, .dtype = DType::F32, .shape = {4}, .numel = 4, .nbytes = 16, .offset = offset};
}

TEST_F(StatsCacheTest, StoredStatisticsComeBackForTheSameBytesOnly) {
  auto cache = StatsCache::open(root_ / "stats.sqlite");
  ASSERT_TRUE(cache);
  TensorStats stats{.numel = 4, .zeros = 1, .abs_min = 0, .abs_max = 7.5, .sum_squares = 60};
  stats.exponents.counts[129] = 3;
  std::string file = identity_of("weights, first version");
  cache->store(file, record("w", 0), stats);
  EXPECT_EQ(cache->find(file, record("w", 0)), stats);
  EXPECT_EQ(cache->find(file, record("renamed", 0)), stats);    // the same bytes under another name
  EXPECT_EQ(cache->find(file, record("w", 16)), std::nullopt);  // other bytes of the file
  TensorRecord other_view = record("w", 0);
  other_view.shape = {2, 2};
  EXPECT_EQ(cache->find(file, other_view), std::nullopt);  // another view of them
  std::string changed = identity_of("weights, second version!");
  EXPECT_NE(changed, file);
  EXPECT_EQ(cache->find(changed, record("w", 0)), std::nullopt);
  // what was stored outlives the connection
  cache.reset();
  EXPECT_EQ(StatsCache::open(root_ / "stats.sqlite")->find(file, record("w", 0)), stats);
}

TEST_F(StatsCacheTest, AFileThatIsNoCacheIsRebuilt) {
  write("stats.sqlite", "not a database, just text that happens to sit here");
  auto cache = StatsCache::open(root_ / "stats.sqlite");
  ASSERT_TRUE(cache);
  std::string file = identity_of("weights");
  cache->store(file, record("w", 0), TensorStats{.numel = 4});
  EXPECT_TRUE(cache->find(file, record("w", 0)));
  write("a-file", "x");
  EXPECT_EQ(StatsCache::open(root_ / "a-file/stats.sqlite"), nullptr);  // no cache there: never a failed scan
}

TEST_F(StatsCacheTest, AFileJoinedToOthersOrFollowedByDecodedRegionsIsKnownByEveryFile) {
  // An ONNX model of a few bytes, its external data joined behind it, a decoded region after both: the hash reads
  // the model's own bytes (a 64 KiB view was offset_past_end), and the data file's size and mtime are part of it.
  write("model.onnx", "a small model");
  write("model.onnx_data", std::string(100000, 'a'));
  auto joined = std::make_unique<JoinedSource>(map_file(root_ / "model.onnx"));
  joined->append(map_file(root_ / "model.onnx_data"));
  auto decoded = std::make_unique<DecodedSource>(std::move(joined));
  decoded->add_region(100000, [](std::span<std::byte>) {});
  Checkpoint checkpoint;
  checkpoint.files.push_back(std::move(decoded));
  std::string before = StatsCache::file_identity(checkpoint, 0);
  EXPECT_NE(before.find("model.onnx_data"), std::string::npos);
  // the data rewritten with as many bytes, the model untouched
  auto stamp = std::filesystem::last_write_time(root_ / "model.onnx_data");
  write("model.onnx_data", std::string(100000, 'b'));
  std::filesystem::last_write_time(root_ / "model.onnx_data", stamp + std::chrono::seconds(1));
  EXPECT_NE(StatsCache::file_identity(checkpoint, 0), before);
}

}  // namespace
}  // namespace precdetect
