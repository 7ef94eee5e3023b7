// Tar archives: the pre-0.4 torch.save layout (ustar members storages, tensors, pickle; pickles and raw storages
// within) and NeMo archives (model_config.yaml, and a torch.save zip in model_weights.ckpt), read through their
// formats as the load chain reads them.
#include "fuzz_parser.h"
#include "precdetect/load/checkpoint.h"
#include "precdetect/load/file_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return precdetect::fuzz::parse_or_reject(data, size, "fuzz.tar", [](auto file) {
    precdetect::Checkpoint checkpoint;
    checkpoint.files.push_back(std::move(file));
    std::unique_ptr<precdetect::FormatFile> format = precdetect::open_format(*checkpoint.files[0]);
    if (format &&
        (format->format() == precdetect::FileFormat::kNemo || format->format() == precdetect::FileFormat::kTorchTar))
      format->read(checkpoint, 0);
  });
}
