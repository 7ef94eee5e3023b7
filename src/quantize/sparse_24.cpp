// compressed-tensors' 2:4-sparse formats (`quantization_config.sparsity_config.format`), as its Sparse24BitMask
// compressor (compressed-tensors up to 0.12; llm-compressor's 2:4 recipes) writes a module `P`'s weight:
// - "sparse-24-bitmask": `P.compressed` [rows, columns / 2], the values each group of 4 keeps (2 of them), in the
//   weight's dtype (bfloat16, or fp8 e4m3 codes with `P.weight_scale` per tensor, row or group where the model is
//   also float-quantized); `P.bitmask` uint8 [rows, ceil(columns / 8)], bit c % 8 of byte c / 8 of a row (little bit
//   order, numpy.packbits) set where column c keeps its value; `P.shape` int64 [2, 1], the dense [rows, columns].
//   Read as sparse24_bitmask_decompress computes (the kept values laid out where the bitmask says, zeros elsewhere),
//   then an fp8 code times its scale in the scale's dtype, as its dequantize does (`x_q.to(scale.dtype) * scale`):
//   the dense weight, reported as `P.weight` with its logical numel, the values stored and the zeros between them
//   (`sparsity`).
// - "marlin-24": Marlin's GPU layout of 2:4-sparse int4 codes, which no CPU dequantizer reads: counted and named
//   (unread.cpp), its parts quantization state.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <bit>
#include <optional>
#include <string_view>
#include <vector>

#include "precdetect/core/error.h"
#include "precdetect/kernel/cpu_kernel.h"
#include "precdetect/kernel/widen.h"
#include "precdetect/kernel/zero_stats.h"
#include "precdetect/quantize/narrow_rounding.h"
#include "precdetect/quantize/scheme.h"
#include "precdetect/quantize/table_stats.h"

namespace precdetect {

extern const QuantScheme kSparse24Scheme;

namespace {

/// A 2:4-sparse weight's parts beside its kept values: where they lie (bitmask, shape) and, for fp8 codes, their
/// scale over blocks of block_rows x block_cols of the dense weight.
struct Sparse24Parts {
  PartName scale;          ///< fp8 codes' weight_scale; else the bitmask, which the report names first then
  PartName bitmask;        ///< where each row's values lie
  PartName shape;          ///< the dense [rows, columns]
  std::string compressed;  ///< the stored values' name (the record is renamed `P.weight`)
  bool scaled = false;     ///< `scale` multiplies the values (fp8 codes)
  int64_t block_rows = 1, block_cols = 1;
  uint64_t stored_values = 0;  ///< values the file stores: half the dense weight's

  static constexpr auto fields() {
    return std::tuple{&Sparse24Parts::scale,      &Sparse24Parts::bitmask,      &Sparse24Parts::shape,
                      &Sparse24Parts::compressed, &Sparse24Parts::scaled,       &Sparse24Parts::block_rows,
                      &Sparse24Parts::block_cols, &Sparse24Parts::stored_values};
  }
  nlohmann::ordered_json describe() const {
    nlohmann::ordered_json json = scaled_by_json(scale.name, std::pair{block_rows, block_cols});
    json.update({{"format", "sparse-24-bitmask"}, {"values", compressed}, {"bitmask", bitmask.name}});
    return json;
  }
};

constexpr std::string_view kCompressed = ".compressed";

std::string text_of(const nlohmann::json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_string()) return "";
  return object[key].get<std::string>();
}

/// compressed-tensors' sparsity format: `quantization_config.sparsity_config.format`; empty without one.
std::string sparsity_format(const nlohmann::json& config) {
  if (!config.is_object() || !config.contains("quantization_config")) return "";
  const nlohmann::json& settings = config["quantization_config"];
  if (text_of(settings, "quant_method") != "compressed-tensors" || !settings.contains("sparsity_config")) return "";
  return text_of(settings["sparsity_config"], "format");
}

bool is_fp8(DType dtype) { return dtype == DType::F8_E4M3 || dtype == DType::F8_E5M2; }

[[noreturn]] void misfit(const std::string& file, const TensorRecord& values, const std::string& why) {
  fail(ErrorCode::kSizeMismatch, file,
       fmt::format("2:4-sparse weight `{}` of shape [{}]: {}", values.name, fmt::join(values.shape, ", "), why));
}

/// The scale's blocks over the dense [rows, columns]: one for the tensor, one per row, or per group of columns.
std::pair<int64_t, int64_t> scale_blocks(const TensorRecord& values, const TensorRecord& scale, int64_t rows,
                                         int64_t columns, const std::string& file) {
  if (scale.numel == 1) return {rows, columns};
  if (scale.shape.size() == 2 && scale.shape[0] == rows && scale.shape[1] > 0 && columns % scale.shape[1] == 0)
    return {1, columns / scale.shape[1]};
  misfit(file, values,
         fmt::format("scale `{}` of shape [{}] is neither one, one per row nor one per group of its {} x {} values",
                     scale.name, fmt::join(scale.shape, ", "), rows, columns));
}

void link_module(Linking& model, TensorRecord& values) {
  const std::string module = values.name.substr(0, values.name.size() - kCompressed.size());
  const TensorRecord* bitmask = model.part(module + ".bitmask");
  const TensorRecord* shape = model.part(module + ".shape");
  const TensorRecord* scale = model.part(module + ".weight_scale");
  model.part(module + ".input_scale");
  if (bitmask == nullptr || shape == nullptr || model.contains(module + ".weight")) return;
  if (values.shape.size() != 2 || bitmask->dtype != DType::U8 || shape->dtype != DType::I64 || shape->numel != 2 ||
      dtype_kind(values.dtype) != DTypeKind::kFloat || (is_fp8(values.dtype) && scale == nullptr))
    misfit(model.file(), values,
           fmt::format("bitmask `{}` ({}), shape `{}` ({}, {} values){}", bitmask->name, dtype_name(bitmask->dtype),
                       shape->name, dtype_name(shape->dtype), shape->numel,
                       is_fp8(values.dtype) && scale == nullptr ? ", and fp8 values without their weight_scale" : ""));
  const int64_t rows = values.shape[0], columns = values.shape[1] * 2;  // 2 of every 4 kept: checked when read
  if (bitmask->shape != std::vector<int64_t>{rows, (columns + 7) / 8})
    misfit(model.file(), values,
           fmt::format("bitmask `{}` of shape [{}] is not one bit per value of {} x {}", bitmask->name,
                       fmt::join(bitmask->shape, ", "), rows, columns));
  const bool scaled = is_fp8(values.dtype);
  const auto [block_rows, block_cols] =
      scaled ? scale_blocks(values, *scale, rows, columns, model.file()) : std::pair{rows, columns};
  model.read(values, Link(kSparse24Scheme,
                          Sparse24Parts{.scale = {.name = scaled ? scale->name : bitmask->name, .multiplies = scaled},
                                        .bitmask = {.name = bitmask->name},
                                        .shape = {.name = shape->name},
                                        .compressed = values.name,
                                        .scaled = scaled,
                                        .block_rows = block_rows,
                                        .block_cols = block_cols,
                                        .stored_values = values.numel}));
  model.rename(values, module + ".weight");
}

void link_sparse_24(Linking& model) {
  if (sparsity_format(model.config()) != "sparse-24-bitmask") return;
  for (TensorRecord& values : model.tensors())
    if (values.name.ends_with(kCompressed) && !model.linked(values)) link_module(model, values);
}

// Reading: the dense weight's statistics.

/// The columns of row `row` whose values are kept, in order, from its bitmask bytes; throws where they are not half.
std::vector<int32_t> kept_columns(const uint8_t* mask, int64_t columns, int64_t kept, const LinkedValues& values,
                                  int64_t row) {
  std::vector<int32_t> kept_at;
  kept_at.reserve(static_cast<size_t>(kept));
  for (int64_t column = 0; column < columns; ++column)
    if ((mask[column / 8] >> (column % 8)) & 1U) kept_at.push_back(static_cast<int32_t>(column));
  if (static_cast<int64_t>(kept_at.size()) != kept)
    fail(ErrorCode::kSizeMismatch, values.file(),
         fmt::format("2:4-sparse weight `{}`: row {} of its bitmask keeps {} values, its values are {}",
                     values.record().name, row, kept_at.size(), kept));
  return kept_at;
}

/// fp8 codes times their scale, each product rounded to the scale's dtype, over the dense weight: the kept values
/// by their columns' scales, and the zeros between them.
template <DType kResult>
TensorStats scaled_stats(const LinkedValues& values, const Sparse24Parts& parts, const HostValues& codes,
                         const uint8_t* mask, int64_t rows, int64_t columns) {
  const HostValues scale = values.part(parts.scale);
  std::vector<float> scales(scale.numel());
  widen(scale, 0, scales.size(), scales.data());
  const int64_t kept = columns / 2, scale_columns = columns / parts.block_cols;
  const int64_t mask_bytes = (columns + 7) / 8;
  std::vector<float> row_values(static_cast<size_t>(kept));
  TensorStats stats;
  for (int64_t row = 0; row < rows; ++row) {
    const std::vector<int32_t> at = kept_columns(mask + row * mask_bytes, columns, kept, values, row);
    widen(codes, static_cast<uint64_t>(row * kept), static_cast<uint64_t>(kept), row_values.data());
    const float* row_scales = scales.data() + (row / parts.block_rows) * scale_columns;
    for (int64_t i = 0; i < kept; ++i)
      row_values[static_cast<size_t>(i)] *= row_scales[at[static_cast<size_t>(i)] / parts.block_cols];
    round_in_place<kResult>(row_values.data(), row_values.size());
    stats.merge(cpu_tensor_stats(row_values.data(), DType::F32, static_cast<uint64_t>(kept)));
  }
  stats.merge(zero_stats(DType::F32, static_cast<uint64_t>(rows * (columns - kept))));
  stats.exactness_checked = stats.bf16_exact = stats.fp16_exact = 0;  // a dequantized value is no stored value
  return stats;
}

TensorStats sparse_24_stats(const LinkedValues& values) {
  const auto& parts = values.parts<Sparse24Parts>();
  const HostValues codes = values.weight(), mask = values.part(parts.bitmask), shape = values.part(parts.shape);
  const int64_t rows = load_raw<int64_t>(shape.data(), 0), columns = load_raw<int64_t>(shape.data(), 1);
  if (codes.shape() != std::vector<int64_t>{rows, columns / 2} || columns % 4 != 0)
    fail(ErrorCode::kSizeMismatch, values.file(),
         fmt::format("2:4-sparse weight `{}` of shape [{}]: `{}` says the dense weight is {} x {}",
                     values.record().name, fmt::join(codes.shape(), ", "), parts.shape.name, rows, columns));
  const auto* bits = reinterpret_cast<const uint8_t*>(mask.data());
  if (parts.scaled)
    return for_result_dtype(values.part(parts.scale).dtype(), [&]<DType kResult>() {
      return scaled_stats<kResult>(values, parts, codes, bits, rows, columns);
    });
  // The values as stored (their dtype's own statistics and exactness), and the zeros between them; the bitmask
  // must place each row's half.
  const int64_t kept = columns / 2;
  for (int64_t row = 0; row < rows; ++row) kept_columns(bits + row * ((columns + 7) / 8), columns, kept, values, row);
  TensorStats stats = cpu_tensor_stats(codes.data(), codes.dtype(), codes.numel());
  stats.merge(zero_stats(codes.dtype(), static_cast<uint64_t>(rows * kept)));
  return stats;
}

}  // namespace

extern const QuantScheme kSparse24Scheme{
    .name = "compressed-tensors sparse-24-bitmask", .link = link_sparse_24, .stats = sparse_24_stats};

}  // namespace precdetect
