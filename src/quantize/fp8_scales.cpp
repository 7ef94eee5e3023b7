// fp8 weights stored with their scales beside them (ScaleScheme::kProduct), each pair linked so that the weight is
// analyzed as the model computes with it, stored value x block scale, each product in the scales' dtype as the
// dequantizing kernels form it (compressed-tensors' dequantize: `x_q.to(scale.dtype) * scale`; with float32 scales,
// float32, as DeepSeek-V3's weight_dequant and transformers' FineGrainedFP8):
// - FP8 with 2-D blocks of `weight_scale_inv` (DeepSeek-V3 and many 2025-2026 releases; transformers'
//   FineGrainedFP8, `quantization_config.quant_method` "fp8" with `weight_block_size`);
// - compressed-tensors' float8 (`weight_scale`, per tensor, per channel or per group) and FBGEMM's fp8.
// The block a scale covers is config.json's `quantization_config.weight_block_size` where given, else what the two
// shapes imply (one scale: the whole tensor; one per row; a grid of ceil-divided blocks).

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <unordered_map>
#include <vector>

#include "precdetect/core/error.h"
#include "precdetect/core/parallel.h"
#include "precdetect/kernel/cpu_kernel.h"
#include "precdetect/kernel/scalar_stats.h"
#include "precdetect/kernel/widen.h"
#include "precdetect/quantize/grid_tables.h"
#include "precdetect/quantize/scheme.h"

namespace precdetect {
namespace {

constexpr std::array<std::string_view, 2> kScaleSuffixes = {"_scale_inv", "_scale"};

bool is_fp8(DType dtype) { return dtype == DType::F8_E4M3 || dtype == DType::F8_E5M2; }

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// A weight as rows (its first dimension) by columns (the rest).
std::pair<int64_t, int64_t> rows_and_columns(const TensorRecord& weight) {
  if (weight.shape.empty()) return {1, 1};
  int64_t rows = weight.shape.front();
  return {rows, rows == 0 ? 0 : static_cast<int64_t>(weight.numel) / rows};
}

/// The scale's grid as rows by columns: a scalar or one element is 1 x 1, a vector one scale per row.
std::pair<int64_t, int64_t> grid(const TensorRecord& scale) {
  if (scale.numel <= 1) return {1, 1};
  if (scale.shape.size() == 1) return {scale.shape[0], 1};
  int64_t rows = scale.shape.front();
  return {rows, static_cast<int64_t>(scale.numel) / rows};
}

/// The block side that tiles `length` into exactly `count` blocks, `configured` where given. Without one, the
/// side must divide the length, or be a power of two whose last block is short (128 at DeepSeek's edges): a
/// side that merely happens to tile (29 rows for 7 scales of 200) is no blocking any scheme writes.
std::optional<int64_t> block_side(int64_t length, int64_t count, std::optional<int64_t> configured) {
  if (count <= 0 || length <= 0) return std::nullopt;
  if (configured) return ceil_div(length, *configured) == count ? configured : std::nullopt;
  int64_t side = ceil_div(length, count);
  bool power_of_two = (side & (side - 1)) == 0;
  if (ceil_div(length, side) != count || (length % side != 0 && !power_of_two)) return std::nullopt;
  return side;
}

/// config.json's `quantization_config.weight_block_size` ([rows, columns]), when given.
std::optional<std::array<int64_t, 2>> configured_block(const nlohmann::json& config) {
  if (!config.is_object() || !config.contains("quantization_config")) return std::nullopt;
  const nlohmann::json& quantization = config["quantization_config"];
  if (!quantization.is_object() || !quantization.contains("weight_block_size")) return std::nullopt;
  const nlohmann::json& block = quantization["weight_block_size"];
  if (!block.is_array() || block.size() != 2 || !block[0].is_number_integer() || !block[1].is_number_integer() ||
      block[0].get<int64_t>() <= 0 || block[1].get<int64_t>() <= 0)
    return std::nullopt;
  return std::array{block[0].get<int64_t>(), block[1].get<int64_t>()};
}

ScaleLink link(const TensorRecord& weight, const TensorRecord& scale, std::optional<std::array<int64_t, 2>> block,
               const std::string& file) {
  auto [rows, columns] = rows_and_columns(weight);
  auto [scale_rows, scale_columns] = grid(scale);
  // A single scale covers the whole tensor, whatever a configured block says (per-tensor schemes).
  bool whole = scale.numel == 1;
  std::optional<int64_t> block_rows =
      whole ? std::optional(std::max<int64_t>(rows, 1))
            : block_side(rows, scale_rows, block ? std::optional((*block)[0]) : std::nullopt);
  std::optional<int64_t> block_columns =
      whole ? std::optional(std::max<int64_t>(columns, 1))
            : block_side(columns, scale_columns, block ? std::optional((*block)[1]) : std::nullopt);
  if (!block_rows || !block_columns)
    fail(ErrorCode::kSizeMismatch, file,
         fmt::format("scale `{}` of shape [{}] fits no blocking of weight `{}` of shape [{}]{}", scale.name,
                     fmt::join(scale.shape, ", "), weight.name, fmt::join(weight.shape, ", "),
                     block ? fmt::format(" in the configured blocks of {}x{}", (*block)[0], (*block)[1]) : ""));
  return {.tensor = scale.name, .block_rows = *block_rows, .block_cols = *block_columns};
}

constexpr uint64_t kChunkValues = uint64_t{1} << 20;  // values per part a core takes at least
constexpr int64_t kMagnitudeCodes = 128;              // an fp8 byte without its sign bit
/// Below this many values per block a block's histogram costs more than multiplying its values one by one.
constexpr int64_t kMinHistogramBlock = 1024;

struct Shape {
  int64_t rows, columns, scale_columns;
};

Shape shape_of(const HostValues& weight, const ScaleLink& link) {
  int64_t rows = weight.shape().empty() ? 1 : weight.shape().front();
  int64_t columns = rows == 0 ? 0 : static_cast<int64_t>(weight.numel()) / rows;
  return {rows, columns, (columns + link.block_cols - 1) / link.block_cols};
}

/// Rows [begin, end) (whole bands of block_rows) through one magnitude histogram per block: every value of a block
/// shares its scale, so |stored x scale| takes at most 128 values there, each the float32 product the kernels form.
template <DType kResult>
TensorStats histogram_bands(const std::byte* data, const Shape& shape, const std::vector<float>& scales,
                            const ScaleLink& link, const std::vector<float>& magnitudes, int64_t begin, int64_t end) {
  TensorStats stats;
  std::vector<uint64_t> counts(static_cast<size_t>(shape.scale_columns * kMagnitudeCodes));
  for (int64_t band = begin; band < end; band += link.block_rows) {
    std::fill(counts.begin(), counts.end(), 0);
    for (int64_t row = band; row < std::min(end, band + link.block_rows); ++row) {
      const auto* bytes = reinterpret_cast<const uint8_t*>(data) + row * shape.columns;
      for (int64_t block = 0; block < shape.scale_columns; ++block) {
        uint64_t* histogram = counts.data() + block * kMagnitudeCodes;
        int64_t first = block * link.block_cols, last = std::min(shape.columns, first + link.block_cols);
        for (int64_t column = first; column < last; ++column) ++histogram[bytes[column] & 0x7f];
      }
    }
    const float* band_scales = scales.data() + (band / link.block_rows) * shape.scale_columns;
    std::array<float, kMagnitudeCodes> products;
    for (int64_t block = 0; block < shape.scale_columns; ++block) {
      float scale = std::fabs(band_scales[block]);
      for (int64_t code = 0; code < kMagnitudeCodes; ++code) products[code] = magnitudes[code] * scale;
      round_in_place<kResult>(products.data(), products.size());
      for (int64_t code = 0; code < kMagnitudeCodes; ++code)
        if (uint64_t count = counts[block * kMagnitudeCodes + code])
          add_magnitude(stats, static_cast<double>(products[code]), count);
    }
  }
  return stats;
}

/// Rows [begin, end) value by value: widened, multiplied by their scale in float32, then the F32 kernel.
template <DType kResult>
TensorStats multiplied_rows(const HostValues& weight, const Shape& shape, const std::vector<float>& scales,
                            const ScaleLink& link, int64_t begin, int64_t end) {
  TensorStats stats;
  const int64_t rows_per_chunk =
      std::max<int64_t>(1, static_cast<int64_t>(kChunkValues) / std::max<int64_t>(shape.columns, 1));
  std::vector<float> values(static_cast<size_t>(std::min(end - begin, rows_per_chunk) * shape.columns));
  for (int64_t row = begin; row < end; row += rows_per_chunk) {
    int64_t rows = std::min(rows_per_chunk, end - row);
    widen(weight, static_cast<uint64_t>(row * shape.columns), static_cast<uint64_t>(rows * shape.columns),
          values.data());
    for (int64_t r = 0; r < rows; ++r) {
      const float* row_scales = scales.data() + ((row + r) / link.block_rows) * shape.scale_columns;
      float* out = values.data() + r * shape.columns;
      for (int64_t block = 0; block < shape.scale_columns; ++block) {
        int64_t first = block * link.block_cols, last = std::min(shape.columns, first + link.block_cols);
        for (int64_t column = first; column < last; ++column) out[column] *= row_scales[block];
      }
    }
    round_in_place<kResult>(values.data(), static_cast<size_t>(rows * shape.columns));
    stats.merge(cpu_tensor_stats(values.data(), DType::F32, static_cast<uint64_t>(rows * shape.columns)));
  }
  return stats;
}

/// Each product rounded to `kResult`, the scales' dtype, as compressed-tensors' dequantize forms it
/// (`x_q.to(scale.dtype) * scale`): an fp8 value's 4 significant bits times a 16-bit scale's 8 or 11 are exact in
/// float32, so the float32 product rounded once to bfloat16 or float16 is that product. float32 scales: float32.
template <DType kResult>
TensorStats product_stats(const HostValues& weight, const HostValues& scale, const ScaleLink& link) {
  const Shape shape = shape_of(weight, link);
  std::vector<float> scales(scale.numel());
  widen(scale, 0, scales.size(), scales.data());
  bool histograms = dtype_bits(weight.dtype()) == 8 && link.block_rows * link.block_cols >= kMinHistogramBlock;
  // Parts of whole bands of block rows, so that a block's histogram is never split between two cores.
  const int64_t bands = (shape.rows + link.block_rows - 1) / link.block_rows;
  const uint64_t band_values = static_cast<uint64_t>(std::max<int64_t>(link.block_rows * shape.columns, 1));
  TensorStats total =
      reduce_in_parallel(static_cast<uint64_t>(bands), std::max<uint64_t>(1, kChunkValues / band_values),
                         [&](uint64_t first, uint64_t last) {
                           int64_t begin = static_cast<int64_t>(first) * link.block_rows;
                           int64_t end = std::min(shape.rows, static_cast<int64_t>(last) * link.block_rows);
                           return histograms ? histogram_bands<kResult>(weight.data(), shape, scales, link,
                                                                        decoded_values(weight.dtype()), begin, end)
                                             : multiplied_rows<kResult>(weight, shape, scales, link, begin, end);
                         });
  return total;
}

/// Links every fp8 `X.weight` to its `X.weight_scale_inv` or `X.weight_scale`. Throws Error(kSizeMismatch) naming
/// `file` and both tensors when the scale's shape fits no blocking of the weight (or not the configured one).
void link_fp8_scales(std::vector<TensorRecord>& tensors, const nlohmann::json& config, const std::string& file) {
  std::unordered_map<std::string, size_t> by_name;
  for (size_t i = 0; i < tensors.size(); ++i) by_name.emplace(tensors[i].name, i);
  std::optional<std::array<int64_t, 2>> block = configured_block(config);
  for (TensorRecord& weight : tensors) {
    if (!is_fp8(weight.dtype)) continue;
    for (std::string_view suffix : kScaleSuffixes) {
      auto found = by_name.find(weight.name + std::string(suffix));
      if (found == by_name.end()) continue;
      TensorRecord& scale = tensors[found->second];
      if (dtype_kind(scale.dtype) != DTypeKind::kFloat) continue;
      weight.scaled_by = link(weight, scale, block, file);
      scale.role = TensorRole::kScale;
      scale.role_from_file = true;
      break;
    }
  }
}

/// An fp8 weight's values times its scales.
TensorStats fp8_scaled_stats(const LinkedValues& values) {
  const HostValues weight = values.weight(), scale = values.part(values.link().tensor);
  TensorStats stats = for_result_dtype(
      scale.dtype(), [&]<DType kResult>() { return product_stats<kResult>(weight, scale, values.link()); });
  stats.exactness_checked = stats.bf16_exact = stats.fp16_exact = 0;
  return stats;
}

constexpr std::array kComputes = {ScaleScheme::kProduct};

}  // namespace

extern const QuantScheme kFp8ScalesScheme{.name = "fp8 with scales (FineGrainedFP8, compressed-tensors float8, FBGEMM)",
                                          .computes = kComputes,
                                          .link = link_fp8_scales,
                                          .stats = fp8_scaled_stats};

}  // namespace precdetect
