// The Jinja2 lexer and parser (safety/jinja_*) on the grammar and on hostile input, and the chat-template judge
// (safety/chat_template) on each construct it reports, with its offset, and on real templates, which stay clean.
#include "precdetect/safety/chat_template.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "precdetect/safety/jinja_parser.h"

namespace precdetect {
namespace {

using jinja::ExprKind;
using jinja::parse_template;
using jinja::StmtKind;

using Found = std::pair<std::string, size_t>;

/// The one finding of `text`: its construct and offset.
Found only_finding(std::string_view text) {
  TemplateJudgement judgement = judge_chat_template(text);
  EXPECT_FALSE(judgement.unparsed) << text << ": " << *judgement.unparsed;
  EXPECT_EQ(judgement.findings.size(), 1U) << text;
  if (judgement.findings.empty()) return {};
  return {judgement.findings[0].construct, judgement.findings[0].offset};
}

void expect_clean(std::string_view text) {
  TemplateJudgement judgement = judge_chat_template(text);
  EXPECT_FALSE(judgement.unparsed) << text << ": " << judgement.unparsed.value_or("");
  for (const TemplateFinding& finding : judgement.findings)
    ADD_FAILURE() << text << ": " << finding.construct << " at " << finding.offset << ": " << finding.excerpt;
}

std::string parse_error(std::string_view text) {
  jinja::ParsedTemplate parsed = parse_template(text);
  return parsed.error ? parsed.error->message + " at " + std::to_string(parsed.error->offset) : "";
}

TEST(Jinja, ParsesTheGrammarChatTemplatesUse) {
  std::string_view text =
      "{%- set ns = namespace(last=-1, seen=false) -%}\n"
      "{% for message in messages|selectattr('role') if message.role != 'x' recursive %}"
      "{% set ns.last = loop.index0 + 1 %}{% if message['role'] in ('user', 'system') %}{{ message.content|trim }}"
      "{% elif message.role is not none and not loop.last %}{{ '<' ~ message.role ~ '>' }}{% else %}{% continue %}"
      "{% endif %}{% else %}{{ messages[1:-1:2] }}{% endfor %}"
      "{% macro render(tool, indent=2) %}{{ tool|tojson(indent=indent) }}{{ caller() }}{% endmacro %}"
      "{% call render(tools[0]) %}x{% endcall %}{% filter upper %}y{% endfilter %}"
      "{% set block | trim %}z{% endset %}{# a comment {{ x.__class__ }} #}{% raw %}{{ x.__class__ }}{% endraw %}"
      "{{ {'a': [1, 2.5e3, 0x_ff, 1_000], 'b': (none, True)} }}{{ f(*args, k=1, **kw) }}{{ x if y else z }}"
      "{% generation %}{{ 2 ** 3 // 2 % 5 - -1 }}{% endgeneration %}{% with a = 1, b = 2 %}{{ a }}{% endwith %}"
      "{{ x is divisibleby 3 }}{{ 'a' 'b' }}{% do items.append(1) %}{% if x %}{% break %}{% endif %}";
  jinja::ParsedTemplate parsed = parse_template(text);
  ASSERT_FALSE(parsed.error) << parsed.error->message << " at " << parsed.error->offset;
  EXPECT_EQ(parsed.body[0].kind, StmtKind::kSet);
  EXPECT_EQ(parsed.body[1].kind, StmtKind::kFor);
  EXPECT_EQ(parsed.body[1].bodies.size(), 2U);  // the body and the else
  const jinja::Expr& target = parsed.body[1].bodies[0][0].exprs[0];
  EXPECT_EQ(target.kind, ExprKind::kNamespaceRef);
  EXPECT_EQ(target.name, "ns.last");
  expect_clean(text);
}

TEST(Jinja, StringsDecodeAsPythonsUnicodeEscape) {
  auto value = [](std::string_view text) { return parse_template(text).body.at(0).exprs.at(0).name; };
  EXPECT_EQ(value(R"({{ '\x5f\x5fcla\u0073s\U0000005f_' }})"), "__class__");
  EXPECT_EQ(value(R"({{ "a\"b\\c\101\n" }})"), "a\"b\\cA\n");
  EXPECT_EQ(value(R"({{ 'un\known' }})"), "un\\known");  // an unknown escape keeps its backslash
  EXPECT_EQ(value("{{ '\\\xC3\xA9' }}"), "\\xe9");       // `\é`: a backslash, then backslashreplace's text
  EXPECT_EQ(value("{{ 'a\\\r\nb' }}"), "ab");            // a line continuation
  EXPECT_TRUE(parse_template(R"({{ '\N{LOW LINE}' }})").body[0].exprs[0].unreadable);
  EXPECT_EQ(parse_error(R"({{ '\x5' }})"), "truncated \\x escape at 4");
  EXPECT_EQ(parse_error(R"({{ '\U00110000' }})"), "illegal Unicode character at 4");
}

TEST(Jinja, RefusesWhatJinja2Refuses) {
  EXPECT_EQ(parse_error("{{ x }"), "unexpected '}' at 5");
  EXPECT_EQ(parse_error("{{ (x] }}"), "unexpected ']', expected ')' at 5");
  EXPECT_EQ(parse_error("{% for x in y %}"), "unexpected end of template, expected 'endfor' at 16");
  EXPECT_EQ(parse_error("{% frobnicate %}"), "unknown tag 'frobnicate' at 3");
  EXPECT_EQ(parse_error("{# open"), "missing end of comment tag at 0");
  EXPECT_EQ(parse_error("{% raw %}open"), "missing end of raw directive at 0");
  EXPECT_EQ(parse_error("{{ 'open }}"), "unexpected char ''' at 3");
  EXPECT_EQ(parse_error("{{ x ? y }}"), "unexpected char '?' at 5");
  EXPECT_EQ(parse_error("{% set 1 = x %}"), "can't assign to this expression at 7");
  EXPECT_EQ(parse_error("{{ f(a=1, b) }}"), "invalid syntax for function call expression at 4");
  EXPECT_EQ(parse_error("{% from 'x' import _y %}"), "names starting with an underline can not be imported at 19");
  EXPECT_EQ(parse_error("{{ \xFF }}"), "not UTF-8 at 0");
}

TEST(Jinja, BoundsHostileInput) {
  EXPECT_EQ(parse_error("{{ " + std::string(200, '(') + "x" + std::string(200, ')') + " }}"),
            "nested more than 100 deep at 102");  // the template is one level, then 99 brackets
  std::string chain = "{{ x";
  for (int i = 0; i < 100000; ++i) chain += ".a";  // a loop builds this tree: held to the same depth
  EXPECT_NE(parse_error(chain + " }}").find("nested more than 100 deep"), std::string::npos);
  std::string nested;
  for (int i = 0; i < 200; ++i) nested += "{% if x %}";
  EXPECT_NE(parse_error(nested).find("nested more than 100 deep"), std::string::npos);
  EXPECT_EQ(parse_error(std::string(jinja::kMaxTemplateBytes + 1, 'x')),
            "1048577 bytes, more than the 1048576 precdetect parses at 0");
}

TEST(Jinja, LexesAsJinja2sRegexesDo) {
  // Unicode whitespace is whitespace (Python's \s), so this is the attr filter, not a filter named "attr\u3000".
  EXPECT_EQ(only_finding("{{ x|attr\xE3\x80\x80('__in' ~ 'it__') }}").second, 13U);
  // Text, comments and raw blocks run nothing; line statements are off by default.
  expect_clean("# for x in y.__class__\n{# {{ x.__class__ }} #}{% raw %}{{ x.__class__ }}{% endraw %}");
  // `x.0.1` is two subscripts, not a float after a dot; `}}` inside a dict does not end the tag.
  jinja::ParsedTemplate parsed = parse_template("{{ x.0.1 }}{{ {'a': {'b': 1}}}}");
  ASSERT_FALSE(parsed.error);
  EXPECT_EQ(parsed.body[0].exprs[0].kind, ExprKind::kGetitem);
  EXPECT_EQ(parsed.body[1].exprs[0].kind, ExprKind::kDict);
}

TEST(ChatTemplate, ReportsWhatTheSandboxRefuses) {
  EXPECT_EQ(only_finding("{{ x.__class__ }}"), Found("attribute '__class__'", 5));
  EXPECT_EQ(only_finding("{{ x._private }}"), Found("attribute '_private'", 5));
  EXPECT_EQ(only_finding("{{ x.mro() }}"), Found("attribute 'mro'", 5));
  EXPECT_EQ(only_finding("{{ (x|map('upper')).gi_frame }}"), Found("attribute 'gi_frame'", 20));
  EXPECT_EQ(only_finding("{{ x['__globals__'] }}"), Found("item '__globals__'", 5));
  EXPECT_EQ(only_finding(R"({{ x['\x5f_class__'] }})"), Found("item '__class__'", 5));
  EXPECT_EQ(only_finding("{{ x|attr('__init__') }}"), Found("attr filter with name '__init__'", 10));
  EXPECT_EQ(only_finding("{{ x|map(attribute='a.__class__') }}"), Found("map filter with attribute 'a.__class__'", 19));
  EXPECT_EQ(only_finding("{{ x|selectattr('__class__') }}"), Found("selectattr filter with attribute '__class__'", 16));
  EXPECT_EQ(only_finding("{{ x|map('attr', '__dict__') }}"), Found("map('attr') filter with name '__dict__'", 17));
  EXPECT_EQ(only_finding("{{ '{0.__class__}'.format(x) }}"),
            Found("a string's format method, whose fields reach attributes", 19));
  EXPECT_EQ(only_finding("{% set f = s.format_map %}"),
            Found("a string's format_map method, whose fields reach attributes", 13));
}

TEST(ChatTemplate, ReportsNamesBuiltAtRenderTime) {
  EXPECT_EQ(only_finding("{{ cycler|attr('__in' ~ 'it__') }}"),
            Found("attr filter with a name built at render time", 15));
  EXPECT_EQ(only_finding("{{ x['__cla' ~ 'ss__'] }}"), Found("item name built at render time", 5));
  EXPECT_EQ(only_finding("{% set k = '__cla' + 'ss__' %}{{ x[k] }}").second, 35U);
  EXPECT_EQ(only_finding("{% set ns = namespace(k='') %}{% set ns.k = '_' * 2 ~ 'class__' %}{{ x[ns.k] }}").second,
            71U);
  EXPECT_EQ(only_finding("{% macro m(k) %}{{ x[k] }}{% endmacro %}{{ m('__CLASS__'|lower) }}").second, 21U);
  EXPECT_EQ(only_finding("{% for k in ['__class__'] %}{{ x[k] }}{% endfor %}"), Found("item '__class__'", 33));
  EXPECT_EQ(only_finding("{% set l = [] %}{% do l.append('_' ~ '_class__') %}{{ x[l[0]] }}").second, 56U);
  EXPECT_EQ(only_finding("{{ x['x__class__'[1:]] }}").second, 5U);
  EXPECT_EQ(only_finding("{% set k %}__class__{% endset %}{{ x[k] }}").second, 37U);
  EXPECT_EQ(only_finding("{{ x[bos_token] }}").second, 5U);  // a special token: the model's files choose it
  EXPECT_EQ(only_finding("{{ x|attr(name) }}"), Found("attr filter with a name the template does not spell", 10));
  EXPECT_EQ(only_finding(R"({{ x['\N{LOW LINE}_class__'] }})").first, "item name built at render time");
  EXPECT_EQ(only_finding("{{ x|map(f) }}").first, "map filter with a filter name chosen at render time");
}

TEST(ChatTemplate, RealIdiomsStayClean) {
  expect_clean("{{ messages[0]['role'] }}{{ messages[loop.index0 + 1] }}{{ messages[-1].content[:10] }}");
  expect_clean("{% for key, value in tool.items() %}{{ tool[key] }}{% endfor %}");
  expect_clean("{% for field, label in [('maximum', 'Maximum')] %}{{ spec[field] }}{% endfor %}");
  expect_clean("{% set ns = namespace(i=0) %}{% set ns.i = messages|length - 1 %}{{ messages[ns.i] }}");
  expect_clean(  // a recursive macro whose argument is a dict literal (NousResearch's Hermes tool_use template)
      "{% macro t(spec) %}{% set types = {'string': 'str'} %}{{ types[spec.type] }}"
      "{% for x in spec.type %}{{ t({'type': x}) }}{% endfor %}{% endmacro %}{{ t(tool) }}");
  expect_clean("{{ '{} and {0:>8}'.format(a, b) }}{% if param.format %}{{ param.format }}{% endif %}");
  expect_clean("{{ tools|map(attribute='function')|selectattr('name')|sort(attribute='type')|list }}");
  expect_clean("{{ bos_token }}{{ message.content ~ eos_token }}{{ x|attr('name') }}");
}

TEST(ChatTemplate, ExaminedIntoSafety) {
  Safety safety;
  examine_chat_template("{{ cycler|attr('__in' ~ 'it__') }}", "model.gguf!tokenizer.chat_template.tool_use", safety);
  ASSERT_EQ(safety.tampering.size(), 1U);
  EXPECT_EQ(tampering_name(safety.tampering[0].kind), "template_code");
  EXPECT_EQ(safety.tampering[0].file, "model.gguf!tokenizer.chat_template.tool_use");
  EXPECT_EQ(safety.tampering[0].offset, 15U);
  EXPECT_EQ(safety.tampering[0].detail,
            "attr filter with a name built at render time at offset 15 of template 'tool_use': "
            "cycler|attr('__in' ~ 'it__')");
  examine_chat_template("{{ x }", "tokenizer_config.json!chat_template", safety);
  ASSERT_EQ(safety.unverified.size(), 1U);
  EXPECT_EQ(safety.unverified[0],
            "tokenizer_config.json!chat_template: a chat template that precdetect cannot parse as Jinja2 (unexpected "
            "'}' at offset 5), which a renderer may read otherwise");
  EXPECT_EQ(safety.verdict(), SafetyVerdict::kUnsafe);
}

// llama.cpp's models/templates and chujiezheng/chat_templates, vendored in tests/chat_templates (its README says
// from where): every real template parses and none is reported.
TEST(ChatTemplate, RealTemplatesAreSafe) {
  size_t count = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(PRECDETECT_CHAT_TEMPLATES)) {
    if (entry.path().extension() != ".jinja") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    TemplateJudgement judgement = judge_chat_template(text.str());
    EXPECT_FALSE(judgement.unparsed) << entry.path() << ": " << judgement.unparsed.value_or("");
    for (const TemplateFinding& finding : judgement.findings)
      ADD_FAILURE() << entry.path() << ": " << finding.construct << " at " << finding.offset;
    ++count;
  }
  EXPECT_GE(count, 76U);
}

}  // namespace
}  // namespace precdetect
