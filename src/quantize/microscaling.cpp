// Float codes in groups with one 8-bit scale each, OCP's microscaling formats and
// their kin, as their dequantizers compute them: each code's value times its group's scale in float32, rounded to
// bfloat16, the dtype both return (an fp4 or fp8 value times a power of two or an e4m3 scale is exact there, short
// of the range's ends).
// - gpt-oss's MXFP4 (transformers' Mxfp4Config, `quant_method` "mxfp4"): `NAME_blocks` uint8 [..., G, 16], 32 fp4
//   e2m1 codes two a byte, low nibble first, and `NAME_scales` uint8 [..., G] in e8m0 (2^(s - 127)), as
//   transformers' convert_moe_packed_tensors dequantizes them (ldexp of bfloat16 codes by a float32 power of two);
// - MLX's mxfp4, nvfp4 and mxfp8 modes (mlx-lm's `quantization` with its `mode`, the model's or a module's own):
//   `X.weight` uint32 words of codes
//   packed LSB first (8 fp4 or 4 fp8 e4m3 codes a word), `X.scales` uint8 per group of 32 (e8m0) or, for nvfp4, of
//   16 (e4m3), as mx.dequantize computes them. An e8m0 scale of 255, which OCP keeps for NaN, is 2^128: infinite.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "precdetect/core/error.h"
#include "precdetect/kernel/widen.h"
#include "precdetect/quantize/fp4_codes.h"
#include "precdetect/quantize/mlx_config.h"
#include "precdetect/quantize/scheme.h"
#include "precdetect/quantize/table_stats.h"

namespace precdetect {

extern const QuantScheme kMicroscalingScheme;

namespace {

/// One mode: its codes' bits, its group's size, and whether its scales are e8m0 (else e4m3).
struct Mode {
  std::string_view name;
  int bits;
  int64_t group;
  bool e8m0;
};

constexpr std::array<Mode, 3> kModes = {{{"mxfp4", 4, 32, true}, {"nvfp4", 4, 16, false}, {"mxfp8", 8, 32, true}}};

const Mode* mode_named(std::string_view name) {
  for (const Mode& mode : kModes)
    if (mode.name == name) return &mode;
  return nullptr;
}

/// A weight's scales, one per `group` codes, in the mode MLX names ("mxfp4", "nvfp4", "mxfp8"), at `bits` a code.
struct MicroscalingParts {
  PartName scale;
  int64_t group = 0;
  int bits = 0;
  std::string format;

  static constexpr auto fields() {
    return std::tuple{&MicroscalingParts::scale, &MicroscalingParts::group, &MicroscalingParts::bits,
                      &MicroscalingParts::format};
  }
  nlohmann::ordered_json describe() const {
    nlohmann::ordered_json json = scaled_by_json(scale.name, std::pair{int64_t{1}, group});
    json.update({{"format", format}, {"bits", bits}});
    return json;
  }
};

std::string text_of(const nlohmann::json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_string()) return "";
  return object[key].get<std::string>();
}

[[noreturn]] void mismatch(const std::string& file, const TensorRecord& codes, const TensorRecord& scales,
                           std::string_view detail) {
  fail(ErrorCode::kSizeMismatch, file,
       fmt::format("scales `{}` of shape [{}] do not fit codes `{}` of shape [{}]: {}", scales.name,
                   fmt::join(scales.shape, ", "), codes.name, fmt::join(codes.shape, ", "), detail));
}

void set_link(Linking& model, const TensorRecord& codes, const TensorRecord& scales, const Mode& mode, int64_t group) {
  model.read(codes, Link(kMicroscalingScheme, MicroscalingParts{.scale = {.name = scales.name, .multiplies = true},
                                                                .group = group,
                                                                .bits = mode.bits,
                                                                .format = std::string(mode.name)}));
}

/// gpt-oss's `NAME_blocks` with `NAME_scales` (shape: the blocks' but the last, 16 bytes of 32 codes).
void link_gpt_oss(Linking& model) {
  constexpr std::string_view kBlocks = "_blocks";
  for (const TensorRecord& blocks : model.tensors()) {
    if (!blocks.name.ends_with(kBlocks) || model.linked(blocks)) continue;
    std::string prefix = blocks.name.substr(0, blocks.name.size() - kBlocks.size());
    const TensorRecord* scales = model.part(prefix + "_scales");
    if (scales == nullptr) continue;
    std::vector<int64_t> expected(blocks.shape.begin(), blocks.shape.end() - (blocks.shape.empty() ? 0 : 1));
    if (blocks.dtype != DType::U8 || scales->dtype != DType::U8 || blocks.shape.size() < 2 ||
        blocks.shape.back() != 16 || scales->shape != expected)
      mismatch(model.file(), blocks, *scales, "MXFP4 stores 16 uint8 bytes of codes per uint8 scale");
    set_link(model, blocks, *scales, kModes[0], 32);
  }
}

/// MLX's `X.weight` words with `X.scales` (and no biases: those are affine codes), each module in the mode and group
/// size mlx-lm's settings give it (quantize/mlx_config.h: its own entry, else the model's), at the mode's bits per
/// code; a module of the affine mode, or one MLX names and precdetect does not know, is another scheme's
/// (mlx_affine.cpp; unread.cpp counts it).
void link_mlx(Linking& model) {
  for (const TensorRecord& weight : model.tensors()) {
    if (weight.dtype != DType::U32 || !weight.name.ends_with(".weight") || weight.shape.size() != 2) continue;
    std::string module = weight.name.substr(0, weight.name.size() - std::string_view(".weight").size());
    std::optional<MlxModuleSettings> settings = mlx_module_settings(model.config(), module);
    const Mode* mode = settings ? mode_named(settings->mode) : nullptr;
    if (mode == nullptr || model.contains(module + ".biases")) continue;
    const int64_t group = settings->group_size.value_or(mode->group);
    if (group <= 0 || (mode->bits == 4 && group % 2 != 0)) continue;  // fp4 groups are whole bytes
    const TensorRecord* scales = model.part(module + ".scales");
    if (scales == nullptr) continue;
    const int64_t codes = weight.shape[1] * 32 / mode->bits;
    if (scales->dtype != DType::U8 || codes % group != 0 ||
        scales->shape != std::vector{weight.shape[0], codes / group})
      mismatch(model.file(), weight, *scales, fmt::format("{} takes one uint8 scale per {} codes", mode->name, group));
    set_link(model, weight, *scales, *mode, group);
  }
}

void link_microscaling(Linking& model) {
  const nlohmann::json& config = model.config();
  if (!config.is_object()) return;
  if (config.contains("quantization_config") && text_of(config["quantization_config"], "quant_method") == "mxfp4")
    return link_gpt_oss(model);
  link_mlx(model);
}

/// Each group's scale as a float32: 2^(s - 127) as a float32 power of two (transformers' ldexp), or e4m3's value.
float scale_value(uint8_t stored, bool e8m0) {
  if (e8m0) return std::ldexp(1.0F, static_cast<int>(stored) - 127);
  return decoded_values(DType::F8_E4M3)[stored];
}

TensorStats microscaling_stats(const LinkedValues& values) {
  const auto& link = values.parts<MicroscalingParts>();
  const Mode& mode = *mode_named(link.format);
  const HostValues codes = values.weight(), scales = values.part(link.scale);
  const uint64_t groups = scales.numel(), group = static_cast<uint64_t>(link.group);
  if (codes.bytes().size() != groups * group * static_cast<uint64_t>(mode.bits) / 8)
    fail(ErrorCode::kSizeMismatch, values.file(),
         fmt::format("`{}` holds {} bytes, not the {} codes of {} bits its {} scales of `{}` need",
                     values.record().name, codes.bytes().size(), groups * group, mode.bits, groups, link.scale.name));
  const auto* bytes = reinterpret_cast<const uint8_t*>(codes.data());
  const auto* stored = reinterpret_cast<const uint8_t*>(scales.data());
  const std::vector<float>& fp8 = decoded_values(DType::F8_E4M3);
  const size_t entries = mode.bits == 4 ? 16 : 256;
  return table_stats<DType::BF16>(
      groups, group, entries,
      [&](uint64_t unit, auto& table) {
        std::array<float, 256> products;
        const float scale = scale_value(stored[unit], mode.e8m0);
        for (size_t code = 0; code < entries; ++code)
          products[code] = (mode.bits == 4 ? kE2m1Magnitudes[code & 7] : std::fabs(fp8[code])) * scale;
        narrow_magnitudes<DType::BF16>(products.data(), entries, table.data());
      },
      [&](uint64_t unit, const auto& table, auto& decoded) {
        const uint8_t* first = bytes + unit * group * static_cast<uint64_t>(mode.bits) / 8;
        if (mode.bits == 8) {
          for (uint64_t i = 0; i < group; ++i) decoded.add(table[first[i]], i & 1);
          return;
        }
        decode_fp4_pairs(first, group, table, decoded);
      });
}

}  // namespace

extern const QuantScheme kMicroscalingScheme{
    .name = "MXFP4 (gpt-oss), MLX mxfp4, nvfp4 and mxfp8", .link = link_microscaling, .stats = microscaling_stats};

}  // namespace precdetect
