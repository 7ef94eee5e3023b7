#include "precdetect/discover/discover.h"

#include <fmt/format.h>

#include <algorithm>

#include "precdetect/core/error.h"
#include "precdetect/discover/hf_cache.h"
#include "precdetect/discover/shard_index.h"

namespace precdetect {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kSafetensorsIndex = "model.safetensors.index.json";
constexpr std::string_view kPytorchIndex = "pytorch_model.bin.index.json";
const std::initializer_list<std::string_view> kPytorchExtensions = {".bin", ".pt", ".pth", ".ckpt", ".jit"};
// What the HF Trainer saves beside the weights: training state, not the model.
constexpr std::string_view kTrainerState[] = {"training_args.bin", "optimizer.pt", "scheduler.pt", "scaler.pt"};

bool is_trainer_state(const fs::path& file) {
  std::string name = file.filename().string();
  return name.starts_with("rng_state") ||
         std::find(std::begin(kTrainerState), std::end(kTrainerState), name) != std::end(kTrainerState);
}

bool has_extension(const fs::path& path, std::initializer_list<std::string_view> extensions) {
  std::string ext = path.extension().string();
  return std::find(extensions.begin(), extensions.end(), ext) != extensions.end();
}

std::vector<fs::path> files_with_extension(const fs::path& folder, std::initializer_list<std::string_view> exts) {
  std::vector<fs::path> found;
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.is_regular_file() && has_extension(entry.path(), exts)) found.push_back(entry.path());
  std::sort(found.begin(), found.end());
  return found;
}

void add_sharded(ModelSource& source, const fs::path& index_path) {
  ShardIndex index = read_shard_index(index_path);
  fs::path folder = index_path.parent_path();
  std::vector<std::string> missing;
  for (const std::string& shard : index.shards) {
    if (fs::is_regular_file(folder / shard))
      source.files.push_back(folder / shard);
    else
      missing.push_back(shard);
  }
  if (!missing.empty())
    fail(ErrorCode::kMissingShard, index_path,
         fmt::format("{} of {} shards named in the index are missing, first `{}`", missing.size(), index.shards.size(),
                     missing.front()));
  source.weight_map = std::move(index.weight_map);
}

std::optional<fs::path> shard_index_in(const fs::path& folder) {
  for (std::string_view index : {kSafetensorsIndex, kPytorchIndex})
    if (fs::is_regular_file(folder / index)) return folder / index;
  return std::nullopt;
}

/// The weight files of an unsharded folder: its safetensors files (hub repos often carry the same weights as
/// .bin too), else its PyTorch files without the Trainer's state.
std::vector<fs::path> unsharded_weights(const fs::path& folder) {
  std::vector<fs::path> files = files_with_extension(folder, {".safetensors"});
  if (!files.empty()) return files;
  files = files_with_extension(folder, kPytorchExtensions);
  std::erase_if(files, is_trainer_state);
  return files;
}

/// A folder is one model: its shard index if it has one, else its unsharded weight files.
void add_folder(ModelSource& source, const fs::path& folder) {
  if (auto index = shard_index_in(folder)) return add_sharded(source, *index);
  source.files = unsharded_weights(folder);
  if (source.files.empty())
    fail(ErrorCode::kNoWeights, folder, "no weight files (*.safetensors, *.bin, *.pt, *.pth, *.ckpt, *.jit) here");
}

fs::path resolve_path(const std::string& input, const fs::path& hf_cache) {
  fs::path path(input);
  std::error_code ec;
  if (fs::exists(path, ec)) return path;
  if (looks_like_hf_id(input)) return resolve_hf_id(input, hf_cache);
  fail(ErrorCode::kNotFound, path, "no such file or folder");
}

}  // namespace

bool may_hold_model(const fs::path& folder) {
  try {
    return shard_index_in(folder) || !unsharded_weights(folder).empty();
  } catch (const fs::filesystem_error&) {  // unreadable: it may hold one, and scanning it names the problem
    return true;
  }
}

ModelSource discover(const std::string& input, const fs::path& hf_cache) {
  ModelSource source{.input = input, .path = resolve_path(input, hf_cache)};
  fs::path folder = source.path;
  try {
    if (fs::is_directory(source.path)) {
      add_folder(source, source.path);
    } else if (source.path.filename().string().ends_with(".index.json")) {
      add_sharded(source, source.path);
      folder = source.path.parent_path();
    } else {
      source.files = {source.path};
      folder = source.path.parent_path();
    }
  } catch (const fs::filesystem_error& e) {
    fail(ErrorCode::kIo, source.path, e.code().message());
  }
  if (fs::is_regular_file(folder / "config.json")) source.config = folder / "config.json";
  return source;
}

}  // namespace precdetect
