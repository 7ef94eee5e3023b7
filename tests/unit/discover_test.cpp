// Discovery: hub ids in the local cache, shard indexes, and what a folder must hold.
#include "precdetect/discover/discover.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "precdetect/core/error.h"
#include "precdetect/discover/hf_cache.h"
#include "precdetect/discover/input_list.h"
#include "test_util.h"

namespace precdetect {
namespace {

namespace fs = std::filesystem;

using testing::TempDir;

void expect_error(const std::function<void()>& action, ErrorCode code, const std::string& detail) {
  try {
    action();
    FAIL() << "expected " << to_string(code);
  } catch (const Error& e) {
    EXPECT_EQ(to_string(e.code()), to_string(code)) << e.what();
    EXPECT_NE(std::string(e.what()).find(detail), std::string::npos) << e.what();
  }
}

TEST(HfCache, RecognisesHubIds) {
  EXPECT_TRUE(has_hf_id_shape("t5-small"));
  EXPECT_TRUE(has_hf_id_shape("google/mt5-small"));
  EXPECT_TRUE(has_hf_id_shape("google/mt5-small@main"));
  EXPECT_TRUE(has_hf_id_shape("org/name@refs/pr/1"));
  EXPECT_FALSE(has_hf_id_shape("/abs/path"));
  EXPECT_FALSE(has_hf_id_shape("./rel"));
  EXPECT_FALSE(has_hf_id_shape("a/b/c"));
  EXPECT_FALSE(has_hf_id_shape("../x"));
}

using HfCacheLayout = TempDir;

TEST_F(HfCacheLayout, ResolvesRefsCommitsAndTags) {
  const std::string commit(40, 'a'), tagged(40, 'b');
  write("models--org--name/refs/main", commit);
  write("models--org--name/refs/v1", tagged + "\n");
  write("models--org--name/snapshots/" + commit + "/model.safetensors", "");
  write("models--org--name/snapshots/" + tagged + "/model.safetensors", "");
  EXPECT_EQ(resolve_hf_id("org/name", root_), root_ / "models--org--name/snapshots" / commit);
  EXPECT_EQ(resolve_hf_id("org/name@v1", root_), root_ / "models--org--name/snapshots" / tagged);
  EXPECT_EQ(resolve_hf_id("org/name@" + tagged, root_), root_ / "models--org--name/snapshots" / tagged);
  expect_error([&] { resolve_hf_id("org/other", root_); }, ErrorCode::kHfCacheMiss, "org/other");
  expect_error([&] { resolve_hf_id("org/name@v2", root_); }, ErrorCode::kHfCacheMiss, "revision `v2`");
  expect_error([&] { resolve_hf_id("org/name@" + std::string(40, 'c'), root_); }, ErrorCode::kHfCacheMiss, "snapshot");
}

using Discovery = TempDir;

TEST_F(Discovery, FolderOfOneCheckpointFindsConfig) {
  write("m/model.safetensors", "");
  write("m/config.json", "{}");
  ModelSource source = discover((root_ / "m").string(), root_);
  ASSERT_EQ(source.files.size(), 1u);
  EXPECT_EQ(source.files[0].filename(), "model.safetensors");
  EXPECT_EQ(source.config, root_ / "m/config.json");
  EXPECT_EQ(models_in((root_ / "m").string(), root_), std::vector<std::string>{(root_ / "m").string()});
}

// Issue 20: independent checkpoints in one folder are separate models, never merged into one.
TEST_F(Discovery, IndependentCheckpointsAreOneModelEach) {
  for (int fold = 0; fold < 3; ++fold) write(fmt::format("cv/v3_fold{}.pt", fold), "");
  std::string folder = (root_ / "cv").string();
  expect_error([&] { discover(folder, root_); }, ErrorCode::kSeveralModels,
               "3 independent checkpoints (v3_fold0.pt, v3_fold1.pt, v3_fold2.pt)");
  std::vector<std::string> expected;
  for (int fold = 0; fold < 3; ++fold) expected.push_back((root_ / fmt::format("cv/v3_fold{}.pt", fold)).string());
  EXPECT_EQ(models_in(folder, root_), expected);
}

TEST_F(Discovery, ShardPatternsMakeOneModel) {
  struct Case {
    std::string folder;
    std::vector<std::string> files;  // the first two are the shards
    bool model_parallel;
  };
  const Case cases[] = {
      {"hf", {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}, false},
      {"meta", {"consolidated.00.pth", "consolidated.01.pth", "params.json"}, true},
      // DeepSpeed: ZeRO's optimizer partitions beside the model states are training state
      {"ds",
       {"mp_rank_00_model_states.pt", "mp_rank_01_model_states.pt", "zero_pp_rank_0_mp_rank_00_optim_states.pt"},
       true},
      {"fairseq", {"checkpoint_last-model_part-0.pt", "checkpoint_last-model_part-1.pt"}, true},
  };
  for (const Case& c : cases) {
    for (const std::string& file : c.files) write(c.folder + "/" + file, "");
    ModelSource source = discover((root_ / c.folder).string(), root_);
    EXPECT_EQ(source.files, (std::vector<fs::path>{root_ / c.folder / c.files[0], root_ / c.folder / c.files[1]}))
        << c.folder;
    EXPECT_EQ(source.model_parallel, c.model_parallel) << c.folder;
  }
}

TEST_F(Discovery, MegatronRankFoldersAreOneModelParallelModel) {
  write("iter_0000100/mp_rank_00/model_optim_rng.pt", "");
  write("iter_0000100/mp_rank_01/model_optim_rng.pt", "");
  write("iter_0000100/mp_rank_01/distrib_optim.pt", "");
  ModelSource source = discover((root_ / "iter_0000100").string(), root_);
  ASSERT_EQ(source.files.size(), 2u);
  EXPECT_TRUE(source.model_parallel);
  EXPECT_TRUE(holds_model_parts(root_ / "iter_0000100"));
  EXPECT_EQ(find_model_folders(root_), std::vector<std::string>{(root_ / "iter_0000100").string()});
}

TEST_F(Discovery, ShardGroupBesideOtherCheckpointsIsNamedByItsPattern) {
  write("z/consolidated.00.pth", "");
  write("z/consolidated.01.pth", "");
  write("z/extra.pt", "");
  std::string folder = (root_ / "z").string();
  std::vector<std::string> models = models_in(folder, root_);
  ASSERT_EQ(models.size(), 2u);
  EXPECT_EQ(models[0], (root_ / "z/consolidated.*.pth").string());
  ModelSource group = discover(models[0], root_);
  EXPECT_EQ(group.files.size(), 2u);
  EXPECT_TRUE(group.model_parallel);
}

TEST_F(Discovery, DiffusersPipelineIsOneModelPerComponent) {
  write("pipe/model_index.json", "{}");
  write("pipe/unet/diffusion_pytorch_model.safetensors", "");
  write("pipe/vae/diffusion_pytorch_model.safetensors", "");
  write("pipe/scheduler/scheduler_config.json", "{}");
  std::string pipe = (root_ / "pipe").string();
  expect_error([&] { discover(pipe, root_); }, ErrorCode::kSeveralModels, "diffusers pipeline");
  EXPECT_EQ(models_in(pipe, root_), (std::vector<std::string>{pipe + "/unet", pipe + "/vae"}));
  EXPECT_EQ(find_model_folders(root_), std::vector<std::string>{pipe});  // components are not listed twice
}

TEST_F(Discovery, ShardIndexTakesPrecedence) {
  write(
      "m/model.safetensors.index.json",
      R"({"metadata":{"total_size":8},"weight_map":{"a":"s1.safetensors","b":"s2.safetensors","c":"s1.safetensors"}})");
  write("m/s1.safetensors", "");
  write("m/s2.safetensors", "");
  write("m/stray.safetensors", "");
  ModelSource source = discover((root_ / "m").string(), root_);
  ASSERT_EQ(source.files.size(), 2u);
  EXPECT_EQ(source.weight_map.size(), 3u);
  EXPECT_EQ(source.weight_map.at("b"), "s2.safetensors");
}

TEST_F(Discovery, MissingShardIsNamed) {
  write("m/model.safetensors.index.json", R"({"weight_map":{"a":"s1.safetensors","b":"s2.safetensors"}})");
  write("m/s1.safetensors", "");
  expect_error([&] { discover((root_ / "m").string(), root_); }, ErrorCode::kMissingShard, "`s2.safetensors`");
}

TEST_F(Discovery, IndexMayNotPointOutsideTheFolder) {
  write("m/model.safetensors.index.json", R"({"weight_map":{"a":"../../etc/passwd"}})");
  expect_error([&] { discover((root_ / "m").string(), root_); }, ErrorCode::kPathEscape, "outside");
  write("n/model.safetensors.index.json", R"({"weight_map":{"a":"/etc/passwd"}})");
  expect_error([&] { discover((root_ / "n").string(), root_); }, ErrorCode::kPathEscape, "outside");
  write("o/model.safetensors.index.json", R"({"weights":{}})");
  expect_error([&] { discover((root_ / "o").string(), root_); }, ErrorCode::kInvalidIndex, "weight_map");
  write("p/model.safetensors.index.json", R"({"weight_map":)");
  expect_error([&] { discover((root_ / "p").string(), root_); }, ErrorCode::kInvalidIndex, "invalid JSON");
}

TEST_F(Discovery, PytorchFoldersLeaveTrainerStateOut) {
  for (const char* name : {"pytorch_model.bin", "training_args.bin", "optimizer.pt", "scheduler.pt", "rng_state_0.pth"})
    write(std::string("torch/") + name, "PK");
  ModelSource source = discover((root_ / "torch").string(), root_);
  ASSERT_EQ(source.files.size(), 1u);
  EXPECT_EQ(source.files[0].filename(), "pytorch_model.bin");
  write("both/model.safetensors", "");
  write("both/pytorch_model.bin", "");
  EXPECT_EQ(discover((root_ / "both").string(), root_).files, std::vector<fs::path>{root_ / "both/model.safetensors"});
}

TEST_F(Discovery, PytorchShardIndex) {
  write("m/pytorch_model.bin.index.json", R"({"weight_map":{"a":"pytorch_model-00001-of-00002.bin",)"
                                          R"("b":"pytorch_model-00002-of-00002.bin"}})");
  write("m/pytorch_model-00001-of-00002.bin", "");
  write("m/pytorch_model-00002-of-00002.bin", "");
  EXPECT_EQ(discover((root_ / "m").string(), root_).files.size(), 2u);
}

TEST_F(Discovery, FoldersWithoutWeights) {
  write("trainer/training_args.bin", "");
  expect_error([&] { discover((root_ / "trainer").string(), root_); }, ErrorCode::kNoWeights, "no weight files");
  fs::create_directories(root_ / "empty");
  expect_error([&] { discover((root_ / "empty").string(), root_); }, ErrorCode::kNoWeights, "no weight files");
  expect_error([&] { discover((root_ / "nope/x.safetensors").string(), root_); }, ErrorCode::kNotFound, "no such file");
}

TEST_F(Discovery, HubIdResolvesThroughTheCache) {
  const std::string commit(40, 'd');
  write("models--org--m/refs/main", commit);
  write("models--org--m/snapshots/" + commit + "/model.safetensors", "");
  ModelSource source = discover("org/m", root_);
  EXPECT_EQ(source.path, root_ / "models--org--m/snapshots" / commit);
  ASSERT_EQ(source.files.size(), 1u);
}

}  // namespace
}  // namespace precdetect
