// Tensor subclasses stored as their parts: the names torchao's flatten_tensor_state_dict gives them, and the
// descriptions a safetensors header's metadata holds, handed to the schemes with the config.
#include "precdetect/load/tensor_subclasses.h"

#include <gtest/gtest.h>

namespace precdetect {
namespace {

constexpr const char* kInt8 =
    R"({"_type": "Int8Tensor", "_data": {"block_size": [1, 8], "dtype": {"_type": "torch.dtype", "_data": "bfloat16"}}})";

TEST(TensorSubclasses, PartsAreNamedAsTorchaoFlattensThem) {
  EXPECT_EQ(subclass_part_name("model.layers.0.mlp.down_proj.weight", "qdata"),
            "model.layers.0.mlp.down_proj._weight_qdata");
  EXPECT_EQ(subclass_part_name("weight", "scale"), "_weight_scale");
}

TEST(TensorSubclasses, OnlyTheListedSubclassesAreTakenFromTheMetadata) {
  std::map<std::string, std::string> subclasses;
  add_safetensors_subclasses(subclasses, {{"tensor_names", R"(["l.weight", "l.bias", "gone.weight"])"},
                                          {"l.weight", kInt8},
                                          {"l.bias", R"({"_type": "Tensor"})"},
                                          {"unlisted.weight", kInt8},
                                          {"format", "pt"}});
  ASSERT_EQ(subclasses.size(), 1U);
  EXPECT_EQ(subclasses.at("l.weight"), kInt8);
}

TEST(TensorSubclasses, MetadataWithoutAListOfNamesDescribesNone) {
  for (const char* names : {"not json", R"({"l.weight": 1})", R"([1, 2])"}) {
    std::map<std::string, std::string> subclasses;
    add_safetensors_subclasses(subclasses, {{"tensor_names", names}, {"l.weight", kInt8}});
    EXPECT_TRUE(subclasses.empty()) << names;
  }
  std::map<std::string, std::string> subclasses;
  add_safetensors_subclasses(subclasses, {{"l.weight", kInt8}});
  EXPECT_TRUE(subclasses.empty());
}

TEST(TensorSubclasses, DescriptionsReachTheConfigParsedAndBrokenOnesAreLeftOut) {
  EXPECT_EQ(tensor_subclasses_of(with_tensor_subclasses(nullptr, {})), nullptr);
  nlohmann::json config = with_tensor_subclasses(nullptr, {{"l.weight", kInt8}, {"m.weight", "{broken"}});
  const nlohmann::json* subclasses = tensor_subclasses_of(config);
  ASSERT_NE(subclasses, nullptr);
  EXPECT_EQ(subclasses->size(), 1U);
  EXPECT_EQ((*subclasses)["l.weight"]["_type"], "Int8Tensor");
  nlohmann::json kept =
      with_tensor_subclasses({{"quantization_config", {{"quant_method", "torchao"}}}}, {{"l.weight", kInt8}});
  EXPECT_EQ(kept["quantization_config"]["quant_method"], "torchao");
}

}  // namespace
}  // namespace precdetect
