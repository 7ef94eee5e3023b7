// A torch.distributed.checkpoint folder's .metadata: the pickle machine, then the walk of the Metadata object into
// the chunk table (fields, torch.Size, storage entries, plain file names) and the check that chunks tile their tensor;
// then the same bytes as one rank's `__N.metadata` of a folder saved without collectives, joined with itself as a
// second rank's (join_dcp_ranks).
#include "fuzz_parser.h"
#include "precdetect/load/dcp/dcp_metadata.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return precdetect::fuzz::parse_or_reject(data, size, "__0.metadata", [](auto file) {
    std::span<const std::byte> bytes = file->view(0, file->size());
    try {
      precdetect::read_dcp_metadata(bytes, file->path());
    } catch (const precdetect::Error&) {
    }
    precdetect::DcpMetadata rank = precdetect::read_dcp_metadata(bytes, file->path(), false);
    std::vector<std::filesystem::path> paths = {file->path(), file->path()};
    precdetect::join_dcp_ranks({rank, rank}, paths);
  });
}
