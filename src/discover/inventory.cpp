#include "precdetect/discover/inventory.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <map>
#include <unordered_map>

#include "precdetect/core/error.h"
#include "precdetect/discover/training_state.h"
#include "precdetect/net/url.h"

namespace precdetect {
namespace fs = std::filesystem;
namespace {

/// Entries walked at most: past them the walk stops (Inventory::walked false), so a tree of a billion files ends.
constexpr uint64_t kMaxWalked = 10'000'000;

constexpr std::array<std::string_view, 3> kRepositoryStores = {".git", ".hg", ".svn"};
// huggingface_hub's own bookkeeping: the cache's lock files and known-missing files, a repository's refs and the
// blobs its snapshots link into (reached through those links); a local download's `.cache/huggingface` metadata.
constexpr std::array<std::string_view, 2> kCacheBookkeeping = {".locks", ".no_exist"};
constexpr std::array<std::string_view, 2> kRepositoryBookkeeping = {"refs", "blobs"};
constexpr std::array<std::string_view, 3> kCacheRepositoryPrefixes = {"models--", "datasets--", "spaces--"};

template <size_t N>
bool one_of(std::string_view name, const std::array<std::string_view, N>& names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

/// Why a folder is named and not walked, or nullopt for one walked like any other.
std::optional<std::string> store_of(const fs::path& folder) {
  std::string name = folder.filename().string();
  std::string parent = folder.parent_path().filename().string();
  if (one_of(name, kRepositoryStores)) return "a version-control repository's own store, named and not walked";
  if (one_of(name, kCacheBookkeeping) || (name == "huggingface" && parent == ".cache"))
    return "the Hugging Face cache's own bookkeeping, named and not walked";
  bool in_repository = std::any_of(kCacheRepositoryPrefixes.begin(), kCacheRepositoryPrefixes.end(),
                                   [&](std::string_view prefix) { return parent.starts_with(prefix); });
  if (in_repository && one_of(name, kRepositoryBookkeeping))
    return "an HF cache repository's refs or blob store (its snapshots' links are listed), named and not walked";
  return std::nullopt;
}

/// One directory entry as an inventory entry, reading no file: stat only, and a link's target never opened.
InventoryEntry entry_of(const fs::directory_entry& found, const ModelRoot& root) {
  std::error_code ec;
  InventoryEntry entry{.path = found.path()};
  fs::file_status status = found.symlink_status(ec);
  if (fs::is_symlink(status)) {
    entry.kind = EntryKind::kLink;
    entry.link = fs::read_symlink(found.path(), ec).string();
    entry.leaves = escape_of(root, found.path()).has_value();
    if (!entry.leaves && fs::is_regular_file(found.path(), ec)) entry.size = fs::file_size(found.path(), ec);
    if (entry.leaves) {
      entry.unread = Unread::kLinkOut;
      entry.reason = "a link out of the input, never followed";
    }
  } else if (fs::is_regular_file(status)) {
    struct stat file {};
    if (::lstat(found.path().c_str(), &file) == 0) entry.size = static_cast<uint64_t>(file.st_size);
    if (has_names_outside(root, file)) {
      entry.leaves = true;
      entry.names_outside = file.st_nlink - root.census->names_beneath(file);
      entry.unread = Unread::kLinkOut;
      entry.reason = fmt::format("a hard link with {} of its {} names outside the input, never read",
                                 entry.names_outside, file.st_nlink);
    }
  } else {
    entry.kind = EntryKind::kOther;
    entry.unread = Unread::kNotAFile;
    entry.reason = "not a regular file (a FIFO, socket or device)";
  }
  return entry;
}

/// Adds an entry, or counts it once the listing bound is reached.
void keep(Inventory& inventory, InventoryEntry entry) {
  if (inventory.entries.size() < kMaxListed)
    inventory.entries.push_back(std::move(entry));
  else
    ++inventory.unlisted;
}

void walk_folder(Inventory& inventory, const fs::path& folder) {
  std::error_code ec;
  fs::recursive_directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec), end;
  uint64_t walked = 0;
  for (; !ec && it != end; it.increment(ec)) {
    if (++walked > kMaxWalked) {
      inventory.walked = false;
      return;
    }
    std::error_code type_ec;
    if (it->is_directory(type_ec) && !it->is_symlink(type_ec)) {
      if (std::optional<std::string> store = store_of(it->path())) {
        it.disable_recursion_pending();
        keep(inventory, {.path = it->path(), .kind = EntryKind::kFolder, .unread = Unread::kStore, .reason = *store});
      }
      continue;
    }
    keep(inventory, entry_of(*it, inventory.root));
  }
  if (ec) inventory.walked = false;
}

/// Whether `name` matches a shard group's `pattern`, whose `*` stands for any run of characters
/// (`consolidated.*.pth`, discover/shard_pattern.h); a file's own name matches itself.
bool matches(std::string_view pattern, std::string_view name) {
  size_t star = pattern.find('*');
  if (star == std::string_view::npos) return pattern == name;
  std::string_view head = pattern.substr(0, star), rest = pattern.substr(star + 1);
  if (!name.starts_with(head)) return false;
  for (size_t at = head.size(); at <= name.size(); ++at)
    if (matches(rest, name.substr(at))) return true;
  return false;
}

/// `path` as the inventory spells paths for comparison: lexically normal, no trailing separator.
std::string normal(const fs::path& path) {
  std::string text = path.lexically_normal().string();
  while (text.size() > 1 && text.back() == '/') text.pop_back();
  return text;
}

}  // namespace

std::string_view entry_kind_name(EntryKind kind) {
  switch (kind) {
    case EntryKind::kFile:
      return "file";
    case EntryKind::kLink:
      return "link";
    case EntryKind::kFolder:
      return "folder";
    case EntryKind::kOther:
      return "other";
  }
  return "other";
}

std::string_view disposition_name(Disposition disposition) {
  switch (disposition) {
    case Disposition::kWeights:
      return "weights";
    case Disposition::kLoaderFile:
      return "loader_file";
    case Disposition::kTrainingState:
      return "training_state";
    case Disposition::kJudged:
      return "judged";
    case Disposition::kNotRead:
      return "not_read";
  }
  return "not_read";
}

std::string_view unread_name(Unread why) {
  switch (why) {
    case Unread::kStore:
      return "store";
    case Unread::kLinkOut:
      return "link_out";
    case Unread::kDocument:
      return "document";
    case Unread::kImage:
      return "image";
    case Unread::kMedia:
      return "media";
    case Unread::kPlainData:
      return "plain_data";
    case Unread::kNoFormat:
      return "no_format";
    case Unread::kNotAFile:
      return "not_a_file";
    case Unread::kNotSniffed:
      return "not_sniffed";
  }
  return "no_format";
}

std::optional<Inventory> list_input(const std::string& input, const fs::path& hf_cache) {
  if (is_url(input)) return std::nullopt;
  try {
    Inventory inventory;
    inventory.path = resolve_input(input, hf_cache);
    std::error_code ec;
    bool is_folder = fs::is_directory(inventory.path, ec);
    if (!is_folder && !fs::exists(inventory.path, ec)) return std::nullopt;  // a shard group: its folder's listing
    inventory.root = model_root_of(inventory.path, is_folder);
    if (is_folder) {
      walk_folder(inventory, inventory.path);
    } else {
      // The file the user typed: its own entry (a link the user chose is followed, as its scan follows it).
      InventoryEntry entry{.path = inventory.path};
      if (uint64_t size = fs::file_size(inventory.path, ec); !ec) entry.size = size;
      inventory.entries.push_back(std::move(entry));
    }
    std::sort(inventory.entries.begin(), inventory.entries.end(),
              [](const InventoryEntry& a, const InventoryEntry& b) { return a.path < b.path; });
    return inventory;
  } catch (const Error&) {  // no such path, a hub id not in the cache: the scan names it
  } catch (const fs::filesystem_error&) {
  }
  return std::nullopt;
}

std::optional<fs::path> model_path(const std::string& model, const fs::path& hf_cache) {
  if (is_url(model)) return std::nullopt;
  try {
    return resolve_input(model, hf_cache);
  } catch (const Error&) {
  } catch (const fs::filesystem_error&) {
  }
  return std::nullopt;
}

std::vector<Inventory> account(const Inventory& listing, const std::vector<std::optional<fs::path>>& paths) {
  std::vector<Inventory> accounted(std::max<size_t>(paths.size(), 1));
  for (Inventory& part : accounted) part.root = listing.root, part.path = listing.path;
  accounted.front().unlisted = listing.unlisted;
  accounted.front().walked = listing.walked;
  std::unordered_map<std::string, size_t> model_of_folder;  // the first model of each folder
  std::unordered_map<std::string, size_t> model_of_file;    // a model's own file
  std::vector<std::pair<fs::path, size_t>> groups;          // a shard group's pattern
  for (size_t model = 0; model < paths.size(); ++model) {
    if (!paths[model]) continue;
    std::error_code ec;
    bool folder = fs::is_directory(*paths[model], ec);
    fs::path path = normal(*paths[model]);
    model_of_folder.try_emplace(folder ? path.string() : path.parent_path().string(), model);
    if (folder) continue;
    if (path.filename().string().find('*') == std::string::npos)
      model_of_file.try_emplace(path.string(), model);
    else
      groups.emplace_back(path, model);
  }
  for (const InventoryEntry& entry : listing.entries) {
    fs::path path = normal(entry.path);
    std::optional<size_t> owner;
    if (auto found = model_of_file.find(path.string()); found != model_of_file.end()) owner = found->second;
    for (const auto& [group, model] : groups)
      if (!owner && path.parent_path() == group.parent_path() &&
          matches(group.filename().string(), path.filename().string()))
        owner = model;
    // Else the deepest folder holding the entry that is a model's (a folder entry is held by its parent).
    for (fs::path folder = path.parent_path(); !owner && !folder.empty(); folder = folder.parent_path()) {
      if (auto found = model_of_folder.find(folder.string()); found != model_of_folder.end()) owner = found->second;
      if (folder == folder.parent_path()) break;
    }
    accounted[owner.value_or(0)].entries.push_back(entry);
  }
  return accounted;
}

void InventoryCounts::add(const Inventory& inventory) {
  for (const InventoryEntry& entry : inventory.entries) {
    ++files[entry.disposition];
    if (entry.disposition == Disposition::kNotRead) ++unread[entry.unread.value_or(Unread::kNoFormat)];
  }
  unlisted += inventory.unlisted;
}

bool loader_reads(std::string_view name) {
  static constexpr std::array<std::string_view, 27> kNames = {"config.json",
                                                              "generation_config.json",
                                                              "tokenizer.json",
                                                              "tokenizer_config.json",
                                                              "special_tokens_map.json",
                                                              "added_tokens.json",
                                                              "vocab.json",
                                                              "vocab.txt",
                                                              "merges.txt",
                                                              "tokenizer.model",
                                                              "spiece.model",
                                                              "sentencepiece.bpe.model",
                                                              "preprocessor_config.json",
                                                              "processor_config.json",
                                                              "video_preprocessor_config.json",
                                                              "chat_template.jinja",
                                                              "chat_template.json",
                                                              "adapter_config.json",
                                                              "model_index.json",
                                                              "scheduler_config.json",
                                                              "modules.json",
                                                              "sentence_bert_config.json",
                                                              "config_sentence_transformers.json",
                                                              "quantize_config.json",
                                                              "quant_config.json",
                                                              "params.json",
                                                              "tekken.json"};
  return one_of(name, kNames) || name.ends_with(".index.json") || name.ends_with(".tiktoken");
}

void dispose(Inventory& inventory, const ModelSource& source) {
  std::map<std::string, std::pair<Disposition, std::string>> found;
  auto note = [&](const fs::path& path, Disposition disposition, std::string_view reason) {
    found.try_emplace(normal(path), disposition, std::string(reason));
  };
  for (const fs::path& file : source.files) note(file, Disposition::kWeights, "the model's weights");
  for (const fs::path& file : source.training_files)
    note(file, Disposition::kTrainingState, "training state whose records precdetect reads");
  for (const fs::path& file : source.pickles_beside)
    if (is_trainer_state(file.filename().string()))
      note(file, Disposition::kTrainingState, "the trainer's state, examined for what it unpickles");
  if (source.config) note(*source.config, Disposition::kLoaderFile, "the model's config");
  for (const fs::path& file : source.texts_beside)
    note(file, Disposition::kLoaderFile,
         file.extension() == ".py" ? "Python code beside the weights" : "read by the model's loaders");
  // A torch.distributed.checkpoint folder is read through its .metadata, which names its *.distcp files.
  bool dcp = source.files.size() == 1 && source.files.front().filename().string().ends_with(".metadata");
  std::string dcp_folder = dcp ? normal(source.files.front().parent_path()) : "";
  for (InventoryEntry& entry : inventory.entries) {
    auto hit = found.find(normal(entry.path));
    bool listed_apart = entry.kind == EntryKind::kFolder || entry.leaves || entry.kind == EntryKind::kOther;
    if (hit != found.end() && listed_apart) found.erase(hit);
    if (listed_apart) continue;  // a link out stays one: its target is never read
    if (hit != found.end()) {
      entry.disposition = hit->second.first;
      entry.reason = hit->second.second;
      found.erase(hit);
    } else if (dcp && entry.path.extension() == ".distcp" && normal(entry.path.parent_path()) == dcp_folder) {
      entry.disposition = Disposition::kWeights, entry.reason = "the model's weights, read through its .metadata";
    } else if (loader_reads(entry.path.filename().string())) {
      entry.disposition = Disposition::kLoaderFile, entry.reason = "read by the model's loaders, by its name";
    } else if (is_trainer_state(entry.path.filename().string())) {
      entry.disposition = Disposition::kTrainingState, entry.reason = "the trainer's state, by its name";
    }
  }
  // Files discovery reads beside a single file, which its listing (the file alone) did not hold.
  for (auto& [path, what] : found) {
    if (what.first != Disposition::kLoaderFile) continue;
    std::error_code ec;
    InventoryEntry entry{.path = path, .disposition = what.first, .reason = what.second};
    if (fs::is_symlink(path, ec)) entry.kind = EntryKind::kLink, entry.link = fs::read_symlink(path, ec).string();
    if (uint64_t size = fs::file_size(path, ec); !ec && !escape_of(inventory.root, path)) entry.size = size;
    inventory.entries.push_back(std::move(entry));
  }
  std::sort(inventory.entries.begin(), inventory.entries.end(),
            [](const InventoryEntry& a, const InventoryEntry& b) { return a.path < b.path; });
}

}  // namespace precdetect
