#pragma once
/// The batch progress line on stderr: models done/total, bytes, throughput, ETA, the model being scanned.

#include <chrono>
#include <cstdint>
#include <string>

namespace precdetect {

class Progress {
 public:
  /// Draws only when `enabled` (stderr is a terminal and --quiet is off); colour unless NO_COLOR is set.
  Progress(size_t total_models, bool enabled);
  /// Whether a progress line belongs on this run's stderr: a terminal, no --quiet.
  static bool wanted(bool quiet);

  void started(const std::string& input);
  void finished(uint64_t bytes);
  /// Erases the line, so that a message can be printed in its place (the next update redraws it).
  void clear();

 private:
  void draw();

  size_t total_, done_ = 0;
  uint64_t bytes_ = 0;
  std::string current_;
  bool enabled_, color_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace precdetect
