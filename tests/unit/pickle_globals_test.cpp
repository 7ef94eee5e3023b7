// judge_global, name by name: the allowlist, the dangerous list's entries and families, module inheritance,
// the py2 aliases, dotted and dunder names, and what stays unknown.
#include "precdetect/load/pickle/pickle_globals.h"

#include <gtest/gtest.h>

namespace precdetect {
namespace {

GlobalClass kind_of(std::string_view module, std::string_view name) { return judge_global(module, name).kind; }

TEST(PickleGlobals, TorchRebuildersAndTypesAreAllowed) {
  for (auto [module, name] : {std::pair{"torch._utils", "_rebuild_tensor_v2"},
                              {"torch", "BFloat16Storage"},
                              {"torch", "float8_e4m3fn"},
                              {"torch.cuda", "HalfStorage"},
                              {"torch", "FloatTensor"},
                              {"collections", "OrderedDict"},
                              {"torch.nn.parameter", "Parameter"},
                              {"_codecs", "encode"},
                              {"builtins", "set"},
                              {"numpy.core.multiarray", "_reconstruct"}})
    EXPECT_EQ(kind_of(module, name), GlobalClass::kAllowed) << module << "." << name;
}

TEST(PickleGlobals, DangerousEntriesNameTheirFamily) {
  struct Case {
    const char *module, *name;
    DangerFamily family;
  };
  for (const Case& c : {Case{"posix", "system", DangerFamily::kProcess},
                        {"os.path", "join", DangerFamily::kProcess},
                        {"__builtin__", "eval", DangerFamily::kCodeExecution},
                        {"builtins", "open", DangerFamily::kFilesystem},
                        {"builtins", "print", DangerFamily::kCodeExecution},
                        {"urllib.request", "urlopen", DangerFamily::kNetwork},
                        {"importlib", "import_module", DangerFamily::kImportMachinery},
                        {"pydoc", "locate", DangerFamily::kImportMachinery},
                        {"operator", "attrgetter", DangerFamily::kAttributeAccess},
                        {"torch.storage", "_load_from_bytes", DangerFamily::kNestedDeserialization},
                        {"numpy.f2py.crackfortran", "getlincoef", DangerFamily::kCodeExecution}}) {
    GlobalJudgement judged = judge_global(c.module, c.name);
    EXPECT_EQ(judged.kind, GlobalClass::kDangerous) << c.module << "." << c.name;
    EXPECT_EQ(judged.family, c.family) << c.module << "." << c.name;
    EXPECT_FALSE(judged.why.empty());
  }
}

TEST(PickleGlobals, DottedAndDunderNamesAreDangerous) {
  EXPECT_EQ(judge_global("pathlib", "os.system").why, "os.*");         // the chain reaches os
  EXPECT_EQ(judge_global("builtins", "dict.get").why, "dotted name");  // no data needs a chain
  EXPECT_EQ(judge_global("numpy", "__builtins__").family, DangerFamily::kAttributeAccess);
  EXPECT_EQ(kind_of("numpy", "prod.os.system"), GlobalClass::kDangerous);
}

TEST(PickleGlobals, ClassesOnNeitherListAreUnknown) {
  for (auto [module, name] : {std::pair{"transformers.training_args", "TrainingArguments"},
                              {"__main__", "Net"},
                              {"argparse", "Namespace"},
                              {"builtins", "dict"},
                              {"mymodel.code", "Encoder"},
                              {"__torch__.torch.nn.modules.linear", "Linear"},
                              {"torch.jit._pickle", "build_intlist"},
                              {"copyreg", "__newobj__"}})
    EXPECT_EQ(kind_of(module, name), GlobalClass::kUnknown) << module << "." << name;
}

TEST(PickleGlobals, AMethodReferenceIsJudgedAsTheMethodItNames) {
  // A model class's method: unknown, as the class is (never dotted-name dangerous).
  EXPECT_EQ(judge_method_reference("ultralytics.nn.modules.head", "Segment.forward", "forward").kind,
            GlobalClass::kUnknown);
  // A dangerous owner stays dangerous, whatever the attribute.
  EXPECT_EQ(judge_method_reference("os", "path.join", "join").why, "os.*");
  EXPECT_EQ(judge_method_reference("builtins", "getattr.x", "x").family, DangerFamily::kAttributeAccess);
  // The method a reference reaches is judged too: a module's loader is the deserializer it is.
  GlobalJudgement load = judge_method_reference("torch", "storage._load_from_bytes", "_load_from_bytes");
  EXPECT_EQ(load.family, DangerFamily::kNestedDeserialization) << load.why;
  // An allowlisted name reached as a method is allowed.
  EXPECT_EQ(judge_method_reference("torch", "_utils._rebuild_tensor_v2", "_rebuild_tensor_v2").kind,
            GlobalClass::kAllowed);
}

TEST(PickleGlobals, ListedJudgementLeavesOutOnlyTheBuiltinsCatchAll) {
  EXPECT_EQ(judge_global("builtins", "relu").kind, GlobalClass::kDangerous);  // not a plain data type
  EXPECT_EQ(judge_listed_global("builtins", "relu").kind, GlobalClass::kUnknown);
  for (auto [module, name] : {std::pair{"builtins", "eval"},
                              {"builtins", "getattr"},
                              {"os", "system"},
                              {"builtins", "__import__"},
                              {"numpy", "prod.os.system"}})
    EXPECT_EQ(judge_listed_global(module, name).kind, GlobalClass::kDangerous) << module << "." << name;
  EXPECT_EQ(judge_listed_global("torch._utils", "_rebuild_tensor_v2").kind, GlobalClass::kAllowed);
}

}  // namespace
}  // namespace precdetect
