#include "precdetect/discover/remote.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "precdetect/core/error.h"
#include "precdetect/core/format.h"
#include "precdetect/discover/hf_cache.h"
#include "precdetect/discover/s3_listing.h"
#include "precdetect/discover/shard_index.h"
#include "precdetect/discover/shard_pattern.h"
#include "precdetect/discover/training_state.h"
#include "precdetect/net/http.h"
#include "precdetect/net/remote_text.h"

namespace precdetect {
namespace {

/// A remote folder's listing: the base URL its files are named from, and their names (relative, '/'-separated,
/// as spelled: each is percent-encoded once, per segment, when it becomes part of a URL).
struct Listing {
  std::string base;  ///< ends with '/'
  std::set<std::string> names;
  bool complete = false;  ///< the listing holds every file (a Hub repository, an S3 folder): an absent one is missing
};

std::string url_of(const Listing& listing, const std::string& name) {
  return listing.base + percent_encode(name, /*keep_slash=*/true);
}

/// The text files beside the weights a loader reads and may act on (discover.cpp's texts_beside), in name order.
constexpr std::array<std::string_view, 4> kTextNames = {"chat_template.jinja", "chat_template.json", "config.json",
                                                        "tokenizer_config.json"};

bool has_extension(const std::string& name, std::span<const std::string_view> extensions) {
  return std::any_of(extensions.begin(), extensions.end(), [&](std::string_view ext) { return name.ends_with(ext); });
}

bool is_weight_candidate(const std::string& name) {
  return name.find('/') == std::string::npos && name.find('\0') == std::string::npos && !is_trainer_state(name);
}

/// A sharded model: the index (at `index_url`, in the listing's `folder`: empty or ending with '/') and its shards,
/// each beside it; missing when the listing is complete and lacks one.
void add_index(ModelSource& source, const Listing& listing, const std::string& index_url, const std::string& folder) {
  ShardIndex index = parse_shard_index(remote_text(index_url, "shard index"), index_url);
  std::vector<std::string> missing;
  for (const std::string& shard : index.shards) {
    // A shard is a path from the index's folder, as a loader joins it (`./x` is `x`; `..` was refused): its `.`
    // segments go before it names a file, which an S3 key would keep. Any other character is the name's own
    // (`?`, `#`, `%`, a space), percent-encoded once as the name becomes a URL.
    std::string name = std::filesystem::path(shard).lexically_normal().generic_string();
    if (!is_clean_path(name))
      fail(ErrorCode::kPathEscape, index_url, fmt::format("weight_map names `{}`, which is no file beside it", shard));
    name.insert(0, folder);
    if (listing.complete && !listing.names.contains(name)) missing.push_back(shard);
    source.files.emplace_back(url_of(listing, name));
  }
  if (!missing.empty())
    fail(ErrorCode::kMissingShard, index_url,
         fmt::format("{} of {} shards named in the index are missing, first `{}`", missing.size(), index.shards.size(),
                     missing.front()));
  source.weight_map = std::move(index.weight_map);
}

/// The one model among a folder's files of one format: a single file, or files of one shard group.
void add_files(ModelSource& source, const Listing& listing, const std::vector<std::string>& files) {
  std::set<std::string> groups;
  for (const std::string& name : files) {
    std::optional<ShardName> shard = shard_name(name);
    groups.insert(shard ? shard->group : name);
    source.model_parallel = shard && shard->kind == ShardKind::kModelParallel;
  }
  if (groups.size() > 1)
    fail(ErrorCode::kSeveralModels, listing.base,
         fmt::format("{} independent checkpoints ({}): name one", groups.size(), fmt::join(groups, ", ")));
  for (const std::string& name : files) source.files.emplace_back(url_of(listing, name));
}

/// A format's files at the top of a listed folder (the trainer's state aside).
std::vector<std::string> files_of(const Listing& listing, const WeightFormat& format) {
  std::vector<std::string> files;
  for (const std::string& name : listing.names)
    if (is_weight_candidate(name) && has_extension(name, format.extensions)) files.push_back(name);
  return files;
}

/// A folder's model, as discover() picks one from a local folder: the preferred format's index, else its files;
/// the other formats it holds are named (ModelSource::other_formats) as a local folder's are.
void add_folder(ModelSource& source, const Listing& listing) {
  const WeightFormat* picked = nullptr;
  for (const WeightFormat& format : weight_formats()) {
    bool indexed =
        !format.index.empty() && format.index != kDcpMetadata && listing.names.contains(std::string(format.index));
    std::vector<std::string> files = files_of(listing, format);
    if (!indexed && files.empty()) continue;
    if (picked || !format.read_remotely) {
      source.other_formats.emplace_back(format.name);
      continue;
    }
    picked = &format;
    if (indexed)
      add_index(source, listing, url_of(listing, std::string(format.index)), "");
    else
      add_files(source, listing, files);
  }
  if (!picked) fail(ErrorCode::kNoWeights, listing.base, "no weight files in this remote folder");
}

/// config.json and the text files a loader acts on (ModelSource::texts_beside), where the listing holds them.
void add_texts(ModelSource& source, const Listing& listing, const std::string& folder) {
  for (const std::string& name : listing.names) {
    bool beside = name.starts_with(folder) && name.find('/', folder.size()) == std::string::npos;
    std::string_view file = std::string_view(name).substr(folder.size());
    if (beside && (std::find(kTextNames.begin(), kTextNames.end(), file) != kTextNames.end() || file.ends_with(".py")))
      source.texts_beside.emplace_back(url_of(listing, name));
  }
  if (listing.names.contains(folder + "config.json")) source.config = url_of(listing, folder + "config.json");
}

/// The training state beside a listed folder's weights, as discover() finds it beside a local folder's: its
/// record files and DeepSpeed's bf16 shards (ModelSource::training_files), and every file other than the weights
/// that a load may unpickle (ModelSource::pickles_beside), at the top and in its `global_step*/` folders; each in
/// path order.
void add_training_state(ModelSource& source, const Listing& listing) {
  std::vector<std::filesystem::path> names;  // relative, ordered as paths: as a local folder's are
  for (const std::string& name : listing.names) {
    size_t slash = name.find('/');
    if (slash == std::string::npos ||
        (name.find('/', slash + 1) == std::string::npos && is_training_state_folder(name.substr(0, slash))))
      names.emplace_back(name);
  }
  std::sort(names.begin(), names.end());
  for (const std::filesystem::path& name : names) {
    std::string file = name.filename().string(), url = url_of(listing, name.generic_string());
    if ((is_record_file(file) && !name.has_parent_path()) || is_bf16_zero_shard(file))
      source.training_files.emplace_back(url);
    if (may_hold_pickle(file) && std::find(source.files.begin(), source.files.end(), url) == source.files.end())
      source.pickles_beside.emplace_back(url);
  }
}

/// `input` as a Hub model (parse_hub_url). Throws Error: kNotFound when it names none, kPathEscape when its revision
/// or folder has a `.` or `..` segment (no git ref or path has one, and a URL loses it: another revision's or
/// folder's answer would be read).
HubRef checked_hub_url(const std::string& input) {
  std::optional<HubRef> hub = parse_hub_url(input);
  if (!hub)
    fail(ErrorCode::kNotFound, input,
         "a Hub model is named hf://org/name[@revision][/folder], org and name as huggingface_hub's repository ids "
         "(letters, digits, `-`, `_` and `.`)");
  if (has_dot_segment(hub->revision) || has_dot_segment(hub->folder))
    fail(ErrorCode::kPathEscape, input,
         fmt::format("the revision `{}` or folder `{}` has a `.` or `..` segment, which no git ref or path has: its "
                     "URL would name another",
                     hub->revision, hub->folder));
  return *hub;
}

/// A name the Hub lists, which must be a clean relative path (git holds no other, nor does the Hub serve one): a
/// mirror's absolute, empty, `.` or `..` name would have its URL name another file.
void check_listed(const std::string& api, const std::string& name) {
  if (!is_clean_path(name))
    fail(ErrorCode::kPathEscape, api,
         fmt::format("the Hub lists `{}`, which is no clean path inside the repository (an absolute path, an empty, "
                     "`.` or `..` segment): its URL would name another file",
                     name));
}

/// The commit the Hub's model info names, which becomes part of every file's URL: a commit id (40 hex digits,
/// huggingface_hub's REGEX_COMMIT_HASH), else a mirror's answer that would have us read elsewhere.
std::string listed_commit(const std::string& api, const nlohmann::json& info) {
  std::string commit = info["sha"].get<std::string>();
  if (!is_commit_hash(commit))
    fail(ErrorCode::kPathEscape, api,
         fmt::format("the Hub's model info names the commit `{}`, which is no commit id (40 hex digits): it would "
                     "name the repository's files by another path",
                     commit));
  return commit;
}

/// A Hub repository's files at the commit its revision names, as a listing of `hub.folder` (the repository's top
/// when empty); `commit` is set to that commit.
Listing list_hub(const std::string& input, const HubRef& hub, std::string& commit) {
  std::string api =
      fmt::format("{}/api/models/{}/revision/{}", hf_endpoint(), hub.repo, percent_encode(hub.revision, false));
  nlohmann::json info;
  try {
    info = nlohmann::json::parse(remote_text(api, "the Hub's model info"));
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorCode::kRemote, api, fmt::format("the Hub's answer is not the model info it documents: {}", e.what()));
  }
  if (!info.is_object() || !info.contains("sha") || !info["sha"].is_string() || !info.contains("siblings"))
    fail(ErrorCode::kRemote, api, "the Hub's answer has no `sha` and `siblings`");
  commit = listed_commit(api, info);
  std::string folder = hub.folder.empty() ? "" : hub.folder + "/";
  Listing listing{
      .base = fmt::format("{}/{}/resolve/{}/{}", hf_endpoint(), hub.repo, commit, percent_encode(folder, true)),
      .complete = true};
  for (const auto& sibling : info["siblings"])
    if (sibling.is_object() && sibling.contains("rfilename") && sibling["rfilename"].is_string()) {
      std::string name = sibling["rfilename"].get<std::string>();
      check_listed(api, name);
      if (name.starts_with(folder)) listing.names.insert(name.substr(folder.size()));
    }
  if (listing.names.empty()) fail(ErrorCode::kNotFound, input, "no such folder in the repository");
  return listing;
}

/// The name of the Hub model `hub` at `commit`: `hf://org/name@<commit>[/folder]`.
std::string hub_path(const HubRef& hub, const std::string& commit, const std::string& folder) {
  return fmt::format("hf://{}@{}{}", hub.repo, commit, folder.empty() ? "" : "/" + folder);
}

/// `hf://org/name[@revision][/folder]`: the Hub's revision API lists the repository's files at the commit it names.
ModelSource discover_hub(const std::string& input) {
  HubRef hub = checked_hub_url(input);
  std::string commit;
  Listing listing = list_hub(input, hub, commit);
  ModelSource source{.input = input, .path = hub_path(hub, commit, hub.folder)};
  add_folder(source, listing);
  add_texts(source, listing, "");
  add_training_state(source, listing);
  return source;
}

/// config.json and the other text files beside a file or index that came without a listing (an http(s) URL, an S3
/// object), asked for by name: as discover() looks beside a local file. One that is absent or refused (S3 answers
/// 403 for a key that does not exist to a reader who may not list) is read as absent.
void add_texts_beside(ModelSource& source, const Listing& beside) {
  for (std::string_view name : kTextNames) {
    std::string url = url_of(beside, std::string(name));
    try {
      remote_text(url, "a text file beside the weights");
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kNotFound || e.code() == ErrorCode::kRemoteAuth) continue;
      throw;
    }
    if (name == "config.json") source.config = url;
    source.texts_beside.emplace_back(url);
  }
}

/// An S3 folder's files, and those of its `global_step*/` folders (the training state a local folder's discovery
/// looks at too), as keys.
Listing list_s3_folder(const std::string& bucket, const std::string& prefix) {
  Listing listing{.base = fmt::format("{}/{}/", s3_endpoint(), bucket), .complete = true};
  S3Level level = list_s3_level(bucket, prefix);
  listing.names.insert(level.keys.begin(), level.keys.end());
  for (const std::string& folder : level.folders)
    if (is_training_state_folder(folder.substr(prefix.size()))) {
      S3Level state = list_s3_level(bucket, folder);
      listing.names.insert(state.keys.begin(), state.keys.end());
    }
  return listing;
}

ModelSource discover_s3(const std::string& input) {
  std::string spec = input.substr(std::string_view("s3://").size());
  size_t slash = spec.find('/');
  std::string bucket = spec.substr(0, slash), key = slash == std::string::npos ? "" : spec.substr(slash + 1);
  if (bucket.empty()) fail(ErrorCode::kNotFound, input, "an S3 object is named s3://bucket/key or s3://bucket/prefix/");
  ModelSource source{.input = input, .path = input};
  if (!key.empty() && !key.ends_with('/')) {  // one object: a weight file or an index
    Listing beside{.base = url_folder(*http_url_of(input))};
    if (key.ends_with(".index.json"))
      add_index(source, beside, *http_url_of(input), "");
    else
      source.files.emplace_back(*http_url_of(input));
    add_texts_beside(source, beside);
    return source;
  }
  Listing listing = list_s3_folder(bucket, key);
  Listing folder{.base = listing.base + percent_encode(key, true), .complete = true};
  for (const std::string& name : listing.names)
    if (name.starts_with(key)) folder.names.insert(name.substr(key.size()));
  add_folder(source, folder);
  add_texts(source, folder, "");
  add_training_state(source, folder);
  return source;
}

/// An http(s) URL: an index (its shards beside it) or one file.
ModelSource discover_http(const std::string& input) {
  ModelSource source{.input = input, .path = input};
  Listing beside{.base = url_folder(input)};
  if (url_file_name(input).ends_with(".index.json"))
    add_index(source, beside, input, "");
  else
    source.files.emplace_back(input);
  add_texts_beside(source, beside);
  return source;
}

/// Whether a listed folder holds weights at its top, in a format a remote folder is read in (add_folder's choice).
bool holds_weights(const Listing& listing) {
  for (const WeightFormat& format : weight_formats())
    if (format.read_remotely && ((!format.index.empty() && listing.names.contains(std::string(format.index))) ||
                                 !files_of(listing, format).empty()))
      return true;
  return false;
}

/// The sub-folders of a listed diffusers pipeline (model_index.json, no weights of its own) that hold weights, in
/// name order: its components, as a local pipeline's (discover.cpp's pipeline_components).
std::vector<std::string> components_of(const Listing& listing) {
  if (!listing.names.contains("model_index.json") || holds_weights(listing)) return {};
  std::map<std::string, Listing> folders;
  for (const std::string& name : listing.names)
    if (size_t slash = name.find('/'); slash != std::string::npos)
      folders[name.substr(0, slash)].names.insert(name.substr(slash + 1));
  std::vector<std::string> components;
  for (const auto& [folder, inside] : folders)
    if (holds_weights(inside)) components.push_back(folder);
  return components;
}

/// An S3 folder's listing with its sub-folders' files (one level down): what components_of looks at.
Listing list_s3_pipeline(const std::string& bucket, const std::string& prefix) {
  Listing listing{.base = fmt::format("{}/{}/", s3_endpoint(), bucket), .complete = true};
  S3Level level = list_s3_level(bucket, prefix);
  for (const std::string& key : level.keys) listing.names.insert(key.substr(prefix.size()));  // under it: add_keys
  if (!listing.names.contains("model_index.json")) return listing;
  for (const std::string& folder : level.folders)
    for (const std::string& key : list_s3_level(bucket, folder).keys) listing.names.insert(key.substr(prefix.size()));
  return listing;
}

}  // namespace

std::vector<std::string> remote_models_in(const std::string& input) {
  try {
    if (hf_offline()) return {input};  // scanning it names why nothing is read
    if (input.starts_with("hf://")) {
      HubRef hub = checked_hub_url(input);
      std::string commit;
      std::vector<std::string> models;
      // Each component at the commit listed: the pipeline's parts are read from one version of it.
      for (const std::string& component : components_of(list_hub(input, hub, commit)))
        models.push_back(hub_path(hub, commit, hub.folder.empty() ? component : hub.folder + "/" + component));
      if (!models.empty()) return models;
    } else if (input.starts_with("s3://") && input.ends_with('/')) {
      std::string spec = input.substr(std::string_view("s3://").size());
      size_t slash = spec.find('/');
      std::vector<std::string> models;
      for (const std::string& component :
           components_of(list_s3_pipeline(spec.substr(0, slash), spec.substr(slash + 1))))
        models.push_back(input + component + "/");
      if (!models.empty()) return models;
    }
  } catch (const Error&) {  // scanning the input names the problem
  }
  return {input};
}

ModelSource discover_remote(const std::string& input) {
  if (hf_offline()) fail(ErrorCode::kRemote, input, "HF_HUB_OFFLINE is set: no network is used");
  if (input.starts_with("hf://")) return discover_hub(input);
  if (input.starts_with("s3://")) return discover_s3(input);
  return discover_http(input);
}

}  // namespace precdetect
