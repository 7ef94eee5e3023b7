#include "precdetect/app/output.h"

#include <cstdio>

#include "precdetect/core/output_file.h"
#include "precdetect/report/json_report.h"

namespace precdetect {
namespace {

void print(const std::string& text) {
  // SIGPIPE is ignored (main.cpp): a reader that closed the pipe early just gets less.
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

}  // namespace

void publish(const nlohmann::ordered_json& document, const std::optional<std::filesystem::path>& output, bool json,
             const std::string& table) {
  std::string text = json_text(document, 2);
  if (output == kStandardOutput) return print(text);  // the document takes stdout, in place of the table
  if (output) write_output_file(*output, text);
  print(json ? text : table);
}

void print_json_line(const nlohmann::ordered_json& document) { print(json_text(document, -1)); }

}  // namespace precdetect
