#include "precdetect/core/dtype.h"

#include <array>

namespace precdetect {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  int bits;
  DTypeKind kind;
};

constexpr std::array<DTypeInfo, 22> kDTypes = {{
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
    if (entry.name == name) return entry.dtype;
  return std::nullopt;
}

std::string_view dtype_name(DType dtype) { return info(dtype).name; }
int dtype_bits(DType dtype) { return info(dtype).bits; }
DTypeKind dtype_kind(DType dtype) { return info(dtype).kind; }

}  // namespace precdetect
