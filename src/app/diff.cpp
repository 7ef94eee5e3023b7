#include "precdetect/app/diff.h"

#include <fmt/format.h>

#include "precdetect/app/atomic_file.h"
#include "precdetect/core/error.h"
#include "precdetect/diff/checkpoint_diff.h"
#include "precdetect/discover/hf_cache.h"
#include "precdetect/report/diff_report.h"

namespace precdetect {
namespace {

Checkpoint open_input(const std::string& input) { return open_checkpoint(discover(input, hf_hub_cache())); }

/// One pair; a checkpoint that cannot be read makes the pair's error, never the whole run's.
PairDiff diff_pair(const std::string& base_input, const Checkpoint* base, const std::string& other_input,
                   const DiffCommand& command, const ComputeDevice& device) {
  PairDiff pair;
  try {
    if (base == nullptr) open_input(base_input);  // rethrows the base's own error for this pair
    pair = diff_checkpoints(*base, open_input(other_input), command.filter, command.tolerances, device);
  } catch (const Error& e) {
    pair.error = ModelError{std::string(to_string(e.code())), e.what()};
  } catch (const std::exception& e) {
    pair.error = ModelError{std::string(to_string(ErrorCode::kInternal)), fmt::format("{}: {}", other_input, e.what())};
  }
  pair.base = base_input;
  pair.other = other_input;
  return pair;
}

}  // namespace

ExitCode run_diff(const DiffCommand& command) {
  ComputeDevice device = resolve_device(command.device);
  std::optional<Checkpoint> base;
  try {
    base = open_input(command.base);
  } catch (const Error&) {
    // reported once per pair below
  }
  std::vector<PairDiff> pairs;
  bool failed = false, changed = false;
  for (const std::string& other : command.others) {
    pairs.push_back(diff_pair(command.base, base ? &*base : nullptr, other, command, device));
    if (pairs.back().error) fmt::print(stderr, "precdetect: {}\n", pairs.back().error->message);
    failed = failed || pairs.back().error.has_value();
    changed = changed || (!pairs.back().error && pairs.back().changed());
  }
  std::string document =
      diff_to_json(pairs, command.tolerances).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (command.output) write_file_atomically(*command.output, document);
  std::string text = command.json ? document : render_diff_table(pairs, command.top);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  if (failed) return ExitCode::kError;
  return command.fail_if_changed && changed ? ExitCode::kGateFailed : ExitCode::kSuccess;
}

}  // namespace precdetect
