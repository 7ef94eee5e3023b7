// Legacy (pre-1.6) torch.save files: five pickles in a row, then the storages they name.
#include "fuzz_parser.h"
#include "precdetect/load/checkpoint.h"
#include "precdetect/load/torch/torch_formats.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return precdetect::fuzz::parse_or_reject(data, size, "fuzz.bin", [](auto file) {
    precdetect::Checkpoint checkpoint;
    checkpoint.files.push_back(std::move(file));
    precdetect::read_torch_legacy(checkpoint, 0);
  });
}
