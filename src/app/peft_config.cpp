#include "precdetect/app/peft_config.h"

#include "precdetect/core/confinement.h"
#include "precdetect/core/error.h"
#include "precdetect/net/text_file.h"
#include "precdetect/net/url.h"

namespace precdetect {
namespace {

/// Where PEFT looks for the adapter's config of `source`, or nullopt where it would not.
std::optional<std::filesystem::path> peft_config_path(const ModelSource& source) {
  // A remote model's folder is its first file's (hf://org/name@commit names no folder that holds files).
  const std::filesystem::path& where = is_url(source.input) ? source.files.front() : source.path;
  std::error_code ec;
  if (std::filesystem::is_directory(where, ec)) return where / "adapter_config.json";
  if (where.stem() == "adapter_model") return where.parent_path() / "adapter_config.json";
  return std::nullopt;
}

/// The file's text; nullopt where it is not there (a remote server's 404, or 401/403: no file to read).
std::optional<std::string> text_if_there(const std::filesystem::path& path) {
  std::error_code ec;
  if (!is_url(path.native()) && !std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  try {
    return read_text_file(path, "adapter_config.json");
  } catch (const Error& e) {
    if (is_url(path.native()) && (e.code() == ErrorCode::kNotFound || e.code() == ErrorCode::kRemoteAuth))
      return std::nullopt;
    return "";  // there, unreadable: parsed as nothing
  }
}

}  // namespace

std::optional<nlohmann::json> read_peft_config(const ModelSource& source) {
  std::optional<std::filesystem::path> path = peft_config_path(source);
  if (!path) return std::nullopt;
  Confined confined(source.root);  // the model's file: beneath its root
  std::optional<std::string> text = text_if_there(*path);
  if (!text) return std::nullopt;
  return nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
}

}  // namespace precdetect
