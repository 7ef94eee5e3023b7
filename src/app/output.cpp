#include "precdetect/app/output.h"

#include <cstdio>

#include "precdetect/app/atomic_file.h"

namespace precdetect {

void publish(const nlohmann::ordered_json& document, const std::optional<std::filesystem::path>& output, bool json,
             const std::string& table) {
  std::string text = document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (output) write_file_atomically(*output, text);
  if (!json) text = table;
  // SIGPIPE is ignored (main.cpp): a reader that closed the pipe early just gets less.
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

}  // namespace precdetect
