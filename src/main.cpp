// precdetect: parse the command line, run the scan, map the outcome to a documented exit code.
#include <fmt/format.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "precdetect/app/cli.h"
#include "precdetect/app/diff.h"
#include "precdetect/app/merge.h"
#include "precdetect/app/scan.h"
#include "precdetect/core/error.h"
#include "precdetect/core/sanitizer.h"

namespace {

int run(int argc, char** argv) {
  precdetect::CommandLine command = precdetect::parse_command_line(argc, argv);
  fmt::print("{}", command.out);
  fmt::print(stderr, "{}", command.err);
  if (!command.scan && !command.diff && !command.merge) return command.exit_code;
  try {
    if (command.diff) return static_cast<int>(precdetect::run_diff(*command.diff));
    if (command.merge) return static_cast<int>(precdetect::run_merge(*command.merge));
    return static_cast<int>(precdetect::run_scan(*command.scan));
  } catch (const std::exception& e) {  // precdetect::Error, or a library failure outside any one model
    fmt::print(stderr, "precdetect: {}\n", e.what());
    return static_cast<int>(precdetect::ExitCode::kNotRun);
  }
}

/// Ends the process without static destructors: where the CUDA plugin loaded libtorch, libtorch's deregister every
/// operator, 0.15 s (docs/benchmarks.md, "Figures behind the code"). By now run() has closed everything of ours (output
/// files, the results cache) and only stdio needs flushing. Under AddressSanitizer the ordinary exit stays:
/// LeakSanitizer checks at exit.
[[noreturn]] void leave(int exit_code) {
  std::fflush(nullptr);
#ifdef PRECDETECT_UNDER_ASAN
  std::exit(exit_code);
#else
  std::_Exit(exit_code);
#endif
}

}  // namespace

int main(int argc, char** argv) {
  // A reader that closes the pipe early (`precdetect ... | head`) should not kill us mid-write.
  std::signal(SIGPIPE, SIG_IGN);
  leave(run(argc, argv));
}
