#pragma once
/// The merge command: the --jsonl outputs of a sharded batch (--shard K/N) combined into one JSON document.

#include "precdetect/app/options.h"

namespace precdetect {

/// Reads every model line of every file (in file order, summary lines dropped), prints the JSON document of
/// `precdetect --json` with those models, writes --output, and returns the batch's exit code: 1 if a model failed
/// a gate, else 2 if a model could not be scanned, else 0. Throws Error(kInvalidJsonl) naming file and line for
/// a line that is not a model record or a summary.
ExitCode run_merge(const MergeCommand& command);

}  // namespace precdetect
