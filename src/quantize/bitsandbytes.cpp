// bitsandbytes' quantized weights, as transformers saves them: 4-bit (nf4, fp4) with the tensors of
// QuantState.as_dict beside them, and LLM.int8 with `SCB`. They are
// analyzed over the values bitsandbytes dequantizes them to: 4-bit codes through their quant_map times their
// block's absmax, in float32, then cast to the quantization state's dtype (dequantize_4bit; a nested absmax first
// dequantized as dequantize_blockwise does, plus its offset); LLM.int8 codes times their row's SCB / 127 in float32
// (int8_vectorwise_dequant). Recognized by the tensors' names, which bitsandbytes alone writes; the 4-bit codes are
// read as the bytes they are, whatever dtype `quant_storage` stored them as (quantize_4bit views its packed bytes so).

#include <fmt/format.h>

#include <array>
#include <nlohmann/json.hpp>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "precdetect/core/error.h"
#include "precdetect/kernel/widen.h"
#include "precdetect/quantize/narrow_rounding.h"
#include "precdetect/quantize/scheme.h"
#include "precdetect/quantize/table_stats.h"

namespace precdetect {

extern const QuantScheme kBitsandbytesScheme;

namespace {

/// A 4-bit weight's tensors beside its codes, as QuantState.as_dict writes them: 4-bit codes two to a byte, high
/// nibble first, over the flattened weight; each code indexes `quant_map`, times its block's absmax in float32, then
/// cast to the state's dtype.
struct Blockwise4bitParts {
  PartName scale;             ///< the absmax, one per block (of the blocksize the state's JSON says)
  PartName quant_map;         ///< the 16 float32 values a code stands for (nf4's or fp4's)
  PartName quant_state;       ///< uint8 bytes of JSON: quant_type, blocksize, dtype, shape, nested_*
  PartName nested_absmax;     ///< nested (double) quantization: the absmax is itself 8-bit codes whose
  PartName nested_quant_map;  ///< blocks scale by these; both empty without it

  static constexpr auto fields() {
    return std::tuple{&Blockwise4bitParts::scale, &Blockwise4bitParts::quant_map, &Blockwise4bitParts::quant_state,
                      &Blockwise4bitParts::nested_absmax, &Blockwise4bitParts::nested_quant_map};
  }
  nlohmann::ordered_json describe() const {
    // the blocksize is in the quantization state's JSON, read with the values
    nlohmann::ordered_json json = scaled_by_json(scale.name, std::pair{int64_t{1}, int64_t{0}});
    json["bits"] = 4;
    return json;
  }
};

/// An LLM.int8 weight's SCB: int8 codes x their row's SCB / 127 in float32.
struct Int8RowsParts {
  PartName scale;

  static constexpr auto fields() { return std::tuple{&Int8RowsParts::scale}; }
  nlohmann::ordered_json describe() const {
    nlohmann::ordered_json json = scaled_by_json(scale.name, std::pair{int64_t{1}, int64_t{1}});
    json["bits"] = 8;
    return json;
  }
};

void link_4bit(Linking& model, const TensorRecord& weight) {
  for (std::string_view type : {"nf4", "fp4"}) {
    std::string state = weight.name + ".quant_state.bitsandbytes__" + std::string(type);
    if (!model.contains(state)) continue;
    const TensorRecord* absmax = model.part(weight.name + ".absmax");
    const TensorRecord* quant_map = model.part(weight.name + ".quant_map");
    const TensorRecord* nested_absmax = model.part(weight.name + ".nested_absmax");
    const TensorRecord* nested_quant_map = model.part(weight.name + ".nested_quant_map");
    model.part(state);
    // Incomplete: counted, never analyzed as the numbers quant_storage stores the codes as (bfloat16, ...).
    if (absmax == nullptr || quant_map == nullptr)
      return model.unread(weight, fmt::format("bitsandbytes {}, without its absmax or quant map", type));
    if ((nested_absmax == nullptr) != (nested_quant_map == nullptr))
      return model.unread(weight, fmt::format("bitsandbytes {}, with half of its nested quantization", type));
    model.read(weight, Link(kBitsandbytesScheme,
                            Blockwise4bitParts{
                                .scale = {.name = absmax->name, .multiplies = true},
                                .quant_map = {.name = quant_map->name},
                                .quant_state = {.name = state},
                                .nested_absmax = {.name = nested_absmax ? nested_absmax->name : "", .multiplies = true},
                                .nested_quant_map = {.name = nested_quant_map ? nested_quant_map->name : ""}}));
    return;
  }
}

void link_int8(Linking& model, const TensorRecord& weight) {
  std::string module = weight.name.substr(0, weight.name.size() - std::string_view(".weight").size());
  const TensorRecord* scb = model.part(module + ".SCB");
  model.part(module + ".weight_format");
  if (scb == nullptr || scb->dtype != DType::F32) return;
  model.read(weight, Link(kBitsandbytesScheme, Int8RowsParts{.scale = {.name = scb->name, .multiplies = true}}));
}

// Reading: the dequantized values' statistics.

/// A 4-bit weight's tensors as read; the nested ones nullptr without nested quantization.
struct Blockwise4bitValues {
  const HostValues& codes;
  const HostValues& absmax;
  const HostValues& quant_map;
  const HostValues& quant_state;
  const HostValues* nested_absmax = nullptr;
  const HostValues* nested_quant_map = nullptr;
};

constexpr int64_t kMaxBlocksize = int64_t{1} << 20;

/// What bitsandbytes' QuantState.as_dict packs into the `quant_state.bitsandbytes__*` bytes.
struct QuantState {
  int64_t blocksize = 0, nested_blocksize = 0;
  uint64_t numel = 1;
  DType dtype = DType::F32;
  float nested_offset = 0;
};

DType dtype_named(const std::string& name) {
  if (name == "bfloat16") return DType::BF16;
  if (name == "float16") return DType::F16;
  if (name == "float32") return DType::F32;
  throw std::invalid_argument("dtype " + name);
}

QuantState quant_state(const HostValues& bytes, const std::filesystem::path& file, std::string_view weight) {
  try {
    auto text = reinterpret_cast<const char*>(bytes.data());
    nlohmann::json json = nlohmann::json::parse(text, text + bytes.bytes().size());
    QuantState state{.blocksize = json.at("blocksize").get<int64_t>(),
                     .dtype = dtype_named(json.at("dtype").get<std::string>())};
    for (const nlohmann::json& dimension : json.at("shape")) state.numel *= dimension.get<uint64_t>();
    if (json.contains("nested_blocksize")) {
      state.nested_blocksize = json.at("nested_blocksize").get<int64_t>();
      state.nested_offset = json.at("nested_offset").get<float>();
    }
    if (state.blocksize <= 0 || (json.contains("nested_blocksize") && state.nested_blocksize <= 0))
      throw std::invalid_argument("a block size is not positive");
    if (state.blocksize > kMaxBlocksize)  // bitsandbytes' reach 4096; a block's values are counted in 32 bits
      throw std::invalid_argument(fmt::format("block size {} is no bitsandbytes block size", state.blocksize));
    return state;
  } catch (const std::exception& e) {
    fail(ErrorCode::kInvalidJson, file,
         fmt::format("quantization state of `{}` is not bitsandbytes' JSON ({})", weight, e.what()));
  }
}

/// Every block's absmax in float32: stored, or with nested quantization its 8-bit code through the nested map times
/// its nested block's absmax, plus the offset, each step in float32 as dequantize_blockwise and `+= offset` form it.
std::vector<float> absmax_of(const Blockwise4bitValues& values, const QuantState& state, uint64_t blocks) {
  std::vector<float> absmax(blocks);
  if (!values.nested_absmax) {
    widen(values.absmax, 0, blocks, absmax.data());
    return absmax;
  }
  std::vector<float> nested_map(256), nested(values.nested_absmax->numel());
  widen(*values.nested_quant_map, 0, nested_map.size(), nested_map.data());
  widen(*values.nested_absmax, 0, nested.size(), nested.data());
  const auto* codes = reinterpret_cast<const uint8_t*>(values.absmax.data());
  for (uint64_t block = 0; block < blocks; ++block)
    absmax[block] =
        nested_map[codes[block]] * nested[block / static_cast<uint64_t>(state.nested_blocksize)] + state.nested_offset;
  return absmax;
}

void check_4bit_sizes(const Blockwise4bitValues& values, const QuantState& state, uint64_t blocks,
                      const std::filesystem::path& file, std::string_view weight) {
  bool nested = values.nested_absmax != nullptr;
  uint64_t nested_blocks = nested ? (blocks + state.nested_blocksize - 1) / state.nested_blocksize : 0;
  bool fits = values.codes.bytes().size() == (state.numel + 1) / 2 && values.absmax.numel() == blocks &&
              values.absmax.dtype() == (nested ? DType::U8 : DType::F32) && values.quant_map.numel() == 16 &&
              values.quant_map.dtype() == DType::F32 &&
              (!nested || (state.nested_blocksize > 0 && values.nested_absmax->numel() == nested_blocks &&
                           values.nested_absmax->dtype() == DType::F32 && values.nested_quant_map->numel() == 256 &&
                           values.nested_quant_map->dtype() == DType::F32));
  if (!fits)
    fail(ErrorCode::kSizeMismatch, file,
         fmt::format("4-bit weight `{}`: its codes ({} bytes), absmax ({}), quant map ({}) or nested tensors do not "
                     "fit its quantization state ({} values in blocks of {})",
                     weight, values.codes.bytes().size(), values.absmax.numel(), values.quant_map.numel(), state.numel,
                     state.blocksize));
}

TensorStats blockwise_4bit_stats(const Blockwise4bitValues& values, const std::filesystem::path& file,
                                 std::string_view weight) {
  const QuantState state = quant_state(values.quant_state, file, weight);
  const uint64_t blocks = (state.numel + state.blocksize - 1) / state.blocksize;
  check_4bit_sizes(values, state, blocks, file, weight);
  const std::vector<float> absmax = absmax_of(values, state, blocks);
  std::vector<float> quant_map(16);
  widen(values.quant_map, 0, 16, quant_map.data());
  const auto* codes = reinterpret_cast<const uint8_t*>(values.codes.data());
  return for_result_dtype(state.dtype, [&]<DType kResult>() {
    return table_stats<kResult>(
        blocks, static_cast<uint64_t>(state.blocksize), 16,
        [&](uint64_t block, auto& table) {
          std::array<float, 16> products;  // in float32, then cast to the state's dtype
          for (size_t code = 0; code < 16; ++code) products[code] = quant_map[code] * absmax[block];
          narrow_magnitudes<kResult>(products.data(), products.size(), table.data());
        },
        [&](uint64_t block, const auto& table, auto& decoded) {
          // Two codes a byte, the first in the high nibble; blocks hold an even number of values but the last. Each
          // byte read into a local: a count's increment could alias a uint8_t, which would reload it.
          const uint64_t first = block * static_cast<uint64_t>(state.blocksize);
          const uint64_t length = std::min(static_cast<uint64_t>(state.blocksize), state.numel - first);
          const uint8_t* pairs = codes + first / 2;
          decoded.reserve(length);
          for (uint64_t i = 0; i + 1 < length; i += 2) {
            const uint8_t pair = pairs[i / 2];
            decoded.add(table[pair >> 4], 0);
            decoded.add(table[pair & 0xf], 1);
          }
          if (length % 2 != 0) decoded.add(table[pairs[length / 2] >> 4], 0);
        });
  });
}

TensorStats int8_rows_stats(const HostValues& codes, const HostValues& scb, const std::filesystem::path& file,
                            std::string_view weight) {
  const int64_t rows = codes.shape()[0], columns = codes.shape()[1];
  if (scb.numel() != static_cast<uint64_t>(rows))
    fail(ErrorCode::kSizeMismatch, file,
         fmt::format("int8 weight `{}` has {} rows but its SCB {} values", weight, rows, scb.numel()));
  std::vector<float> row_scales(static_cast<size_t>(rows));
  widen(scb, 0, row_scales.size(), row_scales.data());
  const auto* bytes = reinterpret_cast<const uint8_t*>(codes.data());
  constexpr float kInverse127 = 7.874015718698502e-3F;  // bitsandbytes multiplies by 1/127 rather than divide
  return table_stats<DType::F32>(
      static_cast<uint64_t>(rows), static_cast<uint64_t>(columns), 256,
      [&](uint64_t row, std::vector<float>& table) {
        for (int code = 0; code < 256; ++code)  // indexed by the stored byte
          table[static_cast<size_t>(code)] =
              static_cast<float>(static_cast<int8_t>(code)) * row_scales[row] * kInverse127;
      },
      [&](uint64_t row, const std::vector<float>& table, auto& decoded) {
        const uint8_t* row_bytes = bytes + row * static_cast<uint64_t>(columns);
        decoded.reserve(static_cast<uint64_t>(columns));
        for (int64_t column = 0; column < columns; ++column) decoded.add(table[row_bytes[column]], 0);
      });
}

void link_bitsandbytes(Linking& model) {
  for (const TensorRecord& weight : model.tensors()) {
    if (!weight.name.ends_with(".weight")) continue;
    // 4-bit codes are bytes whatever dtype views them: `bnb_4bit_quant_storage` (bfloat16 for FSDP, float32, ...)
    // stores the same packed bytes as a tensor of that dtype, never values of it.
    if (dtype_kind(weight.dtype) == DTypeKind::kFloat || dtype_kind(weight.dtype) == DTypeKind::kInteger)
      link_4bit(model, weight);
    if (weight.dtype == DType::I8 && weight.shape.size() == 2) link_int8(model, weight);
  }
}

/// A bitsandbytes weight's values from its codes and quantization state.
TensorStats bitsandbytes_stats(const LinkedValues& values) {
  const std::filesystem::path& file = values.file();
  const std::string& name = values.record().name;
  HostValues codes = values.weight();
  if (values.link().holds<Int8RowsParts>())
    return int8_rows_stats(codes, values.part(values.parts<Int8RowsParts>().scale), file, name);
  const auto& names = values.parts<Blockwise4bitParts>();
  HostValues absmax = values.part(names.scale);
  HostValues quant_map = values.part(names.quant_map), state = values.part(names.quant_state);
  std::optional<HostValues> nested_absmax = values.optional_part(names.nested_absmax);
  std::optional<HostValues> nested_quant_map = values.optional_part(names.nested_quant_map);
  return blockwise_4bit_stats({.codes = codes,
                               .absmax = absmax,
                               .quant_map = quant_map,
                               .quant_state = state,
                               .nested_absmax = nested_absmax ? &*nested_absmax : nullptr,
                               .nested_quant_map = nested_quant_map ? &*nested_quant_map : nullptr},
                              file, name);
}

}  // namespace

extern const QuantScheme kBitsandbytesScheme{
    .name = "bitsandbytes nf4, fp4 and LLM.int8", .link = link_bitsandbytes, .stats = bitsandbytes_stats};

}  // namespace precdetect
