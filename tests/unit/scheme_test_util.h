#pragma once
// The quantization schemes' unit tests: records linked as quantize links a checkpoint, under a config.json, and
// tensors stored in an in-memory safetensors file, linked and analyzed as a scan on the CPU analyzes them.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "precdetect/analyze/analyzer.h"
#include "precdetect/core/error.h"
#include "precdetect/load/safetensors/safetensors.h"
#include "precdetect/quantize/linked_checkpoint.h"
#include "test_util.h"

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

/// A tensor of an in-memory safetensors file, with the bytes it stores.
struct StoredTensor {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

/// Bytes of float32 values as bfloat16, each of which must be exact in it (the low half is dropped).
inline std::string bf16_bytes(const std::vector<float>& values) {
  std::vector<uint16_t> halves;
  for (float value : values) halves.push_back(static_cast<uint16_t>(std::bit_cast<uint32_t>(value) >> 16));
  return raw_bytes(halves);
}

/// `tensors` stored in this order as one file `m.safetensors` in memory, and read back: the records point at it.
inline Checkpoint stored_checkpoint(const std::vector<StoredTensor>& tensors) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  std::string data;
  for (const StoredTensor& tensor : tensors) {
    header[tensor.name] = {{"dtype", dtype_name(tensor.dtype)},
                           {"shape", tensor.shape},
                           {"data_offsets", {data.size(), data.size() + tensor.bytes.size()}}};
    data += tensor.bytes;
  }
  Checkpoint checkpoint{.format = FileFormat::kSafetensors};
  checkpoint.files.push_back(memory_source(safetensors_bytes(header.dump(), data), "m.safetensors"));
  checkpoint.tensors = read_safetensors_header(*checkpoint.files.front()).tensors;
  return checkpoint;
}

/// stored_checkpoint(tensors) linked under config.json's object `config`.
inline LinkedCheckpoint linked_bytes(const std::vector<StoredTensor>& tensors, const nlohmann::json& config = {}) {
  return link_checkpoint(stored_checkpoint(tensors), config, "m.safetensors");
}

/// The statistics the CPU analyzer computes for `model`'s record `name` (which must be one of its records).
inline TensorStats analyzed(const LinkedCheckpoint& model, const std::string& name) {
  auto record = std::ranges::find(model.tensors, name, &TensorRecord::name);
  if (record == model.tensors.end()) throw std::out_of_range("no record " + name);
  const TensorRecord* records[] = {&*record};
  return Analyzer(ComputeDevice{}).analyze(model, records).at(0);
}

/// The code and message linking or analyzing `name` of `tensors` fails with; (kInternal, "analyzed") where both
/// succeed.
inline std::pair<ErrorCode, std::string> analysis_refusal(const std::vector<StoredTensor>& tensors,
                                                          const std::string& name, const nlohmann::json& config = {}) {
  try {
    analyzed(linked_bytes(tensors, config), name);
  } catch (const Error& e) {
    return {e.code(), e.what()};
  }
  return {ErrorCode::kInternal, "analyzed"};
}

}  // namespace precdetect::testing
