#pragma once
/// ggml's block-quantized weights (GGUF's Q4_0 ... Q6_K) as the float values llama.cpp computes with: each block
/// dequantized as ggml's dequantize_row_* does it, in float32, operation for operation.

#include <cstddef>
#include <cstdint>

#include "precdetect/core/dtype.h"

namespace precdetect {

/// Writes the values of `blocks` whole blocks of `dtype` stored at `data` (any alignment) to `out`, block_size
/// floats per block. `dtype` is one whose dtype_kind is DTypeKind::kQuantized.
void dequantize_blocks(DType dtype, const std::byte* data, uint64_t blocks, float* out);

}  // namespace precdetect
