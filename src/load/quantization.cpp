#include "precdetect/load/quantization.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <optional>
#include <unordered_map>

#include "precdetect/core/error.h"
#include "precdetect/load/bitsandbytes_codes.h"
#include "precdetect/load/quanto_codes.h"
#include "precdetect/load/zero_point_codes.h"

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

}  // namespace

void link_scales(std::vector<TensorRecord>& tensors, const nlohmann::json& config, const std::string& file) {
  link_zero_point_codes(tensors, config);
  link_bitsandbytes(tensors);
  link_quanto(tensors, config, file);
  std::unordered_map<std::string, size_t> by_name;
  for (size_t i = 0; i < tensors.size(); ++i) by_name.emplace(tensors[i].name, i);
  std::optional<std::array<int64_t, 2>> block = configured_block(config);
  for (TensorRecord& weight : tensors) {
    link_affine(weight, tensors, by_name, config, file);
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

}  // namespace precdetect
