#include "precdetect/report/inventory_report.h"

#include <fmt/format.h>

#include "precdetect/safety/inventory_judge.h"

namespace precdetect {
namespace {

using nlohmann::ordered_json;

/// How the table names a count of files of each disposition.
std::string_view counted(Disposition disposition) {
  switch (disposition) {
    case Disposition::kWeights:
      return "weights";
    case Disposition::kLoaderFile:
      return "loader files";
    case Disposition::kTrainingState:
      return "training state";
    case Disposition::kJudged:
      return "judged on their own";
    case Disposition::kNotRead:
      return "not read";
  }
  return "not read";
}

}  // namespace

ordered_json inventory_json(const ModelReport& model) {
  if (!model.inventory) return nullptr;
  const Inventory& inventory = *model.inventory;
  ordered_json files = ordered_json::array();
  for (const InventoryEntry& entry : inventory.entries) {
    std::optional<SafetyVerdict> verdict = model.safety ? file_verdict(*model.safety, entry) : std::nullopt;
    files.push_back({{"file", entry.path.string()},
                     {"kind", entry_kind_name(entry.kind)},
                     {"size", entry.size ? ordered_json(*entry.size) : ordered_json(nullptr)},
                     {"link", entry.kind == EntryKind::kLink ? ordered_json(entry.link) : ordered_json(nullptr)},
                     {"disposition", disposition_name(entry.disposition)},
                     {"verdict", verdict ? ordered_json(safety_verdict_name(*verdict)) : ordered_json(nullptr)},
                     {"reason", entry.reason}});
  }
  InventoryCounts counts;
  counts.add(inventory);
  ordered_json by_disposition = ordered_json::object(), not_read = ordered_json::object();
  for (const auto& [disposition, count] : counts.files) by_disposition[disposition_name(disposition)] = count;
  for (const auto& [why, count] : counts.unread) not_read[unread_name(why)] = count;
  return {{"files", files}, {"counts", by_disposition}, {"not_read", not_read}, {"unlisted", inventory.unlisted}};
}

std::string files_line(const InventoryCounts& counts) {
  if (counts.empty()) return "";
  std::string line = "files:";
  std::string separator = " ";
  for (const auto& [disposition, count] : counts.files) {
    if (disposition == Disposition::kNotRead) continue;
    line += fmt::format("{}{} {}", separator, count, counted(disposition));
    separator = ", ";
  }
  auto not_read = counts.files.find(Disposition::kNotRead);
  size_t unread = (not_read == counts.files.end() ? 0 : not_read->second) + counts.unlisted;
  line += fmt::format("; {} not read", unread);
  separator = " (";
  for (const auto& [why, count] : counts.unread) {
    line += fmt::format("{}{} {}", separator, count, unread_name(why));
    separator = ", ";
  }
  if (counts.unlisted) line += fmt::format("{}{} unlisted", separator, counts.unlisted), separator = ", ";
  return line + (separator == ", " ? ")\n" : "\n");
}

}  // namespace precdetect
