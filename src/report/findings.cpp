#include "precdetect/report/findings.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "precdetect/core/hash.h"
#include "precdetect/load/components.h"

namespace precdetect {
namespace fs = std::filesystem;
namespace {

/// What every rule of one family shares. A family with kinds (tampering, fp16 risk, gates) makes its rule ids
/// and titles from the kind's own name, so a kind added to its enum is reported without an edit here.
struct Family {
  std::string_view id;  ///< the rule id, or its prefix before "/<kind>"
  FindingLevel level;
  double security_severity;
  std::string_view title;  ///< "{}" is the kind, its underscores as spaces
  std::string_view help;
  bool notification = false;
};

// GitHub's security-severity: 9.0 and above is "critical", 0.1 to 3.9 "low".
constexpr Family kUnreadable{"model/unreadable",
                             FindingLevel::kError,
                             0,
                             "The model could not be scanned",
                             "precdetect could not read this model; the message names the file and why "
                             "(docs/errors.md lists the error codes). Its other results are missing.",
                             true};
constexpr Family kUnsafeImport{
    "safety/unsafe-import", FindingLevel::kError, 9.0, "Loading the checkpoint would import a dangerous global",
    "A pickle in this checkpoint imports a global that can run code, start processes or touch files or the "
    "network: torch.load(weights_only=False), pickle.load and the frameworks that call them would import it, and "
    "call it where the message says so. Do not load it; get the weights as safetensors from a source you trust. "
    "precdetect never executes a pickle (docs/security.md)."};
constexpr Family kTampering{
    "safety/tampering", FindingLevel::kError, 9.0, "Tampering: {}",
    "The model holds what no writer of its format produces and only an attack needs: a pickle structure that "
    "different unpicklers read differently or that rewrites live code, a link or path that leads out of the "
    "model's folder, an archive member extraction would write outside its folder, a chat template that reaches "
    "Python's internals, a Keras config holding a Python function. Treat the model as malicious; the message "
    "names the file and the place (docs/security.md, \"Beyond pickles\" and \"Resisting the known evasions\")."};
constexpr Family kCustomCode{
    "safety/custom-code", FindingLevel::kWarning, 5.0, "The model asks to run its own Python code",
    "A config of the model names classes in Python files (auto_map, custom_pipelines, custom_generate), or Python "
    "files lie beside its weights: its loader imports and runs them with trust_remote_code=True, which many "
    "wrappers pass. "
    "precdetect does not judge that code: read it, or pin the revision you read (docs/security.md)."};
constexpr Family kUnaskedCode{
    "safety/custom-code-without-consent", FindingLevel::kError, 9.0,
    "Loading the model imports its own Python code without asking",
    "A config of the model names Python code (a sentence-transformers custom module in its folder) that a release of "
    "its loader still in use imports when the folder is loaded, with no "
    "trust_remote_code or prompt: the message names the loader, the releases and the file. Read the code before "
    "loading the model with any release, or use a release that asks (docs/security.md)."};
constexpr Family kUnsafe{"safety/unsafe", FindingLevel::kError, 9.0, "Loading the checkpoint is unsafe",
                         "precdetect judged loading this checkpoint unsafe; the message says why "
                         "(docs/security.md)."};
constexpr Family kUnverified{
    "safety/unverified", FindingLevel::kNote, 3.0, "The checkpoint's safety is unverified",
    "A pickle imports a global on neither list, or part of the model could not be opened or followed: precdetect "
    "cannot say that loading it is safe. Check what the message names, or load the weights with "
    "torch.load(weights_only=True) (docs/security.md)."};
constexpr Family kFp16Risk{
    "fp16-risk", FindingLevel::kWarning, 0, "At risk in fp16: {}",
    "Cast to fp16 (model.half(), torch_dtype=torch.float16), this checkpoint may break: values that overflow to "
    "inf or flush to zero, or weights and activations learned in a wider range than fp16 holds. Run it in bf16 or "
    "fp32; the JSON verdict's advice says how for each tool (docs/using.md, \"What should I run it in?\")."};
constexpr Family kNonFinite{"tensor/non-finite", FindingLevel::kWarning, 0, "A tensor holds NaN or Inf",
                            "A tensor of the checkpoint holds NaN or Inf values: the file is damaged, or was saved "
                            "after training diverged. --fail-if-nonfinite makes it a gate."};
constexpr Family kGate{"gate", FindingLevel::kError, 0, "Gate failed: --{}",
                       "A gate given on the command line failed for this model (precdetect exits 1); the message "
                       "says what was found. docs/using.md lists the gates."};

std::string spaced(std::string_view name) {
  std::string text(name);
  std::replace(text.begin(), text.end(), '_', ' ');
  return text;
}

/// Rules by id, in first-use order, with the findings that use them.
class Collector {
 public:
  explicit Collector(const fs::path& root)
      : root_(fs::absolute(root.empty() ? fs::path(".") : root).lexically_normal()) {
    if (!root_.has_filename()) root_ = root_.parent_path();  // "/repo/" compares as "/repo"
  }

  void add(const Family& family, std::string_view kind, size_t model, std::string message, const std::string& file,
           std::string_view detail) {
    Finding finding{.rule = rule(family, kind), .model = model, .message = std::move(message), .path = relative(file)};
    const std::string& id = found_.rules[finding.rule].id;
    std::string key = fmt::format("{}\n{}\n{}\n{}", id, finding.path, component_, detail);
    finding.fingerprint = fmt::format("{:016x}", fnv1a(key));
    found_.findings.push_back(std::move(finding));
  }

  /// The component a model of a single-file pipeline is ("#vae"): its findings share the file with its siblings'.
  void set_component(std::string component) { component_ = std::move(component); }

  Findings take() { return std::move(found_); }

 private:
  size_t rule(const Family& family, std::string_view kind) {
    std::string id = kind.empty() ? std::string(family.id) : fmt::format("{}/{}", family.id, kind);
    auto [at, added] = index_.emplace(id, found_.rules.size());
    if (added)
      found_.rules.push_back({.id = id,
                              .level = family.level,
                              .security_severity = family.security_severity,
                              .title = fmt::format(fmt::runtime(family.title), spaced(kind)),
                              .help = std::string(family.help),
                              .notification = family.notification});
    return at->second;
  }

  // Lexically, never through links: an HF cache snapshot's file is a link to a blob named by its hash.
  std::string relative(const std::string& file) const {
    fs::path absolute = fs::absolute(file).lexically_normal();
    fs::path relative = absolute.lexically_relative(root_);
    return (relative.empty() ? absolute : relative).generic_string();
  }

  fs::path root_;
  std::string component_;
  Findings found_;
  std::map<std::string, size_t> index_;
};

/// The examined file a pickle's place ("x.pt!archive/data.pkl") is in, and the member part after it.
std::pair<std::string, std::string> split_place(const std::string& where, const Safety& safety) {
  std::string file;
  for (const std::string& examined : safety.files)
    if (examined.size() > file.size() && where.starts_with(examined) &&
        (where.size() == examined.size() || where[examined.size()] == '!'))
      file = examined;
  if (file.empty()) file = where.substr(0, where.find('!'));
  return {file, where.substr(file.size())};
}

std::string import_text(const SafetyImport& item) {
  std::string spelling = item.spelling.empty() ? "" : fmt::format(", written {}", item.spelling);
  return fmt::format("loading {} would import {} ({}: {}{}){} at offset {}", item.file, item.qualified(),
                     item.judgement.family, item.judgement.why, spelling, item.called ? " and call it" : "",
                     item.offset);
}

/// Where a finding about custom code points: the Python file, where it lies in the model's folder, else the model.
std::string code_path(const ModelReport& model, const CustomCode& code) {
  fs::path folder = fs::path(model.path);
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) folder = folder.parent_path();
  return fs::is_regular_file(folder / code.file, ec) ? (folder / code.file).string() : model.path;
}

void add_safety(Collector& out, const ModelReport& model, size_t index) {
  if (!model.safety) return;
  const Safety& safety = *model.safety;
  size_t explained = 0;
  for (const SafetyImport& item : safety.imports) {
    if (item.judgement.kind != GlobalClass::kDangerous) continue;
    auto [file, member] = split_place(item.file, safety);
    out.add(kUnsafeImport, "", index, fmt::format("{}: {}", model.input, import_text(item)), file,
            fmt::format("{}\n{}\n{}", item.qualified(), member, item.spelling));
    ++explained;
  }
  for (const SafetyTampering& item : safety.tampering) {
    auto [file, member] = split_place(item.file, safety);
    out.add(kTampering, tampering_name(item.kind), index,
            fmt::format("{}: {} at offset {}: {}", model.input, item.file, item.offset, item.detail), file,
            fmt::format("{}\n{}", member, item.offset));
    ++explained;
  }
  for (const CustomCode& code : safety.custom_code) {
    bool unasked = code.consent == CodeConsent::kNotAsked;
    out.add(unasked ? kUnaskedCode : kCustomCode, "", index,
            fmt::format("{}: custom code {}{}{}{}, {}{}", model.input, code.file, code.classes.empty() ? "" : " (",
                        fmt::join(code.classes, ", "), code.classes.empty() ? "" : ")",
                        code.named_by.empty() ? "a Python file beside the weights" : "named by " + code.named_by,
                        code.why.empty() ? "" : ": " + code.why),
            code_path(model, code), code.file);
    ++explained;
  }
  std::string file = model.files.empty() ? model.input : model.files.front();
  SafetyVerdict verdict = safety.verdict();
  // A verdict the lists above do not explain (a kind of finding added since) is still reported, in its own words.
  if (verdict == SafetyVerdict::kUnsafe && explained == 0)
    out.add(kUnsafe, "", index, fmt::format("{}: {}", model.input, safety_text(safety)), file, "");
  bool unknown = std::any_of(safety.imports.begin(), safety.imports.end(),
                             [](const SafetyImport& item) { return item.judgement.kind == GlobalClass::kUnknown; });
  // Custom code alone is reported above; anything else unverified in the verdict's words.
  if (verdict == SafetyVerdict::kUnverified && (unknown || !safety.unverified.empty()))
    out.add(kUnverified, "", index, fmt::format("{}: {}", model.input, safety_text(safety)), file, "");
}

std::string reason_text(const Fp16RiskReason& reason) {
  std::string text = fmt::format("at risk in fp16 ({})", risk_kind_name(reason.kind));
  if (!reason.tensor.empty()) text += fmt::format(": {} {}", role_name(reason.role), reason.tensor);
  if (reason.kind != Fp16RiskKind::kDocumented) text += fmt::format(", {:.4g}", reason.value);
  if (reason.values) text += fmt::format(" ({} values)", reason.values);
  if (!reason.rule.empty()) text += fmt::format(" (rule {})", reason.rule);
  if (!reason.source.empty()) text += fmt::format(" (source: {})", reason.source);
  return text;
}

void add_precision(Collector& out, const ModelReport& model, size_t index) {
  if (model.files.empty()) return;                // nothing was read
  const std::string& file = model.files.front();  // tensors are not traced to their shard: the model's first file
  for (const Fp16RiskReason& reason : model.verdict.fp16_risk_reasons)
    out.add(kFp16Risk, risk_kind_name(reason.kind), index, fmt::format("{}: {}", model.input, reason_text(reason)),
            file, fmt::format("{}\n{}", reason.tensor, reason.rule));
  for (const TensorReport& tensor : model.tensors)
    if (tensor.counted && tensor.stats && tensor.stats->nans + tensor.stats->infs > 0)
      out.add(kNonFinite, "", index,
              fmt::format("{}: {} {} holds {} NaN and {} Inf", model.input, role_name(tensor.role), tensor.name,
                          tensor.stats->nans, tensor.stats->infs),
              file, tensor.name);
}

void add_model(Collector& out, const ModelReport& model, size_t index) {
  std::optional<ComponentInput> component = component_input(model.input);
  out.set_component(component ? "#" + component->component : "");
  std::string file = model.files.empty() ? model.input : model.files.front();
  if (model.error)
    out.add(kUnreadable, "", index,
            fmt::format("{}: {} ({})", model.input, model.error->message, to_string(model.error->code)), file, "");
  add_safety(out, model, index);
  add_precision(out, model, index);
  for (const GateFailure& failure : model.gate_failures)
    out.add(kGate, gate_name(failure.gate), index, fmt::format("{}: {}", model.input, failure.reason),
            failure.file.empty() ? file : failure.file, "");
}

}  // namespace

std::string_view finding_level_name(FindingLevel level) {
  switch (level) {
    case FindingLevel::kNote:
      return "note";
    case FindingLevel::kWarning:
      return "warning";
    case FindingLevel::kError:
      return "error";
  }
  return "error";
}

Findings collect_findings(const ScanReport& report, const fs::path& root) {
  Collector out(root);
  for (size_t index = 0; index < report.models.size(); ++index) add_model(out, report.models[index], index);
  return out.take();
}

}  // namespace precdetect
