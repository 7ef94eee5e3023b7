// A torch.distributed.checkpoint folder's .metadata: the pickle machine, then the walk of the Metadata object into
// the chunk table (fields, torch.Size, storage entries, plain file names) and the check that chunks tile their tensor.
#include "fuzz_parser.h"
#include "precdetect/load/dcp/dcp_metadata.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return precdetect::fuzz::parse_or_reject(data, size, ".metadata", [](auto file) {
    precdetect::read_dcp_metadata(file->view(0, file->size()), file->path());
  });
}
