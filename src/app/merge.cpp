#include "precdetect/app/merge.h"

#include <fmt/format.h>

#include <algorithm>

#include "precdetect/app/gates.h"
#include "precdetect/app/output.h"
#include "precdetect/app/shard_set.h"
#include "precdetect/core/error.h"
#include "precdetect/core/output_file.h"
#include "precdetect/report/html_report.h"
#include "precdetect/report/json_report.h"

namespace precdetect {
namespace {

using nlohmann::ordered_json;

/// How merge names its refusal on stderr, before each problem (docs/errors.md, exit status 4).
constexpr const char* kRefusal = "invalid_shard_set";

void print_problems(std::string_view intro, const std::vector<std::string>& problems) {
  fmt::print(stderr, "precdetect: {}\n", intro);
  for (const std::string& problem : problems) fmt::print(stderr, "precdetect:   {}\n", problem);
}

/// The model records of the parts that are whole, in the single run's order when they are --shard outputs (by
/// each model's place in the whole list), else in file order; the places are dropped.
ordered_json merged_models(const std::vector<JsonlPart>& parts) {
  std::vector<ordered_json> models;
  bool sharded = true;
  for (const JsonlPart& part : parts) {
    if (!part.truncated.empty() || !part.foreign.empty()) continue;
    sharded = sharded && part.shard.has_value();
    for (const ordered_json& model : part.models) models.push_back(model);
  }
  auto place = [](const ordered_json& model) {
    const ordered_json& at = model.value("list_position", ordered_json::array({0, 0}));
    return ListPosition{at[0].get<uint64_t>(), at[1].get<uint64_t>()};
  };
  if (sharded)
    std::stable_sort(models.begin(), models.end(),
                     [&](const ordered_json& a, const ordered_json& b) { return place(a) < place(b); });
  ordered_json merged = ordered_json::array();
  for (ordered_json& model : models) {
    model.erase("list_position");
    merged.push_back(std::move(model));
  }
  return merged;
}

}  // namespace

ExitCode run_merge(const MergeCommand& command) {
  std::vector<JsonlPart> parts;
  for (const auto& file : command.files) parts.push_back(read_jsonl_part(file));
  ShardSetProblems problems = check_shard_set(parts);
  std::vector<std::string> refused = problems.mixed;
  if (!command.partial) refused.insert(refused.end(), problems.incomplete.begin(), problems.incomplete.end());
  if (!refused.empty()) {
    print_problems(fmt::format("{}: nothing merged, this is not one whole batch ({} problem(s){})", kRefusal,
                               refused.size(), problems.mixed.empty() ? "; --partial merges the parts present" : ""),
                   refused);
    return ExitCode::kMergeRefused;
  }
  ordered_json models = merged_models(parts);
  BatchCounts counts;
  for (const auto& model : models)
    counts.add(!model["error"].is_null(),
               parse_label(model["verdict"].value("label", "unknown")).value_or(Label::kUnknown),
               !model.value("gate_failures", ordered_json::array()).empty());
  ordered_json document = scan_document(std::move(models));
  if (!problems.incomplete.empty()) {
    document["missing"] = problems.incomplete;
    print_problems("--partial: merged the parts present; missing:", problems.incomplete);
  }
  if (command.report) write_output_file(*command.report, render_html(document));
  publish(json_text(document, 2), command.output);
  ExitCode code = batch_exit_code(counts);
  // A partial batch never passes for a whole one: what is missing was not scanned, as far as this result goes.
  return problems.incomplete.empty() || code != ExitCode::kSuccess ? code : ExitCode::kModelFailed;
}

}  // namespace precdetect
