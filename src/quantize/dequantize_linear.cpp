// ONNX's DequantizeLinear: QDQ models, as onnxruntime's quantizer (quantize_static, quantize_dynamic) writes them,
// store each quantized weight as integer codes of the weight's own shape read by a DequantizeLinear node with its
// scale and zero point; the QOperator format's nodes (QLinearConv, QLinearMatMul, QGemm, DynamicQuantizeMatMul) read
// theirs the same way. The loader records what each node says (load/dequantize_node.h); this scheme links the
// codes to the scale, zero point, axis and block size their nodes agree on, checks they fit as onnx's operator
// defines them, marks the scales and zero points, and computes each value as onnxruntime's CPU kernel does:
// (int32(code) - int32(zero point)) to float32, times the scale in float32, rounded to the scale's dtype (float32,
// float16 or bfloat16). Codes several nodes read alike are linked once; codes read with two different scales are
// not linked, and stay the integers they are stored as.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <string_view>
#include <type_traits>

#include "precdetect/core/error.h"
#include "precdetect/core/parallel.h"
#include "precdetect/kernel/cpu_kernel.h"
#include "precdetect/kernel/widen.h"
#include "precdetect/quantize/scheme.h"
#include "precdetect/quantize/table_stats.h"

namespace precdetect {

extern const QuantScheme kDequantizeLinearScheme;

namespace {

/// A weight's codes, read along `axis` (the node's, made >= 0 once checked) with one scale and zero point per tensor,
/// per slice along it, or per `block_size` codes along it (opset 21).
struct DequantizeLinearParts {
  PartName scale;
  PartName zero_points;  ///< empty: symmetric, every zero point 0
  int64_t axis = 0;
  int64_t block_size = 0;  ///< 0: one per slice
  int bits = 0;            ///< of the codes

  static constexpr auto fields() {
    return std::tuple{&DequantizeLinearParts::scale, &DequantizeLinearParts::zero_points, &DequantizeLinearParts::axis,
                      &DequantizeLinearParts::block_size, &DequantizeLinearParts::bits};
  }
  /// Its scales run along any axis: its blocks are its axis and block size, not rows and columns.
  nlohmann::ordered_json describe() const {
    nlohmann::ordered_json json = scaled_by_json(scale.name, std::nullopt);
    json.update({{"zero_points", part_json(zero_points)}, {"axis", axis}, {"block_size", block_size}, {"bits", bits}});
    return json;
  }
};

/// What a node says its codes are read with, as stored (its axis not yet checked).
struct NodeReading {
  std::string scale, zero_point;
  int64_t axis = 0, block_size = 0;
  bool operator==(const NodeReading&) const = default;
};

/// The integer codes onnxruntime's CPU DequantizeLinear reads, by their bits (int4 and uint4 are not read by the
/// loader, float8 codes not by this scheme).
std::optional<int> code_bits(DType dtype) {
  switch (dtype) {
    case DType::I8:
    case DType::U8:
      return 8;
    case DType::I16:
    case DType::U16:
      return 16;
    case DType::I32:
      return 32;
    default:
      return std::nullopt;
  }
}

/// Why `scale` (and `zeros`) fit no way of scaling `codes` along the link's axis, normalized there; nullopt when
/// they fit: one for the tensor, one per slice along the axis, or (block_size > 0) one per block along it.
std::optional<std::string> misfit(const TensorRecord& codes, const TensorRecord& scale, const TensorRecord* zeros,
                                  DequantizeLinearParts& link) {
  if (zeros != nullptr && zeros->dtype != codes.dtype)
    return fmt::format("zero point `{}` is {}, its codes {}", zeros->name, dtype_name(zeros->dtype),
                       dtype_name(codes.dtype));
  // onnxruntime's quantizer writes a per-tensor bias's zero point as a scalar beside a scale of shape [1].
  if (zeros != nullptr && zeros->shape != scale.shape && (zeros->numel != 1 || scale.numel != 1))
    return fmt::format("zero point `{}` of shape [{}], its scale's [{}]", zeros->name, fmt::join(zeros->shape, ", "),
                       fmt::join(scale.shape, ", "));
  const auto rank = static_cast<int64_t>(codes.shape.size());
  if (scale.numel == 1 && scale.shape.size() <= 1 && link.block_size == 0) return std::nullopt;  // per tensor
  if (link.axis < -rank || link.axis >= rank)
    return fmt::format("axis {} is out of range for codes of rank {}", link.axis, rank);
  if (link.axis < 0) link.axis += rank;
  const int64_t extent = codes.shape[static_cast<size_t>(link.axis)];
  if (link.block_size < 0) return fmt::format("block_size {} is negative", link.block_size);
  if (link.block_size == 0) {
    if (scale.shape == std::vector<int64_t>{extent}) return std::nullopt;
    return fmt::format("scale `{}` of shape [{}] is neither one value nor one per slice along axis {} ({})", scale.name,
                       fmt::join(scale.shape, ", "), link.axis, extent);
  }
  std::vector<int64_t> blocked = codes.shape;
  blocked[static_cast<size_t>(link.axis)] = (extent + link.block_size - 1) / link.block_size;
  if (scale.shape == blocked) return std::nullopt;
  return fmt::format("scale `{}` of shape [{}] is not one per block of {} along axis {} ([{}])", scale.name,
                     fmt::join(scale.shape, ", "), link.block_size, link.axis, fmt::join(blocked, ", "));
}

/// Links `codes` as its nodes read them (`reading`) and marks their scale and zero point. Throws
/// Error(kInvalidOnnx) naming the model where the scale or zero point fits no axis or block of the codes.
void link_codes(Linking& model, const TensorRecord& codes, const NodeReading& reading) {
  TensorRecord* scale = model.part(reading.scale);
  TensorRecord* zeros = reading.zero_point.empty() ? nullptr : model.part(reading.zero_point);
  std::optional<int> bits = code_bits(codes.dtype);
  if (!bits)  // codes this scheme does not read: counted, never analyzed as the numbers they are stored as
    return model.unread(codes, fmt::format("ONNX DequantizeLinear of {} codes", dtype_name(codes.dtype)));
  DequantizeLinearParts parts{.scale = {.name = scale->name, .multiplies = true},
                              .zero_points = {.name = zeros ? zeros->name : ""},
                              .axis = reading.axis,
                              .block_size = reading.block_size};
  std::optional<std::string> wrong =
      dtype_kind(scale->dtype) != DTypeKind::kFloat || scale->dtype == DType::F64
          ? std::optional(fmt::format("scale `{}` is {}, not float32, float16 or bfloat16", scale->name,
                                      dtype_name(scale->dtype)))
          : misfit(codes, *scale, zeros, parts);
  if (wrong)
    fail(ErrorCode::kInvalidOnnx, model.file(),
         fmt::format("DequantizeLinear of `{}` ({}, shape [{}]): {}", codes.name, dtype_name(codes.dtype),
                     fmt::join(codes.shape, ", "), *wrong));
  parts.bits = *bits;
  model.read(codes, Link(kDequantizeLinearScheme, std::move(parts)));
}

/// Whether `name` is a record stored in `file` (else a value the graph computes).
bool stored_in(Linking& model, const std::string& name, size_t file) {
  const TensorRecord* record = model.find(name);
  return record != nullptr && record->file == file;
}

void link_dequantize_linear(Linking& model) {
  std::map<std::string, std::optional<NodeReading>> readings;  // by codes: nullopt where two nodes disagree
  for (const DequantizeNode& node : model.dequantize_nodes()) {
    const TensorRecord* codes = model.find(node.codes);
    if (codes == nullptr || codes->file != node.file) continue;
    if (node.scale.empty()) {  // a scale applied later, by another node: counted, not read
      model.unread(*codes, fmt::format("onnxruntime {} weights (their scale applied by a later node)", node.op_type));
      continue;
    }
    if (!stored_in(model, node.scale, node.file) || codes->sparse_of) continue;  // a computed scale; sparse codes
    if (!node.zero_point.empty() && !stored_in(model, node.zero_point, node.file)) continue;
    NodeReading reading{
        .scale = node.scale, .zero_point = node.zero_point, .axis = node.axis, .block_size = node.block_size};
    auto [at, fresh] = readings.emplace(node.codes, reading);
    if (!fresh && at->second && !(*at->second == reading)) at->second.reset();
  }
  for (const TensorRecord& codes : model.tensors())  // in the records' order, which the first error follows
    if (auto found = readings.find(codes.name);
        found != readings.end() && found->second && &codes == model.find(codes.name))
      link_codes(model, codes, *found->second);
}

/// Where each code's scale is: scale index = outer x outer_stride + (along / block) x along_stride + inner x
/// inner_stride, for the code at (outer, along, inner) of the codes seen as [before axis, axis, after axis].
struct ScaleIndex {
  uint64_t along = 1, inner = 1;  ///< extents of the axis and of the dimensions after it
  uint64_t block = 1;
  uint64_t outer_stride = 0, along_stride = 0, inner_stride = 0;
};

ScaleIndex scale_index(const std::vector<int64_t>& shape, const DequantizeLinearParts& link, uint64_t scales) {
  ScaleIndex index;
  if (scales == 1 && link.block_size == 0) {  // every stride 0: the one scale, over one run of every code
    index.inner = std::numeric_limits<uint64_t>::max();
    return index;
  }
  for (size_t d = static_cast<size_t>(link.axis) + 1; d < shape.size(); ++d)
    index.inner *= static_cast<uint64_t>(shape[d]);
  index.along = static_cast<uint64_t>(shape[static_cast<size_t>(link.axis)]);
  if (link.block_size == 0) {
    index.along_stride = 1;
    return index;
  }
  index.block = static_cast<uint64_t>(link.block_size);
  index.inner_stride = 1;
  index.along_stride = index.inner;
  index.outer_stride = (index.along + index.block - 1) / index.block * index.inner;
  return index;
}

/// `body(Code{})` with Code the integer type of `dtype` (one code_bits reads).
template <typename Body>
void with_code_type(DType dtype, Body body) {
  switch (dtype) {
    case DType::I8:
      return body(int8_t{});
    case DType::U8:
      return body(uint8_t{});
    case DType::I16:
      return body(int16_t{});
    case DType::U16:
      return body(uint16_t{});
    default:
      return body(int32_t{});
  }
}

/// Integer `i` of type Code at `data`, as int32. A narrow signed integer is read as its unsigned bits and
/// sign-extended: (bits ^ sign) - sign.
template <typename Code>
int32_t integer_at(const std::byte* data, uint64_t i) {
  using Bits = std::make_unsigned_t<Code>;
  const auto bits = static_cast<int32_t>(load_raw<Bits>(data, i));
  if constexpr (std::is_signed_v<Code> && sizeof(Code) < sizeof(int32_t)) {
    constexpr int32_t kSign = int32_t{1} << (8 * sizeof(Code) - 1);
    return (bits ^ kSign) - kSign;
  } else {
    return bits;
  }
}

/// The value of `code` with its zero point and scale, as onnxruntime computes it: int32 subtraction (wrapping, as its
/// int32 codes' does), then float32 times the scale.
inline float dequantized(int32_t code, int32_t zero_point, float scale) {
  return static_cast<float>(static_cast<int32_t>(static_cast<uint32_t>(code) - static_cast<uint32_t>(zero_point))) *
         scale;
}

/// The values of codes [first, first + count) of `codes` (integers of type Code).
template <typename Code>
void dequantize_run(const std::byte* codes, uint64_t first, uint64_t count, const ScaleIndex& index,
                    const float* scales, const int32_t* zero_points, float* out) {
  uint64_t inner = first % index.inner, along = first / index.inner % index.along;
  uint64_t outer = first / index.inner / index.along;
  auto advance = [&](uint64_t steps) {  // `steps` codes on, within the run of `inner` codes they are in
    inner += steps;
    if (inner < index.inner) return;
    inner = 0;
    if (++along == index.along) along = 0, ++outer;
  };
  uint64_t i = 0;
  if (index.inner_stride == 0 && index.inner == 1 && index.along > 1) {  // per last axis: scales run with the codes
    while (i < count) {
      const uint64_t run = std::min(count - i, index.along - along);
      const float* scale = scales + along;
      const int32_t* zero_point = zero_points + along;
      for (uint64_t k = 0; k < run; ++k)
        out[i + k] = dequantized(integer_at<Code>(codes, first + i + k), zero_point[k], scale[k]);
      i += run;
      along = (along + run) % index.along;
    }
    return;
  }
  if (index.inner_stride == 0) {  // per tensor or per axis: one scale for each run of `inner` codes
    while (i < count) {
      const uint64_t at = outer * index.outer_stride + along * index.along_stride;
      const uint64_t run = std::min(count - i, index.inner - inner);
      const float scale = scales[at];
      const int32_t zero_point = zero_points[at];
      for (uint64_t k = 0; k < run; ++k)
        out[i + k] = dequantized(integer_at<Code>(codes, first + i + k), zero_point, scale);
      i += run;
      advance(run);
    }
    return;
  }
  for (; i < count; ++i, advance(1)) {  // blocks: the scale changes along the innermost dimension
    const uint64_t at =
        outer * index.outer_stride + along / index.block * index.along_stride + inner * index.inner_stride;
    out[i] = dequantized(integer_at<Code>(codes, first + i), zero_points[at], scales[at]);
  }
}

TensorStats dequantize_linear_stats(const LinkedValues& values) {
  constexpr uint64_t kUnitValues = 4096;  // decoded at a time: in the cache
  const auto& link = values.parts<DequantizeLinearParts>();
  const HostValues codes = values.weight(), scale = values.part(link.scale);
  const std::optional<HostValues> zeros = values.optional_part(link.zero_points);
  std::vector<float> scales(scale.numel());
  widen(scale, 0, scales.size(), scales.data());
  std::vector<int32_t> zero_points(scale.numel(), 0);
  if (zeros)
    with_code_type(zeros->dtype(), [&]<typename Code>(Code /*type*/) {
      for (uint64_t i = 0; i < zero_points.size(); ++i) zero_points[i] = integer_at<Code>(zeros->data(), i);
    });
  const ScaleIndex index = scale_index(codes.shape(), link, scale.numel());
  const uint64_t numel = codes.numel(), units = (numel + kUnitValues - 1) / kUnitValues;
  auto decode = [&](uint64_t unit, float* products) {
    const uint64_t first = unit * kUnitValues, count = std::min(kUnitValues, numel - first);
    with_code_type(codes.dtype(), [&]<typename Code>(Code /*type*/) {
      dequantize_run<Code>(codes.data(), first, count, index, scales.data(), zero_points.data(), products);
    });
    return count;
  };
  if (scale.dtype() == DType::F32) {  // float32 values go to the F32 kernel as they are: no table to round them into
    TensorStats total = reduce_in_parallel(units, 256, [&](uint64_t first, uint64_t last) {
      TensorStats part;
      std::array<float, kUnitValues> products;
      for (uint64_t unit = first; unit < last; ++unit)
        part.merge(cpu_tensor_stats(products.data(), DType::F32, decode(unit, products.data())));
      return part;
    });
    total.exactness_checked = total.bf16_exact = total.fp16_exact = 0;  // a dequantized value is no stored value
    return total;
  }
  return for_result_dtype(scale.dtype(), [&]<DType kResult>() {
    return table_stats<kResult>(
        units, kUnitValues, kUnitValues,
        [&](uint64_t unit, auto& table) {
          std::array<float, kUnitValues> products;
          narrow_magnitudes<kResult>(products.data(), decode(unit, products.data()), table.data());
        },
        [&](uint64_t unit, const auto& table, auto& decoded) {
          const uint64_t count = std::min(kUnitValues, numel - unit * kUnitValues);
          decoded.reserve(count);
          for (uint64_t i = 0; i < count; ++i) decoded.add(table[i], i & 1);
        });
  });
}

}  // namespace

extern const QuantScheme kDequantizeLinearScheme{
    .name = "ONNX DequantizeLinear (QDQ)", .link = link_dequantize_linear, .stats = dequantize_linear_stats};

}  // namespace precdetect
