// What makes a model an adapter (classify/evidence/adapters.h): PEFT's config as the scan read it, else LoRA names.
#include "precdetect/classify/evidence/adapters.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace precdetect {
namespace {

const std::vector<std::string> kModelNames = {"model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight"};

TEST(Adapters, APeftConfigNamesItsBase) {
  auto adapter = identify_adapter(nlohmann::json{{"base_model_name_or_path", "EleutherAI/pythia-1b"}}, kModelNames);
  ASSERT_TRUE(adapter);
  EXPECT_EQ(adapter->format, AdapterFormat::kPeft);
  EXPECT_EQ(adapter->base_model, "EleutherAI/pythia-1b");
  EXPECT_EQ(adapter->found_by, "adapter_config.json");
}

TEST(Adapters, AConfigWithoutABaseOrUnreadableNamesNone) {
  for (const nlohmann::json& config : {nlohmann::json::object(), nlohmann::json{{"base_model_name_or_path", ""}},
                                       nlohmann::json{{"base_model_name_or_path", 7}}, nlohmann::json::array()}) {
    auto adapter = identify_adapter(config, kModelNames);
    ASSERT_TRUE(adapter) << config;
    EXPECT_EQ(adapter->base_model, std::nullopt) << config;
    EXPECT_EQ(adapter->found_by, "adapter_config.json") << config;
  }
  auto unreadable = identify_adapter(nlohmann::json(nlohmann::json::value_t::discarded), kModelNames);
  ASSERT_TRUE(unreadable);
  EXPECT_EQ(unreadable->base_model, std::nullopt);
  EXPECT_EQ(unreadable->found_by, "adapter_config.json (unreadable: no base model read from it)");
}

TEST(Adapters, WithoutAConfigTheNamesDecide) {
  EXPECT_FALSE(identify_adapter(std::nullopt, kModelNames));
  auto kohya = identify_adapter(std::nullopt, std::vector<std::string>{"lora_unet_down_blocks_0.lora_down.weight",
                                                                       "lora_unet_down_blocks_0.lora_up.weight"});
  ASSERT_TRUE(kohya);
  EXPECT_EQ(kohya->format, AdapterFormat::kKohya);
  EXPECT_EQ(kohya->base_model, std::nullopt);
}

}  // namespace
}  // namespace precdetect
