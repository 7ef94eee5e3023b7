#pragma once
/// The safetensors format: an 8-byte little-endian header length, a JSON header, then the tensors' bytes.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "precdetect/load/file_format.h"
#include "precdetect/load/source/byte_source.h"
#include "precdetect/load/tensor_record.h"

namespace precdetect {

/// Largest header accepted, as in the reference implementation (MAX_HEADER_SIZE).
inline constexpr uint64_t kMaxSafetensorsHeader = 100'000'000;

struct SafetensorsHeader {
  std::vector<TensorRecord> tensors;  ///< in data order (ascending offset)
  std::map<std::string, std::string> metadata;
};

/// True when the first bytes look like a safetensors file (a plausible header length followed by '{').
bool looks_like_safetensors(const ByteSource& source);

/// Reads and validates the whole header against the file size before any tensor byte is touched.
/// Enforces every rule of the reference reader (docs/errors.md names each one's code); each violation throws its own
/// ErrorCode with the path and, where one is involved, the tensor name. Records get `file = file_index`.
SafetensorsHeader read_safetensors_header(const ByteSource& source, size_t file_index = 0);

/// The file opened as safetensors when looks_like_safetensors claims it, else nullptr. Reading it reads its
/// header (read_safetensors_header) and returns "safetensors"; it holds no pickles.
std::unique_ptr<FormatFile> open_safetensors(const ByteSource& source);

}  // namespace precdetect
