// A Keras model config (a .keras archive's config.json, an HDF5 model's model_config): the JSON parse, the walk over
// every object (iterative, whatever the depth), the marshalled-code sniff of every string, and the judgement of
// every module and name it asks Keras for.
#include "fuzz_parser.h"
#include "precdetect/safety/keras_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  precdetect::Safety safety;
  precdetect::judge_keras_config({reinterpret_cast<const char*>(data), size}, "fuzz.keras!config.json", safety);
  safety.verdict();
  precdetect::safety_text(safety);
  return 0;
}
