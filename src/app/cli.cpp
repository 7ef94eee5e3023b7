#include "precdetect/app/cli.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string_view>

#include "precdetect/analyze/device.h"
#include "precdetect/classify/registry.h"
#include "precdetect/classify/rules.h"
#include "precdetect/core/error.h"
#include "precdetect/core/format.h"

namespace precdetect {
namespace {

// How -o and --json-output write FILE, for every command.
constexpr const char* kFileRule =
    "a regular file is replaced whole, a symbolic link's target too; a device or FIFO is written as it is";
constexpr const char* kJsonOutputHelp = "also write the JSON document to FILE, whatever the output's format";

std::string output_help(std::string_view what) {
  return fmt::format("write {} to FILE instead of stdout (`-` is stdout; {})", what, kFileRule);
}

std::string json_output_help() { return fmt::format("{} ({})", kJsonOutputHelp, kFileRule); }

constexpr const char* kExitStatus = R"(Exit status:
  0  every model was scanned (and passed every gate)
  1  a gate failed (--expect, --fail-on, --fail-if-fp16-risk, --max-abs, --max-norm, --fail-if-unsafe,
     --fail-if-nonfinite, --verify; diff --fail-if-changed)
  2  at least one model could not be scanned (the others are still reported) and no gate failed
  3  the run could not be made: a usage error, nothing to scan, an output file that cannot be written
  4  merge refused its set of --jsonl outputs
)";

constexpr const char* kInputs =
    "PATH is a model folder (sharded or not), one checkpoint file, a *.index.json, a Hugging Face id "
    "org/name[@revision] found in the local cache ($HF_HUB_CACHE, $HF_HOME/hub, ~/.cache/huggingface/hub), or a "
    "remote model, read by byte ranges: hf://org/name[@revision][/folder] (the Hub), s3://bucket/prefix/ or an "
    "http(s):// URL of a file (docs/using.md, \"Remote models\"). precdetect never executes code found in a "
    "pickle: every pickle a model holds is judged safe, unsafe or unverified instead (docs/security.md).";

/// `text` broken into lines of at most `width` columns at spaces (a word longer than that keeps its own line).
std::string wrapped(std::string_view text, size_t width) {
  std::string out, line;
  std::istringstream words{std::string(text)};
  for (std::string word; words >> word;) {
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  return out + line + "\n";
}

/// The help's last part: exit statuses, what a PATH may be, the formats read (core/format's table) and the docs.
std::string footer() {
  return fmt::format("{}\n{}\n{}Docs: docs/using.md", kExitStatus, wrapped(kInputs, 116),
                     wrapped("Formats: " + format_list() + ".", 116));
}

std::optional<std::regex> compile_regex(const std::string& pattern, const char* flag) {
  if (pattern.empty()) return std::nullopt;
  try {
    return std::regex(pattern, std::regex::ECMAScript | std::regex::optimize);
  } catch (const std::regex_error& e) {
    throw CLI::ValidationError(flag, fmt::format("invalid regular expression `{}`: {}", pattern, e.what()));
  }
}

/// --verify's manifest: none (an empty one) unless --verify-manifest names one; a malformed one is a usage error.
Manifest manifest_of(const std::string& path) {
  if (path.empty()) return {};
  try {
    return read_manifest(path);
  } catch (const Error& e) {
    throw CLI::ValidationError("--verify-manifest", e.what());
  }
}

/// --gpu: a GPU name, a compute capability, or cpu.
CLI::Validator gpu_validator() {
  return CLI::Validator(
      [](std::string& text) {
        return parse_gpu(text) ? std::string()
                               : "must name a GPU (T4, V100, A100, L4, H100, ...), a compute capability (7.5, "
                                 "sm_75) or cpu, not `" +
                                     text + "`";
      },
      "GPU");
}

/// --device, for every command that computes.
CLI::Validator device_validator() {
  return CLI::Validator(
      [](const std::string& spec) {
        return is_device_spec(spec) ? std::string() : "must be cpu, cuda, cuda:N or auto, not `" + spec + "`";
      },
      "DEVICE");
}

std::optional<Shard> parse_shard(const std::string& text) {
  static const std::regex kShard(R"((\d{1,9})/(\d{1,9}))");
  std::smatch match;
  if (!std::regex_match(text, match, kShard)) return std::nullopt;
  Shard shard{.index = std::stoull(match[1]), .count = std::stoull(match[2])};
  if (shard.count == 0 || shard.index >= shard.count) return std::nullopt;
  return shard;
}

CLI::Validator shard_validator() {
  return CLI::Validator(
      [](const std::string& text) {
        return parse_shard(text) ? std::string() : "must be K/N with 0 <= K < N, not `" + text + "`";
      },
      "K/N");
}

/// GitHub Actions says where it runs: --annotate acts only there, and the job summary is where the runner names
/// it.
void take_github_environment(ScanOptions& options) {
  const char* actions = std::getenv("GITHUB_ACTIONS");
  options.annotate = options.annotate && actions && std::string_view(actions) == "true";
  const char* summary = std::getenv("GITHUB_STEP_SUMMARY");
  if ((options.annotate || options.format == OutputFormat::kGithub) && summary && *summary)
    options.step_summary = summary;
}

/// What the scan's flags give as text, before it is checked and turned into ScanOptions.
struct ScanText {
  std::string include, exclude, rules, registry, shard, verify_manifest, gpu;
  bool no_cache = false, verify = false;
};

void add_batch_options(CLI::App& app, ScanOptions& options, ScanText& text) {
  // One value per occurrence (allow_extra_args false): a vector option would otherwise swallow the PATHs after it.
  app.add_option("--from", options.lists,
                 "also scan the inputs listed in FILE, one per line ('#' comments; - is stdin)")
      ->allow_extra_args(false);
  app.add_flag("-r,--recursive", options.recursive, "a folder stands for every model folder under it");
  app.add_flag("--all-formats", options.all_formats,
               "a folder holding weights in several formats (safetensors, flax, gguf...): scan each as a model");
  app.add_option("-j,--jobs", options.jobs, "models scanned at once (default: up to 4 on the CPU, 2 on a GPU)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--hf-cache", options.hf_cache, "also scan every model in the local Hugging Face cache");
  app.add_flag("--all-revisions", options.all_revisions, "with --hf-cache: every cached snapshot, not only the latest")
      ->needs("--hf-cache");
  app.add_option("--shard", text.shard, "scan only part K of N (0 <= K < N) of the inputs, split by a stable hash")
      ->check(shard_validator());
  app.add_option("--cache", options.cache,
                 "keep tensor statistics in this SQLite file; unchanged files are not re-read")
      ->envname("PRECDETECT_CACHE");
  app.add_flag("--no-cache", text.no_cache, "no results cache, even when --cache or PRECDETECT_CACHE names one");
  app.add_flag("-q,--quiet", options.quiet, "no progress line and no warnings on stderr (errors are still printed)");
  app.add_flag_callback(
         "--jsonl", [&options] { options.format = OutputFormat::kJsonl; },
         "print one JSON line per model as it finishes, then a summary line (--format jsonl)")
      ->excludes("--json")
      ->excludes("--format");
}

/// --expect and --fail-on take the labels by name.
std::map<std::string, Label> label_names() {
  std::map<std::string, Label> names;
  for (Label label : kLabels) names.emplace(label_name(label), label);
  return names;
}

void add_gate_options(CLI::App& app, Gates& gates, ScanText& text) {
  std::vector<std::string_view> names(kLabels.size());
  std::transform(kLabels.begin(), kLabels.end(), names.begin(), label_name);
  app.add_option("--expect", gates.expect,
                 fmt::format("exit 1 unless every model is classified LABEL or a label within it ('bf16|fp32' "
                             "accepts bf16, fp32 and bf16|fp32); LABEL: {}",
                             fmt::join(names, ", ")))
      ->transform(CLI::CheckedTransformer(label_names()))
      ->option_text("LABEL");
  app.add_option("--fail-on", gates.fail_on,
                 "exit 1 if a model's label is LABEL or leaves it open (fp16 fails fp16 and fp16|fp32)")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->transform(CLI::CheckedTransformer(label_names()))
      ->option_text("LABEL[,LABEL...]");
  app.add_flag("--fail-if-fp16-risk", gates.fail_if_fp16_risk,
               "exit 1 if a model is at risk in fp16 (its range, or a tensor that overflows or flushes to zero)");
  app.add_option("--max-abs", gates.max_abs, "exit 1 if a model's largest |weight| exceeds X")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-norm", gates.max_norm, "exit 1 if a model's largest tensor L2 norm exceeds X")
      ->check(CLI::NonNegativeNumber);
  auto* unsafe = app.add_flag("--fail-if-unsafe", gates.fail_if_unsafe,
                              "exit 1 if loading a model would unpickle a dangerous global (docs/security.md)");
  auto* verify = app.add_flag(
      "--verify", text.verify,
      "exit 1 if a weight file's SHA-256 is not the one the HF cache names its blob by (or --verify-manifest "
      "gives; for a remote file, the Hub's LFS SHA-256, hashed as the scan reads it), naming the file");
  app.add_option("--verify-manifest", text.verify_manifest,
                 "with --verify: sha256sum's output for files outside the HF cache (paths relative to FILE)")
      ->check(CLI::ExistingFile)
      ->needs(verify);
  app.add_flag("--fail-if-nonfinite", gates.fail_if_nonfinite,
               "exit 1 if a tensor of a model (a parameter or a buffer) holds NaN or Inf, naming the tensors");
  app.add_flag("--strict-safety", gates.strict_safety,
               "with --fail-if-unsafe: also exit 1 for a model whose safety is unverified")
      ->needs(unsafe);
}

/// --io, into a ReadMode (diff: mmap unless given) or an optional one (scan: unset picks the device's best).
template <typename Mode>
void add_io_option(CLI::App& app, Mode& mode, std::string_view default_mode) {
  static const std::map<std::string, ReadMode> kModes{{"mmap", ReadMode::kMmap}, {"pread", ReadMode::kPread}};
  app.add_option("--io", mode,
                 fmt::format("how weights are read: mmap (from the page cache) or pread (parallel reads; for cold "
                             "disks and network filesystems); default: {}",
                             default_mode))
      ->transform(CLI::CheckedTransformer(kModes, CLI::ignore_case))
      ->option_text("mmap|pread");
}

/// The scan options live on the top-level command; `scan` is an alias that hands its arguments back up.
void add_scan_options(CLI::App& app, ScanOptions& options, ScanText& text) {
  app.add_option("paths", options.inputs, "model folders, checkpoint files, index files or HF ids");
  app.add_flag("--safety-only", options.safety_only,
               "judge only whether each model is safe to load: its files' structure, pickles, configs and templates "
               "are read, no tensor values (no statistics, no verdict); a 100 GB folder in the time its headers take");
  app.add_flag("--headers-only", options.headers_only,
               "what --safety-only reads, and from the headers each tensor's dtype, shape and size, the census and the "
               "footprint; no tensor values (no statistics, no verdict): a remote model in kilobytes")
      ->excludes("--safety-only");
  static const std::map<std::string, OutputFormat> kFormats{
      {"table", OutputFormat::kTable},   {"json", OutputFormat::kJson},         {"jsonl", OutputFormat::kJsonl},
      {"csv", OutputFormat::kCsv},       {"markdown", OutputFormat::kMarkdown}, {"sarif", OutputFormat::kSarif},
      {"github", OutputFormat::kGithub}, {"junit", OutputFormat::kJunit},       {"gitlab", OutputFormat::kGitlab}};
  app.add_option("--format", options.format,
                 "table (default), json (docs/json-schema.md), jsonl (a line per model), csv (a row per tensor), "
                 "markdown (the table of stas00's notebook), or for CI systems (docs/using.md, \"CI systems\"): "
                 "sarif (GitHub code scanning), github (workflow annotations, and the table in the job summary), "
                 "junit (JUnit XML) or gitlab (GitLab Code Quality)")
      ->transform(CLI::CheckedTransformer(kFormats, CLI::ignore_case))
      ->option_text("table|json|jsonl|csv|markdown|sarif|github|junit|gitlab");
  app.add_flag_callback(
         "--json", [&options] { options.format = OutputFormat::kJson; }, "print the JSON document (--format json)")
      ->excludes("--format");
  app.add_option("-o,--output", options.output, output_help("what --format gives"));
  app.add_option("--json-output", options.json_output, json_output_help());
  app.add_option("--report", options.report,
                 "also write a self-contained HTML page to FILE: verdict, evidence and charts (works offline)");
  app.add_option("--sarif-root", options.ci_root,
                 "sarif, github, junit and gitlab name weight files relative to DIR, the repository's root "
                 "(default: the current directory)")
      ->check(CLI::ExistingDirectory)
      ->option_text("DIR");
  app.add_flag("--annotate", options.annotate,
               "under GitHub Actions (GITHUB_ACTIONS=true): also print the findings as annotations on stderr and "
               "append the table to the job summary, whatever --format prints");
  app.add_flag("-v,--verbose", options.verbose,
               "table: per-tensor rows, fp16 cast counts, groups and the exponent chart; markdown: groups");
  app.add_option("--device", options.device, "cpu, cuda, cuda:N or auto (CUDA when available)")
      ->check(device_validator());
  add_io_option(app, options.read_mode, "pread on CUDA, whose staging buffers copy every byte anyway; mmap on the CPU");
  app.add_option("--gpu", text.gpu,
                 "plan the advice for this GPU (T4, V100, A100, H100, ..., or a compute capability: 7.5, sm_75) or "
                 "cpu; default: any GPU with bf16 (docs/using.md, \"What should I run it in?\")")
      ->check(gpu_validator());
  app.add_option("--include", text.include, "analyze only tensors whose name matches REGEX");
  app.add_option("--exclude", text.exclude, "skip tensors whose name matches REGEX");
  app.add_option("--rules", text.rules, "classification rules file replacing the built-in ones (docs/rules.md)")
      ->check(CLI::ExistingFile);
  app.add_option("--registry", text.registry,
                 "registry of known models' documented precisions replacing the built-in one (docs/method.md)")
      ->check(CLI::ExistingFile);
  add_batch_options(app, options, text);
  add_gate_options(app, options.gates, text);
}

struct DiffArguments {
  DiffCommand command;
  std::vector<std::string> paths;
  std::string include, exclude;
};

void add_diff_options(CLI::App& diff, DiffArguments& args) {
  diff.add_option("paths", args.paths, "BASE, then one or more OTHER checkpoints (several: a trajectory, in order)")
      ->required()
      ->expected(2, 1 << 16)
      ->option_text("BASE OTHER...");
  diff.add_flag("--json", args.command.json, "print the JSON document (docs/diff.md) instead of the table");
  diff.add_option("-o,--output", args.command.output, output_help("the table, or the JSON document with --json,"));
  diff.add_option("--json-output", args.command.json_output, json_output_help());
  diff.add_option("--rtol", args.command.tolerances.rtol, "allclose relative tolerance (default 1e-5)")
      ->check(CLI::NonNegativeNumber);
  diff.add_option("--atol", args.command.tolerances.atol, "allclose absolute tolerance (default 1e-8)")
      ->check(CLI::NonNegativeNumber);
  diff.add_option("--eta", args.command.tolerances.eta, "bf16-aware sparsity tolerance (default 1e-3)")
      ->check(CLI::NonNegativeNumber);
  diff.add_flag("--bitwise", args.command.tolerances.bitwise, "bf16-aware sparsity by bf16 bit equality");
  diff.add_option("--top", args.command.top, "most-changed tensors shown per pair (default 20)");
  diff.add_flag("--fail-if-changed", args.command.fail_if_changed, "exit 1 when any pair differs");
  diff.add_option("--device", args.command.device, "cpu, cuda, cuda:N or auto (CUDA when available)")
      ->check(device_validator());
  add_io_option(diff, args.command.read_mode, "mmap");
  diff.add_option("--include", args.include, "compare only tensors whose name matches REGEX");
  diff.add_option("--exclude", args.exclude, "skip tensors whose name matches REGEX");
}

}  // namespace

CommandLine parse_command_line(int argc, const char* const* argv) {
  ScanOptions options;
  ScanText text;
  bool print_rules = false, print_registry = false;
  CLI::App app("precdetect: was this checkpoint pretrained in fp16, bf16 or fp32, and is it safe in fp16?",
               "precdetect");
  app.footer(footer());
  app.set_version_flag("--version", std::string("precdetect ") + PRECDETECT_VERSION);
  add_scan_options(app, options, text);
  app.add_flag("--print-rules", print_rules, "print the built-in rules file (a starting point for --rules)");
  app.add_flag("--print-registry", print_registry,
               "print the built-in registry of known models (a starting point for --registry)");
  CLI::App* scan = app.add_subcommand("scan", "scan models (the default command)");
  scan->fallthrough();
  scan->add_option("paths", options.inputs, "model folders, checkpoint files, index files or HF ids");
  DiffArguments diff_args;
  CLI::App* diff = app.add_subcommand("diff", "compare checkpoints tensor by tensor: precdetect diff BASE OTHER...");
  add_diff_options(*diff, diff_args);
  MergeCommand merge_command;
  CLI::App* merge = app.add_subcommand("merge", "combine --jsonl outputs (of --shard runs) into one JSON document");
  merge->add_option("files", merge_command.files, "JSONL files written by precdetect --jsonl")
      ->required()
      ->check(CLI::ExistingFile);
  merge->add_option("-o,--output", merge_command.output, output_help("the merged JSON document"));
  merge->add_option("--report", merge_command.report, "also write the HTML report of the merged document to FILE");
  merge->add_flag("--partial", merge_command.partial,
                  "merge the parts present when some are missing or cut short (the document lists them)");

  CommandLine result;
  std::ostringstream out, err;
  try {
    app.parse(argc, argv);
    if (print_rules) return {.exit_code = 0, .out = default_rules_json()};
    if (print_registry) return {.exit_code = 0, .out = default_registry_json()};
    if (*merge) {
      result.merge = std::move(merge_command);
      return result;
    }
    if (*diff) {
      DiffCommand& command = diff_args.command;
      command.base = diff_args.paths.front();
      command.others.assign(diff_args.paths.begin() + 1, diff_args.paths.end());
      command.filter = {compile_regex(diff_args.include, "--include"), compile_regex(diff_args.exclude, "--exclude")};
      result.diff = std::move(command);
      return result;
    }
    if (options.inputs.empty() && options.lists.empty() && !options.hf_cache)
      throw CLI::RequiredError("PATH, --from or --hf-cache (at least one model)");
    const Gates& gates = options.gates;
    if ((options.safety_only || options.headers_only) &&
        (gates.expect || !gates.fail_on.empty() || gates.fail_if_fp16_risk || gates.max_abs || gates.max_norm ||
         gates.fail_if_nonfinite))
      throw CLI::ValidationError(
          options.safety_only ? "--safety-only" : "--headers-only",
          "reads no tensor values: of the gates only --fail-if-unsafe, --strict-safety and --verify apply");
    if (options.safety_only && options.format == OutputFormat::kCsv)
      throw CLI::ValidationError("--format csv",
                                 "holds one row of statistics per tensor, and --safety-only reads none: use table, "
                                 "json, markdown or a CI format");
    if (!text.shard.empty()) options.shard = *parse_shard(text.shard);
    take_github_environment(options);
    if (text.no_cache) options.cache.reset();
    options.filter = {compile_regex(text.include, "--include"), compile_regex(text.exclude, "--exclude")};
    if (!text.rules.empty()) options.rules = text.rules;
    if (!text.registry.empty()) options.registry = text.registry;
    if (!text.gpu.empty()) options.gpu = *parse_gpu(text.gpu);
    if (text.verify) options.gates.verify = manifest_of(text.verify_manifest);
    result.scan = std::move(options);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e, out, err);
    // CLI11 returns 0 for --help/--version; every real parse error is a run that could not be made.
    result.exit_code = code == 0 ? 0 : static_cast<int>(ExitCode::kNotRun);
  }
  result.out = out.str();
  result.err = err.str();
  return result;
}

}  // namespace precdetect
