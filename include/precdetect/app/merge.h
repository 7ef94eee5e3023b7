#pragma once
/// The merge command: the --jsonl outputs of a sharded batch (--shard K/N) combined into one JSON document.

#include "precdetect/app/options.h"

namespace precdetect {

/// Checks the files as one set (app/shard_set: every part once, whole, of one N and one list, no input twice) and
/// refuses a set that is not one whole batch, naming each problem on stderr: exit status 4 (with --partial, parts
/// missing or cut short are listed and the others merged). Then prints the JSON document of `precdetect --json`
/// with their models (a --shard set's in the order of the single run), writes --output, and returns the batch's
/// exit code: 1 if a model failed a gate, else 2 if a model could not be scanned (or a part is missing), else 0.
ExitCode run_merge(const MergeCommand& command);

}  // namespace precdetect
