// The restricted pickle machine (every opcode, the stack, the memo, nesting and length limits), then the two
// walkers over whatever graph it builds: the tensor walker and the training-record walker.
#include "fuzz_parser.h"
#include "precdetect/load/pickle/pickle.h"
#include "precdetect/load/records/find_records.h"
#include "precdetect/load/torch/torch_tensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return precdetect::fuzz::parse_or_reject(data, size, "data.pkl", [](auto file) {
    precdetect::pickle::Result result = precdetect::pickle::run(file->view(0, file->size()), file->path());
    precdetect::find_tensors(result, file->path());
    precdetect::find_training_records(result, file->path());
  });
}
