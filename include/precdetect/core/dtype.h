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
  // ggml's block-quantized types (GGUF), counted with their real bytes: Q4_0 to Q6_K analyzed from their
  // dequantized values (kernel/ggml_blocks), the others listed as not analyzed
  Q4_0,
  Q4_1,
  Q5_0,
  Q5_1,
  Q8_0,
  Q8_1,
  Q2_K,
  Q3_K,
  Q4_K,
  Q5_K,
  Q6_K,
  Q8_K,
  IQ2_XXS,
  IQ2_XS,
  IQ3_XXS,
  IQ1_S,
  IQ4_NL,
  IQ3_S,
  IQ2_S,
  IQ4_XS,
  IQ1_M,
  TQ1_0,
  TQ2_0,
  MXFP4,
  NVFP4,
  Q1_0,
};

/// What precdetect does with a dtype's values.
enum class DTypeKind {
  kFloat,      ///< analyzed as stored
  kQuantized,  ///< ggml's block-quantized Q4_0 ... Q6_K: analyzed from their dequantized values
  kInteger,    ///< counted, not analyzed
  kSkipped,    ///< counted, not analyzed, listed in a warning
};

/// Parses a safetensors dtype string ("BF16"); nullopt when the name is not a safetensors dtype (ggml's block
/// types are not).
std::optional<DType> parse_dtype(std::string_view name);
std::string_view dtype_name(DType dtype);
/// Bits per element (4 for F4, 6 for the F6 formats); 0 for a block-quantized type, whose elements share bytes.
int dtype_bits(DType dtype);
/// Bytes that `numel` elements take: numel x bits / 8, or whole blocks of a block-quantized type. nullopt when
/// that overflows or the elements are not whole bytes or whole blocks.
std::optional<uint64_t> dtype_bytes(DType dtype, uint64_t numel);
DTypeKind dtype_kind(DType dtype);
/// Whether a tensor of `dtype` gets statistics: kFloat and kQuantized.
bool is_analyzed(DType dtype);
/// Values per block of a block-quantized type (32, 256); 0 for any other.
uint64_t dtype_block_values(DType dtype);

}  // namespace precdetect
