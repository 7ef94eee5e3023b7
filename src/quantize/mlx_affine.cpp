// MLX's affine quantization (mlx-lm's `quantization` in config.json): `P.weight` packed in uint32 with `P.scales`
// and `P.biases`, one of each per group, at 2, 3, 4, 5, 6 or 8 bits, as config.json's `quantization` says: without
// it the codes are counted, never read by a guessed layout. Each code q of a group becomes scale x q + bias, each
// operation rounded to the scales' dtype as mx.dequantize computes them (ScaleScheme::kAffine).

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <optional>
#include <unordered_map>
#include <vector>

#include "precdetect/core/error.h"
#include "precdetect/kernel/widen.h"
#include "precdetect/quantize/grid_tables.h"
#include "precdetect/quantize/scheme.h"

namespace precdetect {
namespace {

/// mlx-lm's config.json `quantization` ({"group_size", "bits"}, and per-module entries that override it, or
/// `false` for a module left unquantized), for the module `module`; nullopt where none applies.
std::optional<std::pair<int64_t, int>> mlx_settings(const nlohmann::json& config, const std::string& module) {
  if (!config.is_object()) return std::nullopt;
  const nlohmann::json* settings = nullptr;
  for (const char* key : {"quantization", "quantization_config"})
    if (config.contains(key) && config[key].is_object()) {
      settings = &config[key];
      break;
    }
  if (settings == nullptr) return std::nullopt;
  // MLX's other modes (mxfp4, nvfp4, mxfp8) are no affine codes, whatever their group size and bits.
  if (settings->contains("mode") && (*settings)["mode"] != "affine") return std::nullopt;
  const nlohmann::json* chosen = settings;
  if (settings->contains(module)) chosen = &(*settings)[module];
  if (!chosen->is_object()) return std::nullopt;
  auto integer = [&](const char* key) -> std::optional<int64_t> {
    if (!chosen->contains(key) || !(*chosen)[key].is_number_integer()) return std::nullopt;
    return (*chosen)[key].get<int64_t>();
  };
  std::optional<int64_t> group = integer("group_size"), bits = integer("bits");
  if (!group || !bits || *group <= 0 || *bits < 2 || *bits > 8 || *bits == 7) return std::nullopt;
  return std::pair{*group, static_cast<int>(*bits)};
}

/// MLX's `P.weight` (uint32 words of packed codes) with `P.scales` and `P.biases`, one of each per group.
void link_affine(TensorRecord& weight, std::vector<TensorRecord>& tensors,
                 const std::unordered_map<std::string, size_t>& by_name, const nlohmann::json& config,
                 const std::string& file) {
  if (weight.dtype != DType::U32 || !weight.name.ends_with(".weight") || weight.shape.size() != 2) return;
  std::string module = weight.name.substr(0, weight.name.size() - std::string_view(".weight").size());
  auto scales = by_name.find(module + ".scales"), biases = by_name.find(module + ".biases");
  if (scales == by_name.end() || biases == by_name.end()) return;
  TensorRecord& scale = tensors[scales->second];
  TensorRecord& bias = tensors[biases->second];
  // Quantization state either way: never weights in the verdict, even where the codes cannot be read.
  for (TensorRecord* part : {&scale, &bias}) part->role = TensorRole::kScale, part->role_from_file = true;
  std::optional<std::pair<int64_t, int>> settings = mlx_settings(config, module);
  if (!settings) return;  // no group size and bits to read the codes by: counted, never guessed
  auto [group, bits] = *settings;
  int64_t rows = weight.shape[0], codes = weight.shape[1] * 32 / bits;
  bool fits = weight.shape[1] * 32 % bits == 0 && scale.shape.size() == 2 && scale.shape == bias.shape &&
              scale.dtype == bias.dtype && dtype_kind(scale.dtype) == DTypeKind::kFloat && scale.shape[0] == rows &&
              codes % group == 0 && scale.shape[1] == codes / group;
  if (!fits)
    fail(
        ErrorCode::kSizeMismatch, file,
        fmt::format("scales `{}` of shape [{}] do not fit weight `{}` of shape [{}] at {} bits in groups of {}",
                    scale.name, fmt::join(scale.shape, ", "), weight.name, fmt::join(weight.shape, ", "), bits, group));
  weight.scaled_by = ScaleLink{.tensor = scale.name,
                               .block_rows = 1,
                               .block_cols = group,
                               .scheme = ScaleScheme::kAffine,
                               .bias = bias.name,
                               .bits = bits};
}

void link_mlx_affine(std::vector<TensorRecord>& tensors, const nlohmann::json& config, const std::string& file) {
  std::unordered_map<std::string, size_t> by_name;
  for (size_t i = 0; i < tensors.size(); ++i) by_name.emplace(tensors[i].name, i);
  for (TensorRecord& weight : tensors) link_affine(weight, tensors, by_name, config, file);
}

/// MLX's packed codes (a dense bit stream per row, LSB first) through a table per group: scale x q rounded to the
/// scales' dtype, plus the bias, rounded again, as mx.dequantize computes. float32 holds 2 x 11 + 2 bits: each sum
/// rounded there and then to float16 (or bfloat16) is the sum rounded once, as the double rounding theorem has it.
TensorStats affine_stats(const HostValues& weight, const HostValues& scale, const HostValues& bias,
                         const ScaleLink& link) {
  std::vector<float> scales(scale.numel()), biases(bias.numel());
  widen(scale, 0, scales.size(), scales.data());
  widen(bias, 0, biases.size(), biases.data());
  const int64_t rows = weight.shape()[0], columns = weight.shape()[1] * 32 / link.bits;
  const int64_t group_count = columns / link.block_cols;
  std::vector<int32_t> groups(static_cast<size_t>(columns));
  for (int64_t column = 0; column < columns; ++column)
    groups[static_cast<size_t>(column)] = static_cast<int32_t>(column / link.block_cols);
  const PackedGrid grid{.tensor = link.tensor};  // rows as stored, codes along them
  const GridCodes codes(grid, weight, link.bits);
  const int levels = 1 << link.bits;
  return for_result_dtype(scale.dtype(), [&]<DType kResult>() {
    return grid_table_stats<kResult>(codes, link.bits, rows, groups, static_cast<int32_t>(group_count),
                                     [&](int64_t row, int32_t group, float* products) {
                                       const auto index = static_cast<size_t>(row * group_count + group);
                                       for (int code = 0; code < levels; ++code)
                                         products[code] = scales[index] * static_cast<float>(code);
                                       round_in_place<kResult>(products, static_cast<size_t>(levels));
                                       for (int code = 0; code < levels; ++code) products[code] += biases[index];
                                     });
  });
}

/// An MLX weight's values from its codes, scales and biases.
TensorStats mlx_affine_stats(const LinkedValues& values) {
  const ScaleLink& link = values.link();
  TensorStats stats = affine_stats(values.weight(), values.part(link.tensor), values.part(link.bias), link);
  stats.exactness_checked = stats.bf16_exact = stats.fp16_exact = 0;
  return stats;
}

constexpr std::array kComputes = {ScaleScheme::kAffine};

}  // namespace

extern const QuantScheme kMlxAffineScheme{
    .name = "MLX affine 2-8 bits", .computes = kComputes, .link = link_mlx_affine, .stats = mlx_affine_stats};

}  // namespace precdetect
