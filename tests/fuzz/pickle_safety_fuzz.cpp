// The safety examination of a file precdetect is handed as a bare pickle or a NumPy file: the pickle stream
// (appended pickles, partial ones), the .npy header and its object-array pickle, and the judgement of every
// global found. The first byte picks how the rest is named, so both paths see every input.
#include <algorithm>

#include "fuzz_parser.h"
#include "precdetect/load/file_format.h"
#include "precdetect/load/numpy/npy.h"
#include "precdetect/load/pickle/pickle_stream.h"
#include "precdetect/safety/examine.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const char* name = data[0] % 2 ? "array.npy" : "model.pkl";
  return precdetect::fuzz::parse_or_reject(data + 1, size - 1, name, [](auto file) {
    precdetect::Safety safety;
    precdetect::examine_source(*file, file->path().string(), safety);
    safety.verdict();
    precdetect::safety_text(safety);
    if (precdetect::detect_format(*file) == precdetect::FileFormat::kNpy)
      precdetect::read_npy_header(file->view(0, file->size()), file->path());
    else
      precdetect::refuse_pickle(*file, file->view(0, file->size()), 0);
  });
}
