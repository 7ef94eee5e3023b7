#include "precdetect/core/dtype.h"

#include <array>

#include "precdetect/core/bytes.h"

namespace precdetect {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  int bits;
  DTypeKind kind;
  uint64_t block = 0;        ///< elements per block of a block-quantized type (ggml's GGML_QUANT_SIZES); else 0
  uint64_t block_bytes = 0;  ///< bytes per block
};

constexpr std::array<DTypeInfo, 49> kDTypes = {{
    {DType::F64, "F64", 64, DTypeKind::kFloat},
    {DType::F32, "F32", 32, DTypeKind::kFloat},
    {DType::F16, "F16", 16, DTypeKind::kFloat},
    {DType::BF16, "BF16", 16, DTypeKind::kFloat},
    {DType::F8_E4M3, "F8_E4M3", 8, DTypeKind::kFloat},
    {DType::F8_E5M2, "F8_E5M2", 8, DTypeKind::kFloat},
    {DType::I64, "I64", 64, DTypeKind::kInteger},
    {DType::I32, "I32", 32, DTypeKind::kInteger},
    {DType::I16, "I16", 16, DTypeKind::kInteger},
    {DType::I8, "I8", 8, DTypeKind::kInteger},
    {DType::U64, "U64", 64, DTypeKind::kInteger},
    {DType::U32, "U32", 32, DTypeKind::kInteger},
    {DType::U16, "U16", 16, DTypeKind::kInteger},
    {DType::U8, "U8", 8, DTypeKind::kInteger},
    {DType::BOOL, "BOOL", 8, DTypeKind::kInteger},
    {DType::C64, "C64", 64, DTypeKind::kSkipped},
    {DType::F4, "F4", 4, DTypeKind::kSkipped},
    {DType::F6_E2M3, "F6_E2M3", 6, DTypeKind::kSkipped},
    {DType::F6_E3M2, "F6_E3M2", 6, DTypeKind::kSkipped},
    {DType::F8_E8M0, "F8_E8M0", 8, DTypeKind::kSkipped},
    {DType::F8_E4M3FNUZ, "F8_E4M3FNUZ", 8, DTypeKind::kSkipped},
    {DType::F8_E5M2FNUZ, "F8_E5M2FNUZ", 8, DTypeKind::kSkipped},
    {DType::Q4_0, "Q4_0", 0, DTypeKind::kQuantized, 32, 18},
    {DType::Q4_1, "Q4_1", 0, DTypeKind::kQuantized, 32, 20},
    {DType::Q5_0, "Q5_0", 0, DTypeKind::kQuantized, 32, 22},
    {DType::Q5_1, "Q5_1", 0, DTypeKind::kQuantized, 32, 24},
    {DType::Q8_0, "Q8_0", 0, DTypeKind::kQuantized, 32, 34},
    {DType::Q8_1, "Q8_1", 0, DTypeKind::kSkipped, 32, 40},
    {DType::Q2_K, "Q2_K", 0, DTypeKind::kQuantized, 256, 84},
    {DType::Q3_K, "Q3_K", 0, DTypeKind::kQuantized, 256, 110},
    {DType::Q4_K, "Q4_K", 0, DTypeKind::kQuantized, 256, 144},
    {DType::Q5_K, "Q5_K", 0, DTypeKind::kQuantized, 256, 176},
    {DType::Q6_K, "Q6_K", 0, DTypeKind::kQuantized, 256, 210},
    {DType::Q8_K, "Q8_K", 0, DTypeKind::kSkipped, 256, 292},
    {DType::IQ2_XXS, "IQ2_XXS", 0, DTypeKind::kQuantized, 256, 66},
    {DType::IQ2_XS, "IQ2_XS", 0, DTypeKind::kQuantized, 256, 74},
    {DType::IQ3_XXS, "IQ3_XXS", 0, DTypeKind::kQuantized, 256, 98},
    {DType::IQ1_S, "IQ1_S", 0, DTypeKind::kQuantized, 256, 50},
    {DType::IQ4_NL, "IQ4_NL", 0, DTypeKind::kQuantized, 32, 18},
    {DType::IQ3_S, "IQ3_S", 0, DTypeKind::kQuantized, 256, 110},
    {DType::IQ2_S, "IQ2_S", 0, DTypeKind::kQuantized, 256, 82},
    {DType::IQ4_XS, "IQ4_XS", 0, DTypeKind::kQuantized, 256, 136},
    {DType::IQ1_M, "IQ1_M", 0, DTypeKind::kQuantized, 256, 56},
    {DType::TQ1_0, "TQ1_0", 0, DTypeKind::kQuantized, 256, 54},
    {DType::TQ2_0, "TQ2_0", 0, DTypeKind::kQuantized, 256, 66},
    {DType::MXFP4, "MXFP4", 0, DTypeKind::kQuantized, 32, 17},
    {DType::NVFP4, "NVFP4", 0, DTypeKind::kQuantized, 64, 36},
    {DType::Q1_0, "Q1_0", 0, DTypeKind::kQuantized, 128, 18},
    {DType::Q2_0, "Q2_0", 0, DTypeKind::kQuantized, 64, 18},
}};

constexpr bool listed_in_enum_order() {
  for (size_t i = 0; i < kDTypes.size(); ++i)
    if (static_cast<size_t>(kDTypes[i].dtype) != i) return false;
  return true;
}
static_assert(listed_in_enum_order(), "info() indexes kDTypes by the enum's value");

const DTypeInfo& info(DType dtype) { return kDTypes[static_cast<size_t>(dtype)]; }

}  // namespace

std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& entry : kDTypes)
    if (entry.name == name && entry.block == 0) return entry.dtype;
  return std::nullopt;
}

std::string_view dtype_name(DType dtype) { return info(dtype).name; }
int dtype_bits(DType dtype) { return info(dtype).bits; }
DTypeKind dtype_kind(DType dtype) { return info(dtype).kind; }
bool is_analyzed(DType dtype) {
  return dtype_kind(dtype) == DTypeKind::kFloat || dtype_kind(dtype) == DTypeKind::kQuantized;
}
uint64_t dtype_block_values(DType dtype) { return info(dtype).block; }

std::optional<uint64_t> dtype_bytes(DType dtype, uint64_t numel) {
  const DTypeInfo& type = info(dtype);
  if (type.block != 0) {
    if (numel % type.block != 0) return std::nullopt;
    return checked_mul(numel / type.block, type.block_bytes);
  }
  auto bits = checked_mul(numel, static_cast<uint64_t>(type.bits));
  if (!bits || *bits % 8 != 0) return std::nullopt;
  return *bits / 8;
}

}  // namespace precdetect
