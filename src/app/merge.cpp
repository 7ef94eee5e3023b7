#include "precdetect/app/merge.h"

#include <fmt/format.h>

#include <fstream>

#include "precdetect/app/atomic_file.h"
#include "precdetect/app/gates.h"
#include "precdetect/app/output.h"
#include "precdetect/core/error.h"
#include "precdetect/report/html_report.h"
#include "precdetect/report/json_report.h"

namespace precdetect {
namespace {

/// Appends the model records of one --jsonl file to `models`; the summary line is skipped.
void read_model_lines(const std::filesystem::path& file, nlohmann::ordered_json& models) {
  std::ifstream in(file);
  if (!in) fail(ErrorCode::kIo, file, "cannot open the JSONL file");
  size_t number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.empty()) continue;
    auto record = nlohmann::ordered_json::parse(line, nullptr, /*allow_exceptions=*/false);
    std::string type = record.is_object() ? record.value("type", "") : "";
    if (type == "summary") continue;
    if (type != "model" || !record.contains("input") || !record.contains("error") || !record.contains("verdict") ||
        !record["verdict"].is_object())
      fail(ErrorCode::kInvalidJsonl, file,
           fmt::format("line {} is not a precdetect --jsonl record (type \"model\" or \"summary\", schema {})", number,
                       kSchemaVersion));
    record.erase("type");
    models.push_back(std::move(record));
  }
}

}  // namespace

ExitCode run_merge(const MergeCommand& command) {
  nlohmann::ordered_json models = nlohmann::ordered_json::array();
  for (const auto& file : command.files) read_model_lines(file, models);
  BatchCounts counts;
  for (const auto& model : models)
    counts.add(!model["error"].is_null(),
               parse_label(model["verdict"].value("label", "unknown")).value_or(Label::kUnknown),
               !model.value("gate_failures", nlohmann::ordered_json::array()).empty());
  nlohmann::ordered_json document = scan_document(std::move(models));
  if (command.report) write_file_atomically(*command.report, render_html(document));
  publish(document, command.output, /*json=*/true, {});
  return batch_exit_code(counts);
}

}  // namespace precdetect
