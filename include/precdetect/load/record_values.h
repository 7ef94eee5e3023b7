#pragma once
/// A record's values read to the host as the CPU kernels take them (kernel/host_values.h): in place where the file
/// allows (a mapping or a decoded region); otherwise copied (ReadMode::kPread, a misaligned storage, a strided view,
/// big-endian bytes).

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "precdetect/kernel/host_values.h"
#include "precdetect/load/checkpoint.h"

namespace precdetect {

/// The stored bytes of `record`'s values where they can be read in place, at any alignment: from a zero-copy
/// source, contiguous and little-endian. nullopt otherwise: read_values copies them then.
std::optional<std::span<const std::byte>> values_in_place(const Checkpoint& checkpoint, const TensorRecord& record);

/// `record`'s values (a floating dtype we analyze), in place when values_in_place allows and they are aligned.
/// Throws Error(kMalformed) when the view (offset, shape, strides) reaches past its storage. `buffer`, when given,
/// takes contiguous values read through read() (resized to them; the values borrow it, so it must outlive them):
/// a buffer used again for the next tensor is not faulted in and zeroed anew.
HostValues read_values(const Checkpoint& checkpoint, const TensorRecord& record,
                       std::vector<std::byte>* buffer = nullptr);

/// Row-major strides of `shape`, in elements.
std::vector<int64_t> contiguous_strides(std::span<const int64_t> shape);

/// The elements a view (shape, strides and offset in elements) reaches into its storage: its last one's index
/// plus one; 0 for an empty view.
int64_t view_extent(std::span<const int64_t> shape, std::span<const int64_t> strides, int64_t offset);

/// The elements of a view into `storage` (elements of `element_size` bytes; shape, strides and offset in
/// elements, as torch.as_strided takes them), copied out in row-major order. The caller has checked that the view
/// lies inside the storage.
std::vector<std::byte> gather_view(std::span<const std::byte> storage, size_t element_size,
                                   std::span<const int64_t> shape, std::span<const int64_t> strides, int64_t offset);

}  // namespace precdetect
