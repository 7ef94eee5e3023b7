// The command line: argv in, validated options (or an exit code and its message) out.
#include "precdetect/app/cli.h"

#include <gtest/gtest.h>

#include <vector>

namespace precdetect {
namespace {

CommandLine parse(std::vector<const char*> args) {
  args.insert(args.begin(), "precdetect");
  return parse_command_line(static_cast<int>(args.size()), args.data());
}

TEST(CommandLine, ScanIsTheDefaultCommandWithEveryOptionTyped) {
  CommandLine line = parse({"a", "b", "--format", "CSV", "--expect", "bf16", "--fail-on", "fp16,fp32", "--max-abs",
                            "100", "-j", "3", "--shard", "1/4", "--include", "attn", "--io", "pread", "-q"});
  ASSERT_TRUE(line.scan);
  const ScanOptions& options = *line.scan;
  EXPECT_EQ(options.inputs, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(options.format, OutputFormat::kCsv);
  EXPECT_EQ(options.gates.expect, Label::kBf16);
  EXPECT_EQ(options.gates.fail_on, (std::vector<Label>{Label::kFp16, Label::kFp32}));
  EXPECT_EQ(options.gates.max_abs, 100.0);
  EXPECT_EQ(options.jobs, 3u);
  EXPECT_EQ(options.shard->index, 1u);
  EXPECT_EQ(options.shard->count, 4u);
  EXPECT_TRUE(options.filter.given());
  EXPECT_TRUE(options.filter.selects("h.0.attn.c_attn.weight"));
  EXPECT_FALSE(options.filter.selects("h.0.mlp.c_fc.weight"));
  EXPECT_EQ(options.read_mode, ReadMode::kPread);
  EXPECT_TRUE(options.quiet);
  EXPECT_TRUE(parse({"scan", "m", "--json"}).scan);  // the explicit subcommand
  EXPECT_EQ(parse({"scan", "m", "--json"}).scan->format, OutputFormat::kJson);
}

TEST(CommandLine, DiffTakesABaseAndOneOrMoreOthers) {
  CommandLine line = parse({"diff", "base", "o1", "o2", "--fail-if-changed", "--top", "5"});
  ASSERT_TRUE(line.diff);
  EXPECT_EQ(line.diff->base, "base");
  EXPECT_EQ(line.diff->others, (std::vector<std::string>{"o1", "o2"}));
  EXPECT_TRUE(line.diff->fail_if_changed);
  EXPECT_EQ(line.diff->top, 5u);
  EXPECT_EQ(parse({"diff", "only-one"}).exit_code, 3);
}

TEST(CommandLine, UsageErrorsExitThreeAndNameTheFlag) {
  struct Case {
    std::vector<const char*> args;
    const char* names;
  };
  const Case cases[] = {
      {{"m", "--expect", "tf32"}, "--expect"}, {{"m", "--format", "yaml"}, "--format"},
      {{"m", "--shard", "4/4"}, "--shard"},    {{"m", "--include", "("}, "--include"},
      {{"m", "--json", "--jsonl"}, "--json"},  {{"m", "--no-such-flag"}, "--no-such-flag"},
  };
  for (const Case& c : cases) {
    CommandLine line = parse(c.args);
    EXPECT_FALSE(line.scan) << c.names;
    EXPECT_EQ(line.exit_code, 3) << c.names;
    EXPECT_NE(line.err.find(c.names), std::string::npos) << line.err;
  }
}

TEST(CommandLine, HelpListsFormatsAndLabelsByName) {
  CommandLine line = parse({"--help"});
  EXPECT_EQ(line.exit_code, 0);
  EXPECT_NE(line.out.find("--format table|json|jsonl|csv|markdown"), std::string::npos) << line.out;
  EXPECT_NE(line.out.find("--expect LABEL"), std::string::npos);
  EXPECT_NE(line.out.find("fp16, bf16, fp32, fp16|bf16, fp16|fp32, bf16|fp32, unknown"), std::string::npos);
  EXPECT_EQ(line.out.find("->"), std::string::npos) << "an enum's numbers leaked into --help";
  EXPECT_NE(parse({"--print-rules"}).out.find("\"buffers\""), std::string::npos);
}

}  // namespace
}  // namespace precdetect
