#include "precdetect/safety/safety.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "precdetect/core/error.h"

namespace precdetect {

std::string_view safety_verdict_name(SafetyVerdict verdict) {
  switch (verdict) {
    case SafetyVerdict::kSafe:
      return "safe";
    case SafetyVerdict::kUnsafe:
      return "unsafe";
    case SafetyVerdict::kUnverified:
      return "unverified";
  }
  return "unverified";
}

std::string_view code_consent_name(CodeConsent consent) {
  return consent == CodeConsent::kNotAsked ? "not_asked" : "asked";
}

std::string_view tampering_name(const TamperingKindOf& kind) {
  if (const auto* pickled = std::get_if<pickle::TamperingKind>(&kind)) return pickle::tampering_kind_name(*pickled);
  return file_tampering_name(std::get<FileTampering>(kind));
}

const SafetyImport* Safety::first_dangerous() const {
  for (const SafetyImport& item : imports)
    if (item.judgement.kind == GlobalClass::kDangerous) return &item;
  return nullptr;
}

const CustomCode* Safety::first_unasked_code() const {
  for (const CustomCode& code : custom_code)
    if (code.consent == CodeConsent::kNotAsked) return &code;
  return nullptr;
}

namespace {

/// True for two spellings of one file: the model's examination names a file from its root, the inventory from the
/// input (`/data/m/tokenizer.json`, `m/tokenizer.json`), and each file is one finding.
bool same_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  if (a == b) return true;
  if (fs::path(a).filename() != fs::path(b).filename()) return false;
  std::error_code ec;
  return fs::absolute(a, ec).lexically_normal() == fs::absolute(b, ec).lexically_normal();
}

}  // namespace

void Safety::add_tampering(SafetyTampering item) {
  bool known = std::any_of(tampering.begin(), tampering.end(), [&](const SafetyTampering& other) {
    return other.kind == item.kind && other.offset == item.offset && same_file(other.file, item.file);
  });
  if (!known) tampering.push_back(std::move(item));
}

void Safety::add_failure(const std::exception& failure, const std::string& where) {
  const auto* error = dynamic_cast<const Error*>(&failure);
  if (error && error->code() == ErrorCode::kPathEscape)
    add_tampering({.kind = FileTampering::kPathEscape, .detail = failure.what(), .file = where});
  else if (std::find(unverified.begin(), unverified.end(), failure.what()) == unverified.end())
    unverified.emplace_back(failure.what());
}

SafetyVerdict Safety::verdict() const {
  if (first_dangerous() || !tampering.empty() || first_unasked_code()) return SafetyVerdict::kUnsafe;
  bool unknown = std::any_of(imports.begin(), imports.end(),
                             [](const SafetyImport& item) { return item.judgement.kind == GlobalClass::kUnknown; });
  return unknown || !unverified.empty() || !custom_code.empty() ? SafetyVerdict::kUnverified : SafetyVerdict::kSafe;
}

std::string safety_text(const Safety& safety) {
  if (const SafetyImport* danger = safety.first_dangerous())
    return fmt::format("unsafe: {} ({}) in {}", danger->qualified(), danger->judgement.family, danger->file);
  if (!safety.tampering.empty()) {
    const SafetyTampering& first = safety.tampering.front();
    return fmt::format("unsafe: {} ({}) in {}", tampering_name(first.kind), first.detail, first.file);
  }
  if (const CustomCode* code = safety.first_unasked_code())
    return fmt::format("unsafe: custom code imported without consent ({}{}{}, named by {})", code->file,
                       code->classes.empty() ? "" : ": ", fmt::join(code->classes, ", "), code->named_by);
  std::set<std::string> unknown;
  for (const SafetyImport& item : safety.imports)
    if (item.judgement.kind == GlobalClass::kUnknown) unknown.insert(item.qualified());
  if (!unknown.empty())
    return fmt::format("unverified: {} unknown global{} ({})", unknown.size(), unknown.size() == 1 ? "" : "s",
                       fmt::join(unknown, ", "));
  if (!safety.custom_code.empty()) {
    const CustomCode& first = safety.custom_code.front();
    return fmt::format("unverified: custom code ({}{}{})", first.file, first.classes.empty() ? "" : ": ",
                       fmt::join(first.classes, ", "));
  }
  if (!safety.unverified.empty()) return fmt::format("unverified: {}", safety.unverified.front());
  return "safe";
}

}  // namespace precdetect
