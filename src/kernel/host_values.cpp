#include "precdetect/kernel/host_values.h"

#include <utility>

namespace precdetect {

HostValues::HostValues(DType dtype, std::vector<int64_t> shape, std::span<const std::byte> in_place)
    : dtype_(dtype), shape_(std::move(shape)), bytes_(in_place) {}

HostValues::HostValues(DType dtype, std::vector<int64_t> shape, std::vector<std::byte> owned)
    : dtype_(dtype), shape_(std::move(shape)), owned_(std::move(owned)), bytes_(owned_) {}

uint64_t HostValues::numel() const { return bytes_.size() / static_cast<size_t>(dtype_bits(dtype_) / 8); }

}  // namespace precdetect
