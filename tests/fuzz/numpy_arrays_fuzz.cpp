// NumPy .npz archives: the zip directory, each member's .npy header, and deflated members inflated (CRC checked).
#include "fuzz_parser.h"
#include "precdetect/load/checkpoint.h"
#include "precdetect/load/numpy/numpy_arrays.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return precdetect::fuzz::parse_or_reject(data, size, "fuzz.npz", [](auto file) {
    std::vector<precdetect::ZipEntry> entries = precdetect::read_zip_entries(*file);
    precdetect::Checkpoint checkpoint;
    checkpoint.files.push_back(std::move(file));
    precdetect::read_npz(checkpoint, 0, entries);
    precdetect::fuzz::view_every_tensor(checkpoint);
  });
}
