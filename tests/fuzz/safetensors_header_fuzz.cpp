// The safetensors header: length prefix, UTF-8, JSON, every validation rule; then what is read off its tensors
// alone: the quantized weights' scales linked (fp8 with and without a configured block, MLX's affine groups, GPTQ,
// AWQ and compressed-tensors' packed integers, optimum-quanto's weights with and without its quantization map,
// compressed-tensors' nvfp4 and int8 codes, gpt-oss's and MLX's microscaling, torchao's subclasses described in
// the metadata, the unread schemes' net) and the
// single-file components; a rank's file of DCP's HuggingFace writer (DCP_SHARDING_INFO) marked and joined alone.
#include "fuzz_parser.h"
#include "precdetect/load/components.h"
#include "precdetect/load/dcp/dcp_safetensors.h"
#include "precdetect/load/safetensors/safetensors.h"
#include "precdetect/load/tensor_subclasses.h"
#include "precdetect/quantize/linked_checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return precdetect::fuzz::parse_or_reject(data, size, "fuzz.safetensors", [](auto file) {
    precdetect::SafetensorsHeader header = precdetect::read_safetensors_header(*file);
    precdetect::single_file_components(header.tensors);
    try {
      precdetect::Checkpoint ranks;
      ranks.files.push_back(precdetect::memory_source("", file->path()));
      ranks.tensors = header.tensors;
      for (precdetect::TensorRecord& record : ranks.tensors) record.file = 0;
      precdetect::mark_dcp_safetensors_chunks(ranks.tensors, header.metadata, file->path());
      precdetect::join_dcp_safetensors_chunks(ranks);
    } catch (const precdetect::Error&) {
    }
    // Each scheme's link over the header's records, under the settings that switch it on.
    auto link = [&](const nlohmann::json& config, const std::map<std::string, std::string>& subclasses = {}) {
      precdetect::Checkpoint checkpoint;
      checkpoint.tensors = header.tensors;
      checkpoint.tensor_subclasses = subclasses;
      precdetect::link_checkpoint(std::move(checkpoint), config, "fuzz.safetensors");
    };
    link(nullptr);
    link({{"quantization_config", {{"weight_block_size", {128, 128}}}}});
    link({{"quantization", {{"group_size", 64}, {"bits", 4}}}});
    link({{"quantization_config", {{"quant_method", "gptq"}, {"bits", 3}}}});
    link({{"quantization_config", {{"quant_method", "awq"}}}});
    nlohmann::json group = {{"format", "pack-quantized"}, {"weights", {{"type", "int"}, {"num_bits", 4}}}};
    link({{"quantization_config", {{"quant_method", "compressed-tensors"}, {"config_groups", {{"g", group}}}}}});
    nlohmann::json map = {{"l", {{"weights", "qint4"}}}, {"b", {{"weights", "qint8"}}}};
    link({{"quantization_config", {{"quant_method", "quanto"}, {"quantization_map", map}}}});
    // Issue 59's schemes, and the unread schemes' net under each declaration.
    for (const char* format : {"nvfp4-pack-quantized", "int-quantized", "mxfp4-pack-quantized"})
      link({{"quantization_config", {{"quant_method", "compressed-tensors"}, {"format", format}}}});
    link({{"quantization_config", {{"quant_method", "mxfp4"}}}});
    link({{"quantization", {{"group_size", 32}, {"bits", 4}, {"mode", "mxfp4"}}}});
    // torchao's subclasses, as their descriptions in the header's metadata say.
    std::map<std::string, std::string> subclasses;
    precdetect::add_safetensors_subclasses(subclasses, header.metadata);
    link(nullptr, subclasses);
  });
}
