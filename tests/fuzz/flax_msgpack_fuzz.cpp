// Flax checkpoints: the msgpack reader (depth, counts, lengths), the array extensions and chunked arrays, joined.
#include "fuzz_parser.h"
#include "precdetect/load/checkpoint.h"
#include "precdetect/load/flax/flax.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return precdetect::fuzz::parse_or_reject(data, size, "fuzz.msgpack", [](auto file) {
    precdetect::Checkpoint checkpoint;
    checkpoint.files.push_back(std::move(file));
    precdetect::read_flax(checkpoint, 0);
    precdetect::fuzz::view_every_tensor(checkpoint);
  });
}
