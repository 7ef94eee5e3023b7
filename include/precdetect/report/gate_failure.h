#pragma once
/// The CI gates (docs/using.md) by name, and one violated gate as the report holds it: the gate, its reason in
/// words, and the file it is about.

#include <string>
#include <string_view>

#include "precdetect/core/named_enum.h"

namespace precdetect {

/// One per gate flag; --strict-safety sharpens kFailIfUnsafe and --verify-manifest feeds kVerify.
enum class Gate {
  kExpect,
  kFailOn,
  kFailIfFp16Risk,
  kMaxAbs,
  kMaxNorm,
  kFailIfUnsafe,
  kFailIfNonfinite,
  kVerify,
};

/// The flag without its dashes: "expect", "fail-on", "fail-if-fp16-risk", "max-abs", "max-norm", "fail-if-unsafe",
/// "fail-if-nonfinite", "verify" (SARIF's `gate/<name>` rules, JUnit's test cases).
std::string_view gate_name(Gate gate);

struct GateFailure {
  Gate gate = Gate::kExpect;
  /// What was found and which flag it violates: "classified bf16|fp32, expected bf16 (--expect)" (JSON's
  /// `gate_failures[]`).
  std::string reason;
  /// The weight file it is about (--verify names the file that differs); empty: the model as a whole.
  std::string file;

  bool operator==(const GateFailure&) const = default;
};

}  // namespace precdetect

template <>
struct fmt::formatter<precdetect::Gate> : precdetect::NamedEnumFormatter<precdetect::Gate, precdetect::gate_name> {};
