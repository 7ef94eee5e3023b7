// The zip directory reader: end records, ZIP64, central and local headers.
#include "fuzz_parser.h"
#include "precdetect/load/zip/zip_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return precdetect::fuzz::parse_or_reject(data, size, "fuzz.pt", [](auto file) {
    precdetect::zip_directory(precdetect::read_zip_entries(*file), file->path());
  });
}
