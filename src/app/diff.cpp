#include "precdetect/app/diff.h"

#include <fmt/format.h>

#include "precdetect/app/output.h"
#include "precdetect/core/error.h"
#include "precdetect/diff/checkpoint_diff.h"
#include "precdetect/discover/hf_cache.h"
#include "precdetect/quantize/linked_checkpoint.h"
#include "precdetect/report/diff_report.h"
#include "precdetect/report/json_report.h"

namespace precdetect {
namespace {

LinkedCheckpoint open_input(const std::string& input, ReadMode mode) {
  ModelSource source = discover(input, hf_hub_cache());
  if (source.model_parallel && source.files.size() > 1)  // never compare one part as if it were the tensor
    fail(ErrorCode::kSeveralModels, source.path,
         "model-parallel shards hold parts of each tensor, which diff does not join: diff the shards one by one");
  LinkedCheckpoint checkpoint = open_model(source, mode);
  for (const TensorRecord& record : checkpoint.tensors)
    if (record.chunk_of)  // the same refusal: a chunk is no more the tensor than a shard's part is
      fail(ErrorCode::kSeveralModels, source.path,
           fmt::format("tensor `{}` is stored in chunks (a distributed checkpoint saved by several ranks), which diff "
                       "does not join: scan it, or diff a checkpoint saved whole",
                       record.name));
  return checkpoint;
}

ModelError error_of(const std::exception& e, const std::string& input) {
  if (const auto* ours = dynamic_cast<const Error*>(&e)) return {ours->code(), ours->what()};
  return {ErrorCode::kInternal, fmt::format("{}: {}", input, e.what())};
}

/// One pair; a checkpoint that cannot be read makes the pair's error, never the whole run's.
PairDiff diff_pair(const Checkpoint& base, const std::string& other_input, const DiffCommand& command,
                   const ComputeDevice& device) {
  try {
    return diff_checkpoints(base, open_input(other_input, command.read_mode), command.filter, command.tolerances,
                            device);
  } catch (const std::exception& e) {
    return PairDiff{.error = error_of(e, other_input)};
  }
}

}  // namespace

std::vector<PairDiff> diff_all(const DiffCommand& command) {
  ComputeDevice device = resolve_device(command.device);
  std::optional<LinkedCheckpoint> base;
  std::optional<ModelError> base_error;  // a base that cannot be read fails every pair, opened once all the same
  try {
    base = open_input(command.base, command.read_mode);
  } catch (const std::exception& e) {
    base_error = error_of(e, command.base);
  }
  std::vector<PairDiff> pairs;
  for (const std::string& other : command.others) {
    PairDiff pair = base ? diff_pair(*base, other, command, device) : PairDiff{.error = base_error};
    pair.base = command.base;
    pair.other = other;
    pairs.push_back(std::move(pair));
  }
  return pairs;
}

ExitCode run_diff(const DiffCommand& command) {
  std::vector<PairDiff> pairs = diff_all(command);
  bool failed = false, changed = false;
  for (const PairDiff& pair : pairs) {
    if (pair.error) fmt::print(stderr, "precdetect: {}\n", pair.error->message);
    failed = failed || pair.error.has_value();
    changed = changed || (!pair.error && pair.outcome() == DiffOutcome::kChanged);
  }
  nlohmann::ordered_json document = diff_to_json(pairs, command.tolerances);
  write_json_output(document, command.json_output);
  publish(command.json ? json_text(document, 2) : render_diff_table(pairs, command.top), command.output);
  if (failed) return ExitCode::kModelFailed;
  return command.fail_if_changed && changed ? ExitCode::kGateFailed : ExitCode::kSuccess;
}

}  // namespace precdetect
