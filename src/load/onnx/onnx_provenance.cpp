#include "precdetect/load/onnx/onnx_provenance.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace precdetect {
namespace {

constexpr std::string_view kKindKey = "pkg.torch.export.graph_signature.InputSpec.kind";
constexpr std::string_view kFoldedFromKey = "pkg.onnxscript.optimizer.folded_from";
constexpr std::string_view kSignatureKey = "pkg.torch.export.ExportedProgram.graph_signature";

/// The quoted strings of a Python list's repr (`['fc1.weight', "it's"]`), in order.
std::vector<std::string_view> quoted_strings(std::string_view text) {
  std::vector<std::string_view> found;
  for (size_t at = text.find_first_of("'\""); at != std::string_view::npos; at = text.find_first_of("'\"", at)) {
    size_t end = text.find(text[at], at + 1);
    if (end == std::string_view::npos) break;
    found.push_back(text.substr(at + 1, end - at - 1));
    at = end + 1;
  }
  return found;
}

}  // namespace

void OnnxProvenance::add(const std::string& name, std::string_view key, std::string_view value) {
  if (key == kKindKey) kinds_.insert_or_assign(name, std::string(value));
  if (key == kFoldedFromKey) folded_from_.insert_or_assign(name, std::string(value));
}

void OnnxProvenance::add_graph(std::string_view key, std::string_view value) {
  if (key != kSignatureKey) return;
  signature_ = true;
  // One input a line, as torch's ExportGraphSignature prints it: `p_fc1_weight: PARAMETER target='fc1.weight'`.
  using Kind = std::pair<std::string_view, std::set<std::string, std::less<>>*>;
  for (auto [kind, values] : {Kind{": PARAMETER target=", &parameters_}, Kind{": BUFFER target=", &buffers_}})
    for (size_t at = value.find(kind); at != std::string_view::npos; at = value.find(kind, at + 1)) {
      size_t start = at + kind.size();
      std::vector<std::string_view> target = quoted_strings(value.substr(start, value.find('\n', start) - start));
      if (!target.empty()) values->insert(std::string(target.front()));
    }
}

OnnxOrigin OnnxProvenance::origin(const std::string& name) const {
  if (auto kind = kinds_.find(name); kind != kinds_.end()) {
    if (kind->second == "PARAMETER") return OnnxOrigin::kParameter;
    if (kind->second == "BUFFER") return OnnxOrigin::kBuffer;
    if (kind->second == "CONSTANT_TENSOR") return OnnxOrigin::kExporter;
  }
  if (!signature_) return OnnxOrigin::kUnknown;
  // torch.export records every parameter and buffer it keeps, and onnxscript what it folds: an initializer with no
  // record is a Constant the optimizer lifted into an initializer (a mask's 0 and -3.4e38). Where no parameter has
  // its record (a tool rewrote value_info without them), nothing is known of it.
  auto folded = folded_from_.find(name);
  if (folded == folded_from_.end()) return kinds_.empty() ? OnnxOrigin::kUnknown : OnnxOrigin::kExporter;
  // The record is transitive (each input's own record joined in), so a weight anywhere up the chain is named.
  std::vector<std::string_view> sources = quoted_strings(folded->second);
  bool from_module = std::ranges::any_of(
      sources, [&](std::string_view source) { return parameters_.contains(source) || buffers_.contains(source); });
  return from_module ? OnnxOrigin::kParameter : OnnxOrigin::kExporter;
}

std::optional<std::string> OnnxProvenance::folded_weight(const std::string& name) const {
  auto folded = folded_from_.find(name);
  if (folded == folded_from_.end()) return std::nullopt;
  std::vector<std::string_view> sources = quoted_strings(folded->second);
  if (sources.size() != 1 || !parameters_.contains(sources.front())) return std::nullopt;
  return std::string(sources.front());
}

}  // namespace precdetect
