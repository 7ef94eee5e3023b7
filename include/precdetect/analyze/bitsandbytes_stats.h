#pragma once
/// The statistics of bitsandbytes' quantized weights (load/bitsandbytes_codes.h) over the values bitsandbytes
/// dequantizes them to: 4-bit codes through their quant_map times their block's absmax, in float32, then cast to
/// the quantization state's dtype (dequantize_4bit; a nested absmax first dequantized as dequantize_blockwise does,
/// plus its offset); LLM.int8 codes times their row's SCB / 127 in float32 (int8_vectorwise_dequant).

#include <filesystem>
#include <string_view>

#include "precdetect/analyze/tensor_stats.h"
#include "precdetect/load/host_values.h"

namespace precdetect {

/// A 4-bit weight's tensors as read; the nested ones nullptr without nested quantization.
struct Blockwise4bitValues {
  const HostValues& codes;
  const HostValues& absmax;
  const HostValues& quant_map;
  const HostValues& quant_state;
  const HostValues* nested_absmax = nullptr;
  const HostValues* nested_quant_map = nullptr;
};

/// The dequantized statistics of 4-bit weight `weight` in `file`. Throws Error(kInvalidJson) for a quantization
/// state that is not bitsandbytes' JSON, Error(kSizeMismatch) naming the tensors when their sizes do not fit it.
TensorStats blockwise_4bit_stats(const Blockwise4bitValues& values, const std::filesystem::path& file,
                                 std::string_view weight);

/// The dequantized statistics of LLM.int8 weight `codes` [out, in] with `scb` (one float32 per row). Throws
/// Error(kSizeMismatch) when `scb` does not hold one value per row.
TensorStats int8_rows_stats(const HostValues& codes, const HostValues& scb, const std::filesystem::path& file,
                            std::string_view weight);

}  // namespace precdetect
