#pragma once
/// The diff command: BASE against each OTHER, tensor by tensor.

#include "precdetect/app/options.h"

namespace precdetect {

/// Compares, prints the table or JSON, writes --output, and returns the exit code: 2 when a checkpoint could not
/// be read, 1 with --fail-if-changed when a pair differs, else 0. Throws Error for an unavailable --device.
ExitCode run_diff(const DiffCommand& command);

}  // namespace precdetect
