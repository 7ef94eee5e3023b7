#pragma once
/// The statistics of optimum-quanto's quantized weights (load/quanto_codes.h) over the values its dequantize()
/// computes, each operation rounded to the scales' dtype as torch computes it there: qint8 and qfloat8 codes times
/// their scale (QBytesDequantizer); qint4 and qint2 codes times their scale, minus their float shift
/// (QBitsDequantizer), or with an integer shift (a zero point) scale x (code - shift) in int8.

#include "precdetect/analyze/tensor_stats.h"
#include "precdetect/load/host_values.h"
#include "precdetect/load/tensor_record.h"

namespace precdetect {

/// A quanto weight's tensors as read: its stored codes, scales and, for 2 and 4 bits, shifts (else nullptr).
struct QuantoValues {
  const HostValues& codes;
  const HostValues& scales;
  const HostValues* shifts = nullptr;
};

/// The dequantized statistics of the weight `link` (ScaleScheme::kQuanto) describes, whose shapes link_quanto
/// checked. Exactness counts are left at 0: a dequantized value is no stored value.
TensorStats quanto_stats(const QuantoValues& values, const ScaleLink& link);

}  // namespace precdetect
