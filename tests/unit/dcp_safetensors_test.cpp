// The safetensors files of DCP's HuggingFaceStorageWriter(save_distributed=True): each rank's slices, placed by
// DCP_SHARDING_INFO's saved_offsets and joined into whole tensors (tests/e2e/test_dcp.py reads torch's own).
#include "precdetect/load/dcp/dcp_safetensors.h"

#include <gtest/gtest.h>

#include "precdetect/core/error.h"
#include "precdetect/discover/shard_pattern.h"
#include "precdetect/load/source/byte_source.h"

namespace precdetect {
namespace {

/// One rank's file: `w` of `shape` at `offsets` (a JSON array).
TensorRecord rank_slice(Checkpoint& checkpoint, std::vector<int64_t> shape, const std::string& offsets) {
  std::string path = "shard-0000" + std::to_string(checkpoint.files.size() + 1) + "-model-00001-of-00001.safetensors";
  checkpoint.files.push_back(memory_source("", path));
  std::vector<TensorRecord> records(1);
  records[0].name = "w";
  records[0].dtype = DType::F32;
  records[0].shape = std::move(shape);
  records[0].file = checkpoint.files.size() - 1;
  mark_dcp_safetensors_chunks(records, {{"DCP_SHARDING_INFO", R"({"w": {"saved_offsets": )" + offsets + "}}"}}, path);
  return records[0];
}

void expect_error(Checkpoint& checkpoint, const std::string& detail) {
  try {
    join_dcp_safetensors_chunks(checkpoint);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidDcp) << e.what();
    EXPECT_NE(std::string(e.what()).find(detail), std::string::npos) << e.what();
  }
}

TEST(DcpSafetensors, RanksSlicesAreJoinedByTheirSavedOffsets) {
  Checkpoint checkpoint;
  checkpoint.tensors = {rank_slice(checkpoint, {2, 3}, "[0, 0]"), rank_slice(checkpoint, {2, 3}, "[2, 0]")};
  join_dcp_safetensors_chunks(checkpoint);
  for (const TensorRecord& record : checkpoint.tensors) EXPECT_EQ(record.chunk_of->shape, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(checkpoint.tensors[1].chunk_of->offsets, (std::vector<int64_t>{2, 0}));

  Checkpoint whole;  // one process's file: one chunk at 0, a whole tensor
  whole.tensors = {rank_slice(whole, {2, 3}, "[0, 0]")};
  join_dcp_safetensors_chunks(whole);
  EXPECT_FALSE(whole.tensors[0].chunk_of);
}

TEST(DcpSafetensors, SlicesThatDoNotTileTheirTensorAreNamed) {
  Checkpoint one_rank;  // rank 1's file alone
  one_rank.tensors = {rank_slice(one_rank, {2, 3}, "[2, 0]")};
  expect_error(one_rank, "cover 6 of its 12 elements: a gap");
  Checkpoint overlap;
  overlap.tensors = {rank_slice(overlap, {3, 3}, "[0, 0]"), rank_slice(overlap, {2, 3}, "[1, 0]")};
  expect_error(overlap, "overlap");
  Checkpoint bad;
  EXPECT_THROW(rank_slice(bad, {2, 3}, "[0]"), Error);
  EXPECT_THROW(rank_slice(bad, {2, 3}, "[0, -1]"), Error);
  EXPECT_THROW(rank_slice(bad, {2, 3}, R"("x")"), Error);
}

TEST(DcpSafetensors, EveryRanksFileIsOneShardGroup) {
  auto group = [](std::string_view name) { return shard_name(name)->group; };
  EXPECT_EQ(group("shard-00001-model-00001-of-00002.safetensors"), "shard-*-model-*-of-00002.safetensors");
  EXPECT_EQ(group("shard-00002-model-00002-of-00002.safetensors"), "shard-*-model-*-of-00002.safetensors");
  EXPECT_EQ(group("model-00001-of-00002.safetensors"), "model-*-of-00002.safetensors");
}

}  // namespace
}  // namespace precdetect
