// A zstd frame as DCP's zstd stream transform writes a `.distcp` entry: inflated by libzstd within a bound (here
// 1 MiB), the error for a damaged, truncated or overlong frame.
#include "fuzz_parser.h"
#include "precdetect/load/dcp/zstd_frame.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return precdetect::fuzz::parse_or_reject(data, size, "__0_0.distcp", [](auto file) {
    precdetect::inflate_zstd_frame(file->view(0, file->size()), 1 << 20, file->path(), "an entry");
  });
}
