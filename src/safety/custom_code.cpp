#include "precdetect/safety/custom_code.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "precdetect/net/text_file.h"
#include "precdetect/safety/code_places.h"

namespace precdetect {
namespace fs = std::filesystem;
namespace {

/// One library's places (safety/code_places.h), tried in this order for every model: a folder may be a
/// sentence-transformers model around a transformers one, a PEFT adapter beside either.
struct CodeLibrary {
  std::string_view name;
  void (*find)(CodeSearch&);
};
constexpr CodeLibrary kLibraries[] = {
    {"transformers", find_transformers_code},
    {"sentence-transformers", find_sentence_transformers_code},
    {"peft", find_peft_code},
};

/// "config.json auto_map.AutoConfig" and "config.json auto_map.AutoModel": one config, two keys.
void merge_keys(std::string& named_by, const std::string& more) {
  std::string key = more.substr(more.find(' ') + 1);
  if (named_by.find(key) == std::string::npos) named_by += ", " + key;
}

/// The model's files a loader may look at: its root's and each folder's one level down (no loader looks deeper),
/// `.git` aside; bounded, since a folder given as a model may hold anything.
std::vector<std::string> folder_listing(const fs::path& folder) {
  constexpr size_t kMaxEntries = 20000;
  std::vector<std::string> listing;
  std::error_code ec;
  fs::recursive_directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec);
  for (; it != fs::recursive_directory_iterator() && !ec && listing.size() < kMaxEntries; it.increment(ec)) {
    if (it->path().filename() == ".git" || (it.depth() >= 1 && it->is_directory(ec))) it.disable_recursion_pending();
    if (!it->is_directory(ec)) listing.push_back(it->path().lexically_relative(folder).generic_string());
  }
  std::sort(listing.begin(), listing.end());
  return listing;
}

}  // namespace

std::string ClassReference::file(std::string_view folder) const {
  std::string path = fmt::format("{}{}.py", repository.empty() ? folder : "", module);
  return repository.empty() ? path : fmt::format("{}: {}", repository, path);
}

std::optional<ClassReference> parse_class_reference(std::string_view reference) {
  ClassReference parsed;
  if (size_t split = reference.find("--"); split != std::string_view::npos) {
    parsed.repository = std::string(reference.substr(0, split));
    reference.remove_prefix(split + 2);
  }
  size_t dot = reference.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == reference.size()) return std::nullopt;
  parsed.module = std::string(reference.substr(0, dot));
  parsed.name = std::string(reference.substr(dot + 1));
  return parsed;
}

CodeSearch::CodeSearch(const std::vector<std::string>& listing, const ReadModelFile& read, Safety& safety)
    : listing_(listing), read_(read), safety_(safety) {}

bool CodeSearch::has(std::string_view name) const { return std::binary_search(listing_.begin(), listing_.end(), name); }

std::vector<std::string> CodeSearch::at_any_level(std::string_view file_name) const {
  std::vector<std::string> found;
  for (const std::string& name : listing_) {
    size_t slash = name.find('/');
    bool root = slash == std::string::npos && name == file_name;
    bool below = slash != std::string::npos && name.find('/', slash + 1) == std::string::npos &&
                 std::string_view(name).substr(slash + 1) == file_name;
    if (root) found.insert(found.begin(), name);
    if (below) found.push_back(name);
  }
  return found;
}

std::optional<std::string> CodeSearch::text(const std::string& name) {
  auto [at, inserted] = texts_.try_emplace(name);
  if (!inserted) return at->second;
  try {
    at->second = read_(name);
  } catch (const std::exception& e) {  // unreadable, or a link out of the model: never passed
    safety_.add_failure(e, name);
  }
  return at->second;
}

const nlohmann::json* CodeSearch::config(const std::string& name) {
  if (!has(name)) return nullptr;
  auto [at, inserted] = configs_.try_emplace(name);
  if (inserted)
    if (std::optional<std::string> body = text(name)) {
      nlohmann::json parsed = nlohmann::json::parse(*body, nullptr, /*allow_exceptions=*/false);
      if (parsed.is_object()) at->second = std::move(parsed);
    }
  return at->second ? &*at->second : nullptr;
}

void CodeSearch::code(CustomCode found) {
  std::string config = found.named_by.substr(0, found.named_by.find(' '));
  for (CustomCode& known : safety_.custom_code) {
    if (known.file != found.file || known.named_by.substr(0, known.named_by.find(' ')) != config) continue;
    for (std::string& name : found.classes)
      if (std::find(known.classes.begin(), known.classes.end(), name) == known.classes.end())
        known.classes.push_back(std::move(name));
    merge_keys(known.named_by, found.named_by);
    if (found.consent == CodeConsent::kNotAsked) known.consent = found.consent, known.why = found.why;
    return;
  }
  safety_.custom_code.push_back(std::move(found));
}

void CodeSearch::module(const std::string& module, const std::string& name, const std::string& file,
                        GlobalJudgement judgement) {
  if (judgement.kind == GlobalClass::kAllowed) return;
  bool known = std::any_of(safety_.imports.begin(), safety_.imports.end(), [&](const SafetyImport& item) {
    return item.module == module && item.name == name && item.file == file;
  });
  if (known) return;
  safety_.imports.push_back({.module = module,
                             .name = name,
                             .judgement = std::move(judgement),
                             .spelling = "",
                             .file = file,
                             .offset = 0,  // a name in JSON text: no opcode's offset
                             .called = true});
}

void find_custom_code(const std::vector<std::string>& listing, const ReadModelFile& read, Safety& safety) {
  std::vector<std::string> sorted = listing;
  std::sort(sorted.begin(), sorted.end());
  CodeSearch search(sorted, read, safety);
  for (const CodeLibrary& library : kLibraries) library.find(search);
  for (const std::string& name : sorted) {
    if (!name.ends_with(".py") || name.find('/') != std::string::npos) continue;
    bool named = std::any_of(safety.custom_code.begin(), safety.custom_code.end(),
                             [&](const CustomCode& code) { return code.file == name; });
    if (!named) safety.custom_code.push_back({.file = name});
  }
}

void examine_custom_code(const ModelSource& source, Safety& safety) {
  std::error_code ec;
  bool folder = fs::is_directory(source.path, ec);
  std::vector<std::string> listing;
  std::map<std::string, fs::path> paths;
  if (folder) {
    listing = folder_listing(source.path);
    for (const std::string& name : listing) paths[name] = source.path / name;
  } else {
    for (const fs::path& text : source.texts_beside) {
      listing.push_back(text.filename().string());
      paths[listing.back()] = text;
    }
  }
  find_custom_code(
      listing, [&](const std::string& name) { return read_text_file(paths.at(name), name); }, safety);
}

}  // namespace precdetect
