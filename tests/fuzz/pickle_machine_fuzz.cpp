// The restricted pickle machine: every opcode, the stack, the memo, nesting and length limits.
#include "fuzz_parser.h"
#include "precdetect/load/pickle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return precdetect::fuzz::parse_or_reject(
      data, size, "data.pkl", [](auto file) { precdetect::pickle::run(file->view(0, file->size()), file->path()); });
}
