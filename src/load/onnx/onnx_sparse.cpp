#include "precdetect/load/onnx/onnx_sparse.h"

#include <fmt/format.h>

#include "precdetect/core/bytes.h"

namespace precdetect {
namespace {

int64_t index_at(std::span<const std::byte> indices, uint64_t i) {
  uint64_t bits = 0;
  for (size_t b = 0; b < 8; ++b) bits |= static_cast<uint64_t>(indices[i * 8 + b]) << (8 * b);
  return static_cast<int64_t>(bits);
}

}  // namespace

std::optional<uint64_t> sparse_dense_count(std::span<const int64_t> dims, std::string& error) {
  if (dims.empty()) {
    error = "a sparse tensor of rank 0 (onnx's checker requires a dense rank over 0)";
    return std::nullopt;
  }
  uint64_t count = 1;
  for (int64_t extent : dims) {
    if (extent <= 0) {
      error = fmt::format("a sparse tensor dimension of {} (they must be positive)", extent);
      return std::nullopt;
    }
    auto product = checked_mul(count, static_cast<uint64_t>(extent));
    if (!product) {
      error = fmt::format("sparse dimensions whose element count overflows 64 bits (at dimension {})", extent);
      return std::nullopt;
    }
    count = *product;
  }
  return count;
}

std::optional<std::string> sparse_index_shape_error(std::span<const int64_t> index_dims, uint64_t nnz,
                                                    std::span<const int64_t> dims, SparseIndexLayout& layout) {
  if (index_dims.size() != 1 && index_dims.size() != 2)
    return fmt::format("sparse indices of rank {} (they must be [NNZ] or [NNZ, rank])", index_dims.size());
  if (static_cast<uint64_t>(index_dims[0]) != nnz)
    return fmt::format("{} sparse indices for {} values", index_dims[0], nnz);
  if (index_dims.size() == 2 && static_cast<uint64_t>(index_dims[1]) != dims.size())
    return fmt::format("sparse coordinates of {} dimensions for a tensor of rank {}", index_dims[1], dims.size());
  layout = index_dims.size() == 1 ? SparseIndexLayout::kLinear : SparseIndexLayout::kCoordinates;
  return std::nullopt;
}

std::optional<std::string> sparse_indices_error(std::span<const std::byte> indices, SparseIndexLayout layout,
                                                std::span<const int64_t> dims, uint64_t dense_count) {
  uint64_t per_value = layout == SparseIndexLayout::kLinear ? 1 : dims.size();
  uint64_t nnz = indices.size() / 8 / per_value;
  std::optional<uint64_t> previous;
  for (uint64_t i = 0; i < nnz; ++i) {
    uint64_t position = 0;
    if (layout == SparseIndexLayout::kLinear) {
      int64_t index = index_at(indices, i);
      if (index < 0 || static_cast<uint64_t>(index) >= dense_count)
        return fmt::format("sparse index {} at position {} is outside [0, {})", index, i, dense_count);
      position = static_cast<uint64_t>(index);
    } else {
      for (size_t j = 0; j < dims.size(); ++j) {
        int64_t index = index_at(indices, i * per_value + j);
        if (index < 0 || index >= dims[j])
          return fmt::format("sparse coordinate {} at [{}, {}] is outside [0, {})", index, i, j, dims[j]);
        // Below dense_count, which fits: the coordinates are each inside their dimension.
        position = position * static_cast<uint64_t>(dims[j]) + static_cast<uint64_t>(index);
      }
    }
    if (previous && position <= *previous)
      return fmt::format(
          "sparse index at position {} is not after the one before it ({} after {}): indices must "
          "be strictly increasing",
          i, position, *previous);
    previous = position;
  }
  return std::nullopt;
}

}  // namespace precdetect
