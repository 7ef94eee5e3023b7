#pragma once
/// Where one stored tensor lives: what a format parser yields, before any of the tensor's bytes are read.

#include <cstdint>
#include <string>
#include <vector>

#include "precdetect/core/dtype.h"

namespace precdetect {

struct TensorRecord {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t numel = 0;
  uint64_t nbytes = 0;
  uint64_t offset = 0;  ///< absolute byte offset of the data in its file
  size_t file = 0;      ///< index into Checkpoint::files
};

}  // namespace precdetect
