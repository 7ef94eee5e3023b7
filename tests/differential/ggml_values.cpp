// The block decoders' side of the ggml differential test (tests/e2e/test_ggml_types.py): the GGUF file named first,
// opened as a scan opens it, and each of its block-quantized tensors dequantized as the statistics kernel
// dequantizes it, its float32 values in order written to DIR/<tensor index>.f32 (DIR named second), with one JSON
// line per tensor on stdout: name, dtype, numel, values (the file).
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <vector>

#include "precdetect/core/dtype.h"
#include "precdetect/kernel/ggml_blocks.h"
#include "precdetect/load/checkpoint.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: precdetect_ggml_values FILE.gguf DIR\n";
    return 2;
  }
  std::filesystem::path path = argv[1], dir = argv[2];
  precdetect::ModelSource source{
      .input = path.string(), .path = path, .files = {path}, .root = precdetect::model_root_of(path, false)};
  precdetect::Checkpoint checkpoint = precdetect::open_checkpoint(source);
  for (size_t i = 0; i < checkpoint.tensors.size(); ++i) {
    const precdetect::TensorRecord& record = checkpoint.tensors[i];
    if (precdetect::dtype_kind(record.dtype) != precdetect::DTypeKind::kQuantized) continue;
    std::vector<std::byte> blocks(record.nbytes);
    checkpoint.files[record.file]->read(record.offset, blocks);
    std::vector<float> values(record.numel);
    precdetect::dequantize_blocks(record.dtype, blocks.data(),
                                  record.numel / precdetect::dtype_block_values(record.dtype), values.data());
    std::filesystem::path out = dir / fmt::format("{}.f32", i);
    std::ofstream(out, std::ios::binary).write(reinterpret_cast<const char*>(values.data()), values.size() * 4);
    nlohmann::json line = {{"name", record.name},
                           {"dtype", precdetect::dtype_name(record.dtype)},
                           {"numel", record.numel},
                           {"values", out.string()}};
    std::cout << line.dump() << '\n';
  }
}
