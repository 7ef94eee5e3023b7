#pragma once
/// NumPy's .npy format (numpy/lib/format.py): "\x93NUMPY", a version, a header length, a Python dict literal
/// {'descr', 'fortran_order', 'shape'}, then the array's bytes, or a pickle when the array holds objects.

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "precdetect/load/byte_source.h"

namespace precdetect {

struct NpyHeader {
  std::string descr;  ///< '<f4', '|O', or a structured dtype's list as written
  bool fortran_order = false;
  std::vector<uint64_t> shape;
  uint64_t data_offset = 0;  ///< where the array's bytes (or its pickle) start, relative to the .npy's first byte
  /// The data is a pickle (np.save pickles arrays of objects): an object dtype, or a structured one that names
  /// an object field. Anything but a plain numeric, string or void descr counts, so nothing is waved through.
  bool holds_objects = false;
};

/// True when `bytes` start with the .npy magic.
bool looks_like_npy(std::span<const std::byte> bytes);

/// Parses the header of the .npy in `bytes` (`path` for messages). Throws Error(kInvalidNumpy) naming the path
/// for a bad magic, version, length or dict.
NpyHeader read_npy_header(std::span<const std::byte> bytes, const std::filesystem::path& path);

}  // namespace precdetect
