#include "precdetect/classify/fp16_risk.h"

namespace precdetect {

std::string_view risk_kind_name(Fp16RiskKind kind) {
  switch (kind) {
    case Fp16RiskKind::kRange:
      return "range";
    case Fp16RiskKind::kOverflow:
      return "overflow";
    case Fp16RiskKind::kFlushToZero:
      return "flush_to_zero";
    case Fp16RiskKind::kDocumented:
      return "documented";
    case Fp16RiskKind::kActivation:
      return "activation";
  }
  return "range";
}

}  // namespace precdetect
