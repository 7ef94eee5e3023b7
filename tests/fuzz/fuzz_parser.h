#pragma once
// The shape of every fuzz target: the input as a file's bytes, handed to one parser. A precdetect::Error is the
// right answer to bad bytes; anything else escapes to libFuzzer as a finding.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "precdetect/core/error.h"
#include "precdetect/load/byte_source.h"

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

}  // namespace precdetect::fuzz
