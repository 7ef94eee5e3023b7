#pragma once
/// Stored element types, named as safetensors names them.

#include <cstdint>
#include <optional>
#include <string_view>

namespace precdetect {

enum class DType {
  F64,
  F32,
  F16,
  BF16,
  F8_E4M3,
  F8_E5M2,  // analyzed: floating point
  I64,
  I32,
  I16,
  I8,
  U64,
  U32,
  U16,
  U8,
  BOOL,  // census only: integers
  C64,
  F4,
  F6_E2M3,
  F6_E3M2,
  F8_E8M0,
  F8_E4M3FNUZ,
  F8_E5M2FNUZ,  // known, listed as skipped
};

/// What precdetect does with a dtype's values.
enum class DTypeKind { kFloat, kInteger, kSkipped };

/// Parses a safetensors dtype string ("BF16"); nullopt when the name is not a safetensors dtype.
std::optional<DType> parse_dtype(std::string_view name);
std::string_view dtype_name(DType dtype);
/// Bits per element (4 for F4, 6 for the F6 formats).
int dtype_bits(DType dtype);
DTypeKind dtype_kind(DType dtype);

}  // namespace precdetect
