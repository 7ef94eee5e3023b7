#pragma once
/// The statistics of an integer-quantized weight (ScaleScheme::kZeroPoint: GPTQ, AWQ, compressed-tensors'
/// pack-quantized) over the values its kernels compute: scale x (code - zero point) per group, rounded once to the
/// scales' dtype.

#include <filesystem>
#include <string_view>

#include "precdetect/analyze/tensor_stats.h"
#include "precdetect/load/host_values.h"
#include "precdetect/load/tensor_record.h"

namespace precdetect {

/// A kZeroPoint weight's tensors as read: the codes and scales always; the others where the link names them
/// (else nullptr).
struct ZeroPointParts {
  const HostValues& codes;
  const HostValues& scales;
  const HostValues* zeros = nullptr;
  const HostValues* group_index = nullptr;
  const HostValues* shape = nullptr;
};

/// The dequantized values' statistics of weight `weight` in `file`, by `link` (ScaleLink::zero_point set).
/// Exactness counts are left at 0: a dequantized value is no stored value. Throws Error(kSizeMismatch) naming
/// `file` and the tensors when their shapes do not fit together at link.bits, or a group index is out of range.
TensorStats zero_point_stats(const ZeroPointParts& parts, const ScaleLink& link, const std::filesystem::path& file,
                             std::string_view weight);

}  // namespace precdetect
