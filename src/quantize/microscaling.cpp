// Float codes in groups with one 8-bit scale each (ScaleScheme::kMicroscaling), OCP's microscaling formats and
// their kin, as their dequantizers compute them: each code's value times its group's scale in float32, rounded to
// bfloat16, the dtype both return (an fp4 or fp8 value times a power of two or an e4m3 scale is exact there, short
// of the range's ends).
// - gpt-oss's MXFP4 (transformers' Mxfp4Config, `quant_method` "mxfp4"): `NAME_blocks` uint8 [..., G, 16], 32 fp4
//   e2m1 codes two a byte, low nibble first, and `NAME_scales` uint8 [..., G] in e8m0 (2^(s - 127)), as
//   transformers' convert_moe_packed_tensors dequantizes them (ldexp of bfloat16 codes by a float32 power of two);
// - MLX's mxfp4, nvfp4 and mxfp8 modes (mlx-lm's `quantization` with its `mode`): `X.weight` uint32 words of codes
//   packed LSB first (8 fp4 or 4 fp8 e4m3 codes a word), `X.scales` uint8 per group of 32 (e8m0) or, for nvfp4, of
//   16 (e4m3), as mx.dequantize computes them. An e8m0 scale of 255, which OCP keeps for NaN, is 2^128: infinite.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "precdetect/core/error.h"
#include "precdetect/kernel/widen.h"
#include "precdetect/quantize/fp4_codes.h"
#include "precdetect/quantize/scheme.h"
#include "precdetect/quantize/state_parts.h"
#include "precdetect/quantize/table_stats.h"

namespace precdetect {
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

void set_link(TensorRecord& codes, TensorRecord& scales, const Mode& mode, int64_t group) {
  codes.scaled_by = ScaleLink{.tensor = scales.name,
                              .block_rows = 1,
                              .block_cols = group,
                              .scheme = ScaleScheme::kMicroscaling,
                              .bits = mode.bits,
                              .format = std::string(mode.name)};
}

/// gpt-oss's `NAME_blocks` with `NAME_scales` (shape: the blocks' but the last, 16 bytes of 32 codes).
void link_gpt_oss(std::vector<TensorRecord>& tensors, const RecordNames& names, const std::string& file) {
  constexpr std::string_view kBlocks = "_blocks";
  for (TensorRecord& blocks : tensors) {
    if (!blocks.name.ends_with(kBlocks) || blocks.scaled_by) continue;
    std::string prefix = blocks.name.substr(0, blocks.name.size() - kBlocks.size());
    TensorRecord* scales = state_part(tensors, names, prefix + "_scales");
    if (scales == nullptr) continue;
    std::vector<int64_t> expected(blocks.shape.begin(), blocks.shape.end() - (blocks.shape.empty() ? 0 : 1));
    if (blocks.dtype != DType::U8 || scales->dtype != DType::U8 || blocks.shape.size() < 2 ||
        blocks.shape.back() != 16 || scales->shape != expected)
      mismatch(file, blocks, *scales, "MXFP4 stores 16 uint8 bytes of codes per uint8 scale");
    set_link(blocks, *scales, kModes[0], 32);
  }
}

/// MLX's `X.weight` words with `X.scales` (and no biases: those are affine codes), at `mode`'s bits per code.
void link_mlx(std::vector<TensorRecord>& tensors, const RecordNames& names, const Mode& mode, int64_t group,
              const std::string& file) {
  for (TensorRecord& weight : tensors) {
    if (weight.dtype != DType::U32 || !weight.name.ends_with(".weight") || weight.shape.size() != 2) continue;
    std::string module = weight.name.substr(0, weight.name.size() - std::string_view(".weight").size());
    if (names.contains(module + ".biases")) continue;
    TensorRecord* scales = state_part(tensors, names, module + ".scales");
    if (scales == nullptr) continue;
    const int64_t codes = weight.shape[1] * 32 / mode.bits;
    if (scales->dtype != DType::U8 || codes % group != 0 ||
        scales->shape != std::vector{weight.shape[0], codes / group})
      mismatch(file, weight, *scales, fmt::format("{} takes one uint8 scale per {} codes", mode.name, group));
    set_link(weight, *scales, mode, group);
  }
}

void link_microscaling(std::vector<TensorRecord>& tensors, const nlohmann::json& config, const std::string& file) {
  if (!config.is_object()) return;
  RecordNames names;
  for (size_t i = 0; i < tensors.size(); ++i) names.emplace(tensors[i].name, i);
  if (config.contains("quantization_config") && text_of(config["quantization_config"], "quant_method") == "mxfp4")
    return link_gpt_oss(tensors, names, file);
  if (!config.contains("quantization") || !config["quantization"].is_object()) return;
  const nlohmann::json& settings = config["quantization"];
  const Mode* mode = mode_named(text_of(settings, "mode"));
  if (mode == nullptr) return;  // affine (mlx_affine.cpp), or a mode precdetect does not know: counted (unread.cpp)
  int64_t group = settings.contains("group_size") && settings["group_size"].is_number_integer()
                      ? settings["group_size"].get<int64_t>()
                      : mode->group;
  if (group <= 0 || (mode->bits == 4 && group % 2 != 0)) return;  // fp4 groups are whole bytes
  link_mlx(tensors, names, *mode, group, file);
}

/// Each group's scale as a float32: 2^(s - 127) as a float32 power of two (transformers' ldexp), or e4m3's value.
float scale_value(uint8_t stored, bool e8m0) {
  if (e8m0) return std::ldexp(1.0F, static_cast<int>(stored) - 127);
  return decoded_values(DType::F8_E4M3)[stored];
}

TensorStats microscaling_stats(const LinkedValues& values) {
  const ScaleLink& link = values.link();
  const Mode& mode = *mode_named(link.format);
  const HostValues codes = values.weight(), scales = values.part(link.tensor);
  const uint64_t groups = scales.numel(), group = static_cast<uint64_t>(link.block_cols);
  if (codes.bytes().size() != groups * group * static_cast<uint64_t>(mode.bits) / 8)
    fail(ErrorCode::kSizeMismatch, values.file(),
         fmt::format("`{}` holds {} bytes, not the {} codes of {} bits its {} scales of `{}` need",
                     values.record().name, codes.bytes().size(), groups * group, mode.bits, groups, link.tensor));
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

constexpr std::array kComputes = {ScaleScheme::kMicroscaling};

}  // namespace

extern const QuantScheme kMicroscalingScheme{.name = "MXFP4 (gpt-oss), MLX mxfp4, nvfp4 and mxfp8",
                                             .computes = kComputes,
                                             .link = link_microscaling,
                                             .stats = microscaling_stats};

}  // namespace precdetect
