// The places each library's loader finds code in (safety/code_places.h), fed a listing and in-memory configs: the
// file, the key, what is imported and the verdict of each. tests/e2e/test_code_places.py shows the real loaders
// read the same places.

#include "precdetect/safety/custom_code.h"

#include <gtest/gtest.h>

#include <map>

#include "precdetect/core/error.h"
#include "precdetect/safety/code_places.h"

namespace precdetect {
namespace {

/// find_custom_code over `files` (name -> text); a file whose text is "<escape>" is a link out of the model.
Safety found(const std::map<std::string, std::string>& files) {
  std::vector<std::string> listing;
  for (const auto& [name, text] : files) listing.push_back(name);
  Safety safety;
  find_custom_code(
      listing,
      [&](const std::string& name) {
        if (files.at(name) == "<escape>") fail(ErrorCode::kPathEscape, name, "a link out of the model");
        return files.at(name);
      },
      safety);
  return safety;
}

const CustomCode* code_for(const Safety& safety, const std::string& file) {
  for (const CustomCode& code : safety.custom_code)
    if (code.file == file) return &code;
  return nullptr;
}

TEST(ClassReference, SplitsARepositoryAndTheLastDot) {
  auto own = parse_class_reference("modeling_x.XModel");
  ASSERT_TRUE(own);
  EXPECT_EQ(own->file("unet/"), "unet/modeling_x.py");
  EXPECT_EQ(own->qualified(), "modeling_x.XModel");
  auto other = parse_class_reference("org/repo--modeling_x.XModel");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->repository, "org/repo");
  EXPECT_EQ(other->file("unet/"), "org/repo: modeling_x.py");
  EXPECT_FALSE(parse_class_reference("XModel"));
  EXPECT_FALSE(parse_class_reference("modeling_x."));
}

TEST(TransformersPlaces, EveryAutoConfigNamesItsCodeAndKeyAndAsks) {
  Safety safety = found({
      {"config.json", R"({"auto_map": {"AutoConfig": "configuration_x.XConfig", "AutoModel": "modeling_x.XModel",
                          "AutoModelForCausalLM": "modeling_x.XForCausalLM"}})"},
      {"tokenizer_config.json", R"({"auto_map": {"AutoTokenizer": ["tokenization_x.XTokenizer", null]}})"},
      {"preprocessor_config.json",
       R"({"auto_map": {"AutoImageProcessor": {"torchvision": "image_x.XFast", "pil": "image_x.XSlow"}}})"},
      {"processor_config.json", R"({"auto_map": {"AutoProcessor": "processing_x.XProcessor"}})"},
      {"video_preprocessor_config.json", R"({"auto_map": {"AutoVideoProcessor": "other/repo--video_x.XVideo"}})"},
      {"configuration_x.py", ""},
      {"modeling_x.py", ""},
      {"model.safetensors", ""},
  });
  EXPECT_EQ(safety.verdict(), SafetyVerdict::kUnverified);
  const CustomCode* modeling = code_for(safety, "modeling_x.py");
  ASSERT_TRUE(modeling);
  EXPECT_EQ(modeling->named_by, "config.json auto_map.AutoModel, auto_map.AutoModelForCausalLM");
  EXPECT_EQ(modeling->classes, (std::vector<std::string>{"modeling_x.XModel", "modeling_x.XForCausalLM"}));
  EXPECT_EQ(modeling->consent, CodeConsent::kAsked);
  ASSERT_TRUE(code_for(safety, "tokenization_x.py"));
  EXPECT_EQ(code_for(safety, "tokenization_x.py")->named_by, "tokenizer_config.json auto_map.AutoTokenizer");
  ASSERT_TRUE(code_for(safety, "image_x.py"));
  EXPECT_EQ(code_for(safety, "image_x.py")->classes, (std::vector<std::string>{"image_x.XSlow", "image_x.XFast"}));
  ASSERT_TRUE(code_for(safety, "processing_x.py"));
  const CustomCode* other = code_for(safety, "other/repo: video_x.py");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->repository, "other/repo");
  EXPECT_EQ(other->named_by, "video_preprocessor_config.json auto_map.AutoVideoProcessor");
}

TEST(TransformersPlaces, CustomPipelinesGenerateAndAComponentsAutoMap) {
  Safety safety = found({
      {"config.json", R"({"custom_pipelines": {"pair-classification": {"impl": "pair_pipe.PairPipeline"}}})"},
      {"custom_generate/generate.py", ""},
      {"unet/config.json", R"({"_class_name": "MyUNet", "auto_map": {"AutoModel": "my_unet.MyUNet"}})"},
  });
  ASSERT_TRUE(code_for(safety, "pair_pipe.py"));
  EXPECT_EQ(code_for(safety, "pair_pipe.py")->named_by, "config.json custom_pipelines.pair-classification.impl");
  ASSERT_TRUE(code_for(safety, "custom_generate/generate.py"));
  ASSERT_TRUE(code_for(safety, "unet/my_unet.py"));
  EXPECT_EQ(code_for(safety, "unet/my_unet.py")->named_by, "unet/config.json auto_map.AutoModel");
  EXPECT_EQ(safety.verdict(), SafetyVerdict::kUnverified);
}

TEST(SentenceTransformersPlaces, ACustomModuleInTheFolderIsImportedWithoutAsking) {
  Safety safety = found({
      {"modules.json", R"([{"idx": 0, "name": "0", "path": "", "type": "custom_st.MyModule"},
                           {"idx": 1, "name": "1", "path": "1_Pooling",
                            "type": "sentence_transformers.models.Pooling"}])"},
      {"custom_st.py", ""},
  });
  const CustomCode* custom = code_for(safety, "custom_st.py");
  ASSERT_TRUE(custom);
  EXPECT_EQ(custom->named_by, "modules.json [0].type");
  EXPECT_EQ(custom->consent, CodeConsent::kNotAsked);
  EXPECT_EQ(safety.verdict(), SafetyVerdict::kUnsafe);
}

TEST(SentenceTransformersPlaces, InstalledModulesAndActivationsAreJudgedByName) {
  Safety stock = found({
      {"modules.json", R"([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                           {"idx": 1, "name": "1", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}])"},
      {"2_Dense/config.json", R"({"activation_function": "torch.nn.modules.activation.Tanh"})"},
  });
  EXPECT_EQ(stock.verdict(), SafetyVerdict::kSafe);
  Safety harmful = found({
      {"modules.json", R"([{"idx": 0, "name": "0", "path": "", "type": "some_package.Encoder"},
                           {"idx": 1, "name": "1", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}])"},
      {"2_Dense/config.json", R"({"activation_function": "subprocess.Popen"})"},
  });
  ASSERT_EQ(harmful.imports.size(), 2u);
  EXPECT_EQ(harmful.imports[0].qualified(), "some_package.Encoder");
  EXPECT_EQ(harmful.imports[0].judgement.kind, GlobalClass::kUnknown);
  EXPECT_EQ(harmful.imports[1].qualified(), "subprocess.Popen");
  EXPECT_EQ(harmful.imports[1].file, "2_Dense/config.json");
  EXPECT_EQ(harmful.verdict(), SafetyVerdict::kUnsafe);
}

TEST(PeftPlaces, AutoMappingAndMegatronCoreOutsideTheAllowlist) {
  EXPECT_EQ(found({{"adapter_config.json", R"({"auto_mapping": {"base_model_class": "GPT2LMHeadModel",
                     "parent_library": "transformers.models.gpt2.modeling_gpt2"}, "megatron_config": null,
                     "megatron_core": "megatron.core"})"}})
                .verdict(),
            SafetyVerdict::kSafe);
  Safety safety = found({{"adapter_config.json", R"({"auto_mapping": {"base_model_class": "Base",
                           "parent_library": "my_base"}, "megatron_config": {"tensor_model_parallel_size": 1},
                           "megatron_core": "os"})"}});
  ASSERT_EQ(safety.imports.size(), 2u);
  EXPECT_EQ(safety.imports[0].qualified(), "my_base.Base");
  EXPECT_EQ(safety.imports[1].module, "os");
  EXPECT_EQ(safety.verdict(), SafetyVerdict::kUnsafe);
}

TEST(CodePlaces, AConfigThatCannotBeReadIsNeverPassedAndOneThatIsNoJsonNamesNothing) {
  Safety linked = found({{"adapter_config.json", "<escape>"}});
  ASSERT_EQ(linked.tampering.size(), 1u);
  EXPECT_EQ(linked.tampering[0].file, "adapter_config.json");
  EXPECT_EQ(linked.verdict(), SafetyVerdict::kUnsafe);
  EXPECT_EQ(found({{"model_index.json", "not json"}, {"modules.json", "{"}}).verdict(), SafetyVerdict::kSafe);
}

TEST(CodePlaces, APythonFileAtTheRootNoConfigNamesIsListed) {
  Safety safety = found({{"handler.py", ""}, {"sub/helper.py", ""}});
  ASSERT_EQ(safety.custom_code.size(), 1u);
  EXPECT_EQ(safety.custom_code[0].file, "handler.py");
  EXPECT_EQ(safety.verdict(), SafetyVerdict::kUnverified);
}

}  // namespace
}  // namespace precdetect
