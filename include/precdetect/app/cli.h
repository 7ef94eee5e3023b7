#pragma once
/// The whole command line, defined in one place (src/app/cli.cpp is the only file that sees CLI11).

#include <optional>
#include <string>

#include "precdetect/app/options.h"

namespace precdetect {

/// What the command line asks for: either options to run, or an exit code with text already decided
/// (--help, --version, --print-rules, or a usage error).
struct CommandLine {
  std::optional<ScanOptions> scan;
  std::optional<DiffCommand> diff;
  std::optional<MergeCommand> merge;
  int exit_code = 0;
  std::string out, err;  ///< text for stdout / stderr when there is nothing to run
};

/// `precdetect [scan] PATH... [options]`, `precdetect diff BASE OTHER... [options]` or `precdetect merge FILE...`.
/// Usage errors give exit code 2 and a message naming the flag.
CommandLine parse_command_line(int argc, const char* const* argv);

}  // namespace precdetect
