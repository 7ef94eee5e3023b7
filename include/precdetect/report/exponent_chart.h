#pragma once
/// The exponent histogram as unicode bars for a terminal (-v), beside fp16's ranges: the picture that shows
/// why a model does or does not fit fp16.

#include <string>

#include "precdetect/kernel/tensor_stats.h"

namespace precdetect {

/// One row per binade from the smallest to the largest non-empty one: 2^e, a bar on a log scale, the count,
/// and what a cast to fp16 does there. Empty when there are no finite non-zero values. Rows start with `indent`.
std::string render_exponent_chart(const ExponentHistogram& histogram, const std::string& indent);

}  // namespace precdetect
