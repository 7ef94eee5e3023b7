#include "precdetect/classify/registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <map>

#include "precdetect/core/error.h"
#include "precdetect/net/text_file.h"

namespace precdetect {
namespace {

using nlohmann::json;

constexpr std::array kPrecisions = {Precision::kFp16,      Precision::kFp16Mixed, Precision::kBf16,
                                    Precision::kBf16Mixed, Precision::kFp32,      Precision::kFp8Mixed};
constexpr std::array kGrades = {Grade::kHigh, Grade::kMedium, Grade::kLow};
constexpr std::array<std::string_view, 7> kEntryKeys = {"ids",    "variants", "precision", "grade",
                                                        "source", "quote",    "config"};

/// The line each entry (a value directly inside the top-level list) starts on. nlohmann keeps no positions, and
/// a registry error must name the line a user edits: text that parsed is walked once more, strings skipped.
std::vector<size_t> entry_lines(const std::string& text) {
  std::vector<size_t> lines;
  size_t line = 1;
  int depth = 0;
  bool in_string = false, escaped = false, expecting = false;
  for (char c : text) {
    if (c == '\n') ++line;
    if (in_string) {
      in_string = escaped || c != '"';
      escaped = !escaped && c == '\\';
      continue;
    }
    if (depth == 1 && expecting && !std::isspace(static_cast<unsigned char>(c)))
      lines.push_back(line), expecting = false;
    if (c == '"') in_string = true;
    if (c == '{' || c == '[') expecting = ++depth == 1;
    if (c == '}' || c == ']') --depth;
    if (c == ',' && depth == 1) expecting = true;
  }
  return lines;
}

size_t line_of_byte(const std::string& text, size_t byte) {
  return 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + std::min(byte, text.size()), '\n'));
}

class EntryParser {
 public:
  EntryParser(const std::string& origin, size_t line) : origin_(origin), line_(line) {}

  RegistryEntry parse(const json& item) {
    if (!item.is_object()) invalid("an entry must be an object");
    for (const auto& [key, value] : item.items())
      if (std::find(kEntryKeys.begin(), kEntryKeys.end(), key) == kEntryKeys.end())
        invalid(fmt::format("unknown field `{}` (fields: {})", key, fmt::join(kEntryKeys, ", ")));
    RegistryEntry entry{.line = line_};
    entry.ids = ids(item, "ids");
    entry.variants = ids(item, "variants");
    if (entry.ids.empty() && entry.variants.empty()) invalid("`ids` or `variants` must list at least one hub id");
    entry.precision = named(item, "precision", parse_precision, kPrecisions, precision_name);
    entry.grade = named(item, "grade", parse_grade, kGrades, grade_name);
    entry.source = text(item, "source", true);
    entry.quote = text(item, "quote", false);
    if (item.contains("config")) entry.config = config(item["config"]);
    if (item.contains("config") && entry.ids.empty()) invalid("`config` needs `ids`: the model a match names");
    return entry;
  }

 private:
  [[noreturn]] void invalid(std::string_view what) const {
    fail(ErrorCode::kInvalidRegistry, origin_, fmt::format("line {}: {}", line_, what));
  }

  std::vector<std::string> ids(const json& item, const char* key) const {
    if (!item.contains(key)) return {};
    if (!item[key].is_array()) invalid(fmt::format("`{}` must be a list of hub ids", key));
    std::vector<std::string> ids;
    for (const json& id : item[key]) {
      if (!id.is_string() || id.get<std::string>().empty()) invalid("every id must be a non-empty string");
      const std::string& text = id.get_ref<const std::string&>();
      if (text.find('*') != std::string::npos && text.find('*') != text.size() - 1)
        invalid(fmt::format("id `{}`: `*` may only end an id", text));
      ids.push_back(text);
    }
    return ids;
  }

  template <typename Enum, size_t N>
  Enum named(const json& item, const char* key, std::optional<Enum> (*parse)(std::string_view),
             const std::array<Enum, N>& values, std::string_view (*name)(Enum)) const {
    std::optional<Enum> value;
    if (item.contains(key) && item[key].is_string()) value = parse(item[key].get<std::string>());
    if (!value) {
      std::vector<std::string_view> names;
      for (Enum each : values) names.push_back(name(each));
      invalid(fmt::format("`{}` must be one of {}", key, fmt::join(names, ", ")));
    }
    return *value;
  }

  std::string text(const json& item, const char* key, bool required) const {
    if (!item.contains(key) && !required) return "";
    if (!item.contains(key) || !item[key].is_string() || item[key].get<std::string>().empty())
      invalid(fmt::format("`{}` must be a non-empty string{}", key, required ? " (every entry cites its source)" : ""));
    return item[key].get<std::string>();
  }

  /// A family match needs the family (model_type or architectures) and at least one field telling its members
  /// apart: a family alone would give every fine-tune of every size the same precision.
  json config(const json& fields) const {
    if (!fields.is_object()) invalid("`config` must be an object of config.json fields");
    bool family = fields.contains("model_type") || fields.contains("architectures");
    if (!family || fields.size() < 2)
      invalid("`config` needs model_type or architectures and at least one size field (hidden_size, ...)");
    for (const auto& [key, value] : fields.items())
      if (!value.is_primitive() || value.is_null())
        invalid(fmt::format("config field `{}` must be a string or number", key));
    return fields;
  }

  const std::string& origin_;
  size_t line_;
};

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

void check_unique_ids(const Registry& registry) {
  std::map<std::string, size_t> first_line;
  for (const RegistryEntry& entry : registry.entries)
    for (const auto* list : {&entry.ids, &entry.variants})
      for (const std::string& id : *list)
        if (auto [it, fresh] = first_line.emplace(lowercase(id), entry.line); !fresh)
          fail(ErrorCode::kInvalidRegistry, registry.origin,
               fmt::format("line {}: id `{}` is listed twice (first on line {})", entry.line, id, it->second));
}

}  // namespace

std::string_view precision_name(Precision precision) {
  switch (precision) {
    case Precision::kFp16:
      return "fp16";
    case Precision::kFp16Mixed:
      return "fp16-mixed";
    case Precision::kBf16:
      return "bf16";
    case Precision::kBf16Mixed:
      return "bf16-mixed";
    case Precision::kFp32:
      return "fp32";
    case Precision::kFp8Mixed:
      return "fp8-mixed";
  }
  return "fp32";
}

std::optional<Precision> parse_precision(std::string_view name) {
  for (Precision precision : kPrecisions)
    if (precision_name(precision) == name) return precision;
  return std::nullopt;
}

Label precision_label(Precision precision) {
  switch (precision) {
    case Precision::kFp16:
    case Precision::kFp16Mixed:
      return Label::kFp16;
    case Precision::kBf16:
    case Precision::kBf16Mixed:
      return Label::kBf16;
    case Precision::kFp32:
      return Label::kFp32;
    case Precision::kFp8Mixed:
      return Label::kUnknown;
  }
  return Label::kUnknown;
}

std::string_view grade_name(Grade grade) {
  switch (grade) {
    case Grade::kHigh:
      return "high";
    case Grade::kMedium:
      return "medium";
    case Grade::kLow:
      return "low";
  }
  return "low";
}

std::optional<Grade> parse_grade(std::string_view name) {
  for (Grade grade : kGrades)
    if (grade_name(grade) == name) return grade;
  return std::nullopt;
}

double grade_confidence(Grade grade) {
  switch (grade) {
    case Grade::kHigh:
      return 0.9;
    case Grade::kMedium:
      return 0.75;
    case Grade::kLow:
      return 0.55;
  }
  return 0.55;
}

const std::string& default_registry_json() {
  static const std::string text =
#include "registry.inc"
      ;
  return text;
}

const Registry& default_registry() {
  static const Registry registry = parse_registry(default_registry_json(), "<built-in registry>");
  return registry;
}

Registry parse_registry(const std::string& text, const std::string& origin) {
  json document;
  try {
    document = json::parse(text);
  } catch (const json::parse_error& e) {
    fail(ErrorCode::kInvalidRegistry, origin,
         fmt::format("line {}: not JSON: {}", line_of_byte(text, e.byte), e.what()));
  }
  if (!document.is_array() || document.empty())
    fail(ErrorCode::kInvalidRegistry, origin, "line 1: a registry is a non-empty JSON list of entries");
  std::vector<size_t> lines = entry_lines(text);
  Registry registry{.origin = origin};
  for (size_t i = 0; i < document.size(); ++i)
    registry.entries.push_back(EntryParser(origin, i < lines.size() ? lines[i] : 1).parse(document[i]));
  check_unique_ids(registry);
  return registry;
}

Registry load_registry(const std::filesystem::path& path) {
  return parse_registry(read_text_file(path, "registry file"), path.string());
}

}  // namespace precdetect
