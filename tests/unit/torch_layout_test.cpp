// Other formats' tensors as PyTorch holds them (issue 24): llama.cpp's names mapped to transformers' ones, its
// interleaved q and k rows put back in order, Flax kernels transposed. End to end, on files llama.cpp's own
// converter wrote: tests/e2e/test_formats.py (LlamaCppConversions).
#include "precdetect/load/torch_layout.h"

#include <ATen/ops/arange.h>
#include <ATen/ops/equal.h>
#include <gtest/gtest.h>

#include "precdetect/load/gguf/gguf_names.h"
#include "torch_values.h"

namespace precdetect {
namespace {

using nlohmann::ordered_json;

std::vector<TensorRecord> records(const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors) {
  std::vector<TensorRecord> out;
  for (const auto& [name, shape] : tensors) out.push_back({.name = name, .dtype = DType::F16, .shape = shape});
  return out;
}

const ordered_json kLlama = {
    {"general.architecture", "llama"}, {"llama.attention.head_count", 4u}, {"llama.attention.head_count_kv", 2u}};

TEST(GgufNames, LlamaTensorsGetTransformersNamesAndTheirRopeHeads) {
  auto named = records({{"token_embd.weight", {64, 32}},
                        {"blk.12.attn_q.weight", {32, 32}},
                        {"blk.12.attn_k.weight", {16, 32}},
                        {"blk.3.ffn_down.weight", {32, 48}},
                        {"blk.3.attn_norm.weight", {32}},
                        {"output.weight", {64, 32}},
                        {"rope_freqs.weight", {8}},
                        {"blk.x.attn_q.weight", {32, 32}},
                        {"blk.0.attn_q.scales", {32}}});
  name_like_transformers(named, kLlama);
  std::vector<std::optional<std::string>> names;
  for (const TensorRecord& record : named) names.push_back(record.torch_name);
  EXPECT_EQ(names,
            (std::vector<std::optional<std::string>>{
                "model.embed_tokens.weight", "model.layers.12.self_attn.q_proj.weight",
                "model.layers.12.self_attn.k_proj.weight", "model.layers.3.mlp.down_proj.weight",
                "model.layers.3.input_layernorm.weight", "lm_head.weight", std::nullopt, std::nullopt, std::nullopt}));
  EXPECT_EQ(named[1].torch_layout, TorchLayout::kRopeInterleaved);
  EXPECT_EQ(named[1].rope_heads, 4);
  EXPECT_EQ(named[2].rope_heads, 2);  // k: the key/value heads
  EXPECT_EQ(named[3].torch_layout, TorchLayout::kSame);
}

TEST(GgufNames, OnlyArchitecturesConvertedByRenamingAreNamed) {
  auto qwen = records({{"blk.0.attn_q.bias", {32}}, {"blk.0.attn_q_norm.weight", {8}}});
  name_like_transformers(qwen, {{"general.architecture", "qwen3"}});
  EXPECT_EQ(qwen[0].torch_name, "model.layers.0.self_attn.q_proj.bias");
  EXPECT_EQ(qwen[0].torch_layout, TorchLayout::kSame);  // only llama's converter interleaves
  EXPECT_EQ(qwen[1].torch_name, "model.layers.0.self_attn.q_norm.weight");
  auto gemma = records({{"blk.0.attn_norm.weight", {32}}});  // gemma's converter adds 1 to its norms
  name_like_transformers(gemma, {{"general.architecture", "gemma2"}});
  EXPECT_FALSE(gemma[0].torch_name);
  auto nameless = records({{"blk.0.attn_norm.weight", {32}}});
  name_like_transformers(nameless, ordered_json::object());
  EXPECT_FALSE(nameless[0].torch_name);
}

TEST(GgufNames, LlamaQueriesWithoutUsableHeadCountsStayUnpaired) {
  for (const ordered_json& key_values :
       {ordered_json{{"general.architecture", "llama"}},
        ordered_json{{"general.architecture", "llama"}, {"llama.attention.head_count", 5u}},
        ordered_json{{"general.architecture", "llama"}, {"llama.attention.head_count", "4"}},
        ordered_json{{"general.architecture", "llama"}, {"llama.attention.head_count", uint64_t{1} << 62}},
        ordered_json{{"general.architecture", "llama"}, {"llama.attention.head_count", ~uint64_t{0}}}}) {
    auto named = records({{"blk.0.attn_q.weight", {32, 32}}, {"blk.0.attn_v.weight", {32, 32}}});
    name_like_transformers(named, key_values);
    EXPECT_FALSE(named[0].torch_name) << key_values.dump();
    EXPECT_EQ(named[1].torch_name, "model.layers.0.self_attn.v_proj.weight") << key_values.dump();
  }
}

TEST(GgufNames, RopeFactorsTheConverterComputesAreBuffers) {
  auto marked = records({{"rope_freqs.weight", {8}},
                         {"rope_factors_long.weight", {8}},
                         {"rope_factors_short.weight", {8}},
                         {"blk.0.rope_freqs.weight", {8}},
                         {"rope_freqs.bias", {8}},
                         {"token_embd.weight", {64, 32}}});
  mark_computed_from_config(marked);
  std::vector<bool> computed;
  for (const TensorRecord& record : marked) computed.push_back(record.computed_from_config);
  EXPECT_EQ(computed, (std::vector<bool>{true, true, true, false, false, false}));
  EXPECT_EQ(marked[0].role, TensorRole::kBuffer);
  EXPECT_TRUE(marked[0].role_from_file);  // not a parameter whatever the buffer names say
  EXPECT_EQ(marked[5].role, TensorRole::kModel);
}
/// Our to_torch_layout over a libtorch tensor's values.
at::Tensor in_torch_layout(const at::Tensor& stored, const TensorRecord& record) {
  return testing::tensor_of(to_torch_layout(testing::host_values(stored), record));
}

/// convert_hf_to_gguf's LlamaModel.permute, which wrote the rows llama.cpp stores.
at::Tensor llama_cpp_permute(const at::Tensor& weights, int64_t heads) {
  std::vector<int64_t> split{heads, 2, weights.size(0) / heads / 2};
  for (int64_t axis = 1; axis < weights.dim(); ++axis) split.push_back(weights.size(axis));
  return weights.reshape(split).transpose(1, 2).reshape(weights.sizes());
}

TEST(TorchLayout, RopeRowsGoBackInTheOrderLlamaCppTookThemFrom) {
  for (int64_t heads : {1, 2, 4}) {
    at::Tensor weights = at::arange(16 * 3, at::kFloat).reshape({16, 3}), bias = at::arange(16, at::kFloat);
    TensorRecord record{
        .name = "q", .shape = {16, 3}, .torch_layout = TorchLayout::kRopeInterleaved, .rope_heads = heads};
    at::Tensor stored = llama_cpp_permute(weights, heads);
    if (heads > 1) EXPECT_FALSE(at::equal(stored, weights));
    EXPECT_TRUE(at::equal(in_torch_layout(stored, record), weights)) << heads;
    EXPECT_TRUE(at::equal(in_torch_layout(llama_cpp_permute(bias, heads), record), bias)) << heads;
    EXPECT_EQ(torch_shape(record), record.shape);
  }
}

TEST(TorchLayout, FlaxKernelsAsTransformersConvertsThem) {
  at::Tensor conv = at::arange(2 * 2 * 3 * 5, at::kFloat).reshape({2, 2, 3, 5});  // HWIO
  TensorRecord record{.name = "conv/kernel", .shape = {2, 2, 3, 5}, .torch_layout = TorchLayout::kFlaxKernel};
  EXPECT_EQ(torch_shape(record), (std::vector<int64_t>{5, 3, 2, 2}));
  EXPECT_TRUE(at::equal(in_torch_layout(conv, record), conv.permute({3, 2, 0, 1})));
  at::Tensor dense = at::arange(6, at::kFloat).reshape({2, 3});
  record.shape = {2, 3};
  EXPECT_EQ(torch_shape(record), (std::vector<int64_t>{3, 2}));
  EXPECT_TRUE(at::equal(in_torch_layout(dense, record), dense.t()));
  at::Tensor cube = at::arange(2 * 3 * 4, at::kFloat).reshape({2, 3, 4});  // any other rank: all axes reversed
  record.shape = {2, 3, 4};
  EXPECT_TRUE(at::equal(in_torch_layout(cube, record), cube.permute({2, 1, 0})));
  record.shape = {4};
  EXPECT_EQ(torch_shape(record), (std::vector<int64_t>{4}));
}

TEST(TorchLayout, AnOnnxExportersTransposedWeight) {
  at::Tensor folded = at::arange(6, at::kFloat).reshape({2, 3});  // W^T, as MatMul multiplies by it
  TensorRecord record{.name = "val_0", .shape = {2, 3}, .torch_layout = TorchLayout::kTransposed};
  EXPECT_EQ(torch_shape(record), (std::vector<int64_t>{3, 2}));
  EXPECT_TRUE(at::equal(in_torch_layout(folded, record), folded.t()));
}

}  // namespace
}  // namespace precdetect
