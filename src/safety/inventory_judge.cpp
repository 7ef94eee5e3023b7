#include "precdetect/safety/inventory_judge.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "precdetect/core/confinement.h"
#include "precdetect/core/format.h"
#include "precdetect/load/file_format.h"
#include "precdetect/load/source/byte_source.h"
#include "precdetect/safety/examine.h"

namespace precdetect {
namespace fs = std::filesystem;
namespace {

struct NameKind {
  std::string_view ending;
  Unread why;
};
// What a file that no format claims is, by its name (lower case): the table's reasons.
constexpr std::array<NameKind, 37> kByEnding = {{
    {".md", Unread::kDocument},
    {".rst", Unread::kDocument},
    {".txt", Unread::kDocument},
    {".pdf", Unread::kDocument},
    {".html", Unread::kDocument},
    {".htm", Unread::kDocument},
    {".gitattributes", Unread::kDocument},
    {".gitignore", Unread::kDocument},
    {"license", Unread::kDocument},
    {"notice", Unread::kDocument},
    {".png", Unread::kImage},
    {".jpg", Unread::kImage},
    {".jpeg", Unread::kImage},
    {".gif", Unread::kImage},
    {".webp", Unread::kImage},
    {".bmp", Unread::kImage},
    {".svg", Unread::kImage},
    {".ico", Unread::kImage},
    {".tif", Unread::kImage},
    {".tiff", Unread::kImage},
    {".wav", Unread::kMedia},
    {".mp3", Unread::kMedia},
    {".flac", Unread::kMedia},
    {".ogg", Unread::kMedia},
    {".mp4", Unread::kMedia},
    {".webm", Unread::kMedia},
    {".csv", Unread::kPlainData},
    {".tsv", Unread::kPlainData},
    {".yaml", Unread::kPlainData},
    {".yml", Unread::kPlainData},
    {".toml", Unread::kPlainData},
    {".ini", Unread::kPlainData},
    {".cfg", Unread::kPlainData},
    {".json", Unread::kPlainData},
    {".jsonl", Unread::kPlainData},
    {".xml", Unread::kPlainData},
    {".parquet", Unread::kPlainData},
}};

Unread unread_by_name(const fs::path& path) {
  std::string name = path.filename().string();
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  if (name.starts_with("readme")) return Unread::kDocument;
  for (const NameKind& kind : kByEnding)
    if (name.ends_with(kind.ending)) return kind.why;
  return Unread::kNoFormat;
}

/// Archives a loader may open (py7zr, rarfile) that precdetect does not: the "nullifAI" checkpoints were 7z.
std::optional<std::string_view> unopened_archive(const ByteSource& source) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 2> kMagic = {{
      {"7z\xBC\xAF\x27\x1C", "a 7z archive"},
      {"Rar!\x1A\x07", "a RAR archive"},
  }};
  for (const auto& [magic, what] : kMagic)
    if (source.size() >= magic.size() &&
        std::memcmp(source.view(0, magic.size()).data(), magic.data(), magic.size()) == 0)
      return what;
  return std::nullopt;
}

/// Files looked through for base64 pickles at most: configs are kilobytes.
constexpr uint64_t kScannedText = uint64_t{64} << 20;

bool examined_already(const Safety& safety, const std::string& path) {
  return std::find(safety.files.begin(), safety.files.end(), path) != safety.files.end();
}

/// A file's first bytes through the one format detection; what a format claims is examined like a file beside the
/// weights. Returns the format's name, or nullopt for a file of no format.
std::optional<std::string> sniffed(const ByteSource& source, const fs::path& path, Safety& safety) {
  std::unique_ptr<FormatFile> format = open_format(source);
  if (!format) return std::nullopt;
  examine_format(*format, path, safety);
  return std::string(file_format_name(format->format()));
}

/// Judges one file (or a link landing inside the input) by its bytes.
void judge_file(InventoryEntry& entry, Safety& safety) {
  std::string where = entry.path.string();
  entry.judged = true;
  try {
    std::unique_ptr<ByteSource> source = map_file(entry.path);
    if (std::optional<std::string> format = sniffed(*source, entry.path, safety)) {
      if (entry.disposition == Disposition::kNotRead || entry.disposition == Disposition::kLoaderFile) {
        entry.disposition = Disposition::kJudged;
        entry.reason = fmt::format("{} by its first bytes or its name, judged on its own", *format);
      }
      entry.unread.reset();
      return;
    }
    // A config whose loader decodes pickles written in it as base64 (load/embedded_pickles.h).
    size_t findings = safety.imports.size() + safety.tampering.size() + safety.unverified.size();
    if (source->size() <= kScannedText) {
      auto text = source->view(0, source->size());
      examine_text({reinterpret_cast<const char*>(text.data()), text.size()}, where, safety);
    }
    if (safety.imports.size() + safety.tampering.size() + safety.unverified.size() > findings) {
      entry.disposition = Disposition::kJudged;
      entry.reason = "text holding base64 pickles or archives, judged on its own";
      entry.unread.reset();
      return;
    }
    if (std::optional<std::string_view> archive = unopened_archive(*source)) {
      safety.unverified.push_back(
          fmt::format("{}: {}, which a loader may open and precdetect does not", where, *archive));
      entry.disposition = Disposition::kNotRead, entry.unread = Unread::kNoFormat;
      entry.reason = fmt::format("{}: not opened, so not vouched for", *archive);
      return;
    }
  } catch (const std::exception& e) {  // unreadable, or a path out of the root: never passed
    safety.add_failure(e, where);
    if (entry.disposition == Disposition::kNotRead) entry.unread = Unread::kNotSniffed;
    entry.reason = fmt::format("could not be read: {}", e.what());
    return;
  }
  if (entry.disposition != Disposition::kNotRead) return;  // a loader's file of no pickle format: as named
  entry.unread = unread_by_name(entry.path);
  entry.reason =
      fmt::format("{}: its first bytes are no format a loader unpickles or extracts", unread_name(*entry.unread));
}

/// A Python file no config names: code a loader may import (custom code, which precdetect names, never judges).
void judge_code(InventoryEntry& entry, const Inventory& inventory, Safety& safety) {
  entry.judged = true;
  entry.disposition = Disposition::kJudged;
  entry.reason = "Python code, which a loader may import";
  std::string file = entry.path.lexically_relative(inventory.path).string();
  if (file.empty() || file.starts_with("..")) file = entry.path.string();
  bool named = std::any_of(safety.custom_code.begin(), safety.custom_code.end(),
                           [&](const CustomCode& code) { return code.file == file; });
  if (!named) safety.custom_code.push_back({.file = file});
}

}  // namespace

void examine_inventory(Inventory& inventory, Safety& safety) {
  Confined confined(inventory.root);
  size_t sniffed_files = 0, not_sniffed = 0;
  for (InventoryEntry& entry : inventory.entries) {
    if (entry.kind == EntryKind::kFolder || entry.kind == EntryKind::kOther) continue;
    if (entry.leaves) {
      std::string how = entry.kind == EntryKind::kLink
                            ? fmt::format("-> {}; never followed", entry.link)
                            : fmt::format("is a hard link, {} of its names outside; never read", entry.names_outside);
      safety.add_tampering({.kind = FileTampering::kPathEscape,
                            .detail = fmt::format("a link out of the input {}: {} {}", inventory.root.folder.string(),
                                                  entry.path.string(), how),
                            .file = entry.path.string()});
      entry.judged = true;
      continue;
    }
    // The model's own files were examined through its format (a DCP folder's *.distcp through its .metadata).
    if (entry.disposition == Disposition::kWeights || examined_already(safety, entry.path.string())) {
      entry.judged = true;
      continue;
    }
    if (entry.path.extension() == ".py" && entry.disposition == Disposition::kNotRead) {
      judge_code(entry, inventory, safety);
      continue;
    }
    if (++sniffed_files > kMaxSniffed) {
      ++not_sniffed;
      if (entry.disposition == Disposition::kNotRead) entry.unread = Unread::kNotSniffed;
      entry.reason = fmt::format("past the first {} files an examination sniffs: not vouched for", kMaxSniffed);
      continue;
    }
    judge_file(entry, safety);
  }
  if (not_sniffed > 0)
    safety.unverified.push_back(fmt::format("{}: {} files past the first {} sniffed were not judged",
                                            inventory.path.string(), not_sniffed, kMaxSniffed));
  if (inventory.unlisted > 0)
    safety.unverified.push_back(fmt::format("{}: {} entries past the first {} listed were not judged",
                                            inventory.path.string(), inventory.unlisted, kMaxListed));
  if (!inventory.walked)
    safety.unverified.push_back(fmt::format("{}: a folder could not be read to its end, so not every file was judged",
                                            inventory.path.string()));
}

std::optional<SafetyVerdict> file_verdict(const Safety& safety, const InventoryEntry& entry) {
  std::string file = entry.path.string();
  auto names = [&](const std::string& where) {
    return where == file || (where.size() > file.size() && where.starts_with(file) && where[file.size()] == '!');
  };
  auto states = [&](const std::string& reason) {
    return reason.starts_with(file) && reason.size() > file.size() &&
           (reason[file.size()] == ':' || reason[file.size()] == '!');
  };
  bool unverified = false;
  for (const SafetyImport& item : safety.imports) {
    if (!names(item.file)) continue;
    if (item.judgement.kind == GlobalClass::kDangerous) return SafetyVerdict::kUnsafe;
    unverified |= item.judgement.kind == GlobalClass::kUnknown;
  }
  for (const SafetyTampering& item : safety.tampering)
    if (names(item.file)) return SafetyVerdict::kUnsafe;
  unverified |= std::any_of(safety.unverified.begin(), safety.unverified.end(), states);
  std::string name = entry.path.filename().string();
  unverified |= std::any_of(safety.custom_code.begin(), safety.custom_code.end(), [&](const CustomCode& code) {
    return code.named_by.empty() && (code.file == name || file.ends_with("/" + code.file));
  });
  if (unverified) return SafetyVerdict::kUnverified;
  if (entry.disposition == Disposition::kNotRead) return std::nullopt;  // sniffed only: nothing to judge in it
  if (entry.judged || entry.disposition == Disposition::kWeights) return SafetyVerdict::kSafe;
  return std::nullopt;
}

}  // namespace precdetect
