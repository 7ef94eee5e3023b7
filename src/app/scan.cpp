#include "precdetect/app/scan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <thread>

#include "precdetect/analyze/analyzer.h"
#include "precdetect/analyze/model_analysis.h"
#include "precdetect/app/gates.h"
#include "precdetect/app/output.h"
#include "precdetect/app/peft_config.h"
#include "precdetect/app/progress.h"
#include "precdetect/app/rule_files.h"
#include "precdetect/classify/judge.h"
#include "precdetect/core/confinement.h"
#include "precdetect/core/error.h"
#include "precdetect/core/format.h"
#include "precdetect/core/output_file.h"
#include "precdetect/discover/discover.h"
#include "precdetect/discover/hf_cache.h"
#include "precdetect/discover/input_list.h"
#include "precdetect/load/checkpoint.h"
#include "precdetect/load/components.h"
#include "precdetect/net/http.h"
#include "precdetect/net/remote_env.h"
#include "precdetect/net/remote_text.h"
#include "precdetect/net/streamed_sha256.h"
#include "precdetect/net/url.h"
#include "precdetect/quantize/linked_checkpoint.h"
#include "precdetect/report/batch_counts.h"
#include "precdetect/report/csv_report.h"
#include "precdetect/report/github_report.h"
#include "precdetect/report/gitlab_report.h"
#include "precdetect/report/html_report.h"
#include "precdetect/report/json_report.h"
#include "precdetect/report/junit_report.h"
#include "precdetect/report/markdown_report.h"
#include "precdetect/report/sarif_report.h"
#include "precdetect/report/table_report.h"
#include "precdetect/safety/examine.h"
#include "precdetect/safety/inventory_judge.h"

namespace precdetect {
namespace {

/// The JSON lines of --jsonl: a line per model as it finished, which `streamed` printed on stdout already, then
/// the summary line; for -o FILE (not streamed), every model's line in the inputs' order before it.
std::string json_lines(const ScanReport& report, bool streamed) {
  std::string lines;
  if (!streamed)
    for (const ModelReport& model : report.models) lines += json_text(model_line_json(model), -1);
  return lines + json_text(batch_summary_json(report), -1);
}

/// What --format gives, for -o or stdout.
std::string rendered(const ScanReport& report, const nlohmann::ordered_json& document, const ScanOptions& options,
                     bool lines_streamed) {
  switch (options.format) {
    case OutputFormat::kTable:
      return render_table(report, options.verbose);
    case OutputFormat::kJson:
      return json_text(document, 2);
    case OutputFormat::kJsonl:
      return json_lines(report, lines_streamed);
    case OutputFormat::kCsv:
      return render_csv(report);
    case OutputFormat::kMarkdown:
      return render_markdown(report, options.verbose);
    case OutputFormat::kSarif:
      return json_text(sarif_json(report, options.ci_root), 2);
    case OutputFormat::kGithub:
      return render_github(report, options.ci_root);
    case OutputFormat::kJunit:
      return render_junit(report);
    case OutputFormat::kGitlab:
      return json_text(gitlab_json(report, options.ci_root), 2);
  }
  return render_table(report, options.verbose);
}

/// --annotate in GitHub Actions: the annotations on stderr, beside whatever stdout carries (the runner reads
/// workflow commands on both); and for it and --format github, the table in the job summary.
void publish_to_github(const ScanReport& report, const ScanOptions& options) {
  if (options.annotate && options.format != OutputFormat::kGithub)  // stdout holds them already
    fmt::print(stderr, "{}", render_github(report, options.ci_root));
  if (options.step_summary)
    append_output_file(*options.step_summary, "### precdetect\n\n" + render_markdown(report, false) + "\n");
}

}  // namespace

void take_analysis(ModelReport& report, ModelAnalysis analysis) {
  report.warnings.insert(report.warnings.end(), analysis.warnings.begin(), analysis.warnings.end());
  report.summary = std::move(analysis.summary);
  report.buffers = std::move(analysis.buffers);
  report.tensors = std::move(analysis.tensors);
}

void fail_model(ModelReport& report, ModelError error) {
  report.error = std::move(error);
  report.summary = {};  // a failed model reports no partial statistics
  report.metadata = nullptr;
  report.buffers = {};
  report.tensors.clear();
  report.verdict = {};
}

namespace {

std::vector<std::string> tensor_names(const ModelAnalysis& analysis) {
  std::vector<std::string> names;
  for (const AnalyzedTensor& tensor : analysis.tensors) names.push_back(tensor.name);
  return names;
}

/// An adapter's pretraining answer is its base's: the base is scanned where it lies on this machine (the HF cache,
/// a path); nullopt when the adapter names none, which a warning says.
std::optional<ModelReport> scan_adapter_base(ModelReport& report, const ScanOptions& options,
                                             const Judgement& judgement, Analyzer& analyzer, StatsCache* cache) {
  const Adapter& adapter = *report.adapter;
  if (!adapter.base_model) {
    report.warnings.push_back({.code = WarningCode::kAdapterWithoutBase, .names = {adapter.found_by}});
    return std::nullopt;
  }
  ModelReport base = scan_model(*adapter.base_model, options, judgement, analyzer, cache, BaseFollowing::kNo);
  bool absent = base.error && (base.error->code == ErrorCode::kNotFound || base.error->code == ErrorCode::kHfCacheMiss);
  if (!absent) report.base_scan = BaseScan{.path = base.path, .verdict = base.verdict, .error = base.error};
  return base;
}

/// A base that could not be scanned leaves the registry's entry for it (judge), or nothing, which a warning says.
void warn_if_base_unknown(ModelReport& report, const std::optional<ModelReport>& base) {
  if (base && base->error && !report.verdict.documented)
    report.warnings.push_back(
        {.code = WarningCode::kAdapterBaseUnknown, .names = {*report.adapter->base_model, base->error->message}});
}

/// True for a failure that came after the model's files were read whole: a bare pickle (no checkpoint), a model of
/// no tensors, a pickle refused as unsafe (judged already), a GPU that failed. Any other is a structure the reading
/// stopped at, which a crafted file may have made it stop at.
bool read_to_its_end(ErrorCode code) {
  return code == ErrorCode::kNotACheckpoint || code == ErrorCode::kNoTensors || code == ErrorCode::kUnsafePickle ||
         code == ErrorCode::kDevice;
}

/// `report` with its safety judged, whatever became of the scan: the examination stands apart from loading (an
/// unsafe pickle is often why a model failed), and the scan's reads of the weights come first. It asks the formats
/// the load opened for their pickles, so that no file's structure is read twice. A model not read to its end is
/// never safe: what stopped it is tampering (a path out of the model) or unverified.
ModelReport examined(ModelReport& report, const std::optional<ModelSource>& source,
                     const std::optional<LinkedCheckpoint>& checkpoint) {
  if (source) report.safety = examine_model(*source, checkpoint ? &*checkpoint : nullptr);
  // A model refused before its files were listed for a path out of it (an index naming ../) is unsafe all the same.
  if (!source && report.error && report.error->code == ErrorCode::kPathEscape) report.safety = Safety{};
  // The rest of its input's files accounted to it: judged whether or not the model itself could be read.
  if (report.inventory) {
    if (source) dispose(*report.inventory, *source);
    if (!report.safety) report.safety = Safety{};
    examine_inventory(*report.inventory, *report.safety);
  }
  if (report.safety && report.error && !read_to_its_end(report.error->code)) {
    bool escape = report.error->code == ErrorCode::kPathEscape;
    auto is_escape = [](const SafetyTampering& item) {
      return item.kind == TamperingKindOf(FileTampering::kPathEscape);
    };
    // A link the walk of the folder named already is that failure's cause.
    if (escape && std::any_of(report.safety->tampering.begin(), report.safety->tampering.end(), is_escape))
      return std::move(report);
    if (escape)
      report.safety->add_tampering(
          {.kind = FileTampering::kPathEscape, .detail = report.error->message, .file = report.path});
    else
      report.safety->unverified.push_back(fmt::format("not read to its end: {}", report.error->message));
  }
  return std::move(report);
}

/// --headers-only: what the checkpoint's records say, without their values: each tensor's dtype, shape and size,
/// the census and footprint (census_model), what the file's own header says (GGUF's key/values), and the
/// documented precision of the model its name or config.json names (the registry needs no values; no verdict
/// weighs it).
void read_headers(ModelReport& report, const ModelSource& source, const LinkedCheckpoint& checkpoint,
                  const ScanOptions& options, const Judgement& judgement) {
  if (!checkpoint.metadata.empty()) report.metadata = nlohmann::ordered_json::parse(checkpoint.metadata);
  report.warnings = checkpoint.warnings;
  take_analysis(report, census_model(checkpoint, options.filter, judgement.rules.buffers));
  report.verdict.documented =
      find_documented(judgement.registry, identify_model(report.input, source.path, checkpoint.config));
  report.headers_read = true;
}

/// A remote model's report says how many bytes its reading moved, and which of its files no validator pinned.
ModelReport metered(ModelReport report, const TransferMeter& meter) {
  if (is_url(report.input)) report.bytes_transferred = meter.bytes();
  warn_about(report.warnings, WarningCode::kRemoteUnpinned, "", meter.unpinned());
  return report;
}

}  // namespace

ModelReport scan_model(const std::string& input, const ScanOptions& options, const Judgement& judgement,
                       Analyzer& analyzer, StatsCache* cache, BaseFollowing base_following,
                       std::optional<Inventory> inventory, Named named) {
  ModelReport report;
  report.input = report.path = input;
  report.inventory = std::move(inventory);
  TransferMeter meter;  // before the sources: a remote file counts into it until it is closed
  // --verify of a remote model: each file hashed as it is read (before the sources, as the meter).
  std::optional<StreamedVerification> verification;
  if (options.gates.verify && is_url(input)) verification.emplace();
  auto verified = [&](bool values_read) {
    if (verification) report.streamed_digests = verification->finish(values_read);
  };
  std::optional<ModelSource> source;
  std::optional<LinkedCheckpoint> checkpoint;
  std::optional<ComponentInput> component = component_input(input);
  try {
    source = discover(component ? component->file : input, hf_hub_cache(), named);
    report.path = source->path.string();
    report.root = source->root;
    for (const auto& file : source->files) report.files.push_back(file.string());
    checkpoint = open_model(*source, options.read_mode.value_or(analyzer.preferred_read_mode()));
    if (component) keep_component(*checkpoint, component->component, source->path.string());
    report.format = format_info(checkpoint->format).report_name;
    if (options.safety_only || options.headers_only) {
      report.values_read = false;
      if (options.headers_only) read_headers(report, *source, *checkpoint, options, judgement);
      verified(false);
      return metered(examined(report, source, checkpoint), meter);
    }
    if (!checkpoint->metadata.empty()) report.metadata = nlohmann::ordered_json::parse(checkpoint->metadata);
    ModelAnalysis analysis = analyze_model(*checkpoint, options.filter, judgement.rules.buffers, analyzer, cache);
    verified(true);  // what the analysis left unread (a cached tensor's bytes) is read to finish the hashes
    report.warnings = checkpoint->warnings;
    report.adapter = identify_adapter(read_peft_config(*source), tensor_names(analysis));
    take_analysis(report, std::move(analysis));
    std::optional<ModelReport> base;
    if (report.adapter && base_following == BaseFollowing::kYes)
      base = scan_adapter_base(report, options, judgement, analyzer, cache);
    report.verdict = judge({.summary = report.summary,
                            .tensors = report.tensors,
                            .identity = identify_model(input, source->path, checkpoint->config),
                            .records = checkpoint->records,
                            .adapter = report.adapter ? &*report.adapter : nullptr,
                            .base_verdict = base && !base->error ? &base->verdict : nullptr,
                            .gguf_names = checkpoint->format == FileFormat::kGguf},
                           judgement);
    warn_if_base_unknown(report, base);
  } catch (const Error& e) {
    fail_model(report, {e.code(), e.what()});
  } catch (const std::exception& e) {
    // Not ours (libtorch, the standard library): still one model's failure, never the batch's.
    fail_model(report, {ErrorCode::kInternal, fmt::format("{}: {}", input, e.what())});
  }
  if (report.error && report.streamed_digests.empty()) verified(false);  // a failed scan verifies nothing
  return metered(examined(report, source, checkpoint), meter);
}

namespace {

/// The run's models: the PATHs, each --from list's entries, then the HF cache's models; with --recursive a folder
/// stands for the model folders under it (an input that expands to nothing stays as typed, so its own error is
/// reported for it); with --shard only this shard's part. Each is then one model, or the several a folder holds
/// (models_in: one per independent checkpoint, one per pipeline component).
struct RunPlan {
  std::vector<std::string> models;
  /// Per model: the bytes moved while planning its input (a Hub repository's or S3 folder's listing, a remote
  /// file's header read to split it into components), counted to the input's first model so that the models'
  /// bytes_transferred add up to everything the run moved.
  std::vector<uint64_t> planning_bytes;
  std::optional<ShardPart> part;  ///< with --shard, the part these models are
  /// With --shard, each model's place in the whole list: its input's index, its index among that input's models.
  std::vector<ListPosition> positions;
  /// Per model: the files of its typed input accounted to it (discover/inventory.h); nullopt for a remote one.
  std::vector<std::optional<Inventory>> inventories;
  /// Per model: who named it (a model that models_in split out of its input is confined to the input's folder).
  std::vector<Named> named;
};

/// The one weight file of `model`, when it is one file, and the root its opens are confined to. A file named by URL
/// (an https file, an S3 object) is known without a request: its discovery would ask for the texts beside it, which
/// its scan does anyway. A Hub repository or S3 folder is listed (the run keeps the listing for its scan:
/// net/remote_text).
std::optional<std::pair<std::filesystem::path, ModelRoot>> single_file_of(const std::string& model, Named named) {
  if (std::optional<std::string> url = http_url_of(model); url && !model.ends_with('/')) {
    if (url_file_name(*url).ends_with(".index.json")) return std::nullopt;
    return std::pair{std::filesystem::path(*url), ModelRoot{}};
  }
  ModelSource source = discover(model, hf_hub_cache(), named);
  if (source.files.size() != 1) return std::nullopt;
  return std::pair{source.files.front(), source.root};
}

/// A single-file pipeline checkpoint as its components ("sd_xl_base_1.0.safetensors#vae", ...: load/components.h);
/// any other model as itself. Only a model of one file is opened to see (a folder of one file too: ComfyUI's
/// models/checkpoints may hold one); a folder of several models was split into them by models_in.
std::vector<std::string> components_of(const std::string& model, Named named) {
  try {
    if (component_input(model)) return {model};
    std::optional<std::pair<std::filesystem::path, ModelRoot>> file = single_file_of(model, named);
    // The layouts are saved as safetensors and as torch's .ckpt: other formats are not opened twice to see. A
    // remote file is read here by range, its header only: a remote torch file's directory and pickle would move
    // twice, so it is split only when a component is named (URL#vae, docs/using.md).
    std::string extension = file ? file->first.extension().string() : "";
    if (!may_hold_a_pipeline(extension) || (is_url(model) && extension != ".safetensors")) return {model};
    std::vector<std::string> parts;
    Confined confined(file->second);
    for (const std::string& name : file_components(file->first)) parts.push_back(fmt::format("{}#{}", model, name));
    if (!parts.empty()) return parts;
  } catch (const std::exception&) {  // scanning it as typed names the problem
  }
  return {model};
}

/// Each planned model's share of its typed input's inventory: the input listed once, its files accounted to the
/// models it stands for (`typed_of`: each model's typed input, `folders`: the path each names, model_path's).
void plan_inventories(RunPlan& plan, const std::vector<std::string>& typed, const std::vector<size_t>& typed_of,
                      const std::vector<std::optional<std::filesystem::path>>& folders) {
  plan.inventories.resize(plan.models.size());
  for (size_t input = 0; input < typed.size(); ++input) {
    std::vector<size_t> models;
    for (size_t model = 0; model < plan.models.size(); ++model)
      if (typed_of[model] == input) models.push_back(model);
    if (models.empty()) continue;
    std::optional<Inventory> listing = list_input(typed[input], hf_hub_cache());
    if (!listing) continue;
    std::vector<std::optional<std::filesystem::path>> model_folders;
    for (size_t model : models) model_folders.push_back(folders[model]);
    std::vector<Inventory> accounted = account(*listing, model_folders);
    for (size_t k = 0; k < models.size(); ++k) plan.inventories[models[k]] = std::move(accounted[k]);
  }
}

RunPlan plan_run(const ScanOptions& options) {
  std::vector<std::string> inputs;
  std::vector<std::string> typed;      // the inputs as the user gave them
  std::vector<size_t> typed_of_input;  // the typed input each of `inputs` stands for (--recursive: its folders)
  auto add = [&](const std::string& input) {
    typed.push_back(input);
    std::error_code ec;
    if (options.recursive && std::filesystem::is_directory(input, ec)) {
      try {
        std::vector<std::string> found = find_model_folders(input);
        if (!found.empty()) {
          inputs.insert(inputs.end(), found.begin(), found.end());
          typed_of_input.resize(inputs.size(), typed.size() - 1);
          return;
        }
      } catch (const Error&) {  // an unwalkable folder: scanned as one model, which names the problem
      }
    }
    inputs.push_back(input);
    typed_of_input.push_back(typed.size() - 1);
  };
  for (const std::string& input : options.inputs) add(input);
  for (const std::string& list : options.lists)
    for (const std::string& input : read_input_list(list)) add(input);
  if (options.hf_cache)
    for (const std::string& id : cached_models(hf_hub_cache(), options.all_revisions)) {
      typed.push_back(id);
      inputs.push_back(id);
      typed_of_input.push_back(typed.size() - 1);
    }
  RunPlan plan;
  if (options.shard) plan.part = ShardPart{.shard = *options.shard, .inputs_digest = inputs_digest(inputs)};
  std::vector<size_t> typed_of;                               // per model
  std::vector<std::optional<std::filesystem::path>> folders;  // per model
  for (uint64_t index = 0; index < inputs.size(); ++index) {
    if (options.shard && !in_shard(inputs[index], *options.shard)) continue;
    if (plan.part) ++plan.part->inputs;
    uint64_t of_input = 0;
    std::vector<std::string> parts;
    std::vector<std::optional<std::filesystem::path>> part_folders;
    std::vector<Named> part_named;
    TransferMeter meter;
    for (const std::string& model : models_in(inputs[index], hf_hub_cache(), options.all_formats)) {
      std::optional<std::filesystem::path> folder = model_path(model, hf_hub_cache());
      Named named = model == inputs[index] ? Named::kByUser : Named::kByDiscovery;
      for (std::string& part : components_of(model, named)) {
        parts.push_back(std::move(part));
        part_folders.push_back(folder);
        part_named.push_back(named);
      }
    }
    for (size_t k = 0; k < parts.size(); ++k) {
      plan.planning_bytes.push_back(of_input == 0 ? meter.bytes() : 0);
      plan.models.push_back(std::move(parts[k]));
      typed_of.push_back(typed_of_input[index]);
      folders.push_back(part_folders[k]);
      plan.named.push_back(part_named[k]);
      if (plan.part) plan.positions.push_back({index, of_input});
      ++of_input;
    }
  }
  plan_inventories(plan, typed, typed_of, folders);
  return plan;
}

/// Models scanned at once by default: a few on the CPU (small models and file I/O overlap; a large tensor uses
/// every core anyway), two on a GPU (one loads while the other computes).
size_t default_jobs(const ComputeDevice& device) {
  if (device.cuda) return 2;
  return std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 4);
}

/// Tells the user about a finished model at once: its error or violated gates on stderr, its JSONL line.
void announce(const ModelReport& model, bool jsonl, Progress& progress) {
  progress.clear();  // stdout may be the same terminal: nothing is printed after half a progress line
  if (model.error) fmt::print(stderr, "precdetect: {}\n", model.error->message);
  for (const GateFailure& failure : model.gate_failures)
    fmt::print(stderr, "precdetect: gate failed: {}: {}\n", model.path, failure.reason);
  if (jsonl) print_json_line(model_line_json(model));
  uint64_t read = 0;  // every tensor was read: buffers and optimizer state too, not only the parameters
  for (const TensorReport& tensor : model.tensors) read += tensor.nbytes;
  progress.finished(read);
}

/// Each model's warnings on stderr, one line each, after the results: a table, CSV or Markdown reader sees them
/// too (JSON carries them in the document).
void print_warnings(const ScanReport& report) {
  for (const ModelReport& model : report.models)
    for (const Warning& warning : model.warnings)
      fmt::print(stderr, "precdetect: warning: {}: {}\n", model.input, warning.message());
}

}  // namespace

ScanReport scan_all(const ScanOptions& options, const ScanEvents& events) {
  RuleSet rules = run_rules(options);
  Registry registry = run_registry(options);
  ComputeDevice device = resolve_device(options.device);
  RemoteTexts texts;  // the run's: its plan and its scans read each listing and text once
  RemoteTexts::Scope planning(texts);
  RunPlan plan = plan_run(options);
  const std::vector<std::string>& inputs = plan.models;
  if (inputs.empty() && !plan.part)
    throw Error(ErrorCode::kNotFound, "no models to scan (empty --from lists or the HF cache)");
  ScanReport report{
      .models = std::vector<ModelReport>(inputs.size()), .shard = plan.part, .gates = checked_gates(options.gates)};
  std::unique_ptr<StatsCache> cache = options.cache ? StatsCache::open(*options.cache) : nullptr;
  std::mutex reporting;
  // One analyzer per worker, made here: a device that cannot give them fails the run, not a worker thread.
  size_t jobs = std::min(options.jobs ? options.jobs : default_jobs(device), inputs.size());
  std::vector<Analyzer> analyzers;
  while (analyzers.size() < jobs) analyzers.emplace_back(device);
  if (events.planned) events.planned(inputs.size());
  if (inputs.empty()) return report;  // a --shard part that no input fell in: complete, and empty
  std::atomic<size_t> next = 0;
  auto worker = [&](Analyzer& analyzer) {
    RemoteTexts::Scope scanning(texts);
    for (size_t i = next++; i < inputs.size(); i = next++) {
      if (events.started) {
        std::lock_guard lock(reporting);
        events.started(inputs[i]);
      }
      ModelReport model = scan_model(inputs[i], options, {rules, registry, options.gpu}, analyzer, cache.get(),
                                     BaseFollowing::kYes, std::move(plan.inventories[i]), plan.named[i]);
      model.gate_failures = gate_failures(model, options.gates);
      if (plan.part) model.list_position = plan.positions[i];
      if (model.bytes_transferred) *model.bytes_transferred += plan.planning_bytes[i];
      std::lock_guard lock(reporting);
      if (events.finished) events.finished(model);
      report.models[i] = std::move(model);
    }
  };
  {
    std::vector<std::jthread> workers;
    for (size_t k = 1; k < analyzers.size(); ++k) workers.emplace_back(worker, std::ref(analyzers[k]));
    worker(analyzers.front());
  }  // joined
  return report;
}

ExitCode run_scan(const ScanOptions& options) {
  std::optional<Progress> progress;
  // JSON lines reach stdout as each model finishes; -o FILE gets them whole, at the end, as every format.
  bool stream_lines = options.format == OutputFormat::kJsonl && to_standard_output(options.output);
  ScanReport report =
      scan_all(options, {.planned = [&](size_t models) { progress.emplace(models, Progress::wanted(options.quiet)); },
                         .started = [&](const std::string& input) { progress->started(input); },
                         .finished = [&](const ModelReport& model) { announce(model, stream_lines, *progress); }});
  nlohmann::ordered_json document = to_json(report);
  if (options.report) write_output_file(*options.report, render_html(document));
  write_json_output(document, options.json_output);
  publish(rendered(report, document, options, stream_lines), options.output);
  std::fflush(stdout);  // the warnings follow the results on a terminal that shows both
  publish_to_github(report, options);
  if (!options.quiet) print_warnings(report);
  return batch_exit_code(count_batch(report));
}

}  // namespace precdetect
