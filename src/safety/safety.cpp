#include "precdetect/safety/safety.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

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

const SafetyImport* Safety::first_dangerous() const {
  for (const SafetyImport& item : imports)
    if (item.judgement.kind == GlobalClass::kDangerous) return &item;
  return nullptr;
}

SafetyVerdict Safety::verdict() const {
  if (first_dangerous() || !tampering.empty()) return SafetyVerdict::kUnsafe;
  bool unknown = std::any_of(imports.begin(), imports.end(),
                             [](const SafetyImport& item) { return item.judgement.kind == GlobalClass::kUnknown; });
  return unknown || !unverified.empty() ? SafetyVerdict::kUnverified : SafetyVerdict::kSafe;
}

std::string safety_text(const Safety& safety) {
  if (const SafetyImport* danger = safety.first_dangerous())
    return fmt::format("unsafe: {} ({}) in {}", danger->qualified(), danger->judgement.family, danger->file);
  if (!safety.tampering.empty()) {
    const SafetyTampering& first = safety.tampering.front();
    return fmt::format("unsafe: {} ({}) in {}", pickle::tampering_kind_name(first.kind), first.detail, first.file);
  }
  std::set<std::string> unknown;
  for (const SafetyImport& item : safety.imports)
    if (item.judgement.kind == GlobalClass::kUnknown) unknown.insert(item.qualified());
  if (!unknown.empty())
    return fmt::format("unverified: {} unknown global{} ({})", unknown.size(), unknown.size() == 1 ? "" : "s",
                       fmt::join(unknown, ", "));
  if (!safety.unverified.empty()) return fmt::format("unverified: {}", safety.unverified.front());
  return "safe";
}

}  // namespace precdetect
