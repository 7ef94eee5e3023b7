#pragma once
/// Everything a run needs, validated: the CLI's only product.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "precdetect/analyze/tensor_filter.h"
#include "precdetect/app/verify.h"
#include "precdetect/classify/gpu.h"
#include "precdetect/core/label.h"
#include "precdetect/discover/input_list.h"
#include "precdetect/kernel/diff_options.h"
#include "precdetect/load/source/byte_source.h"

namespace precdetect {

/// Documented in docs/using.md and --help.
/// docs/errors.md. 0-2 finish the run (its output is complete); 3 and 4 say no result was made, so that a scheduler
/// can count a finished scan as done whatever it found.
enum class ExitCode : int {
  kSuccess = 0,       ///< every model scanned (and every gate passed)
  kGateFailed = 1,    ///< a gate failed (scan's Gates, `diff --fail-if-changed`); wins over kModelFailed
  kModelFailed = 2,   ///< a model (or a pair, in diff) could not be scanned; the others were
  kNotRun = 3,        ///< the run could not be made: a usage error, bad --rules, no device, nothing to scan, ...
  kMergeRefused = 4,  ///< `merge` was given an incomplete or mixed set of shards
};

struct DiffCommand {
  std::string base;
  std::vector<std::string> others;  ///< compared with base in order (a training trajectory)
  DiffOptions tolerances;
  bool json = false;
  std::optional<std::filesystem::path> output;
  size_t top = 20;  ///< most-changed tensors shown per pair in the table
  std::string device = "auto";
  ReadMode read_mode = ReadMode::kMmap;
  TensorFilter filter;
  bool fail_if_changed = false;  ///< exit 1 when any pair differs (a lossless-conversion check)
};

/// `precdetect merge`: --jsonl outputs of shards combined into one JSON document.
struct MergeCommand {
  std::vector<std::filesystem::path> files;
  std::optional<std::filesystem::path> output;
  std::optional<std::filesystem::path> report;  ///< also write the HTML report of the merged document here
  bool partial = false;  ///< merge the parts present when some are missing or cut short (listed, never silent)
};

/// CI gates on each scanned model (docs/using.md): a violated one makes the exit status 1.
struct Gates {
  std::optional<Label> expect;  ///< every model must be classified this label
  std::vector<Label> fail_on;   ///< no model may be classified any of these labels
  bool fail_if_fp16_risk = false;
  std::optional<double> max_abs;   ///< the largest |weight| allowed
  std::optional<double> max_norm;  ///< the largest per-tensor L2 norm allowed
  bool fail_if_unsafe = false;     ///< no model may import a dangerous global (docs/security.md)
  bool fail_if_nonfinite = false;  ///< no tensor of a model, parameter or buffer, may hold NaN or Inf
  /// --verify: every weight file has the SHA-256 this manifest (empty: none given) or the HF cache names it by
  std::optional<Manifest> verify;
  bool strict_safety = false;  ///< with fail_if_unsafe: nor anything unverified
};

/// What a scan prints on stdout (--format; --json and --jsonl are its short forms). kSarif, kGithub, kJunit and
/// kGitlab are the CI systems' formats (docs/using.md, "CI systems").
enum class OutputFormat { kTable, kJson, kJsonl, kCsv, kMarkdown, kSarif, kGithub, kJunit, kGitlab };

struct ScanOptions {
  std::vector<std::string> inputs;
  std::vector<std::string> lists;  ///< --from files naming more inputs ("-": standard input)
  bool recursive = false;          ///< a folder input stands for every model folder under it
  bool all_formats = false;        ///< a folder's weights in each format it holds: a model each
  bool hf_cache = false;           ///< also scan every model in the local Hugging Face cache
  bool all_revisions = false;      ///< with hf_cache: every snapshot, not only the one refs/main names
  std::optional<Shard> shard;      ///< scan only this part of the inputs (--shard K/N)
  size_t jobs = 0;                 ///< models scanned at once; 0: the default for the device
  bool quiet = false;              ///< no progress line and no warnings on stderr (errors still)
  /// --safety-only: each model's files opened and their structure read (headers, archive directories, pickles,
  /// configs, templates), safety judged; no tensor's values read, no statistics, no verdict
  bool safety_only = false;
  /// --headers-only: the read --safety-only makes, and from the headers the census and footprint (each tensor's
  /// dtype, shape and size, the model's totals per dtype); no tensor's values read, no statistics, no verdict
  bool headers_only = false;
  std::optional<std::filesystem::path> cache;  ///< the SQLite results cache (--cache, $PRECDETECT_CACHE)
  /// kJsonl: one JSON line per model as it finishes, then a summary line
  OutputFormat format = OutputFormat::kTable;
  std::optional<std::filesystem::path> output;  ///< also write the JSON document here, atomically
  std::optional<std::filesystem::path> report;  ///< also write the HTML report here, atomically
  /// --sarif-root: the folder the CI formats name weight files relative to (empty: the current directory)
  std::filesystem::path ci_root;
  bool annotate = false;  ///< --annotate, under GITHUB_ACTIONS=true: the findings as GitHub annotations on stderr too
  /// $GITHUB_STEP_SUMMARY, for --format github and --annotate: the Markdown table is appended to it
  std::optional<std::filesystem::path> step_summary;
  bool verbose = false;  ///< per-tensor rows, cast counts and exponent chart in the table; groups in markdown
  std::string device = "auto";
  std::optional<ReadMode> read_mode;  ///< --io; unset: what the device reads best (Analyzer::preferred_read_mode)
  TensorFilter filter;
  std::optional<std::filesystem::path> rules;
  std::optional<std::filesystem::path> registry;  ///< --registry: replaces the built-in registry of known models
  GpuClass gpu = assumed_gpu();                   ///< --gpu: the machine the advice plans for
  Gates gates;
};

}  // namespace precdetect
