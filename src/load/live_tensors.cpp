#include "precdetect/load/live_tensors.h"

#include <c10/core/ScalarType.h>
#include <fmt/format.h>

#include <map>
#include <sstream>
#include <tuple>

#include "precdetect/analyze/cpu_kernel.h"
#include "precdetect/core/error.h"
#include "precdetect/cuda/torch_dtype.h"
#include "precdetect/cuda/torch_stats.h"

namespace precdetect {
namespace {

/// The stored dtype of a tensor of `type`: an analyzed floating one, an integer one (census only); nullopt for
/// types precdetect cannot represent (complex, quantized, the unsigned types beyond uint8).
std::optional<DType> live_dtype(c10::ScalarType type) {
  switch (type) {
    case c10::kLong:
      return DType::I64;
    case c10::kInt:
      return DType::I32;
    case c10::kShort:
      return DType::I16;
    case c10::kChar:
      return DType::I8;
    case c10::kByte:
      return DType::U8;
    case c10::kBool:
      return DType::BOOL;
    default:
      break;
  }
  try {
    return stored_dtype(type);
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

/// Why `values` cannot be read where it is; nullopt when it can.
std::optional<std::string> unreadable(const at::Tensor& values) {
  if (!values.defined()) return "undefined";
  if (values.layout() != c10::kStrided) return (std::ostringstream() << "layout " << values.layout()).str();
  if (!values.is_cpu() && !values.is_cuda()) return fmt::format("on {}", values.device().str());
  if (values.is_quantized()) return fmt::format("quantized {}", c10::toString(values.scalar_type()));
  if (!live_dtype(values.scalar_type())) return fmt::format("dtype {}", c10::toString(values.scalar_type()));
  if (!values.has_storage()) return "no storage of its own (a tensor subclass: check its local tensors)";
  if (values.numel() == 0) return std::nullopt;
  // The last element the view reaches must lie inside the storage: a freed storage (resized to 0) does not hold it.
  int64_t last = values.storage_offset();
  for (int64_t d = 0; d < values.dim(); ++d) last += (values.size(d) - 1) * values.stride(d);
  uint64_t needed = static_cast<uint64_t>(last + 1) * values.element_size();
  uint64_t held = values.storage().nbytes();
  if (needed > held || values.storage().data() == nullptr)
    return fmt::format("storage freed or smaller than the tensor: {} of {} bytes", held, needed);
  return std::nullopt;
}

TensorRecord live_record(const LiveTensor& tensor, DType dtype) {
  const at::Tensor& values = tensor.values;
  auto element_size = static_cast<uint64_t>(values.element_size());
  return {.name = tensor.name,
          .dtype = dtype,
          .shape = values.sizes().vec(),
          .stride = values.strides().vec(),
          .numel = static_cast<uint64_t>(values.numel()),
          .nbytes = static_cast<uint64_t>(values.numel()) * element_size,
          .storage_nbytes = values.has_storage() ? values.storage().nbytes() : 0,
          .storage_offset = static_cast<uint64_t>(values.storage_offset()),
          .role = tensor.role.value_or(TensorRole::kModel),
          .role_from_file = tensor.role.has_value()};
}

/// A live tensor's statistics where it lives: our kernel over a CPU tensor's own memory (a strided view made
/// contiguous first), libtorch on a CUDA tensor's device.
TensorStats live_stats(const at::Tensor& values, const std::string& name) {
  if (values.numel() == 0) return {};
  DType dtype = stored_dtype(values.scalar_type());
  try {
    if (values.is_cuda()) return torch_tensor_stats(values, dtype);
    at::Tensor contiguous = values.contiguous();  // the tensor itself when it is contiguous: no copy
    return cpu_tensor_stats(contiguous.const_data_ptr(), dtype, static_cast<uint64_t>(contiguous.numel()));
  } catch (const c10::Error& e) {
    throw Error(ErrorCode::kDevice, fmt::format("tensor `{}`: {}", name, e.what_without_backtrace()));
  }
}

}  // namespace

LiveModel open_live_model(std::vector<LiveTensor> tensors, std::vector<std::string> not_tensors) {
  LiveModel model;
  std::vector<at::Tensor> values;
  std::vector<std::string> skipped = std::move(not_tensors);
  std::map<const void*, std::string> first_on_storage;
  std::map<std::tuple<const void*, int64_t, std::vector<int64_t>, std::vector<int64_t>>, std::string> first_view;
  for (LiveTensor& tensor : tensors) {
    if (std::optional<std::string> reason = unreadable(tensor.values)) {
      skipped.push_back(fmt::format("{} ({})", tensor.name, *reason));
      continue;
    }
    TensorRecord record = live_record(tensor, *live_dtype(tensor.values.scalar_type()));
    const void* storage = tensor.values.storage().unsafeGetStorageImpl();
    auto [first, fresh_storage] = first_on_storage.emplace(storage, tensor.name);
    if (!fresh_storage) record.shares_storage_with = first->second;
    auto [view, fresh_view] = first_view.emplace(
        std::tuple(storage, tensor.values.storage_offset(), record.shape, record.stride), tensor.name);
    record.counted = fresh_view;
    model.records.push_back(std::move(record));
    values.push_back(std::move(tensor.values));
  }
  std::vector<std::string> names;
  for (const TensorRecord& record : model.records) names.push_back(record.name);
  model.stats = [values = std::move(values), names = std::move(names)](size_t i) {
    return live_stats(values[i], names[i]);
  };
  warn_about(model.warnings, WarningCode::kLiveTensorsSkipped, "", std::move(skipped));
  return model;
}

}  // namespace precdetect
