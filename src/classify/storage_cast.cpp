#include "precdetect/classify/storage_cast.h"

namespace precdetect {

std::optional<StorageCast> storage_cast(const ValueSummary& summary) {
  if (summary.wide_values == 0) return std::nullopt;
  auto wide = static_cast<double>(summary.wide_values);
  StorageCast cast{.wide_values = summary.wide_values,
                   .bf16_exact = static_cast<double>(summary.totals.bf16_exact) / wide,
                   .fp16_exact = static_cast<double>(summary.totals.fp16_exact) / wide};
  bool from_bf16 = summary.totals.bf16_exact == summary.wide_values;
  bool from_fp16 = summary.totals.fp16_exact == summary.wide_values;
  if (from_bf16 && from_fp16)
    cast.says = "every F32/F64 value is exact in both bf16 and fp16: the values cannot tell which one they came from";
  else if (from_bf16)
    cast.says = "every F32/F64 value is exactly a bf16 value: the file was written by casting bf16 weights up "
                "(how it was stored, not how it was trained)";
  else if (from_fp16)
    cast.says = "every F32/F64 value is exactly an fp16 value: the file was written by casting fp16 weights up "
                "(how it was stored, not how it was trained)";
  else
    cast.says = "F32/F64 values use precision neither bf16 nor fp16 has: stored at full precision, not cast up";
  return cast;
}

}  // namespace precdetect
