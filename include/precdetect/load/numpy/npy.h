#pragma once
/// NumPy's .npy format (numpy/lib/format.py): "\x93NUMPY", a version, a header length, a Python dict literal
/// {'descr', 'fortran_order', 'shape'}, then the array's bytes, or a pickle when the array holds objects.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "precdetect/core/dtype.h"
#include "precdetect/load/file_format.h"
#include "precdetect/load/source/byte_source.h"
#include "precdetect/load/tensor_record.h"

namespace precdetect {

/// The longest header read_npy_header accepts (numpy itself refuses over 10,000 bytes unless told otherwise).
constexpr uint64_t kMaxNpyHeader = 1 << 20;
/// The most bytes read_npy_header reads of a file: magic, version, the header's length, and the header.
constexpr uint64_t kMaxNpyHead = 12 + kMaxNpyHeader;
/// NumPy's NPY_MAXDIMS: no array numpy writes (npy, or inside flax's msgpack) has more dimensions.
constexpr size_t kNumpyMaxDims = 64;

struct NpyHeader {
  std::string descr;  ///< '<f4', '|O', or a structured dtype's list as written
  bool fortran_order = false;
  std::vector<uint64_t> shape;
  uint64_t data_offset = 0;  ///< where the array's bytes (or its pickle) start, relative to the .npy's first byte
  /// The data is a pickle (np.save pickles arrays of objects): an object dtype, or a structured one that names
  /// an object field. Anything but a plain numeric, string or void descr counts, so nothing is waved through.
  bool holds_objects = false;
};

/// The array's dtype, when precdetect reads it: NumPy's float, int, uint, bool and complex64 kinds ('<f2', '>f4',
/// '|b1'); nullopt for the others (strings, datetimes, complex128, void: ml_dtypes' bfloat16 is saved as '<V2').
std::optional<DType> npy_dtype(const NpyHeader& header);

/// Where the array of `header` lies, as a tensor named `name` whose bytes start at `data_offset` of file `file`
/// and take `available` bytes (row-major, or column-major strides for fortran_order). Throws
/// Error(kInvalidNumpy) naming `path` for an element count that overflows or a size other than `available`.
TensorRecord npy_tensor(const NpyHeader& header, DType dtype, std::string name, uint64_t data_offset,
                        uint64_t available, const std::filesystem::path& path);

/// True when `bytes` start with the .npy magic.
bool looks_like_npy(std::span<const std::byte> bytes);

/// The first bytes of the .npy at [offset, offset + size) of `source` that read_npy_header reads: its magic,
/// version, header length and header, viewed without a byte of its data (a remote file's tensor stays unfetched);
/// as far as they can be read when they are damaged, for read_npy_header to say what is wrong.
std::span<const std::byte> npy_head(const ByteSource& source, uint64_t offset, uint64_t size);

/// Parses the header of the .npy in `bytes` (`path` for messages). Throws Error(kInvalidNumpy) naming the path
/// for a bad magic, version, length or dict.
NpyHeader read_npy_header(std::span<const std::byte> bytes, const std::filesystem::path& path);

/// read_npy_header for the safety examination: the header of the .npy whose first bytes are `head` (named
/// `where`), or nullopt with the reason it is none named unverified to `visitor`.
std::optional<NpyHeader> npy_header_or_why(std::span<const std::byte> head, const std::string& where,
                                           PickleVisitor& visitor);

}  // namespace precdetect
