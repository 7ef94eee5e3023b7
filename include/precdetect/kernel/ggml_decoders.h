#pragma once
/// One decoder per ggml block type: `blocks` whole blocks stored at `data` (any alignment) written to `out` as the
/// floats ggml's dequantize_row_* (its type_traits' to_float, ggml-quants.c) computes, operation for operation in
/// float32. kernel/ggml_blocks dispatches to them by DType; each family's file holds its types' decoders.

#include <cstddef>
#include <cstdint>

namespace precdetect::ggml {

using BlockDecoder = void (*)(const std::byte* data, uint64_t blocks, float* out);

// One fp16 scale (and minimum) per block and integer codes (ggml_scalar_blocks.cpp): 32 values, Q1_0 128, Q2_0 64.
void decode_q4_0(const std::byte* data, uint64_t blocks, float* out);
void decode_q4_1(const std::byte* data, uint64_t blocks, float* out);
void decode_q5_0(const std::byte* data, uint64_t blocks, float* out);
void decode_q5_1(const std::byte* data, uint64_t blocks, float* out);
void decode_q8_0(const std::byte* data, uint64_t blocks, float* out);
void decode_q1_0(const std::byte* data, uint64_t blocks, float* out);
void decode_q2_0(const std::byte* data, uint64_t blocks, float* out);
void decode_tq1_0(const std::byte* data, uint64_t blocks, float* out);
void decode_tq2_0(const std::byte* data, uint64_t blocks, float* out);

// The K-quants: 256 values in sub-blocks with scales of their own (ggml_k_blocks.cpp).
void decode_q2_k(const std::byte* data, uint64_t blocks, float* out);
void decode_q3_k(const std::byte* data, uint64_t blocks, float* out);
void decode_q4_k(const std::byte* data, uint64_t blocks, float* out);
void decode_q5_k(const std::byte* data, uint64_t blocks, float* out);
void decode_q6_k(const std::byte* data, uint64_t blocks, float* out);

// The i-quants: codes that index grids of values (kernel/ggml_grids.h) or non-linear levels (ggml_iq_blocks.cpp).
void decode_iq2_xxs(const std::byte* data, uint64_t blocks, float* out);
void decode_iq2_xs(const std::byte* data, uint64_t blocks, float* out);
void decode_iq2_s(const std::byte* data, uint64_t blocks, float* out);
void decode_iq3_xxs(const std::byte* data, uint64_t blocks, float* out);
void decode_iq3_s(const std::byte* data, uint64_t blocks, float* out);
void decode_iq1_s(const std::byte* data, uint64_t blocks, float* out);
void decode_iq1_m(const std::byte* data, uint64_t blocks, float* out);
void decode_iq4_nl(const std::byte* data, uint64_t blocks, float* out);
void decode_iq4_xs(const std::byte* data, uint64_t blocks, float* out);

// fp4 e2m1 codes with power-of-two (MXFP4) or e4m3 (NVFP4) scales (ggml_fp4_blocks.cpp).
void decode_mxfp4(const std::byte* data, uint64_t blocks, float* out);
void decode_nvfp4(const std::byte* data, uint64_t blocks, float* out);

}  // namespace precdetect::ggml
