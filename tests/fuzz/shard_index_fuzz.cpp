// Shard indexes (model.safetensors.index.json): JSON, weight_map, paths that must stay inside the folder.
#include "fuzz_parser.h"
#include "precdetect/discover/shard_index.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return precdetect::fuzz::parse_or_reject(data, size, "model.safetensors.index.json", [](auto file) {
    auto text = file->view(0, file->size());
    precdetect::parse_shard_index({reinterpret_cast<const char*>(text.data()), text.size()}, file->path());
  });
}
