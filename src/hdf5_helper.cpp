// precdetect-hdf5: the one program that runs libhdf5, so that a crash on a damaged file ends it and not a scan
// (load/helper_process.h). Invoked by precdetect itself, one file and one request at a time:
//   precdetect-hdf5 describe FILE [OFFSET SIZE]             the datasets, as JSON (load/hdf5_library.h)
//   precdetect-hdf5 read FILE DATASET BYTES [OFFSET SIZE]   the dataset's stored bytes, raw
//   precdetect-hdf5 safety FILE [OFFSET SIZE]               the root's Keras model config and the places the file
//                                                           reaches other files, as JSON
// OFFSET SIZE: the HDF5 file is those bytes of FILE (a .keras archive's stored member), else all of it.
// Exit 0 with the answer on stdout; 2 with "<code>\t<message>" on stderr for a named error.
#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "precdetect/core/confinement.h"
#include "precdetect/core/error.h"
#include "precdetect/load/hdf5/hdf5_library.h"
#include "precdetect/load/hdf5/helper_process.h"
#include "precdetect/load/source/byte_source.h"
#include "precdetect/net/url.h"

namespace {

void write_out(std::span<const std::byte> bytes) {
  if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size() || std::fflush(stdout) != 0) std::exit(1);
}

int run(int argc, char** argv) {
  using namespace precdetect;
  std::string request = argc > 2 ? argv[1] : "";
  int fixed = request == "read" ? 5 : 3;  // the arguments before the optional OFFSET SIZE
  bool ranged = argc == fixed + 2;
  if ((request != "describe" && request != "safety" && request != "read") || (argc != fixed && !ranged)) {
    std::fputs(
        "usage: precdetect-hdf5 describe FILE | safety FILE | read FILE DATASET BYTES, each with an "
        "optional OFFSET SIZE\n",
        stderr);
    return 64;
  }
  // The file the scan handed over, as it named it (a URL is read by range, with no local root).
  const ModelRoot root = is_url(argv[2]) ? ModelRoot{} : model_root_of(argv[2], /*is_folder=*/false);
  Confined confined(root);
  std::unique_ptr<ByteSource> file = map_file(argv[2]);
  uint64_t offset = ranged ? std::stoull(argv[fixed]) : 0;
  uint64_t size = ranged ? std::stoull(argv[fixed + 1]) : file->size();
  auto image = file->view(offset, size);  // Error(kOffsetPastEnd) for a range past the file
  if (request == "describe") {
    std::string text = describe_hdf5(image, file->path());
    write_out(std::as_bytes(std::span(text)));
  } else if (request == "safety") {
    std::string text = hdf5_safety(image, file->path());
    write_out(std::as_bytes(std::span(text)));
  } else {
    read_hdf5_dataset(image, file->path(), argv[3], std::stoull(argv[4]), [&](std::span<const std::byte> slab) {
      write_out(slab);
      file->release(offset, size);  // the chunks inflated so far are not read again: their pages can go
    });
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
