#pragma once
/// Stage 5's input: what a scan found, as plain data. Analyzer and classifier fill it; renderers print it.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "precdetect/analyze/analyzed_tensor.h"
#include "precdetect/analyze/summary.h"
#include "precdetect/classify/evidence/adapters.h"
#include "precdetect/classify/verdict.h"
#include "precdetect/core/confinement.h"
#include "precdetect/core/error.h"
#include "precdetect/core/warning.h"
#include "precdetect/discover/input_list.h"
#include "precdetect/net/streamed_sha256.h"
#include "precdetect/report/gate_failure.h"
#include "precdetect/safety/safety.h"

namespace precdetect {

/// A tensor as the report shows it: what analysis found (per-tensor rows, roles, model-parallel parts).
using TensorReport = AnalyzedTensor;

/// An adapter's base model as scanned on this machine (the HF cache, a local folder): what its own verdict said,
/// which the adapter's verdict takes.
struct BaseScan {
  std::string path;
  Verdict verdict;
  std::optional<ModelError> error;  ///< it was there but could not be scanned: the registry alone speaks
};

struct ModelReport {
  std::string input;
  std::string path;
  std::string format;
  std::vector<std::string> files;
  /// False under --safety-only: the files' structure was read and judged, no tensor's values (no summary, verdict
  /// or tensors).
  bool values_read = true;
  /// Where its files must resolve (core/confinement.h); what --verify hashes is opened beneath it too. Empty for a
  /// model that did not resolve to files, and for a model in memory.
  ModelRoot root;
  /// True under --headers-only: `summary` and `tensors` hold what the headers say (counts, dtypes, shapes, sizes),
  /// their value statistics absent.
  bool headers_read = false;
  /// For a model read over the network (hf://, s3://, http(s)://): the body bytes its requests received, retries
  /// and refused answers included; nullopt for a local model.
  std::optional<uint64_t> bytes_transferred;
  /// With --verify, for a model read over the network: what each remote file's hash, computed as it was read, came
  /// to (app/verify.h judges it against the SHA-256 the server names the file by). Not in the JSON: its gate is.
  std::vector<StreamedDigest> streamed_digests;
  /// What the file says of the model in its own header (Checkpoint::metadata: GGUF's key/values); null if none.
  nlohmann::ordered_json metadata;
  ModelSummary summary;  ///< the parameters: seed 000's summary, the verdict's input
  ValueSummary buffers;  ///< the buffers, apart (docs/method.md)
  Verdict verdict;
  std::vector<TensorReport> tensors;
  std::vector<Warning> warnings;
  /// What loading it would unpickle, judged; nullopt when the input did not resolve to files (nothing examined).
  /// Kept for a failed model too: an unsafe pickle often is why it failed.
  std::optional<Safety> safety;
  std::optional<ModelError> error;
  std::optional<Adapter> adapter;          ///< the weights are an adapter's, not a model's (classify/adapter.h)
  std::optional<BaseScan> base_scan;       ///< an adapter's base, where it was found on this machine
  std::vector<GateFailure> gate_failures;  ///< one per violated --expect/--fail-on/... gate (per file for --verify)
  /// In a --shard run, its place in the whole input list, which `merge` restores the single run's order by.
  std::optional<ListPosition> list_position;
};

struct ScanReport {
  std::vector<ModelReport> models;
  std::optional<ShardPart> shard;  ///< a --shard run's part, for its --jsonl summary
  std::vector<Gate> gates;         ///< the gates the run checked, in flag order (JUnit's test cases that passed)
};

}  // namespace precdetect
