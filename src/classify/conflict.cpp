#include "precdetect/classify/conflict.h"

namespace precdetect {

std::string_view conflict_kind_name(ConflictKind kind) {
  switch (kind) {
    case ConflictKind::kRecordsDisagree:
      return "records_disagree";
    case ConflictKind::kRangesDisagree:
      return "ranges_disagree";
    case ConflictKind::kStoredInHalf:
      return "stored_in_half";
    case ConflictKind::kRecordNotDocumented:
      return "record_not_documented";
    case ConflictKind::kRangesNotDocumented:
      return "ranges_not_documented";
  }
  return "unknown";
}

}  // namespace precdetect
