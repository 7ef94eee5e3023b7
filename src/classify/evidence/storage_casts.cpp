#include "precdetect/classify/evidence/storage_casts.h"

namespace precdetect {

std::optional<StorageCast> storage_cast(const TensorStats& totals) {
  if (totals.exactness_checked == 0) return std::nullopt;
  StorageCast cast{.wide_values = totals.exactness_checked,
                   .bf16_exact = *totals.bf16_exact_fraction(),
                   .fp16_exact = *totals.fp16_exact_fraction()};
  bool from_bf16 = totals.bf16_exact == totals.exactness_checked;
  bool from_fp16 = totals.fp16_exact == totals.exactness_checked;
  if (from_bf16 && from_fp16)
    cast.says = "every F32/F64 value is exact in both bf16 and fp16: the values cannot tell which one they came from";
  else if (from_bf16)
    cast.says =
        "every F32/F64 value is exactly a bf16 value: the file was written by casting bf16 weights up "
        "(how it was stored, not how it was trained)";
  else if (from_fp16)
    cast.says =
        "every F32/F64 value is exactly an fp16 value: the file was written by casting fp16 weights up "
        "(how it was stored, not how it was trained)";
  else
    cast.says = "F32/F64 values use precision neither bf16 nor fp16 has: stored at full precision, not cast up";
  return cast;
}

}  // namespace precdetect
