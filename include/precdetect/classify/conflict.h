#pragma once
/// When kinds of evidence disagree: the verdict shows each side and lowers its confidence instead of hiding one.

#include <string>
#include <string_view>

#include "precdetect/core/named_enum.h"

namespace precdetect {

enum class ConflictKind {
  kRecordsDisagree,      ///< training records name different precisions: the verdict says "unknown"
  kRangesDisagree,       ///< the recorded precision is not among the labels the fired range rule leaves
  kStoredInHalf,         ///< an fp32 record (no mixed precision), yet the parameters are stored in fp16 or bf16
  kRecordNotDocumented,  ///< the recorded precision differs from the documented one (of the model or its base)
  kRangesNotDocumented,  ///< the documented precision is not among the labels the fired range rule leaves
};

/// snake_case name (JSON `verdict.conflicts[].kind`), e.g. "ranges_disagree".
std::string_view conflict_kind_name(ConflictKind kind);

struct Conflict {
  ConflictKind kind;
  std::string detail;  ///< both sides, in words: "training_args.bin records bf16; abs-max-above-1e2 says ..."
};

}  // namespace precdetect

template <>
struct fmt::formatter<precdetect::ConflictKind>
    : precdetect::NamedEnumFormatter<precdetect::ConflictKind, precdetect::conflict_kind_name> {};
