#include "precdetect/kernel/ggml_blocks.h"

#include <stdexcept>
#include <utility>

#include "precdetect/kernel/ggml_decoders.h"

namespace precdetect {
namespace {

/// Each block-quantized dtype's decoder (ggml's type_traits' to_float, by type): the dtypes DTypeKind::kQuantized
/// names, every one of them (tests/unit/ggml_blocks_test.cpp).
constexpr std::pair<DType, ggml::BlockDecoder> kDecoders[] = {
    {DType::Q4_0, ggml::decode_q4_0},       {DType::Q4_1, ggml::decode_q4_1},
    {DType::Q5_0, ggml::decode_q5_0},       {DType::Q5_1, ggml::decode_q5_1},
    {DType::Q8_0, ggml::decode_q8_0},       {DType::Q2_K, ggml::decode_q2_k},
    {DType::Q3_K, ggml::decode_q3_k},       {DType::Q4_K, ggml::decode_q4_k},
    {DType::Q5_K, ggml::decode_q5_k},       {DType::Q6_K, ggml::decode_q6_k},
    {DType::IQ2_XXS, ggml::decode_iq2_xxs}, {DType::IQ2_XS, ggml::decode_iq2_xs},
    {DType::IQ3_XXS, ggml::decode_iq3_xxs}, {DType::IQ1_S, ggml::decode_iq1_s},
    {DType::IQ4_NL, ggml::decode_iq4_nl},   {DType::IQ3_S, ggml::decode_iq3_s},
    {DType::IQ2_S, ggml::decode_iq2_s},     {DType::IQ4_XS, ggml::decode_iq4_xs},
    {DType::IQ1_M, ggml::decode_iq1_m},     {DType::TQ1_0, ggml::decode_tq1_0},
    {DType::TQ2_0, ggml::decode_tq2_0},     {DType::MXFP4, ggml::decode_mxfp4},
    {DType::NVFP4, ggml::decode_nvfp4},     {DType::Q1_0, ggml::decode_q1_0},
    {DType::Q2_0, ggml::decode_q2_0},
};

}  // namespace

void dequantize_blocks(DType dtype, const std::byte* data, uint64_t blocks, float* out) {
  for (auto [type, decode] : kDecoders)
    if (type == dtype) return decode(data, blocks, out);
  throw std::invalid_argument("dequantize_blocks: not a dequantized type");
}

}  // namespace precdetect
