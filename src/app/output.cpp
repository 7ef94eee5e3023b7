#include "precdetect/app/output.h"

#include <cstdio>

#include "precdetect/core/output_file.h"
#include "precdetect/report/json_report.h"

namespace precdetect {
namespace {

const std::filesystem::path kStandardOutput = "-";  // -o -

void print(const std::string& text) {
  // SIGPIPE is ignored (main.cpp): a reader that closed the pipe early just gets less.
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

}  // namespace

bool to_standard_output(const std::optional<std::filesystem::path>& output) {
  return !output || *output == kStandardOutput;
}

void publish(const std::string& text, const std::optional<std::filesystem::path>& output) {
  if (to_standard_output(output)) return print(text);
  write_output_file(*output, text);
}

void write_json_output(const nlohmann::ordered_json& document, const std::optional<std::filesystem::path>& file) {
  if (file) write_output_file(*file, json_text(document, 2));
}

void print_json_line(const nlohmann::ordered_json& document) { print(json_text(document, -1)); }

}  // namespace precdetect
