// precdetect-hdf5: the one program that runs libhdf5, so that a crash on a damaged file ends it and not a scan
// (load/helper_process.h). Invoked by precdetect itself, one file and one request at a time:
//   precdetect-hdf5 describe FILE          the datasets, as JSON (load/hdf5_library.h)
//   precdetect-hdf5 read FILE DATASET      the dataset's stored bytes, raw
//   precdetect-hdf5 model-config FILE      the root's Keras model config
// Exit 0 with the answer on stdout; 2 with "<code>\t<message>" on stderr for a named error.
#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "precdetect/core/error.h"
#include "precdetect/load/hdf5/hdf5_library.h"
#include "precdetect/load/hdf5/helper_process.h"
#include "precdetect/load/source/byte_source.h"

namespace {

void write_out(std::span<const std::byte> bytes) {
  if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size() || std::fflush(stdout) != 0) std::exit(1);
}

int run(int argc, char** argv) {
  using namespace precdetect;
  std::string request = argc > 2 ? argv[1] : "";
  std::unique_ptr<ByteSource> file = map_file(argc > 2 ? argv[2] : "");
  auto image = file->view(0, file->size());
  if (request == "describe" && argc == 3) {
    std::string text = describe_hdf5(image, file->path());
    write_out(std::as_bytes(std::span(text)));
  } else if (request == "model-config" && argc == 3) {
    std::string text = keras_model_config(image, file->path());
    write_out(std::as_bytes(std::span(text)));
  } else if (request == "read" && argc == 5) {
    read_hdf5_dataset(image, file->path(), argv[3], std::stoull(argv[4]), [&](std::span<const std::byte> slab) {
      write_out(slab);
      file->release(0, file->size());  // the chunks inflated so far are not read again: their pages can go
    });
  } else {
    std::fputs("usage: precdetect-hdf5 describe FILE | model-config FILE | read FILE DATASET BYTES\n", stderr);
    return 64;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const precdetect::Error& e) {
    std::fputs((precdetect::helper_error_line(e) + "\n").c_str(), stderr);
    return 2;
  }
}
