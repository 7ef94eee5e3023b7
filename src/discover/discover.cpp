#include "precdetect/discover/discover.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <map>

#include "precdetect/core/error.h"
#include "precdetect/core/format.h"
#include "precdetect/discover/hf_cache.h"
#include "precdetect/discover/remote.h"
#include "precdetect/discover/shard_index.h"
#include "precdetect/discover/shard_pattern.h"
#include "precdetect/discover/training_state.h"
#include "precdetect/net/url.h"

namespace precdetect {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kPipelineIndex = "model_index.json";  // a diffusers pipeline: one model per component
// torch.distributed.checkpoint's index (kDcpMetadata) or, saved without collectives, rank 0's of one metadata
// file per rank (its reader finds the others).
constexpr std::string_view kDcpRankMetadata = "__0.metadata";

bool is_trainer_state_file(const fs::path& file) { return is_trainer_state(file.filename().string()); }

/// Where a Trainer checkpoint keeps its training state: the folder, and its `global_step*` folders (DeepSpeed's).
std::vector<fs::path> training_state_folders(const fs::path& folder) {
  std::vector<fs::path> folders = {folder};
  for (const auto& entry : fs::directory_iterator(folder))
    // A linked folder is not walked: one that leaves the model is named by links_leaving, never listed.
    if (entry.is_directory() && !entry.is_symlink() && is_training_state_folder(entry.path().filename().string()))
      folders.push_back(entry.path());
  return folders;
}

/// A folder's training-state files that record the run's precision, in path order: its record files (is_record_file),
/// and DeepSpeed's bf16 ZeRO shards (by name only) in its training_state_folders.
std::vector<fs::path> training_files_in(const fs::path& folder) {
  std::vector<fs::path> found;
  for (const auto& entry : fs::directory_iterator(folder))
    if (is_record_file(entry.path().filename().string()) && entry.is_regular_file()) found.push_back(entry.path());
  for (const fs::path& where : training_state_folders(folder))
    for (const auto& entry : fs::directory_iterator(where))
      if (is_bf16_zero_shard(entry.path().filename().string()) && entry.is_regular_file())
        found.push_back(entry.path());
  std::sort(found.begin(), found.end());
  return found;
}

bool has_extension(const fs::path& path, std::span<const std::string_view> extensions) {
  std::string ext = path.extension().string();
  return std::find(extensions.begin(), extensions.end(), ext) != extensions.end();
}

/// A folder's files that may hold pickles, in its training_state_folders, other than `weights`.
std::vector<fs::path> pickles_beside(const fs::path& folder, const std::vector<fs::path>& weights) {
  std::vector<fs::path> found;
  for (const fs::path& where : training_state_folders(folder))
    for (const auto& entry : fs::directory_iterator(where))
      if (entry.is_regular_file() && may_hold_pickle(entry.path().filename().string()) &&
          std::find(weights.begin(), weights.end(), entry.path()) == weights.end())
        found.push_back(entry.path());
  std::sort(found.begin(), found.end());
  return found;
}

/// The text files beside the weights that a loader reads and may act on (ModelSource::texts_beside); Python files
/// only in a folder given as the model (beside a single file, the folder may be anything: a home folder).
std::vector<fs::path> texts_beside(const fs::path& folder, bool is_folder) {
  static constexpr std::array<std::string_view, 4> kNames = {"config.json", "tokenizer_config.json",
                                                             "chat_template.jinja", "chat_template.json"};
  std::vector<fs::path> found;
  std::error_code ec;
  for (std::string_view name : kNames)
    if (fs::is_regular_file(folder / name, ec) || fs::is_symlink(folder / name, ec)) found.push_back(folder / name);
  // transformers' save_pretrained writes named chat templates there, and from_pretrained reads them
  for (const auto& entry : fs::directory_iterator(folder / "additional_chat_templates", ec))
    if (entry.path().extension() == ".jinja") found.push_back(entry.path());
  if (is_folder)
    for (const auto& entry : fs::directory_iterator(folder))
      if (entry.path().extension() == ".py") found.push_back(entry.path());
  std::sort(found.begin(), found.end());
  return found;
}

/// Every link in `folder` and the folders under it that resolves outside the model's root, in path order: a walk
/// that never follows a link. Bounded in entries (a model's folder holds hundreds): past the bound, `walked` is
/// false, and what was not walked is not vouched for.
std::vector<EscapingLink> links_leaving(const ModelRoot& root, const fs::path& folder, bool& walked) {
  constexpr size_t kMaxEntries = 100000;
  std::vector<EscapingLink> found;
  size_t entries = 0;
  std::error_code ec;
  fs::recursive_directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec);
  for (; it != fs::recursive_directory_iterator() && !ec; it.increment(ec)) {
    if (++entries > kMaxEntries) break;
    if (it->is_symlink(ec))
      if (std::optional<EscapingLink> escape = escape_of(root, it->path())) found.push_back(std::move(*escape));
  }
  walked = entries <= kMaxEntries && !ec;
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.link < b.link; });
  return found;
}

std::vector<fs::path> files_with_extension(const fs::path& folder, std::span<const std::string_view> exts) {
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

/// One format's weights in a folder: its shard index, or its files (without the training state).
struct FolderFormat {
  std::string_view name;
  std::optional<fs::path> index;
  std::vector<fs::path> files;
};

/// The formats a folder holds weights in, most preferred first.
std::vector<FolderFormat> formats_in(const fs::path& folder) {
  std::vector<FolderFormat> found;
  for (const WeightFormat& format : weight_formats()) {
    FolderFormat held{.name = format.name};
    if (!format.index.empty() && fs::is_regular_file(folder / format.index)) held.index = folder / format.index;
    held.files = files_with_extension(folder, format.extensions);
    std::erase_if(held.files, is_trainer_state_file);
    bool dcp = format.index == kDcpMetadata;  // `.metadata` alone is too common a name to mean DCP
    if ((held.index && !dcp) || !held.files.empty()) found.push_back(std::move(held));
  }
  return found;
}

/// The shard index of a folder's preferred format, when it has one.
std::optional<fs::path> shard_index_in(const fs::path& folder) {
  std::vector<FolderFormat> formats = formats_in(folder);
  return formats.empty() ? std::nullopt : formats.front().index;
}

/// A folder's weight files in its preferred format (hub repos often carry the same weights in several).
std::vector<fs::path> weight_files(const fs::path& folder) {
  std::vector<FolderFormat> formats = formats_in(folder);
  return formats.empty() ? std::vector<fs::path>{} : formats.front().files;
}

/// Files that form one model, named by the file or by the shard group ("consolidated.*.pth").
struct WeightSet {
  std::string name;
  std::vector<fs::path> files;
  bool model_parallel = false;
};

/// Megatron-LM's tensor-parallel layout: `mp_rank_00/model_optim_rng.pt`, `mp_rank_01/...` below an iteration
/// folder, one weight file per rank.
std::optional<WeightSet> megatron_ranks(const fs::path& folder) {
  WeightSet ranks{.name = "mp_rank_*", .model_parallel = true};
  for (const auto& entry : fs::directory_iterator(folder)) {
    if (!entry.is_directory() || !is_tensor_parallel_rank_folder(entry.path().filename().string())) continue;
    std::vector<fs::path> files = weight_files(entry.path());
    if (files.size() != 1) return std::nullopt;
    ranks.files.push_back(files.front());
  }
  if (ranks.files.empty()) return std::nullopt;
  std::sort(ranks.files.begin(), ranks.files.end());
  return ranks;
}

/// The models among `files`: each file alone, except shards whose names share a pattern.
std::vector<WeightSet> sets_of(const std::vector<fs::path>& files) {
  std::map<std::string, WeightSet> sets;
  for (const fs::path& file : files) {
    std::string filename = file.filename().string();
    std::optional<ShardName> shard = shard_name(filename);
    WeightSet& set = sets[shard ? shard->group : filename];
    set.model_parallel = shard && shard->kind == ShardKind::kModelParallel;
    set.files.push_back(file);
  }
  std::vector<WeightSet> found;
  for (auto& [name, set] : sets) {  // a group of one file is named by the file
    set.name = set.files.size() == 1 ? set.files.front().filename().string() : name;
    found.push_back(std::move(set));
  }
  return found;
}

/// The file a DCP folder is opened through: its `.metadata`, else its rank 0's `__0.metadata` (dcp.load reads
/// the global one when it is there); kInvalidDcp when it has neither.
fs::path dcp_metadata_in(const fs::path& folder, const FolderFormat& format) {
  if (format.index) return *format.index;
  if (fs::is_regular_file(folder / kDcpRankMetadata)) return folder / kDcpRankMetadata;
  fail(ErrorCode::kInvalidDcp, folder,
       "torch.distributed.checkpoint data files (*.distcp) without the .metadata (or the rank-local __0.metadata) "
       "that indexes them");
}

/// The models among a folder's own weight files in its preferred format, and its Megatron rank folders.
std::vector<WeightSet> weight_sets(const fs::path& folder) {
  std::vector<FolderFormat> formats = formats_in(folder);
  if (!formats.empty() && formats.front().name == "dcp") {  // its .distcp files are parts of one model, never several
    bool rank_local = !formats.front().index && fs::is_regular_file(folder / kDcpRankMetadata);
    fs::path metadata = folder / (rank_local ? kDcpRankMetadata : kDcpMetadata);  // a missing one is named on opening
    return {WeightSet{.name = metadata.filename().string(), .files = {metadata}}};
  }
  std::vector<WeightSet> found = sets_of(weight_files(folder));
  if (auto ranks = megatron_ranks(folder)) found.push_back(std::move(*ranks));
  return found;
}

bool is_pipeline(const fs::path& folder) { return fs::is_regular_file(folder / kPipelineIndex); }

/// A diffusers pipeline's components: its sub-folders that hold a model (unet, vae, text_encoder, ...).
std::vector<std::string> pipeline_components(const fs::path& folder) {
  std::vector<std::string> components;
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.is_directory() && may_hold_model(entry.path())) components.push_back(entry.path().filename().string());
  std::sort(components.begin(), components.end());
  return components;
}

std::vector<std::string> set_names(const std::vector<WeightSet>& sets) {
  std::vector<std::string> names;
  names.reserve(sets.size());
  for (const WeightSet& set : sets) names.push_back(set.name);
  return names;
}

void use_set(ModelSource& source, WeightSet set) {
  source.files = std::move(set.files);
  source.model_parallel = set.model_parallel;
}

/// Why a folder without a shard index is not one model: several independent checkpoints, a diffusers pipeline,
/// or no weights at all.
/// The weight formats' files, as no_weights names them: "*.safetensors, *.bin, ..., or a DCP folder's .metadata"
/// (the format table's extensions, in the weight formats' order).
std::string weight_file_patterns() {
  std::vector<std::string> patterns;
  for (const WeightFormat& format : weight_formats())
    for (std::string_view extension : format.extensions) patterns.push_back(fmt::format("*{}", extension));
  return fmt::format("{}, or a DCP folder's {}", fmt::join(patterns, ", "), kDcpMetadata);
}

[[noreturn]] void fail_not_one_model(const fs::path& folder, const std::vector<WeightSet>& sets) {
  if (sets.size() > 1)
    fail(ErrorCode::kSeveralModels, folder,
         fmt::format("{} independent checkpoints ({}): scan the folder (each is reported as a model of its own) or "
                     "name one",
                     sets.size(), fmt::join(set_names(sets), ", ")));
  std::vector<std::string> components = is_pipeline(folder) ? pipeline_components(folder) : std::vector<std::string>{};
  if (!components.empty())
    fail(ErrorCode::kSeveralModels, folder,
         fmt::format("a diffusers pipeline whose components are models of their own ({}): scan the folder or name one",
                     fmt::join(components, ", ")));
  fail(ErrorCode::kNoWeights, folder, fmt::format("no weight files ({}) here", weight_file_patterns()));
}

/// A folder is one model: its shard index, or its one set of weight files; its training state is that model's.
void add_folder(ModelSource& source, const fs::path& folder) {
  std::vector<FolderFormat> formats = formats_in(folder);
  for (size_t i = 1; i < formats.size(); ++i) source.other_formats.emplace_back(formats[i].name);
  if (!formats.empty() && formats.front().name == "dcp") {
    source.files = {dcp_metadata_in(folder, formats.front())};  // its reader opens the data files it names
  } else if (!formats.empty() && formats.front().index) {
    add_sharded(source, *formats.front().index);
  } else {
    std::vector<WeightSet> sets = weight_sets(folder);
    if (sets.size() != 1) fail_not_one_model(folder, sets);
    use_set(source, std::move(sets.front()));
  }
  source.training_files = training_files_in(folder);
  source.pickles_beside = pickles_beside(folder, source.files);
}

/// A shard group named as `folder/group` (how a scan names the shards of one model beside other models), in any
/// of the folder's formats.
std::optional<WeightSet> named_set(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_directory(path.parent_path(), ec)) return std::nullopt;
  try {
    std::vector<WeightSet> sets = weight_sets(path.parent_path());
    for (FolderFormat& format : formats_in(path.parent_path()))
      for (WeightSet& set : sets_of(format.files)) sets.push_back(std::move(set));
    for (WeightSet& set : sets)
      if (set.name == path.filename().string()) return std::move(set);
  } catch (const fs::filesystem_error&) {  // an unreadable folder names no set
  }
  return std::nullopt;
}

/// The folder a file lies in; "." for a bare file name.
fs::path folder_of(const fs::path& file) { return file.has_parent_path() ? file.parent_path() : fs::path("."); }

/// With --all-formats, each format a folder holds as a model of its own: its index, its one file, or its shard
/// group; empty when the folder holds one format.
std::vector<std::string> models_by_format(const fs::path& folder, const fs::path& base) {
  std::vector<FolderFormat> formats = formats_in(folder);
  std::vector<std::string> models;
  if (formats.size() < 2) return models;
  for (const FolderFormat& format : formats) {
    if (format.index) {
      models.push_back((base / format.index->filename()).string());
      continue;
    }
    for (const WeightSet& set : sets_of(format.files)) models.push_back((base / set.name).string());
  }
  return models;
}

}  // namespace

fs::path resolve_input(const std::string& input, const fs::path& hf_cache) {
  fs::path path(input);
  std::error_code ec;
  if (fs::exists(path, ec) || named_set(path)) return path;
  if (has_hf_id_shape(input)) return resolve_hf_id(input, hf_cache);
  fail(ErrorCode::kNotFound, path, "no such file or folder");
}

bool may_hold_model(const fs::path& folder) {
  try {
    return shard_index_in(folder) || !weight_sets(folder).empty() ||
           (is_pipeline(folder) && !pipeline_components(folder).empty());
  } catch (const fs::filesystem_error&) {  // unreadable: it may hold one, and scanning it names the problem
    return true;
  }
}

bool holds_model_parts(const fs::path& folder) {
  try {
    return is_pipeline(folder) || megatron_ranks(folder).has_value();
  } catch (const fs::filesystem_error&) {
    return false;
  }
}

std::vector<std::string> models_in(const std::string& input, const fs::path& hf_cache, bool all_formats) {
  if (is_url(input)) return remote_models_in(input);
  try {
    fs::path path = resolve_input(input, hf_cache);
    if (!fs::is_directory(path)) return {input};
    // A hub id's snapshot is named by its path: `org/name/file.pt` would not resolve.
    fs::path base = fs::exists(fs::path(input)) ? fs::path(input) : path;
    if (all_formats)
      if (std::vector<std::string> models = models_by_format(path, base); !models.empty()) return models;
    if (shard_index_in(path)) return {input};
    std::vector<std::string> models;
    std::vector<WeightSet> sets = weight_sets(path);
    if (sets.size() > 1)
      for (const WeightSet& set : sets) models.push_back((base / set.name).string());
    if (sets.empty() && is_pipeline(path))
      for (const std::string& component : pipeline_components(path)) models.push_back((base / component).string());
    return models.empty() ? std::vector<std::string>{input} : models;
  } catch (const Error&) {  // scanning the input names the problem
  } catch (const fs::filesystem_error&) {
  }
  return {input};
}

ModelSource discover(const std::string& input, const fs::path& hf_cache, Named named) {
  if (is_url(input)) return discover_remote(input);
  ModelSource source{.input = input, .path = resolve_input(input, hf_cache)};
  fs::path folder = source.path;
  std::error_code ec;
  bool is_folder = fs::is_directory(source.path, ec);
  // The path the user named is the root (followed if it is a link: they chose it); a shard group (`folder/group`,
  // no file of its own) and a model split out of a folder (a file, a pipeline's component) have their folder's.
  if (named == Named::kByUser && (is_folder || fs::exists(source.path, ec)))
    source.root = model_root_of(source.path, is_folder);
  else if (fs::is_directory(folder_of(source.path), ec))
    source.root = model_root_of(folder_of(source.path), true);
  Confined confined(source.root);
  try {
    if (is_folder) {
      add_folder(source, source.path);
    } else if (source.path.filename().string().ends_with(".index.json")) {
      add_sharded(source, source.path);
      folder = folder_of(source.path);
    } else if (!fs::exists(source.path)) {
      use_set(source, *named_set(source.path));
      folder = folder_of(source.path);
    } else {
      source.files = {source.path};
      folder = folder_of(source.path);
    }
  } catch (const fs::filesystem_error& e) {
    fail(ErrorCode::kIo, source.path, e.code().message());
  }
  if (fs::is_regular_file(folder / "config.json")) source.config = folder / "config.json";
  source.texts_beside = texts_beside(folder, is_folder);
  if (is_folder) source.escaping_links = links_leaving(source.root, folder, source.links_walked);
  return source;
}

}  // namespace precdetect
