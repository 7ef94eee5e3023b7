#include "precdetect/report/inventory_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

#include "precdetect/safety/inventory_judge.h"

namespace precdetect {
namespace {

using nlohmann::ordered_json;

/// `count` and the noun, in the plural unless one: "1 loader file", "2 images".
std::string counted(size_t count, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", count, count == 1 ? one : many);
}

/// How the table names a count of files of a disposition that is judged.
std::string judged_as(Disposition disposition, size_t count) {
  switch (disposition) {
    case Disposition::kWeights:
      return counted(count, "weight file", "weight files");
    case Disposition::kLoaderFile:
      return counted(count, "loader file", "loader files");
    case Disposition::kTrainingState:
      return counted(count, "training state file", "training state files");
    case Disposition::kJudged:
      return counted(count, "on its own", "on their own");
    case Disposition::kNotRead:
      return counted(count, "not read", "not read");
  }
  return "";
}

/// How the table names a count of files not read for one reason.
std::string unread_as(Unread why, size_t count) {
  switch (why) {
    case Unread::kStore:
      return counted(count, "named folder", "named folders");
    case Unread::kLinkOut:
      return counted(count, "link out", "links out");
    case Unread::kDocument:
      return counted(count, "document", "documents");
    case Unread::kImage:
      return counted(count, "image", "images");
    case Unread::kMedia:
      return counted(count, "audio or video file", "audio or video files");
    case Unread::kPlainData:
      return counted(count, "data file", "data files");
    case Unread::kNoFormat:
      return counted(count, "of no format", "of no format");
    case Unread::kNotAFile:
      return counted(count, "not a file", "not files");
    case Unread::kNotSniffed:
      return counted(count, "past the bounds", "past the bounds");
  }
  return "";
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
  std::vector<std::string> judged, unread;
  size_t judged_files = 0;
  for (const auto& [disposition, count] : counts.files)
    if (disposition != Disposition::kNotRead) judged.push_back(judged_as(disposition, count)), judged_files += count;
  for (const auto& [why, count] : counts.unread) unread.push_back(unread_as(why, count));
  if (counts.unlisted) unread.push_back(counted(counts.unlisted, "not listed", "not listed"));
  auto not_read = counts.files.find(Disposition::kNotRead);
  size_t unread_files = (not_read == counts.files.end() ? 0 : not_read->second) + counts.unlisted;
  return fmt::format("files: {} judged{}; {} not read{}\n", judged_files,
                     judged.empty() ? "" : fmt::format(" ({})", fmt::join(judged, ", ")), unread_files,
                     unread.empty() ? "" : fmt::format(" ({})", fmt::join(unread, ", ")));
}

}  // namespace precdetect
