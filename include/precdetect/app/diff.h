#pragma once
/// The diff command: BASE against each OTHER, tensor by tensor.

#include <vector>

#include "precdetect/app/options.h"
#include "precdetect/diff/checkpoint_diff.h"

namespace precdetect {

/// BASE against each OTHER, in order; prints nothing. A checkpoint that cannot be read is its pairs' error.
/// Throws Error for an unavailable --device.
std::vector<PairDiff> diff_all(const DiffCommand& command);

/// Compares, prints the table or JSON, writes --output, and returns the exit code: 2 when a checkpoint could not
/// be read, 1 with --fail-if-changed when a pair differs, else 0. Throws Error for an unavailable --device.
ExitCode run_diff(const DiffCommand& command);

}  // namespace precdetect
