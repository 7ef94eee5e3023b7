// How an ONNX graph uses its stored values (load/onnx/onnx_uses.h), on graphs given node by node: the weight inputs,
// the pass-through operators, a Linear's bias and a decomposed normalization's scale and shift, subgraphs reading
// their enclosing graph's names, and a damaged graph whose nodes feed each other in a cycle.
#include "precdetect/load/onnx/onnx_uses.h"

#include <gtest/gtest.h>

namespace precdetect {
namespace {

TEST(OnnxUses, WeightInputsAndPassThroughs) {
  OnnxUses uses;
  for (const char* name : {"w", "w8", "shape", "ids", "unread", "table"}) uses.stored("", name);
  uses.node("", "DequantizeLinear", "", {"w8", "scale"}, {"w8f"});
  uses.node("", "Transpose", "", {"w8f"}, {"wt"});
  uses.node("", "MatMul", "", {"x", "wt"}, {"y"});
  uses.node("", "Gemm", "", {"y", "w"}, {"z"});
  uses.node("", "Reshape", "", {"z", "shape"}, {"r"});
  uses.node("", "Gather", "", {"table", "ids"}, {"e"});
  EXPECT_EQ(uses.use("w"), OnnxUse::kWeight);
  EXPECT_EQ(uses.use("w8"), OnnxUse::kWeight);  // through DequantizeLinear and Transpose
  EXPECT_EQ(uses.use("table"), OnnxUse::kWeight);
  EXPECT_EQ(uses.use("shape"), OnnxUse::kOther);  // Reshape passes its first input on, not its shape
  EXPECT_EQ(uses.use("ids"), OnnxUse::kOther);
  EXPECT_EQ(uses.use("unread"), OnnxUse::kUnread);
}

TEST(OnnxUses, BiasesScalesAndShiftsByWhatTheyAreAddedToOrMultiply) {
  OnnxUses uses;
  for (const char* name : {"w", "bias", "mask", "scale", "shift", "half"}) uses.stored("", name);
  uses.node("", "MatMul", "", {"x", "w"}, {"p"});
  uses.node("", "Add", "", {"bias", "p"}, {"h"});
  uses.node("", "MatMul", "", {"h", "h"}, {"scores"});  // no stored weight: the mask added is no bias
  uses.node("", "Add", "", {"scores", "mask"}, {"masked"});
  uses.node("", "Sqrt", "", {"masked"}, {"std"});
  uses.node("", "Div", "", {"masked", "std"}, {"normalized"});
  uses.node("", "Mul", "", {"normalized", "scale"}, {"scaled"});
  uses.node("", "Add", "", {"scaled", "shift"}, {"out"});
  uses.node("", "Mul", "", {"out", "half"}, {"halved"});
  EXPECT_EQ(uses.use("bias"), OnnxUse::kWeight);
  EXPECT_EQ(uses.use("mask"), OnnxUse::kOther);
  EXPECT_EQ(uses.use("scale"), OnnxUse::kWeight);
  EXPECT_EQ(uses.use("shift"), OnnxUse::kWeight);
  EXPECT_EQ(uses.use("half"), OnnxUse::kOther);
}

TEST(OnnxUses, AQdqModelsBiasIsAddedToAProductQuantizedAgain) {
  OnnxUses uses;
  for (const char* name : {"w8", "w_scale", "b8", "b_scale", "p_scale"}) uses.stored("", name);
  uses.node("", "DequantizeLinear", "", {"b8", "b_scale"}, {"b"});
  uses.node("", "DequantizeLinear", "", {"w8", "w_scale"}, {"w"});
  uses.node("", "MatMul", "", {"x", "w"}, {"p"});
  uses.node("", "QuantizeLinear", "", {"p", "p_scale"}, {"p8"});
  uses.node("", "DequantizeLinear", "", {"p8", "p_scale"}, {"pf"});
  uses.node("", "Add", "", {"b", "pf"}, {"y"});
  EXPECT_EQ(uses.use("w8"), OnnxUse::kWeight);
  EXPECT_EQ(uses.use("b8"), OnnxUse::kWeight);
  EXPECT_EQ(uses.use("p_scale"), OnnxUse::kOther);
}

TEST(OnnxUses, SubgraphsReadTheirOwnNamesElseTheEnclosingGraphs) {
  OnnxUses uses;
  uses.stored("", "outer");
  uses.stored("", "shadowed");
  uses.subgraph("if/then/", "");
  uses.stored("if/then/", "shadowed");
  uses.node("", "If", "", {"cond"}, {"y"});
  uses.node("if/then/", "MatMul", "", {"outer", "shadowed"}, {"z"});
  EXPECT_EQ(uses.resolve("if/then/", "outer"), "outer");
  EXPECT_EQ(uses.resolve("if/then/", "shadowed"), "if/then/shadowed");
  EXPECT_EQ(uses.use("outer"), OnnxUse::kWeight);
  EXPECT_EQ(uses.use("if/then/shadowed"), OnnxUse::kWeight);
  EXPECT_EQ(uses.use("shadowed"), OnnxUse::kUnread);
}

TEST(OnnxUses, ACycleOfPassThroughsEnds) {
  OnnxUses uses;
  uses.stored("", "w");
  uses.node("", "Identity", "", {"w"}, {"a"});
  uses.node("", "Identity", "", {"b"}, {"w"});
  uses.node("", "Cast", "", {"a"}, {"b"});
  EXPECT_EQ(uses.use("w"), OnnxUse::kOther);
}

}  // namespace
}  // namespace precdetect
