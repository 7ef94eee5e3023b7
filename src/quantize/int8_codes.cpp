// compressed-tensors' int-quantized (ScaleScheme::kInt8Codes; llm-compressor's W8A8 and W8A16 integer schemes): each
// code stored in an int8 of the weight's own shape, `X.weight` [out, in], with `X.weight_scale` one for the tensor,
// one per output row ([out, 1]) or one per group of inputs ([out, groups]), and for an asymmetric scheme
// `X.weight_zero_point` of the scale's shape. Read as its dequantize computes: the code and the zero point cast to
// the scale's dtype (exact: integers of at most 9 bits), subtracted, times the scale, rounded once to its dtype.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <string_view>

#include "precdetect/core/error.h"
#include "precdetect/kernel/widen.h"
#include "precdetect/quantize/compressed_tensors_config.h"
#include "precdetect/quantize/scheme.h"
#include "precdetect/quantize/state_parts.h"
#include "precdetect/quantize/table_stats.h"

namespace precdetect {
namespace {

constexpr std::string_view kWeight = ".weight";

/// The scale's groups per row of `weight`'s, when `scale` is one for the tensor (1), one per row or one per group
/// of whole inputs; nullopt otherwise.
std::optional<int64_t> groups_per_row(const TensorRecord& weight, const TensorRecord& scale) {
  const int64_t rows = weight.shape[0], columns = weight.shape[1];
  if (scale.numel == 1) return 1;
  if (scale.shape.size() != 2 || scale.shape[0] != rows || scale.shape[1] <= 0 || columns % scale.shape[1] != 0)
    return std::nullopt;
  return scale.shape[1];
}

void link_module(TensorRecord& weight, std::vector<TensorRecord>& tensors, const RecordNames& names,
                 const std::string& file) {
  const std::string module = weight.name.substr(0, weight.name.size() - kWeight.size());
  TensorRecord* scale = state_part(tensors, names, module + ".weight_scale");
  TensorRecord* zeros = state_part(tensors, names, module + ".weight_zero_point");
  if (scale == nullptr || dtype_kind(scale->dtype) != DTypeKind::kFloat) return;
  std::optional<int64_t> groups = groups_per_row(weight, *scale);
  bool zeros_fit = zeros == nullptr || (zeros->dtype == DType::I8 && zeros->shape == scale->shape);
  if (!groups || !zeros_fit)
    fail(ErrorCode::kSizeMismatch, file,
         fmt::format("int8 weight `{}` of shape [{}]: scale `{}` of shape [{}]{} fits no rows or groups of it",
                     weight.name, fmt::join(weight.shape, ", "), scale->name, fmt::join(scale->shape, ", "),
                     zeros ? fmt::format(" with zero points of shape [{}]", fmt::join(zeros->shape, ", ")) : ""));
  weight.scaled_by = ScaleLink{.tensor = scale->name,
                               .block_rows = scale->numel == 1 ? weight.shape[0] : 1,
                               .block_cols = weight.shape[1] / *groups,
                               .scheme = ScaleScheme::kInt8Codes,
                               .bits = 8,
                               .zero_points = zeros ? zeros->name : ""};
}

void link_int8_codes(std::vector<TensorRecord>& tensors, const nlohmann::json& config, const std::string& file) {
  if (!compressed_tensors_format(config, "int-quantized")) return;
  RecordNames names;
  for (size_t i = 0; i < tensors.size(); ++i) names.emplace(tensors[i].name, i);
  for (TensorRecord& weight : tensors)
    if (weight.dtype == DType::I8 && weight.shape.size() == 2 && weight.name.ends_with(kWeight) && !weight.scaled_by)
      link_module(weight, tensors, names, file);
}

TensorStats int8_codes_stats(const LinkedValues& values) {
  const ScaleLink& link = values.link();
  const HostValues codes = values.weight(), scale = values.part(link.tensor);
  const std::optional<HostValues> zeros = values.optional_part(link.zero_points);
  const int64_t rows = codes.shape()[0], columns = codes.shape()[1], group = link.block_cols;
  const int64_t groups = scale.numel() == 1 ? 1 : columns / group;
  std::vector<float> scales(scale.numel());
  widen(scale, 0, scales.size(), scales.data());
  const auto* bytes = reinterpret_cast<const int8_t*>(codes.data());
  const auto* zero_points = zeros ? reinterpret_cast<const int8_t*>(zeros->data()) : nullptr;
  // One unit per row and group: a per-tensor scale's group is the whole row.
  const int64_t unit_columns = scale.numel() == 1 ? columns : group, per_row = columns / unit_columns;
  return for_result_dtype(scale.dtype(), [&]<DType kResult>() {
    return table_stats<kResult>(
        static_cast<uint64_t>(rows * per_row), static_cast<uint64_t>(unit_columns), 256,
        [&](uint64_t unit, auto& table) {
          const uint64_t index = scale.numel() == 1 ? 0 : unit / per_row * groups + unit % per_row;
          const int zero = zero_points ? zero_points[index] : 0;
          std::array<float, 256> products;  // indexed by the stored byte
          for (int code = 0; code < 256; ++code)
            products[code] = static_cast<float>(static_cast<int8_t>(code) - zero) * scales[index];
          narrow_magnitudes<kResult>(products.data(), products.size(), table.data());
        },
        [&](uint64_t unit, const auto& table, auto& decoded) {
          const int8_t* first = bytes + unit * static_cast<uint64_t>(unit_columns);
          decoded.reserve(static_cast<uint64_t>(unit_columns));
          for (int64_t i = 0; i < unit_columns; ++i) decoded.add(table[static_cast<uint8_t>(first[i])], i & 1);
        });
  });
}

constexpr std::array kComputes = {ScaleScheme::kInt8Codes};

}  // namespace

extern const QuantScheme kInt8CodesScheme{.name = "compressed-tensors int-quantized",
                                          .computes = kComputes,
                                          .link = link_int8_codes,
                                          .stats = int8_codes_stats};

}  // namespace precdetect
