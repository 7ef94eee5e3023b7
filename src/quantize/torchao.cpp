// torchao's quantized tensor subclasses (ScaleScheme::kTorchao), stored as their parts: transformers' TorchAoConfig
// and torchao's own flatten_tensor_state_dict write `X._weight_qdata`, `X._weight_scale` and `X._weight_zero_point`
// in safetensors with a description of each subclass in the header's metadata, keyed by the logical tensor `X.weight`
// (its class, block_size and the dtype it dequantizes to); a pickle (torch.save of the subclasses) holds the same
// parts in each subclass's state, named the same way by its reader (load/torch). The loader hands the descriptions
// over as config's `tensor_subclasses` (load/tensor_subclasses.h). Read here, as torchao 0.18's dequantize computes:
// - Int8Tensor (Int8WeightOnlyConfig, Int8DynamicActivationInt8WeightConfig) and IntxUnpackedToInt8Tensor
//   (IntxWeightOnlyConfig: 1- to 8-bit codes one to an int8): dequantize_affine, `q.to(out) - zp.to(out)` (exact:
//   integers of at most 9 bits), times the block's scale (a float32 product, whichever the two dtypes), then
//   `.to(out)`;
// - Float8Tensor (Float8WeightOnlyConfig): `q.to(float32) * scale`, then `.to(out)`.
// Each read weight is renamed `X.weight` and has the logical weight's numel; its parts get the role `scale`. A
// subclass of another class (Int4Tensor's packed nibbles, Int4TilePackedTo4dTensor, MXTensor, ...) is counted, its
// codes named with the class (TensorRecord::unread_scheme), and its parts kept out of the verdict.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>

#include "precdetect/core/error.h"
#include "precdetect/kernel/widen.h"
#include "precdetect/load/tensor_subclasses.h"
#include "precdetect/quantize/scheme.h"
#include "precdetect/quantize/state_parts.h"
#include "precdetect/quantize/table_stats.h"

namespace precdetect {
namespace {

/// The classes read here, and whether their codes are float8 (else int8).
constexpr std::array<std::pair<std::string_view, bool>, 3> kReadClasses = {{
    {"Int8Tensor", false},
    {"IntxUnpackedToInt8Tensor", false},
    {"Float8Tensor", true},
}};

/// What a subclass's description says of a tensor read here: its class, its parts, blocks and result dtype.
struct Description {
  std::string type;
  std::vector<std::string> parts;  ///< `_tensor_data_names`: its tensors' attributes ("qdata", "scale", ...)
  std::vector<int64_t> block_size;
  std::optional<DType> result;
};

/// torch's name of a dtype a dequantize may return (dequantize_affine accepts only these three).
std::optional<DType> result_dtype(std::string_view torch_name) {
  if (torch_name == "float32") return DType::F32;
  if (torch_name == "float16") return DType::F16;
  if (torch_name == "bfloat16") return DType::BF16;
  return std::nullopt;
}

/// The description's class, block_size and dtype, as torchao's TensorSubclassAttributeJSONEncoder writes them:
/// {"_type": "Int8Tensor", "_data": {"block_size": [1, 256], "dtype": {"_type": "torch.dtype", "_data": "bfloat16"}}}.
Description describe(const nlohmann::json& description) {
  Description result;
  if (!description.is_object() || !description.contains("_type") || !description["_type"].is_string()) return result;
  result.type = description["_type"].get<std::string>();
  if (description.contains("_tensor_data_names") && description["_tensor_data_names"].is_array())
    for (const nlohmann::json& part : description["_tensor_data_names"])
      if (part.is_string()) result.parts.push_back(part.get<std::string>());
  const nlohmann::json* data = description.contains("_data") ? &description["_data"] : nullptr;
  if (data == nullptr || !data->is_object()) return result;
  if (data->contains("block_size") && (*data)["block_size"].is_array())
    for (const nlohmann::json& side : (*data)["block_size"])
      result.block_size.push_back(side.is_number_integer() ? side.get<int64_t>() : 0);
  if (data->contains("dtype") && (*data)["dtype"].is_object() && (*data)["dtype"].contains("_data") &&
      (*data)["dtype"]["_data"].is_string())
    result.result = result_dtype((*data)["dtype"]["_data"].get<std::string>());
  return result;
}

[[noreturn]] void misfit(const std::string& file, const std::string& weight, const TensorRecord& codes,
                         const std::string& why) {
  fail(ErrorCode::kSizeMismatch, file,
       fmt::format("torchao tensor `{}` (codes `{}` of shape [{}]): {}", weight, codes.name,
                   fmt::join(codes.shape, ", "), why));
}

/// The codes as rows (every dimension but the last) by columns, in blocks of block_rows x block_cols: torchao's
/// block_size, whose sides must divide the shape (its dequantize views the codes so), and whose leading sides are
/// 1 or, for one scale over the whole tensor, the whole dimension. nullopt for any other blocking.
std::optional<std::pair<int64_t, int64_t>> blocks(const TensorRecord& codes, const std::vector<int64_t>& block_size) {
  const std::vector<int64_t>& shape = codes.shape;
  if (shape.empty() || block_size.size() != shape.size()) return std::nullopt;
  for (size_t i = 0; i < shape.size(); ++i)
    if (block_size[i] <= 0 || shape[i] % block_size[i] != 0) return std::nullopt;
  if (block_size == shape)
    return std::pair{std::max<int64_t>(static_cast<int64_t>(codes.numel) / shape.back(), 1), block_size.back()};
  const size_t rows_side = shape.size() >= 2 ? shape.size() - 2 : 0;
  for (size_t i = 0; i + 2 < shape.size(); ++i)
    if (block_size[i] != 1) return std::nullopt;
  return std::pair{shape.size() >= 2 ? block_size[rows_side] : 1, block_size.back()};
}

bool is_float8(DType dtype) { return dtype == DType::F8_E4M3 || dtype == DType::F8_E5M2; }

bool is_readable_class(const std::string& type, DType codes) {
  return std::ranges::any_of(kReadClasses, [&](const auto& entry) {
    return entry.first == type && (entry.second ? is_float8(codes) : codes == DType::I8);
  });
}

/// The dtypes a scale may have: dequantize_affine multiplies in float32 what these hold exactly.
bool is_scale_dtype(DType dtype) { return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16; }

/// Links the codes of `weight` (`X.weight`) to their scale and zero point and renames them `X.weight`. Throws
/// Error(kSizeMismatch) where the parts fit no blocking of the codes.
void link_tensor(std::vector<TensorRecord>& tensors, RecordNames& names, const std::string& weight,
                 const nlohmann::json& description, const std::string& file) {
  auto codes_at = names.find(subclass_part_name(weight, "qdata"));
  if (codes_at == names.end()) return;  // its parts are in another file of the model, or it is no subclass
  const Description read = describe(description);
  TensorRecord* scale = state_part(tensors, names, subclass_part_name(weight, "scale"));
  TensorRecord* zeros = state_part(tensors, names, subclass_part_name(weight, "zero_point"));
  TensorRecord& codes = tensors[codes_at->second];
  if (!is_readable_class(read.type, codes.dtype) || !read.result || scale == nullptr || names.contains(weight) ||
      !is_scale_dtype(scale->dtype) || (zeros != nullptr && zeros->dtype != DType::I8)) {
    for (const std::string& part : read.parts)
      if (part != "qdata") state_part(tensors, names, subclass_part_name(weight, part));
    if (codes.role == TensorRole::kModel && !codes.scaled_by) codes.unread_scheme = "torchao " + read.type;
    return;
  }
  std::optional<std::pair<int64_t, int64_t>> block = blocks(codes, read.block_size);
  if (!block)
    misfit(file, weight, codes,
           fmt::format("block_size [{}] fits no blocking of it", fmt::join(read.block_size, ", ")));
  const uint64_t groups = codes.numel / static_cast<uint64_t>(block->first * block->second);
  // Float8Tensor's dequantize expands its scale by the scale's own shape, dequantize_affine views it as the blocks.
  std::vector<int64_t> grid(codes.shape.size());
  for (size_t i = 0; i < grid.size(); ++i) grid[i] = codes.shape[i] / read.block_size[i];
  bool float8_grid = !is_float8(codes.dtype) || scale->numel == 1 || scale->shape == grid;
  if (scale->numel != groups || (zeros != nullptr && zeros->numel != groups) || !float8_grid)
    misfit(file, weight, codes,
           fmt::format(
               "{} blocks of {}x{}, but scale `{}` is of shape [{}]{}", groups, block->first, block->second,
               scale->name, fmt::join(scale->shape, ", "),
               zeros ? fmt::format(" and zero point `{}` of [{}]", zeros->name, fmt::join(zeros->shape, ", ")) : ""));
  codes.scaled_by = ScaleLink{.tensor = scale->name,
                              .block_rows = block->first,
                              .block_cols = block->second,
                              .scheme = ScaleScheme::kTorchao,
                              .zero_points = zeros ? zeros->name : "",
                              .result = *read.result};
  const size_t index = codes_at->second;
  codes.name = weight;
  names.emplace(weight, index);
}

void link_torchao(std::vector<TensorRecord>& tensors, const nlohmann::json& config, const std::string& file) {
  const nlohmann::json* subclasses = tensor_subclasses_of(config);
  if (subclasses == nullptr) return;
  RecordNames names;
  for (size_t i = 0; i < tensors.size(); ++i) names.emplace(tensors[i].name, i);
  for (const auto& [weight, description] : subclasses->items()) link_tensor(tensors, names, weight, description, file);
}

/// A stored byte's value before its scale: the float8 value (`decoded`, its dtype's table), or the int8 code less
/// the zero point (torchao subtracts in the result dtype: exact, integers of at most 9 bits).
float code_value(uint8_t byte, const std::vector<float>* decoded, float zero) {
  return decoded ? (*decoded)[byte] : static_cast<float>(static_cast<int8_t>(byte)) - zero;
}

TensorStats torchao_stats(const LinkedValues& values) {
  const ScaleLink& link = values.link();
  const HostValues codes = values.weight(), scale = values.part(link.tensor);
  const std::optional<HostValues> zeros = values.optional_part(link.zero_points);
  if (codes.numel() == 0) return {};
  const int64_t columns = codes.shape().back(), rows = static_cast<int64_t>(codes.numel()) / columns;
  const int64_t per_row = columns / link.block_cols;  // column blocks in a row
  std::vector<float> scales(scale.numel());
  widen(scale, 0, scales.size(), scales.data());
  const auto* bytes = reinterpret_cast<const uint8_t*>(codes.data());
  const auto* zero_points = zeros ? reinterpret_cast<const int8_t*>(zeros->data()) : nullptr;
  const std::vector<float>* decoded = is_float8(codes.dtype()) ? &decoded_values(codes.dtype()) : nullptr;
  // A block of at least 256 values is decoded through a table of each stored byte's value; a smaller one (a group
  // of 32) through its own values, fewer than the table's.
  const bool by_code = link.block_cols >= 256;
  return for_result_dtype(link.result, [&]<DType kResult>() {
    return table_stats<kResult>(
        static_cast<uint64_t>(rows * per_row), static_cast<uint64_t>(link.block_cols),
        by_code ? 256 : static_cast<size_t>(link.block_cols),
        [&](uint64_t unit, auto& table) {
          const int64_t row = static_cast<int64_t>(unit) / per_row, block = static_cast<int64_t>(unit) % per_row;
          const auto group = static_cast<uint64_t>(row / link.block_rows * per_row + block);
          const float zero = zero_points ? static_cast<float>(zero_points[group]) : 0.0F, factor = scales[group];
          const uint8_t* first = bytes + unit * static_cast<uint64_t>(link.block_cols);
          std::array<float, 256> products;  // the float32 products dequantize forms, then cast to the result
          for (size_t i = 0; i < table.size(); ++i)
            products[i] = code_value(by_code ? static_cast<uint8_t>(i) : first[i], decoded, zero) * factor;
          narrow_magnitudes<kResult>(products.data(), table.size(), table.data());
        },
        [&](uint64_t unit, const auto& table, auto& out) {
          const uint8_t* first = bytes + unit * static_cast<uint64_t>(link.block_cols);
          out.reserve(static_cast<uint64_t>(link.block_cols));
          for (int64_t i = 0; i < link.block_cols; ++i) out.add(table[by_code ? first[i] : i], i & 1);
        });
  });
}

constexpr std::array kComputes = {ScaleScheme::kTorchao};

}  // namespace

extern const QuantScheme kTorchaoScheme{
    .name = "torchao Int8Tensor, IntxUnpackedToInt8Tensor, Float8Tensor (safetensors and pickled)",
    .computes = kComputes,
    .link = link_torchao,
    .stats = torchao_stats};

}  // namespace precdetect
