// compressed-tensors' nvfp4-pack-quantized (ScaleScheme::kNvfp4; llm-compressor's NVFP4 and NVFP4A16 schemes):
// `X.weight_packed` uint8 [out, in / 2], fp4 e2m1 codes two a byte, low nibble first; `X.weight_scale` in e4m3, one
// per group of 16 inputs; `X.weight_global_scale` one float32. Read as NVFP4PackedCompressor.decompress computes:
// each group's scale (cast to bfloat16, exact) divided by the global scale in float32 (torch promotes the pair),
// times each code's value in float32, then rounded to bfloat16, the dtype it returns.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <string_view>

#include "precdetect/core/error.h"
#include "precdetect/kernel/widen.h"
#include "precdetect/quantize/compressed_tensors_config.h"
#include "precdetect/quantize/fp4_codes.h"
#include "precdetect/quantize/scheme.h"
#include "precdetect/quantize/state_parts.h"
#include "precdetect/quantize/table_stats.h"

namespace precdetect {
namespace {

constexpr std::string_view kPacked = ".weight_packed";

/// Links `packed` to its scale and global scale; the group is what the shapes imply, which must be whole bytes.
void link_module(TensorRecord& packed, std::vector<TensorRecord>& tensors, const RecordNames& names,
                 const std::string& file) {
  const std::string module = packed.name.substr(0, packed.name.size() - kPacked.size());
  TensorRecord* scale = state_part(tensors, names, module + ".weight_scale");
  TensorRecord* global = state_part(tensors, names, module + ".weight_global_scale");
  state_part(tensors, names, module + ".input_global_scale");
  if (scale == nullptr || global == nullptr) return;  // incomplete: counted (unread.cpp), never guessed
  const bool fits = packed.dtype == DType::U8 && packed.shape.size() == 2 && scale->dtype == DType::F8_E4M3 &&
                    scale->shape.size() == 2 && scale->shape[0] == packed.shape[0] && scale->shape[1] > 0 &&
                    (packed.shape[1] * 2) % scale->shape[1] == 0 && (packed.shape[1] * 2 / scale->shape[1]) % 2 == 0 &&
                    global->dtype == DType::F32 && global->numel == 1;
  if (!fits)
    fail(ErrorCode::kSizeMismatch, file,
         fmt::format("nvfp4 weight `{}` of shape [{}] ({}): scale `{}` of shape [{}] ({}) and global scale `{}` ({} "
                     "values, {}) fit no groups of its codes",
                     packed.name, fmt::join(packed.shape, ", "), dtype_name(packed.dtype), scale->name,
                     fmt::join(scale->shape, ", "), dtype_name(scale->dtype), global->name, global->numel,
                     dtype_name(global->dtype)));
  packed.scaled_by = ScaleLink{.tensor = scale->name,
                               .block_rows = 1,
                               .block_cols = packed.shape[1] * 2 / scale->shape[1],
                               .scheme = ScaleScheme::kNvfp4,
                               .bits = 4,
                               .global_scale = global->name};
}

void link_nvfp4(std::vector<TensorRecord>& tensors, const nlohmann::json& config, const std::string& file) {
  if (!compressed_tensors_format(config, "nvfp4-pack-quantized")) return;
  RecordNames names;
  for (size_t i = 0; i < tensors.size(); ++i) names.emplace(tensors[i].name, i);
  for (TensorRecord& packed : tensors)
    if (packed.name.ends_with(kPacked) && !packed.scaled_by) link_module(packed, tensors, names, file);
}

TensorStats nvfp4_stats(const LinkedValues& values) {
  const ScaleLink& link = values.link();
  const HostValues codes = values.weight(), scales = values.part(link.tensor);
  const HostValues global = values.part(link.global_scale);
  const uint64_t groups = scales.numel(), group = static_cast<uint64_t>(link.block_cols);
  if (codes.bytes().size() != groups * group / 2)
    fail(ErrorCode::kSizeMismatch, values.file(),
         fmt::format("`{}` holds {} bytes, not the {} fp4 codes its {} scales of `{}` need", values.record().name,
                     codes.bytes().size(), groups * group, groups, link.tensor));
  const auto* bytes = reinterpret_cast<const uint8_t*>(codes.data());
  const auto* stored = reinterpret_cast<const uint8_t*>(scales.data());
  const std::vector<float>& e4m3 = decoded_values(DType::F8_E4M3);
  const float global_scale = load_raw<float>(global.data(), 0);
  return table_stats<DType::BF16>(
      groups, group, 16,
      [&](uint64_t unit, auto& table) {
        std::array<float, 16> products;
        const float scale = e4m3[stored[unit]] / global_scale;
        for (size_t code = 0; code < products.size(); ++code) products[code] = kE2m1Magnitudes[code & 7] * scale;
        narrow_magnitudes<DType::BF16>(products.data(), products.size(), table.data());
      },
      [&](uint64_t unit, const auto& table, auto& decoded) {
        decode_fp4_pairs(bytes + unit * group / 2, group, table, decoded);
      });
}

constexpr std::array kComputes = {ScaleScheme::kNvfp4};

}  // namespace

extern const QuantScheme kNvfp4Scheme{
    .name = "compressed-tensors nvfp4-pack-quantized", .computes = kComputes, .link = link_nvfp4, .stats = nvfp4_stats};

}  // namespace precdetect
