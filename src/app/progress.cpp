#include "precdetect/app/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "precdetect/report/stat_text.h"

namespace precdetect {
namespace {

constexpr size_t kMaxNameWidth = 40;

std::string human_bytes(double bytes) {
  constexpr const char* kUnits[] = {"B", "KB", "MB", "GB", "TB"};
  size_t unit = 0;
  while (bytes >= 1000.0 && unit + 1 < std::size(kUnits)) bytes /= 1000.0, ++unit;
  return fmt::format("{:.1f} {}", bytes, kUnits[unit]);
}

std::string clock_time(double seconds) {
  auto s = static_cast<long>(seconds);
  return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
}

}  // namespace

Progress::Progress(size_t total_models, bool enabled)
    : total_(total_models), enabled_(enabled), color_(std::getenv("NO_COLOR") == nullptr) {}

bool Progress::wanted(bool quiet) {
  const char* term = std::getenv("TERM");  // a dumb terminal cannot overprint a line
  return !quiet && isatty(STDERR_FILENO) && !(term && std::string_view(term) == "dumb");
}

void Progress::started(const std::string& input) {
  current_ = elide_middle(input, kMaxNameWidth);
  draw();
}

void Progress::finished(uint64_t bytes) {
  ++done_;
  bytes_ += bytes;
  if (done_ == total_) current_.clear();
  draw();
}

void Progress::clear() {
  if (enabled_) fmt::print(stderr, "\r\x1b[K");
}

void Progress::draw() {
  if (!enabled_) return;
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // ETA by models: their sizes are unknown until each is opened.
  std::string eta =
      done_ ? clock_time(elapsed / static_cast<double>(done_) * static_cast<double>(total_ - done_)) : "-";
  std::string line = fmt::format("[{}/{}] {}, {}/s, ETA {}", done_, total_, human_bytes(static_cast<double>(bytes_)),
                                 human_bytes(elapsed > 0 ? static_cast<double>(bytes_) / elapsed : 0.0), eta);
  if (!current_.empty()) line += color_ ? fmt::format("  \x1b[2m{}\x1b[0m", current_) : "  " + current_;
  fmt::print(stderr, "\r\x1b[K{}", line);
  if (done_ == total_) fmt::print(stderr, "\n");
  std::fflush(stderr);
}

}  // namespace precdetect
