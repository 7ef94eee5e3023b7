// judge_keras_config on config texts: serialized functions in each shape Keras writes or runs (Keras 3's
// `__lambda__`, tf-keras's `function_type`, marshalled code anywhere, base64 or raw), the names a config asks
// Keras to import (outside Keras, Keras' own non-modeling APIs, Keras' own classes), and text that is not JSON.
#include "precdetect/safety/keras_config.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace precdetect {
namespace {

using Json = nlohmann::ordered_json;

/// `lambda x: x * 2`'s code object, marshalled by CPython 3.11 and base64-encoded as Keras' func_dump writes it.
constexpr const char* kLambdaCode =
    "4wEAAAAAAAAAAAAAAAIAAAADAAAA8wwAAACXAHwAZAF6BQAAUwApAk7pAgAAAKkAKQHaAXhzAQAA\n"
    "ACD6CG1vZGVsLnB5+gg8bGFtYmRhPnIGAAAAAQAAAHMKAAAAgACIIYhhiSWAAPMAAAAA\n";

Safety judged(const Json& config) {
  Safety safety;
  judge_keras_config(config.dump(), "model.keras!config.json", safety);
  return safety;
}

/// A Keras 3 Sequential model (as keras 3.15 writes config.json) of the given layers.
/// `layers` is a list: a braced list of one element would be that element itself under clang (nlohmann's
/// single-element brace initialization differs between compilers), so callers pass each layer apart.
Json sequential(std::initializer_list<Json> layers_list) {
  Json layers = Json::array();
  for (const Json& layer : layers_list) layers.push_back(layer);
  return {{"module", "keras"},
          {"class_name", "Sequential"},
          {"config", {{"name", "sequential"}, {"layers", std::move(layers)}}},
          {"registered_name", nullptr}};
}

Json layer(const std::string& class_name, const std::string& name, Json config = Json::object()) {
  config["name"] = name;
  return {{"module", "keras.layers"}, {"class_name", class_name}, {"config", config}, {"registered_name", nullptr}};
}

Json dense(const std::string& name) {
  return layer("Dense", name,
               {{"units", 4},
                {"activation", "relu"},
                {"kernel_initializer",
                 {{"module", "keras.initializers"}, {"class_name", "GlorotUniform"}, {"config", {{"seed", nullptr}}}}},
                {"dtype", {{"module", "keras"}, {"class_name", "DTypePolicy"}, {"config", {{"name", "float32"}}}}}});
}

Json function_ref(const std::string& module, const std::string& name) {
  return {{"module", module}, {"class_name", "function"}, {"config", name}, {"registered_name", nullptr}};
}

TEST(KerasConfig, ABenignKeras3ModelHoldsNothingToJudge) {
  Safety safety = judged(sequential({dense("dense"), layer("Dropout", "dropout", {{"rate", 0.1}})}));
  EXPECT_TRUE(safety.tampering.empty());
  EXPECT_TRUE(safety.imports.empty());
  EXPECT_TRUE(safety.unverified.empty());
  EXPECT_EQ(safety.verdict(), SafetyVerdict::kSafe);
}

TEST(KerasConfig, AKeras3LambdaIsASerializedFunctionNamedByLayerAndPath) {
  Json function = {{"class_name", "__lambda__"},
                   {"config", {{"code", kLambdaCode}, {"defaults", nullptr}, {"closure", nullptr}}}};
  Safety safety = judged(sequential({dense("dense"), layer("Lambda", "double", {{"function", function}})}));
  ASSERT_EQ(safety.tampering.size(), 1u);
  const SafetyTampering& found = safety.tampering[0];
  EXPECT_EQ(found.kind, TamperingKindOf(FileTampering::kSerializedFunction));
  EXPECT_EQ(found.file, "model.keras!config.json");
  EXPECT_EQ(found.detail, "a Python lambda (`__lambda__`) in `double` (Lambda), at config.layers[1].config.function");
  EXPECT_EQ(safety.verdict(), SafetyVerdict::kUnsafe);
}

TEST(KerasConfig, ALambdaOutsideALambdaLayerIsFoundToo) {
  // serialize_keras_object's shape for a lambda anywhere (a TextVectorization's `standardize`): `value` holds
  // func_dump's (code, defaults, closure).
  Json standardize = {{"class_name", "__lambda__"}, {"config", {{"value", {kLambdaCode, nullptr, nullptr}}}}};
  Safety safety = judged(sequential({layer("TextVectorization", "text", {{"standardize", standardize}})}));
  ASSERT_EQ(safety.tampering.size(), 1u);
  EXPECT_EQ(safety.tampering[0].detail,
            "a Python lambda (`__lambda__`) in `text` (TextVectorization), at config.layers[0].config.standardize");
}

TEST(KerasConfig, TfKerasLambdaFunctionTypesAreSerializedFunctions) {
  // tf-keras and Keras 2 (an .h5's model_config): `function` is func_dump's list, `function_type` says so.
  Json config = Json::parse(R"({"class_name": "Sequential", "config": {"name": "sequential", "layers": [
      {"class_name": "Lambda", "config": {"name": "lambda", "function": ["not marshalled: its type says it is", null, null],
       "function_type": "lambda", "module": "__main__", "output_shape": null, "output_shape_type": "raw"}}]}})");
  Safety safety = judged(config);
  ASSERT_EQ(safety.tampering.size(), 1u);
  EXPECT_EQ(safety.tampering[0].detail,
            "a Python lambda (`function_type: \"lambda\"`) in `lambda` (Lambda), at config.layers[0].config");
  EXPECT_TRUE(safety.imports.empty());  // the Lambda's own `module` is where its code came from, not an import
}

TEST(KerasConfig, MarshalledCodeAnywhereIsFoundBase64OrRaw) {
  std::string raw = "\u00e3\x01";
  raw += std::string(11, '\0') + "\x02rest of the code";
  for (const std::string& text : {std::string(kLambdaCode), raw}) {
    Safety safety = judged(sequential({layer("Custom", "odd", {{"payload", {{"nested", text}}}})}));
    ASSERT_EQ(safety.tampering.size(), 1u) << text;
    EXPECT_EQ(safety.tampering[0].detail,
              "marshalled Python code in `odd` (Custom), at config.layers[0].config.payload.nested");
  }
}

TEST(KerasConfig, OrdinaryStringsAreNotCode) {
  for (const char* text : {"relu", "glorot_uniform", "c", "YWJj", "cAAAAAAAAAAAAAAAAAAAAAAAAAAA", "4w==", ""}) {
    Safety safety = judged(sequential({layer("Dense", text, {{"activation", text}})}));
    EXPECT_TRUE(safety.tampering.empty()) << text;
  }
}

TEST(KerasConfig, AFunctionFromAModuleOutsideKerasIsJudgedAsAPickleGlobal) {
  // CVE-2025-1550's shape: Keras before 3.9 imported any module a config named.
  Safety safety = judged(sequential({layer("Lambda", "run", {{"function", function_ref("os", "system")}})}));
  ASSERT_EQ(safety.imports.size(), 1u);
  const SafetyImport& import = safety.imports[0];
  EXPECT_EQ(import.qualified(), "os.system");
  EXPECT_EQ(import.judgement.kind, GlobalClass::kDangerous);
  EXPECT_EQ(import.judgement.family, DangerFamily::kProcess);
  EXPECT_EQ(import.file, "model.keras!config.json");
  EXPECT_EQ(import.offset, 0u);
  EXPECT_TRUE(import.called);
  EXPECT_EQ(safety.verdict(), SafetyVerdict::kUnsafe);
}

TEST(KerasConfig, AClassFromAnUnknownModuleIsUnverifiedOncePerConfig) {
  Json custom = {{"module", "my_package.layers"},
                 {"class_name", "Doubler"},
                 {"config", {{"name", "d"}}},
                 {"registered_name", "my_package>Doubler"}};
  Json second = custom;
  second["config"]["name"] = "e";
  Safety safety = judged(sequential({custom, second}));
  ASSERT_EQ(safety.imports.size(), 1u);
  EXPECT_EQ(safety.imports[0].qualified(), "my_package.layers.Doubler");
  EXPECT_EQ(safety.imports[0].judgement.kind, GlobalClass::kUnknown);
  EXPECT_EQ(safety.verdict(), SafetyVerdict::kUnverified);
}

TEST(KerasConfig, KerasOwnNamesAreAllowedButItsNonModelingApisAreDangerous) {
  EXPECT_EQ(judge_keras_name("keras.layers", "Dense").kind, GlobalClass::kAllowed);
  EXPECT_EQ(judge_keras_name("keras.src.models.functional", "Functional").kind, GlobalClass::kAllowed);
  EXPECT_EQ(judge_keras_name("keras_hub.src.models.gemma", "GemmaBackbone").kind, GlobalClass::kAllowed);
  EXPECT_EQ(judge_keras_name("kerasx", "Dense").kind, GlobalClass::kUnknown);  // a package, not a prefix
  struct Case {
    const char *module, *name;
    DangerFamily family;
  };
  for (const Case& c : {Case{"keras.utils", "get_file", DangerFamily::kNetwork},
                        {"keras.src.utils.file_utils", "get_file", DangerFamily::kNetwork},
                        {"keras.config", "enable_unsafe_deserialization", DangerFamily::kCodeExecution},
                        {"tf_keras.models", "load_model", DangerFamily::kNestedDeserialization},
                        {"keras", "__builtins__", DangerFamily::kAttributeAccess}}) {
    GlobalJudgement judgement = judge_keras_name(c.module, c.name);
    EXPECT_EQ(judgement.kind, GlobalClass::kDangerous) << c.module << "." << c.name;
    EXPECT_EQ(judgement.family, c.family) << c.module << "." << c.name;
  }
  Safety safety = judged(sequential(
      {layer("Lambda", "fetch",
             {{"function", function_ref("keras.utils", "get_file")}, {"arguments", {{"origin", "http://x"}}}})}));
  ASSERT_EQ(safety.imports.size(), 1u);
  EXPECT_EQ(safety.imports[0].qualified(), "keras.utils.get_file");
}

TEST(KerasConfig, BuiltinsAreKerasOwnFunctionsBarTheDangerousOnes) {
  // keras 3.15 writes `keras.ops.abs` and `keras.activations.relu` as `builtins` `abs` and `relu`.
  for (const char* name : {"abs", "relu", "mean_squared_error"})
    EXPECT_EQ(judge_keras_name("builtins", name).kind, GlobalClass::kAllowed) << name;
  EXPECT_EQ(judge_keras_name("builtins", "eval").family, DangerFamily::kCodeExecution);
  EXPECT_EQ(judge_keras_name("__builtin__", "open").family, DangerFamily::kFilesystem);
  EXPECT_EQ(judge_keras_name("builtins", "exit").family, DangerFamily::kProcess);
  EXPECT_EQ(judge_keras_name("builtins", "__import__").kind, GlobalClass::kDangerous);
}

TEST(KerasConfig, BuiltinsAreJudgedAndKerasSpecialClassesImportNothing) {
  Safety safety = judged(sequential({layer("Lambda", "l", {{"function", function_ref("builtins", "exec")}}),
                                     layer("Custom", "c",
                                           {{"t",
                                             {{"class_name", "__numpy__"},
                                              {"module", "numpy"},
                                              {"config", {{"value", {1}}, {"dtype", "float32"}}}}}})}));
  ASSERT_EQ(safety.imports.size(), 1u);
  EXPECT_EQ(safety.imports[0].qualified(), "builtins.exec");
  EXPECT_EQ(safety.imports[0].judgement.kind, GlobalClass::kDangerous);
}

TEST(KerasConfig, TextThatIsNotJsonIsUnverified) {
  Safety safety;
  judge_keras_config("{\"class_name\": ", "model.h5!model_config", safety);
  ASSERT_EQ(safety.unverified.size(), 1u);
  EXPECT_TRUE(safety.unverified[0].starts_with("model.h5!model_config: ")) << safety.unverified[0];
}

TEST(KerasConfig, DeepNestingIsWalkedWithoutRecursion) {
  std::string deep(200000, '[');
  deep += "\"" + std::string(kLambdaCode).substr(0, 76) + "\"" + std::string(200000, ']');
  Safety safety;
  judge_keras_config(deep, "deep.keras!config.json", safety);
  EXPECT_EQ(safety.tampering.size(), 1u);
}

}  // namespace
}  // namespace precdetect
