#pragma once
// The quantization schemes' unit tests: records linked as quantize links a checkpoint, under a config.json.
#include <string>
#include <utility>
#include <vector>

#include "precdetect/core/error.h"
#include "precdetect/quantize/linked_checkpoint.h"

namespace precdetect::testing {

/// `tensors`, the records of one file `m.safetensors`, linked under config.json's object `config`.
inline LinkedCheckpoint linked_file(std::vector<TensorRecord> tensors, const nlohmann::json& config = {}) {
  Checkpoint checkpoint;
  checkpoint.tensors = std::move(tensors);
  return link_checkpoint(std::move(checkpoint), config, "m.safetensors");
}

/// The code and message linked_file refuses `tensors` with; (kInternal, "linked") where it links them.
inline std::pair<ErrorCode, std::string> link_refusal(std::vector<TensorRecord> tensors,
                                                      const nlohmann::json& config = {}) {
  try {
    linked_file(std::move(tensors), config);
  } catch (const Error& e) {
    return {e.code(), e.what()};
  }
  return {ErrorCode::kInternal, "linked"};
}

}  // namespace precdetect::testing
