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
#include "precdetect/quantize/scheme.h"

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
    std::vector<precdetect::TensorRecord> configured = header.tensors, mlx = header.tensors, gptq = header.tensors,
                                          awq = header.tensors, packed = header.tensors, quanto = header.tensors;
    const std::vector<precdetect::TensorRecord> original = header.tensors;
    precdetect::link_quantized(header.tensors, nullptr, "fuzz.safetensors");
    precdetect::link_quantized(configured, {{"quantization_config", {{"weight_block_size", {128, 128}}}}},
                               "fuzz.safetensors");
    precdetect::link_quantized(mlx, {{"quantization", {{"group_size", 64}, {"bits", 4}}}}, "fuzz.safetensors");
    precdetect::link_quantized(gptq, {{"quantization_config", {{"quant_method", "gptq"}, {"bits", 3}}}},
                               "fuzz.safetensors");
    precdetect::link_quantized(awq, {{"quantization_config", {{"quant_method", "awq"}}}}, "fuzz.safetensors");
    nlohmann::json group = {{"format", "pack-quantized"}, {"weights", {{"type", "int"}, {"num_bits", 4}}}};
    precdetect::link_quantized(
        packed, {{"quantization_config", {{"quant_method", "compressed-tensors"}, {"config_groups", {{"g", group}}}}}},
        "fuzz.safetensors");
    nlohmann::json map = {{"l", {{"weights", "qint4"}}}, {"b", {{"weights", "qint8"}}}};
    precdetect::link_quantized(
        quanto, {{"quantization_config", {{"quant_method", "quanto"}, {"quantization_map", map}}}}, "fuzz.safetensors");
    // Issue 59's schemes, and the unread schemes' net under each declaration.
    for (const char* format : {"nvfp4-pack-quantized", "int-quantized", "mxfp4-pack-quantized"}) {
      std::vector<precdetect::TensorRecord> compressed = original;
      precdetect::link_quantized(
          compressed, {{"quantization_config", {{"quant_method", "compressed-tensors"}, {"format", format}}}},
          "fuzz.safetensors");
    }
    std::vector<precdetect::TensorRecord> gpt_oss = original, mlx_modes = original;
    precdetect::link_quantized(gpt_oss, {{"quantization_config", {{"quant_method", "mxfp4"}}}}, "fuzz.safetensors");
    precdetect::link_quantized(mlx_modes, {{"quantization", {{"group_size", 32}, {"bits", 4}, {"mode", "mxfp4"}}}},
                               "fuzz.safetensors");
    // torchao's subclasses, as their descriptions in the header's metadata say.
    std::map<std::string, std::string> subclasses;
    precdetect::add_safetensors_subclasses(subclasses, header.metadata);
    std::vector<precdetect::TensorRecord> torchao = original;
    precdetect::link_quantized(torchao, precdetect::with_tensor_subclasses(nullptr, subclasses), "fuzz.safetensors");
  });
}
