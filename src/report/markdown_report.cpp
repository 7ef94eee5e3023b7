#include "precdetect/report/markdown_report.h"

#include <fmt/format.h>

#include <string_view>

#include "precdetect/analyze/cast_safety.h"
#include "precdetect/report/batch_counts.h"
#include "precdetect/report/inventory_report.h"
#include "precdetect/report/stat_text.h"
#include "precdetect/report/verdict_text.h"

namespace precdetect {
namespace {

/// Markdown table cells may not hold a raw `|`, nor a line break (a file may be named with one), which ends the row.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : c == '\n' || c == '\r' ? " " : std::string(1, c);
  return out;
}

std::string stats_cells(const ValueSummary& s) {
  FormatFit fp16 = format_fit(s.totals, kFp16Format);
  return fmt::format("{} | {} | {} | {} | {} | {} | {}", format_stat(s.has_values, s.abs_min),
                     format_stat(s.has_values, s.abs_max), format_stat(s.has_nonzero_norm, s.norm_min),
                     format_stat(s.has_nonzero_norm, s.norm_max), s.totals.above_1e2, fp16.overflow,
                     fp16.underflow + fp16.subnormal);
}

constexpr const char* kStatsHeader =
    "abs min | abs max | norm min | norm max | > 1e2 | fp16 overflow | fp16 underflow/subnormal";
constexpr const char* kStatsRule = "--:|--:|--:|--:|--:|--:|--:";

/// A model whose values were not read (--safety-only, --headers-only) has no statistics to show: "-", never 0.
std::string model_stats_cells(const ModelReport& model) {
  if (model.values_read) return stats_cells(model.summary);
  std::string dashes = "-";
  for (char c : std::string_view(kStatsRule))
    if (c == '|') dashes += " | -";
  return dashes;
}

std::string group_table(const ModelReport& model) {
  std::string out = fmt::format("\n**{}** by group\n\n| group | params | {} |\n|---|--:|{}|\n", cell(model.input),
                                kStatsHeader, kStatsRule);
  for (const auto& [name, group] : model.summary.groups)
    out += fmt::format("| {} | {} | {} |\n", name, group.parameters, stats_cells(group));
  return out;
}

}  // namespace

std::string render_markdown(const ScanReport& report, bool per_group) {
  std::string out = fmt::format("| name | {} | verdict |\n|---|{}|---|\n", kStatsHeader, kStatsRule);
  for (const ModelReport& model : report.models)
    out +=
        fmt::format("| {} | {} | {} |\n", cell(model.input), model_stats_cells(model), cell(model_verdict_text(model)));
  if (std::string files = files_line(count_batch(report).files); !files.empty()) out += "\n" + files;
  if (per_group)
    for (const ModelReport& model : report.models)
      if (!model.error && model.values_read) out += group_table(model);
  return out;
}

}  // namespace precdetect
