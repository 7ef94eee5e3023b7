// ONNX: the protobuf walker (nested messages, packed and unpacked values, subgraphs), tensors' sizes against their
// shapes, typed fields decoded, the weights its nodes dequantize linked and checked by their scheme. External data
// names files beside a folder that does not exist: never opened.
#include "fuzz_parser.h"
#include "precdetect/load/checkpoint.h"
#include "precdetect/load/onnx/onnx.h"
#include "precdetect/quantize/linked_checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return precdetect::fuzz::parse_or_reject(data, size, "/nonexistent/fuzz.onnx", [](auto file) {
    precdetect::Checkpoint checkpoint;
    checkpoint.files.push_back(std::move(file));
    precdetect::read_onnx(checkpoint, 0);
    precdetect::LinkedCheckpoint model =
        precdetect::link_checkpoint(std::move(checkpoint), nullptr, "/nonexistent/fuzz.onnx");
    precdetect::fuzz::view_every_tensor(model);
  });
}
