// Keras/TF HDF5 files: read_hdf5 on hostile bytes, end to end through the helper program precdetect-hdf5 (the
// sanitized build's), which runs libhdf5 in a process of its own: whatever libhdf5 does there, precdetect must
// come back with a named error, and every record it yields must lie inside the file (its bytes are viewed). The
// helper reads files by path, so each input is written to a file first.
#include <unistd.h>

#include <fstream>

#include "fuzz_parser.h"
#include "precdetect/load/checkpoint.h"
#include "precdetect/load/hdf5/hdf5.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/precdetect-fuzz-hdf5-" + std::to_string(::getpid()) + ".h5";
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), size);
  try {
    precdetect::Checkpoint checkpoint;
    checkpoint.files.push_back(precdetect::map_file(path));
    precdetect::read_hdf5(checkpoint, 0);
    precdetect::fuzz::view_every_tensor(checkpoint);
  } catch (const precdetect::Error&) {
  }
  return 0;
}
