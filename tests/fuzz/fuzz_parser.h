#pragma once
// The shape of every fuzz target: the input as a file's bytes, handed to one parser. A precdetect::Error is the
// right answer to bad bytes; anything else escapes to libFuzzer as a finding.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "precdetect/core/error.h"
#include "precdetect/load/checkpoint.h"
#include "precdetect/load/source/byte_source.h"

namespace precdetect::fuzz {

template <typename Parse>
int parse_or_reject(const uint8_t* data, size_t size, const char* file_name, Parse parse) {
  std::unique_ptr<ByteSource> source = memory_source(std::string(reinterpret_cast<const char*>(data), size), file_name);
  try {
    parse(std::move(source));
  } catch (const Error&) {
  }
  return 0;
}

/// Views (and so decodes) every tensor's bytes, then releases them, as the analyzer does: a parser's promise is
/// that every record it yields lies inside its file.
inline void view_every_tensor(const Checkpoint& checkpoint) {
  for (const TensorRecord& record : checkpoint.tensors) {
    const ByteSource& file = *checkpoint.files[record.file];
    file.view(record.offset, record.storage_nbytes);
    file.release(record.offset, record.storage_nbytes);
  }
}

}  // namespace precdetect::fuzz
