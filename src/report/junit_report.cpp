#include "precdetect/report/junit_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

#include "precdetect/core/utf8.h"

namespace precdetect {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

/// The length of the UTF-8 sequence at `text[at]` when it is a character XML 1.0 may hold, else 0: a control
/// character but tab, newline and carriage return, U+FFFE and U+FFFF are none.
size_t xml_char_length(std::string_view text, size_t at) {
  std::optional<Utf8Char> c = decode_utf8(text, at);
  if (!c) return 0;
  uint32_t code = c->code_point;
  bool allowed = code >= 0x20 ? code != 0xFFFE && code != 0xFFFF : code == '\t' || code == '\n' || code == '\r';
  return allowed ? c->length : 0;
}

std::string_view entity(char c) {
  switch (c) {
    case '&':
      return "&amp;";
    case '<':
      return "&lt;";
    case '>':
      return "&gt;";
    case '"':
      return "&quot;";
    case '\'':
      return "&apos;";
    case '\n':
      return "&#10;";
    case '\r':
      return "&#13;";
    case '\t':
      return "&#9;";
    default:
      return "";
  }
}

/// --fail-if-unsafe and --verify judge a model that could not be read too (app/gates.h); the others cannot.
bool judged(const ModelReport& model, Gate gate) {
  return !model.error || gate == Gate::kFailIfUnsafe || gate == Gate::kVerify;
}

std::vector<std::string> gate_reasons(const ModelReport& model, Gate gate) {
  std::vector<std::string> reasons;
  for (const GateFailure& failure : model.gate_failures)
    if (failure.gate == gate) reasons.push_back(failure.reason);
  return reasons;
}

/// The test case of one checked gate for `model`.
std::string gate_case(const ModelReport& model, Gate gate) {
  std::vector<std::string> reasons = gate_reasons(model, gate);
  std::string open =
      fmt::format("    <testcase name=\"--{}\" classname=\"{}\">", gate_name(gate), xml_escaped(model.input));
  if (!judged(model, gate)) return open + "<skipped message=\"the model could not be scanned\"/></testcase>\n";
  if (reasons.empty()) return open + "</testcase>\n";
  std::string message = xml_escaped(fmt::format("{}", fmt::join(reasons, "; ")));
  return fmt::format("{}\n      <failure message=\"{}\" type=\"gate/{}\">{}</failure>\n    </testcase>\n", open,
                     message, gate_name(gate), message);
}

std::string scan_case(const ModelReport& model) {
  std::string open = fmt::format("    <testcase name=\"scan\" classname=\"{}\">", xml_escaped(model.input));
  if (!model.error) return open + "</testcase>\n";
  std::string message = xml_escaped(model.error->message);
  return fmt::format("{}\n      <error message=\"{}\" type=\"{}\">{}</error>\n    </testcase>\n", open, message,
                     xml_escaped(to_string(model.error->code)), message);
}

struct Counts {
  size_t tests = 0, failures = 0, errors = 0, skipped = 0;
  void add(const Counts& other) {
    tests += other.tests, failures += other.failures, errors += other.errors, skipped += other.skipped;
  }
  std::string attributes() const {
    return fmt::format("tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\"", tests, failures, errors, skipped);
  }
};

Counts model_counts(const ModelReport& model, const std::vector<Gate>& gates) {
  Counts counts{.tests = 1 + gates.size(), .errors = model.error ? 1u : 0u};
  for (Gate gate : gates) {
    if (!gate_reasons(model, gate).empty())
      ++counts.failures;
    else if (!judged(model, gate))
      ++counts.skipped;
  }
  return counts;
}

}  // namespace

std::string xml_escaped(std::string_view text) {
  std::string out;
  for (size_t at = 0; at < text.size();) {
    size_t length = xml_char_length(text, at);
    if (length == 0) {
      out += kReplacement;
      ++at;
      continue;
    }
    std::string_view named = length == 1 ? entity(text[at]) : "";
    out += named.empty() ? text.substr(at, length) : named;
    at += length;
  }
  return out;
}

std::string render_junit(const ScanReport& report) {
  Counts total;
  std::string suites;
  for (const ModelReport& model : report.models) {
    Counts counts = model_counts(model, report.gates);
    total.add(counts);
    suites += fmt::format("  <testsuite name=\"{}\" {}>\n", xml_escaped(model.input), counts.attributes());
    suites += scan_case(model);
    for (Gate gate : report.gates) suites += gate_case(model, gate);
    suites += "  </testsuite>\n";
  }
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"precdetect\" {}>\n{}</testsuites>\n",
      total.attributes(), suites);
}

}  // namespace precdetect
