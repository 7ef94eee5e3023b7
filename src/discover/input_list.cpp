#include "precdetect/discover/input_list.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <sstream>

#include "precdetect/core/error.h"
#include "precdetect/core/hash.h"
#include "precdetect/discover/discover.h"
#include "precdetect/net/text_file.h"

namespace precdetect {
namespace fs = std::filesystem;
namespace {

std::string trimmed(const std::string& line) {
  constexpr const char* kSpace = " \t\r\n";
  size_t begin = line.find_first_not_of(kSpace);
  if (begin == std::string::npos) return {};
  return line.substr(begin, line.find_last_not_of(kSpace) - begin + 1);
}

}  // namespace

std::vector<std::string> read_input_list(const std::string& list_file) {
  std::stringstream text;
  if (list_file == "-")
    text << std::cin.rdbuf();
  else
    text << read_text_file(list_file, "input list (--from)", TextOrigin::kList);
  std::vector<std::string> inputs;
  for (std::string line; std::getline(text, line);) {
    std::string input = trimmed(line);
    if (!input.empty() && !input.starts_with('#')) inputs.push_back(std::move(input));
  }
  return inputs;
}

std::vector<std::string> find_model_folders(const fs::path& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) fail(ErrorCode::kNotFound, root, "--recursive needs a folder to search");
  std::vector<std::string> folders;
  if (may_hold_model(root)) folders.push_back(root.string());
  if (holds_model_parts(root)) return folders;
  // Not following directory symlinks: a link back up the tree cannot loop us.
  fs::recursive_directory_iterator walk(root, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && walk != end; walk.increment(ec)) {
    std::error_code type_ec;
    if (!walk->is_directory(type_ec) || walk->is_symlink(type_ec) || !may_hold_model(walk->path())) continue;
    folders.push_back(walk->path().string());
    if (holds_model_parts(walk->path())) walk.disable_recursion_pending();
  }
  if (ec) fail(ErrorCode::kIo, root, ec.message());
  std::sort(folders.begin(), folders.end());
  return folders;
}

}  // namespace precdetect

namespace precdetect {

bool in_shard(const std::string& input, const Shard& shard) { return fnv1a(input) % shard.count == shard.index; }

std::string inputs_digest(std::vector<std::string> inputs) {
  std::sort(inputs.begin(), inputs.end());
  uint64_t hash = fnv1a("");
  for (const std::string& input : inputs) hash = fnv1a(fmt::format("{:016x}\n{}", hash, input));
  return fmt::format("{:016x}", hash);
}

}  // namespace precdetect
