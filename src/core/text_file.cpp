#include "precdetect/core/text_file.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "precdetect/core/error.h"

namespace precdetect {

std::string read_text_file(const std::filesystem::path& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorCode::kNotFound, path, fmt::format("cannot open {}", what));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace precdetect
