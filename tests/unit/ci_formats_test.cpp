// The CI formats' pieces that need no binary: the actions toolkit's escaping, XML's characters, and the findings'
// rule ids, paths and fingerprints (tests/e2e/test_ci_formats.py runs the formats themselves).
#include <gtest/gtest.h>

#include "precdetect/report/findings.h"
#include "precdetect/report/github_report.h"
#include "precdetect/report/junit_report.h"

namespace precdetect {
namespace {

TEST(CiFormats, AnnotationsEscapeAsTheActionsToolkitDoes) {
  EXPECT_EQ(escape_annotation_data("100%\r\na: b, c"), "100%25%0D%0Aa: b, c");
  EXPECT_EQ(escape_annotation_property("100%\r\na: b, c"), "100%25%0D%0Aa%3A b%2C c");
}

TEST(CiFormats, XmlHoldsOnlyWhatXmlMay) {
  EXPECT_EQ(xml_escaped("<a href=\"x\">&'</a>"), "&lt;a href=&quot;x&quot;&gt;&amp;&apos;&lt;/a&gt;");
  EXPECT_EQ(xml_escaped("tab\tline\n"), "tab&#9;line&#10;");
  EXPECT_EQ(xml_escaped(std::string("nul\0bell\a", 9)),
            "nul\xEF\xBF\xBD"
            "bell\xEF\xBF\xBD");
  EXPECT_EQ(xml_escaped("caf\xC3\xA9 \xE2\x82\xAC"), "caf\xC3\xA9 \xE2\x82\xAC");  // UTF-8 kept
  EXPECT_EQ(xml_escaped("bad \xC3 \xC0\x80 \xED\xA0\x80"),                         // cut short, overlong, a surrogate
            "bad \xEF\xBF\xBD \xEF\xBF\xBD\xEF\xBF\xBD \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
}

ModelReport gated_model(const std::string& file) {
  ModelReport model{.input = file, .path = file, .files = {file}};
  model.verdict.fp16_risk_reasons = {{.kind = Fp16RiskKind::kFlushToZero, .tensor = "w", .value = 0.9}};
  model.gate_failures = {{.gate = Gate::kMaxNorm, .reason = "norm max 9 exceeds 1 (--max-norm)"}};
  return model;
}

TEST(CiFormats, RulesAreNamedByTheVocabularyAndFingerprintsIgnoreWhereTheCheckoutIs) {
  auto scan = [](const std::filesystem::path& root) {
    return collect_findings({.models = {gated_model((root / "models/a.safetensors").string())}}, root);
  };
  Findings here = scan("/one/checkout"), there = scan("/another/place/checkout");
  ASSERT_EQ(here.findings.size(), 2u);
  EXPECT_EQ(here.rules[here.findings[0].rule].id, "fp16-risk/flush_to_zero");
  EXPECT_EQ(here.rules[here.findings[0].rule].title, "At risk in fp16: flush to zero");
  EXPECT_EQ(here.rules[here.findings[1].rule].id, "gate/max-norm");
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(here.findings[i].path, "models/a.safetensors");
    EXPECT_EQ(here.findings[i].fingerprint, there.findings[i].fingerprint);
    EXPECT_EQ(here.findings[i].fingerprint.size(), 16u);
  }
  EXPECT_NE(here.findings[0].fingerprint, here.findings[1].fingerprint);
  Findings outside = collect_findings({.models = {gated_model("/elsewhere/b.pt")}}, "/one/checkout");
  EXPECT_EQ(outside.findings[0].path, "../../elsewhere/b.pt");
}

}  // namespace
}  // namespace precdetect
