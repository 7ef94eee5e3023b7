// MLX's affine quantization (mlx-lm's `quantization` in config.json): `P.weight` packed in uint32 with `P.scales`
// and `P.biases`, one of each per group, at 2, 3, 4, 5, 6 or 8 bits, as config.json's `quantization` says for the
// module (its own entry, else the model's: quantize/mlx_config.h): without it the codes are counted, never read by a
// guessed layout. Each code q of a group becomes scale x q + bias, each
// operation rounded to the scales' dtype as mx.dequantize computes them.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <optional>
#include <vector>

#include "precdetect/core/error.h"
#include "precdetect/kernel/widen.h"
#include "precdetect/quantize/grid_tables.h"
#include "precdetect/quantize/mlx_config.h"
#include "precdetect/quantize/scheme.h"

namespace precdetect {

extern const QuantScheme kMlxAffineScheme;

namespace {

/// A weight's scales and biases, one of each per `group` codes of a row, at `bits` bits a code.
struct MlxAffineParts {
  PartName scale, biases;
  int64_t group = 0;
  int bits = 0;

  static constexpr auto fields() {
    return std::tuple{&MlxAffineParts::scale, &MlxAffineParts::biases, &MlxAffineParts::group, &MlxAffineParts::bits};
  }
  nlohmann::ordered_json describe() const {
    nlohmann::ordered_json json = scaled_by_json(scale.name, std::pair{int64_t{1}, group});
    json.update({{"biases", biases.name}, {"bits", bits}});
    return json;
  }
};

/// The group size and bits mlx-lm's settings give `module` (quantize/mlx_config.h) in the affine mode; nullopt
/// for a module of another mode, left unquantized, or without both.
std::optional<std::pair<int64_t, int>> mlx_settings(const nlohmann::json& config, const std::string& module) {
  std::optional<MlxModuleSettings> settings = mlx_module_settings(config, module);
  if (!settings || settings->mode != "affine" || !settings->group_size || !settings->bits) return std::nullopt;
  const int64_t group = *settings->group_size, bits = *settings->bits;
  if (group <= 0 || bits < 2 || bits > 8 || bits == 7) return std::nullopt;
  return std::pair{group, static_cast<int>(bits)};
}

/// MLX's `P.weight` (uint32 words of packed codes) with `P.scales` and `P.biases`, one of each per group.
void link_affine(Linking& model, const TensorRecord& weight) {
  if (weight.dtype != DType::U32 || !weight.name.ends_with(".weight") || weight.shape.size() != 2) return;
  std::string module = weight.name.substr(0, weight.name.size() - std::string_view(".weight").size());
  if (!model.contains(module + ".scales") || !model.contains(module + ".biases")) return;
  // Quantization state either way: never weights in the verdict, even where the codes cannot be read.
  const TensorRecord& scale = *model.part(module + ".scales");
  const TensorRecord& bias = *model.part(module + ".biases");
  std::optional<std::pair<int64_t, int>> settings = mlx_settings(model.config(), module);
  if (!settings) return;  // no group size and bits to read the codes by: counted, never guessed
  auto [group, bits] = *settings;
  int64_t rows = weight.shape[0], codes = weight.shape[1] * 32 / bits;
  bool fits = weight.shape[1] * 32 % bits == 0 && scale.shape.size() == 2 && scale.shape == bias.shape &&
              scale.dtype == bias.dtype && dtype_kind(scale.dtype) == DTypeKind::kFloat && scale.shape[0] == rows &&
              codes % group == 0 && scale.shape[1] == codes / group;
  if (!fits)
    fail(
        ErrorCode::kSizeMismatch, model.file(),
        fmt::format("scales `{}` of shape [{}] do not fit weight `{}` of shape [{}] at {} bits in groups of {}",
                    scale.name, fmt::join(scale.shape, ", "), weight.name, fmt::join(weight.shape, ", "), bits, group));
  model.read(weight, Link(kMlxAffineScheme, MlxAffineParts{.scale = {.name = scale.name, .multiplies = true},
                                                           .biases = {.name = bias.name},
                                                           .group = group,
                                                           .bits = bits}));
}

void link_mlx_affine(Linking& model) {
  for (const TensorRecord& weight : model.tensors()) link_affine(model, weight);
}

/// MLX's packed codes (a dense bit stream per row, LSB first) through a table per group: scale x q rounded to the
/// scales' dtype, plus the bias, rounded again, as mx.dequantize computes. float32 holds 2 x 11 + 2 bits: each sum
/// rounded there and then to float16 (or bfloat16) is the sum rounded once, as the double rounding theorem has it.
TensorStats affine_stats(const HostValues& weight, const HostValues& scale, const HostValues& bias,
                         const MlxAffineParts& link) {
  std::vector<float> scales(scale.numel()), biases(bias.numel());
  widen(scale, 0, scales.size(), scales.data());
  widen(bias, 0, biases.size(), biases.data());
  const int64_t rows = weight.shape()[0], columns = weight.shape()[1] * 32 / link.bits;
  const int64_t group_count = columns / link.group;
  std::vector<int32_t> groups(static_cast<size_t>(columns));
  for (int64_t column = 0; column < columns; ++column)
    groups[static_cast<size_t>(column)] = static_cast<int32_t>(column / link.group);
  const PackedGrid grid{};  // rows as stored, codes along them
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
  const auto& link = values.parts<MlxAffineParts>();
  TensorStats stats = affine_stats(values.weight(), values.part(link.scale), values.part(link.biases), link);
  stats.exactness_checked = stats.bf16_exact = stats.fp16_exact = 0;
  return stats;
}

}  // namespace

extern const QuantScheme kMlxAffineScheme{
    .name = "MLX affine 2-8 bits", .link = link_mlx_affine, .stats = mlx_affine_stats};

}  // namespace precdetect
