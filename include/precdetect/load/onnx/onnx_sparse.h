#pragma once
/// The rules a SparseTensorProto's shape and indices follow, as onnx's checker states them (onnx/checker.cc,
/// check_sparse_tensor and check_sparse_tensor_indices_1/_2): values of rank 1 ([NNZ]), a dense shape of rank 1 or
/// more whose dimensions are positive, INT64 indices of shape [NNZ] (positions in the row-major dense tensor) or
/// [NNZ, rank] (coordinates), each inside the dense tensor, their positions strictly increasing. A repeated
/// position would count a value twice, and a position outside the tensor would place it nowhere: precdetect refuses
/// both, as the checker does.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace precdetect {

/// The most elements one model's sparse tensors may stand for, all together: 2^60, so that a model's parameter
/// count, and its bytes at 4 per element, stay within 64 bits (a dense tensor's count is bounded by the file's
/// bytes, a sparse tensor's only by this).
constexpr uint64_t kMaxSparseElements = uint64_t{1} << 60;

/// How a sparse tensor's indices are laid out, from their shape.
enum class SparseIndexLayout { kLinear, kCoordinates };

/// The elements of the dense tensor `dims`, or what is wrong with its shape: a rank of 0, a dimension that is not
/// positive, or a product over 2^64 - 1 (the message stored in `error`).
std::optional<uint64_t> sparse_dense_count(std::span<const int64_t> dims, std::string& error);

/// What is wrong with the indices of a sparse tensor of `dims` holding `nnz` values, given the indices' shape
/// `index_dims`; nullopt when nothing is. The layout, when right, is stored in `layout`.
std::optional<std::string> sparse_index_shape_error(std::span<const int64_t> index_dims, uint64_t nnz,
                                                    std::span<const int64_t> dims, SparseIndexLayout& layout);

/// What is wrong with `indices` (little-endian int64, as many as the shape checked above holds) of a sparse tensor
/// of `dims` (whose dense count is `dense_count`): the first index out of range or not after the one before it;
/// nullopt when every one is inside and strictly increasing. Reads each index once, allocates nothing.
std::optional<std::string> sparse_indices_error(std::span<const std::byte> indices, SparseIndexLayout layout,
                                                std::span<const int64_t> dims, uint64_t dense_count);

}  // namespace precdetect
