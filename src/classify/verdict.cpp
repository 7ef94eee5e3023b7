#include "precdetect/classify/verdict.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace precdetect {

std::string_view verdict_basis_name(VerdictBasis basis) {
  switch (basis) {
    case VerdictBasis::kNone:
      return "none";
    case VerdictBasis::kRanges:
      return "ranges";
    case VerdictBasis::kDocumented:
      return "documented";
    case VerdictBasis::kRecords:
      return "records";
  }
  return "none";
}

std::string RuleEvidence::observed_text() const {
  std::vector<std::string> parts;
  for (const Observation& o : observations)
    if (o.observed) parts.push_back(fmt::format("{} {:.3e}", stat_def(o.stat).key, *o.observed));
  return fmt::format("{}", fmt::join(parts, ", "));
}

void Verdict::admit(std::span<const Label> labels) {
  for (Label label : labels)
    if (std::find(candidates.begin(), candidates.end(), label) == candidates.end()) candidates.push_back(label);
}

}  // namespace precdetect
