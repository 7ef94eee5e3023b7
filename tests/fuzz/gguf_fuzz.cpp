// GGUF: header, key/values (nested arrays), tensor infos, alignment and data placement.
#include "fuzz_parser.h"
#include "precdetect/load/checkpoint.h"
#include "precdetect/load/gguf/gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return precdetect::fuzz::parse_or_reject(data, size, "fuzz.gguf", [](auto file) {
    precdetect::Checkpoint checkpoint;
    checkpoint.files.push_back(std::move(file));
    precdetect::read_gguf(checkpoint, 0);
    precdetect::fuzz::view_every_tensor(checkpoint);
  });
}
