// Tar archives: the pre-0.4 torch.save layout (ustar members storages, tensors, pickle; pickles and raw storages
// within) and NeMo archives (model_config.yaml, and a torch.save zip in model_weights.ckpt).
#include "fuzz_parser.h"
#include "precdetect/load/checkpoint.h"
#include "precdetect/load/file_format.h"
#include "precdetect/load/torch/torch_formats.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return precdetect::fuzz::parse_or_reject(data, size, "fuzz.tar", [](auto file) {
    precdetect::Checkpoint checkpoint;
    checkpoint.files.push_back(std::move(file));
    precdetect::FileFormat format = precdetect::detect_format(*checkpoint.files[0]);
    if (format == precdetect::FileFormat::kNemo)
      precdetect::read_nemo(checkpoint, 0);
    else if (format == precdetect::FileFormat::kTorchTar)
      precdetect::read_torch_tar(checkpoint, 0);
  });
}
