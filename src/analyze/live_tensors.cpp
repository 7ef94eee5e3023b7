#include "precdetect/analyze/live_tensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>

#include "precdetect/analyze/device.h"
#include "precdetect/analyze/device_backend.h"
#include "precdetect/core/error.h"
#include "precdetect/kernel/cpu_kernel.h"
#include "precdetect/load/record_values.h"

namespace precdetect {
namespace {

/// What a GPU tensor's bytes are copied through when the CUDA plugin cannot run (host memory, reused).
constexpr uint64_t kCopyChunkBytes = 64 << 20;

/// The stored dtype of a DLPack dtype: an analyzed floating one, an integer one (census only); nullopt for types
/// precdetect cannot represent (complex, vectors of lanes, the unsigned types beyond uint8).
std::optional<DType> live_dtype(const dlpack::DataType& type) {
  if (type.lanes != 1) return std::nullopt;
  static const std::map<std::pair<uint8_t, uint8_t>, DType> kTypes{
      {{dlpack::kFloat, 64}, DType::F64},   {{dlpack::kFloat, 32}, DType::F32}, {{dlpack::kFloat, 16}, DType::F16},
      {{dlpack::kBfloat, 16}, DType::BF16}, {{dlpack::kInt, 64}, DType::I64},   {{dlpack::kInt, 32}, DType::I32},
      {{dlpack::kInt, 16}, DType::I16},     {{dlpack::kInt, 8}, DType::I8},     {{dlpack::kUInt, 8}, DType::U8},
      {{dlpack::kBool, 8}, DType::BOOL}};
  auto found = kTypes.find({type.code, type.bits});
  return found == kTypes.end() ? std::nullopt : std::optional(found->second);
}

bool on_host(const dlpack::Tensor& values) {
  auto type = values.device.device_type;
  return type == dlpack::kCpu || type == dlpack::kCudaHost || type == dlpack::kCudaManaged;
}

std::vector<int64_t> shape_of(const dlpack::Tensor& values) { return {values.shape, values.shape + values.ndim}; }

/// The strides in elements: DLPack's, or row-major ones where it gives none.
std::vector<int64_t> strides_of(const dlpack::Tensor& values) {
  if (values.strides) return {values.strides, values.strides + values.ndim};
  return contiguous_strides(shape_of(values));
}

/// Why `tensor` (not marked unreadable by the caller) cannot be read where it is; nullopt when it can.
std::optional<std::string> unreadable(const LiveTensor& tensor, std::optional<DType> dtype) {
  const dlpack::Tensor& values = *tensor.values;
  if (!on_host(values) && values.device.device_type != dlpack::kCuda)
    return fmt::format("on DLPack device type {}", values.device.device_type);
  if (!dtype)
    return fmt::format("DLPack dtype code {} of {} bits{}", values.dtype.code, values.dtype.bits,
                       values.dtype.lanes == 1 ? "" : fmt::format(" x {} lanes", values.dtype.lanes));
  std::vector<int64_t> strides = strides_of(values);
  if (std::any_of(strides.begin(), strides.end(), [](int64_t stride) { return stride < 0; })) return "negative strides";
  if (view_extent(shape_of(values), strides, 0) && !values.data) return "no data";
  return std::nullopt;
}

TensorRecord live_record(const LiveTensor& tensor, DType dtype) {
  auto element_size = static_cast<uint64_t>(dtype_bits(dtype)) / 8;
  std::vector<int64_t> shape = shape_of(*tensor.values), strides = strides_of(*tensor.values);
  auto numel = static_cast<uint64_t>(std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>()));
  auto extent = static_cast<uint64_t>(view_extent(shape, strides, 0));
  bool contiguous = strides == contiguous_strides(shape);
  return {.name = tensor.name,
          .dtype = dtype,
          .shape = std::move(shape),
          .stride = contiguous ? std::vector<int64_t>() : std::move(strides),
          .numel = numel,
          .nbytes = numel * element_size,
          .storage_nbytes = extent * element_size,
          .role = tensor.role.value_or(TensorRole::kModel),
          .role_from_file = tensor.role.has_value()};
}

const std::byte* first_element(const dlpack::Tensor& values) {
  return static_cast<const std::byte*>(values.data) + values.byte_offset;
}

/// A host tensor's statistics over its own memory (a strided view gathered first).
TensorStats host_stats(const dlpack::Tensor& values, const TensorRecord& record) {
  if (record.stride.empty()) return cpu_tensor_stats(first_element(values), record.dtype, record.numel);
  auto element_size = static_cast<size_t>(dtype_bits(record.dtype) / 8);
  std::vector<std::byte> gathered =
      gather_view({first_element(values), record.storage_nbytes}, element_size, record.shape, record.stride, 0);
  return cpu_tensor_stats(gathered.data(), record.dtype, record.numel);
}

/// A GPU tensor's statistics from its bytes copied to the host chunk by chunk (whole elements per chunk).
TensorStats copied_stats(const CopyToHost& copy_to_host, size_t index, const TensorRecord& record) {
  auto element_size = static_cast<uint64_t>(dtype_bits(record.dtype) / 8);
  uint64_t chunk = kCopyChunkBytes / element_size * element_size;
  std::vector<std::byte> buffer(std::min(chunk, record.nbytes));
  TensorStats stats;
  for (uint64_t offset = 0; offset < record.nbytes; offset += chunk) {
    std::span<std::byte> part(buffer.data(), std::min(chunk, record.nbytes - offset));
    copy_to_host(index, offset, part);
    stats.merge(cpu_tensor_stats(part.data(), record.dtype, part.size() / element_size));
  }
  return stats;
}

struct ReadableTensor {
  size_t index;  ///< in the caller's list (what copy_to_host is told)
  const dlpack::Tensor* values;
};

/// Where each readable tensor's statistics come from: its host memory, the CUDA plugin, or chunked copies.
std::function<TensorStats(size_t)> statistics(std::vector<ReadableTensor> readable, std::vector<TensorRecord> records,
                                              CopyToHost copy_to_host) {
  return [readable = std::move(readable), records = std::move(records),
          copy_to_host = std::move(copy_to_host)](size_t i) -> TensorStats {
    const dlpack::Tensor& values = *readable[i].values;
    const TensorRecord& record = records[i];
    if (record.numel == 0) return {};
    if (on_host(values)) return host_stats(values, record);
    try {
      return cuda_backend().device_stats({.data = first_element(values),
                                          .dtype = record.dtype,
                                          .shape = record.shape,
                                          .stride = record.stride,
                                          .device_index = values.device.device_id});
    } catch (const Error& e) {
      if (cuda_device_count() == 0) return copied_stats(copy_to_host, readable[i].index, record);  // no plugin
      throw Error(e.code(), fmt::format("tensor `{}`: {}", record.name, e.what()));
    }
  };
}

}  // namespace

LiveModel open_live_model(std::vector<LiveTensor> tensors, std::vector<std::string> not_tensors,
                          CopyToHost copy_to_host) {
  LiveModel model;
  std::vector<ReadableTensor> readable;
  std::vector<std::string> skipped = std::move(not_tensors), copied;
  std::map<uint64_t, std::string> first_on_storage;
  std::map<std::tuple<uint64_t, const void*, std::vector<int64_t>, std::vector<int64_t>>, std::string> first_view;
  for (size_t index = 0; index < tensors.size(); ++index) {
    const LiveTensor& tensor = tensors[index];
    if (tensor.unreadable || !tensor.values) {
      skipped.push_back(fmt::format("{} ({})", tensor.name, tensor.unreadable.value_or("no DLPack tensor")));
      continue;
    }
    std::optional<DType> dtype = tensor.dtype ? tensor.dtype : live_dtype(tensor.values->dtype);
    if (std::optional<std::string> reason = unreadable(tensor, dtype)) {
      skipped.push_back(fmt::format("{} ({})", tensor.name, *reason));
      continue;
    }
    TensorRecord record = live_record(tensor, *dtype);
    if (tensor.storage_key) {
      auto [first, fresh_storage] = first_on_storage.emplace(tensor.storage_key, tensor.name);
      if (!fresh_storage) record.shares_storage_with = first->second;
    }
    auto view_key = std::tuple(tensor.storage_key, static_cast<const void*>(first_element(*tensor.values)),
                               record.shape, record.stride);
    record.counted = first_view.emplace(view_key, tensor.name).second;
    if (!on_host(*tensor.values) && cuda_device_count() == 0) copied.push_back(tensor.name);
    model.records.push_back(std::move(record));
    readable.push_back({index, tensor.values});
  }
  model.stats = statistics(std::move(readable), model.records, std::move(copy_to_host));
  warn_about(model.warnings, WarningCode::kLiveTensorsSkipped, "", std::move(skipped));
  warn_about(model.warnings, WarningCode::kLiveTensorsCopied, "", std::move(copied));
  return model;
}

}  // namespace precdetect
