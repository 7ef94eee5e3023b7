#pragma once
/// Turns a tensor record into a libtorch tensor on the CPU.

#include <ATen/core/Tensor.h>

#include <optional>
#include <span>

#include "precdetect/load/checkpoint.h"

namespace precdetect {

/// libtorch's scalar type for a floating dtype we analyze (F64, F32, F16, BF16, F8_E4M3, F8_E5M2).
c10::ScalarType torch_scalar_type(DType dtype);
/// The inverse of torch_scalar_type.
DType stored_dtype(c10::ScalarType type);

/// The values of a floating `record` as a CPU tensor: a view (offset, shape, stride) of its storage. Zero-copy
/// over the mapped file when the storage is aligned to its element size; an aligned copy otherwise (misaligned
/// files are common in the wild, and misaligned typed access is undefined behaviour), and a byte-swapped copy
/// for big-endian storages. The view may be non-contiguous. It borrows the mapping: read it only while
/// `checkpoint` lives, and never write to it (the mapping is read-only).
at::Tensor load_tensor(const Checkpoint& checkpoint, const TensorRecord& record);

/// The stored bytes of `record`'s values where they can be read in place, at any alignment: from a zero-copy
/// source (a mapping, a decoded region), contiguous and little-endian. nullopt otherwise (ReadMode::kPread, a
/// strided view, big-endian storage): load_tensor then. The bytes live as long as the source, up to a release.
std::optional<std::span<const std::byte>> values_in_place(const Checkpoint& checkpoint, const TensorRecord& record);

/// `record`'s tensor over `storage`, a 1-D tensor of the record's dtype holding its storage's stored bytes (on
/// any device): bytes swapped for big-endian storages, then offset, shape and strides applied.
at::Tensor view_storage(at::Tensor storage, const TensorRecord& record);

}  // namespace precdetect
