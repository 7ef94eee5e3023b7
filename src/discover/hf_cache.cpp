#include "precdetect/discover/hf_cache.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <regex>

#include "precdetect/core/error.h"

namespace precdetect {
namespace fs = std::filesystem;
namespace {

std::optional<fs::path> env_path(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return fs::path(value);
}

/// "org/name" -> "models--org--name", as huggingface_hub's repo_folder_name() spells it.
std::string repo_folder_name(std::string_view repo) {
  std::string folder = "models--";
  for (char c : repo) folder += c == '/' ? std::string("--") : std::string(1, c);
  return folder;
}

/// "models--org--name" -> "org/name": the inverse (hub names never contain "--").
std::string repo_id(const std::string& folder) {
  std::string id = folder.substr(std::string_view("models--").size());
  size_t separator = id.find("--");
  if (separator == std::string::npos) return id;
  return id.substr(0, separator) + "/" +
         id.substr(separator + 2);  // not replace(): GCC's -Wrestrict misfires on it at -O3
}

std::vector<fs::path> sorted_folders(const fs::path& parent) {
  std::vector<fs::path> folders;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(parent, ec))
    if (entry.is_directory(ec)) folders.push_back(entry.path());
  std::sort(folders.begin(), folders.end());
  return folders;
}

/// The snapshot a plain id loads (refs/main), else the newest snapshot; nullopt when there is none.
std::optional<std::string> default_revision(const fs::path& repo_dir) {
  if (fs::is_regular_file(repo_dir / "refs" / "main")) return std::nullopt;  // the id itself resolves to it
  std::optional<fs::path> newest;
  std::error_code ec;
  for (const fs::path& snapshot : sorted_folders(repo_dir / "snapshots"))
    if (!newest || fs::last_write_time(snapshot, ec) > fs::last_write_time(*newest, ec)) newest = snapshot;
  if (newest) return newest->filename().string();
  return std::nullopt;
}

std::string read_ref(const fs::path& ref_file) {
  std::ifstream in(ref_file);
  std::string commit;
  in >> commit;
  return commit;
}

}  // namespace

fs::path hf_hub_cache() {
  if (auto path = env_path("HF_HUB_CACHE")) return *path;
  if (auto path = env_path("HUGGINGFACE_HUB_CACHE")) return *path;
  if (auto path = env_path("HF_HOME")) return *path / "hub";
  if (auto path = env_path("XDG_CACHE_HOME")) return *path / "huggingface" / "hub";
  return env_path("HOME").value_or(fs::path("/")) / ".cache" / "huggingface" / "hub";
}

std::optional<std::string> cached_repo_id(const fs::path& path) {
  for (fs::path folder = path; !folder.empty() && folder != folder.parent_path(); folder = folder.parent_path())
    if (std::string name = folder.filename().string(); name.starts_with("models--")) return repo_id(name);
  return std::nullopt;
}

bool is_commit_hash(std::string_view revision) {
  return revision.size() == 40 && revision.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

bool has_hf_id_shape(std::string_view input) {
  static const std::regex kHubId(R"(^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?(@[\w./-]+)?$)");
  return std::regex_match(input.begin(), input.end(), kHubId);
}

fs::path resolve_hf_id(std::string_view id, const fs::path& cache) {
  std::string_view repo = id.substr(0, id.find('@'));
  std::string revision = id.find('@') == std::string_view::npos ? "main" : std::string(id.substr(id.find('@') + 1));
  fs::path repo_dir = cache / repo_folder_name(repo);
  if (!fs::is_directory(repo_dir))
    fail(ErrorCode::kHfCacheMiss, repo_dir,
         fmt::format("`{}` is neither a path nor a model in the local Hugging Face cache (looked in {}): scan it "
                     "from the Hub as `hf://{}`, or fetch it with `huggingface-cli download {}` first",
                     id, cache.string(), id, repo));
  std::string commit = is_commit_hash(revision) ? revision : read_ref(repo_dir / "refs" / revision);
  if (commit.empty())
    fail(ErrorCode::kHfCacheMiss, repo_dir / "refs" / revision,
         fmt::format("revision `{}` of `{}` is not in the local cache", revision, repo));
  fs::path snapshot = repo_dir / "snapshots" / commit;
  if (!fs::is_directory(snapshot))
    fail(ErrorCode::kHfCacheMiss, snapshot, fmt::format("snapshot {} of `{}` is not in the local cache", commit, repo));
  return snapshot;
}

}  // namespace precdetect

namespace precdetect {

std::vector<std::string> cached_models(const fs::path& cache, bool all_revisions) {
  std::vector<std::string> ids;
  for (const fs::path& repo_dir : sorted_folders(cache)) {
    std::string folder = repo_dir.filename().string();
    if (!folder.starts_with("models--")) continue;  // datasets--, spaces--, .locks
    std::string id = repo_id(folder);
    if (all_revisions) {
      for (const fs::path& snapshot : sorted_folders(repo_dir / "snapshots"))
        ids.push_back(id + "@" + snapshot.filename().string());
    } else {
      std::optional<std::string> revision = default_revision(repo_dir);
      ids.push_back(revision ? id + "@" + *revision : id);
    }
  }
  return ids;
}

}  // namespace precdetect
