#include "precdetect/report/gate_failure.h"

namespace precdetect {

std::string_view gate_name(Gate gate) {
  switch (gate) {
    case Gate::kExpect:
      return "expect";
    case Gate::kFailOn:
      return "fail-on";
    case Gate::kFailIfFp16Risk:
      return "fail-if-fp16-risk";
    case Gate::kMaxAbs:
      return "max-abs";
    case Gate::kMaxNorm:
      return "max-norm";
    case Gate::kFailIfUnsafe:
      return "fail-if-unsafe";
    case Gate::kFailIfNonfinite:
      return "fail-if-nonfinite";
    case Gate::kVerify:
      return "verify";
  }
  return "?";
}

}  // namespace precdetect
