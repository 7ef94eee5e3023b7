#pragma once
/// Stage 3: the statistics of stored tensors, on the CPU (our kernel) or a CUDA device (the CUDA plugin).

#include <memory>
#include <span>
#include <vector>

#include "precdetect/analyze/device.h"
#include "precdetect/analyze/device_backend.h"
#include "precdetect/kernel/tensor_stats.h"
#include "precdetect/load/checkpoint.h"

namespace precdetect {

/// One per thread of work: on CUDA it holds that thread's staging buffers and copy stream.
class Analyzer {
 public:
  explicit Analyzer(const ComputeDevice& device);

  /// The statistics of `records` (floating tensors of `checkpoint`), in order. Both devices use the same
  /// definitions and agree to float64 rounding. Each tensor's mapped pages are released once it has been read.
  /// On CUDA a host thread stages the next tensors while the GPU computes. Throws Error(kDevice) if
  /// the CUDA path fails.
  std::vector<TensorStats> analyze(const Checkpoint& checkpoint, std::span<const TensorRecord* const> records);

  /// How this analyzer's bytes are best read from a hot page cache (--io's default). The CPU kernel computes
  /// straight from the mapping. The CUDA path copies every byte into its staging buffers anyway, and pread
  /// fills them without mapping the file's pages into the process: no page tables to fill and tear down, and
  /// the tensor in hand not resident (a lower peak RSS, docs/benchmarks.md).
  ReadMode preferred_read_mode() const { return cuda_ ? ReadMode::kPread : ReadMode::kMmap; }

 private:
  std::unique_ptr<CudaAnalyzer> cuda_;  ///< on CUDA only: the plugin's
};

}  // namespace precdetect
