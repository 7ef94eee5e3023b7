#pragma once
/// Stage 3 for a whole model: every selected tensor analyzed, given its role, and folded into seed 000's summary
/// (parameters only) and the buffers' own summary, with the warnings a user must see.

#include <string>
#include <vector>

#include "precdetect/analyze/analyzed_tensor.h"
#include "precdetect/analyze/analyzer.h"
#include "precdetect/analyze/buffer_names.h"
#include "precdetect/analyze/stats_cache.h"
#include "precdetect/analyze/summary.h"
#include "precdetect/analyze/tensor_filter.h"
#include "precdetect/core/warning.h"
#include "precdetect/load/checkpoint.h"
#include "precdetect/load/live_model.h"
#include "precdetect/quantize/linked_checkpoint.h"

namespace precdetect {

struct ModelAnalysis {
  ModelSummary summary;                 ///< the parameters (role model), each counted once: the verdict's input
  ValueSummary buffers;                 ///< the buffers, reported apart
  std::vector<AnalyzedTensor> tensors;  ///< every selected tensor in file order; model-parallel parts joined
  std::vector<Warning> warnings;
};

/// Analyzes the tensors `filter` selects with `analyzer`, taking statistics from `cache` where it has them
/// (nullptr: no cache). A tensor the file does not place (TensorRecord::role_from_file) becomes a buffer when
/// `buffers` matches its name. In
/// a model-parallel checkpoint, same-named tensors of different files are parts of one tensor: reported once,
/// their statistics added (or, when every part is the same, taken once). The chunks of a tensor stored in chunks
/// (TensorRecord::chunk_of) are reported as that tensor, of its whole shape, their statistics merged. Throws
/// Error(kNoTensors) when the checkpoint holds no tensor at all: a file is never read as an empty model.
ModelAnalysis analyze_model(const LinkedCheckpoint& checkpoint, const TensorFilter& filter, const BufferNames& buffers,
                            Analyzer& analyzer, StatsCache* cache);

/// The same selection, roles, joined parts and counts from the records alone (--headers-only): no tensor's
/// values read, so no statistics and no warnings about values. Throws Error(kNoTensors) as analyze_model does.
ModelAnalysis census_model(const LinkedCheckpoint& checkpoint, const TensorFilter& filter, const BufferNames& buffers);

/// The same for a model in memory (`name` names it in errors): each tensor's statistics computed where it lives,
/// with the same definitions (our kernel over a CPU tensor's own memory, libtorch on a CUDA tensor's device).
/// Throws Error(kNoTensors) when the model holds no readable tensor, Error(kDevice) when its GPU fails.
ModelAnalysis analyze_live_model(const LiveModel& model, const std::string& name, const TensorFilter& filter,
                                 const BufferNames& buffers);

}  // namespace precdetect
