#pragma once
/// Everything precdetect warns about: a closed list (docs/errors.md), each warning a code with its arguments, and
/// one message that says what happened and what to do. A new code does not compile until message() handles it.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace precdetect {

enum class WarningCode {
  kDtypesNotRead,        ///< load: tensors of dtypes precdetect cannot represent (quantized, complex128) skipped
  kLiveTensorsSkipped,   ///< load: tensors of a model in memory that cannot be read where they are (meta, freed)
  kLiveTensorsCopied,    ///< load: GPU tensors of a model in memory copied to the host in chunks (no CUDA plugin)
  kNotExecuted,          ///< load: the pickle asks to call globals outside the allowlist; none was called
  kUnreachedTensors,     ///< load: tensors the pickle rebuilt that no key path reaches, named "(unreached).N"
  kRecordUnreadable,     ///< load: a training record whose precision cannot be read (unknown layout, "auto", fp8)
  kMixedFormats,         ///< load: one model's files are of several formats
  kOtherFormats,         ///< discover: the folder also holds the weights in formats the scan did not pick
  kUnindexedTensors,     ///< load: tensors in the shards that the index does not list
  kDtypesNotAnalyzed,    ///< analyze: tensors counted in the census whose values were not analyzed
  kDequantized,          ///< analyze: block-quantized tensors analyzed from their dequantized values
  kScaledWeights,        ///< analyze: fp8 weights analyzed as stored value x their scales
  kQuantizedNotRead,     ///< analyze: weights of a quantization scheme precdetect does not read, counted only
  kScalesNonFinite,      ///< analyze: quantization scales holding NaN or Inf
  kScalesZero,           ///< analyze: quantization scales holding zeros
  kScalesGrow,           ///< analyze: quantization scales that grow a hundredfold or more with depth
  kOptimizerState,       ///< analyze: optimizer state reported apart
  kBuffers,              ///< analyze: buffers reported apart, out of the verdict
  kModelParallelJoined,  ///< analyze: model-parallel parts joined into whole tensors
  kEmptySelection,       ///< analyze: --include/--exclude selected no tensor
  kNoFloatParameters,    ///< analyze: no floating-point parameter: nothing to classify
  kNonFinite,            ///< analyze: NaN or Inf values in the weights
  kAdapterWithoutBase,   ///< classify: an adapter that names no base model: nothing tells its pretraining
  kAdapterBaseUnknown,   ///< classify: the base an adapter names is neither documented nor scannable here
  kRemoteUnpinned,       ///< load: remote files whose server gave no validator to hold them to one version
};

/// snake_case name of a code, e.g. "not_executed" (JSON `warnings[].code`).
std::string_view warning_code_name(WarningCode code);

struct Warning {
  WarningCode code;
  std::string file;                ///< the file it concerns; empty when it concerns the model
  std::vector<std::string> names;  ///< the tensors, globals or formats it concerns
  uint64_t count = 0;              ///< how many (tensors; NaN values for kNonFinite)
  uint64_t other = 0;              ///< a second count (replicated tensors; Inf values for kNonFinite)

  /// What happened and what to do, in full sentences.
  std::string message() const;
};

/// Adds a warning of `code` that names `names` and counts them, unless `names` is empty.
void warn_about(std::vector<Warning>& warnings, WarningCode code, std::string file, std::vector<std::string> names);

}  // namespace precdetect
