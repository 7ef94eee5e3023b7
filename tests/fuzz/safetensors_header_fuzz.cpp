// The safetensors header: length prefix, UTF-8, JSON, every validation rule.
#include "fuzz_parser.h"
#include "precdetect/load/safetensors/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return precdetect::fuzz::parse_or_reject(data, size, "fuzz.safetensors",
                                           [](auto file) { precdetect::read_safetensors_header(*file); });
}
