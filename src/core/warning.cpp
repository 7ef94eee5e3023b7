#include "precdetect/core/warning.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace precdetect {
namespace {

std::string in_file(const Warning& warning) { return warning.file.empty() ? "" : warning.file + ": "; }

}  // namespace

std::string_view warning_code_name(WarningCode code) {
  switch (code) {
    case WarningCode::kDtypesNotRead:
      return "dtypes_not_read";
    case WarningCode::kLiveTensorsSkipped:
      return "live_tensors_skipped";
    case WarningCode::kLiveTensorsCopied:
      return "live_tensors_copied";
    case WarningCode::kNotExecuted:
      return "not_executed";
    case WarningCode::kUnreachedTensors:
      return "unreached_tensors";
    case WarningCode::kRecordUnreadable:
      return "record_unreadable";
    case WarningCode::kMixedFormats:
      return "mixed_formats";
    case WarningCode::kOtherFormats:
      return "other_formats";
    case WarningCode::kUnindexedTensors:
      return "unindexed_tensors";
    case WarningCode::kDtypesNotAnalyzed:
      return "dtypes_not_analyzed";
    case WarningCode::kDequantized:
      return "dequantized";
    case WarningCode::kScaledWeights:
      return "scaled_weights";
    case WarningCode::kQuantizedNotRead:
      return "quantized_not_read";
    case WarningCode::kScalesNonFinite:
      return "scales_nonfinite";
    case WarningCode::kScalesZero:
      return "scales_zero";
    case WarningCode::kScalesGrow:
      return "scales_grow";
    case WarningCode::kOptimizerState:
      return "optimizer_state";
    case WarningCode::kBuffers:
      return "buffers";
    case WarningCode::kModelParallelJoined:
      return "model_parallel_joined";
    case WarningCode::kEmptySelection:
      return "empty_selection";
    case WarningCode::kNoFloatParameters:
      return "no_float_parameters";
    case WarningCode::kNonFinite:
      return "non_finite";
    case WarningCode::kAdapterWithoutBase:
      return "adapter_without_base";
    case WarningCode::kAdapterBaseUnknown:
      return "adapter_base_unknown";
    case WarningCode::kRemoteUnpinned:
      return "remote_unpinned";
  }
  return "unknown";
}

std::string Warning::message() const {
  std::string names_text = fmt::format("{}", fmt::join(names, ", "));
  switch (code) {
    case WarningCode::kDtypesNotRead:
      return fmt::format(
          "{}{} tensor(s) of dtypes precdetect cannot read were skipped: {}. Their values are in "
          "neither the verdict nor the counts; check them with the tool that wrote them",
          in_file(*this), count, names_text);
    case WarningCode::kLiveTensorsSkipped:
      return fmt::format(
          "{} tensor(s) of the model in memory cannot be read where they are and were skipped: {}. Their values "
          "are in neither the verdict nor the counts: check the model once they are materialized, or the "
          "checkpoint they come from",
          count, names_text);
    case WarningCode::kLiveTensorsCopied:
      return fmt::format(
          "{} tensor(s) on a GPU were copied to the host in chunks of at most 64 MiB to be read, because the CUDA "
          "plugin cannot run with this process's torch (`precdetect --device cuda` on any file says why): {}",
          count, names_text);
    case WarningCode::kNotExecuted:
      return fmt::format(
          "{}the pickle asks to call {} function(s) or class(es) outside precdetect's allowlist; none "
          "was executed, tensors were read from the data alone: {}. torch.load(weights_only=False) "
          "would run them: load the file so only if you trust where it came from",
          in_file(*this), count, names_text);
    case WarningCode::kUnreachedTensors:
      return fmt::format(
          "{}{} tensor(s) rebuilt by the pickle are reachable by no key path and are reported as {} "
          "(role \"model\"): check what they are before trusting the verdict",
          in_file(*this), count, names_text);
    case WarningCode::kRecordUnreadable:
      return fmt::format(
          "{}a training record was found but its precision could not be read ({}); the verdict does not use "
          "it: read it with the framework that wrote it",
          in_file(*this), names_text);
    case WarningCode::kMixedFormats:
      return fmt::format("files of several formats in one model ({}): check that they are parts of one model",
                         names_text);
    case WarningCode::kOtherFormats:
      return fmt::format(
          "the folder also holds weights as {}: the scan used the preferred format (safetensors, pytorch, flax, tf, "
          "gguf, numpy, onnx); --all-formats scans each, to check that the conversions agree",
          names_text);
    case WarningCode::kUnindexedTensors:
      return fmt::format(
          "{} tensor(s) in the shards are not listed in the index; they were scanned anyway "
          "(regenerate the index if they belong to the model)",
          count);
    case WarningCode::kDtypesNotAnalyzed:
      return fmt::format("{} tensor(s) of dtypes precdetect cannot analyze were counted but not analyzed: {}", count,
                         names_text);
    case WarningCode::kDequantized:
      return fmt::format(
          "{} tensor(s) stored block-quantized were analyzed from their dequantized values, as llama.cpp computes "
          "with them: {}. Their statistics are the quantized model's, an approximation of the trained weights (each "
          "value within its block's rounding step); the range rules read them as they read any weights",
          count, names_text);
    case WarningCode::kScaledWeights:
      return fmt::format(
          "{} quantized tensor(s) stored with their scales beside them (fp8, integer codes) were analyzed as their "
          "method dequantizes them, the values the model computes with: {}. Their scales are reported apart (role "
          "\"scale\")",
          count, names_text);
    case WarningCode::kQuantizedNotRead:
      return fmt::format(
          "{} quantized tensor(s) of a scheme precdetect does not read were counted, never analyzed as the values "
          "they store, and kept out of the verdict: {}. The tensors stored beside them are reported as scales (role "
          "\"scale\"); read the weights with their own library to see the values the model computes with",
          count, names_text);
    case WarningCode::kScalesNonFinite:
      return fmt::format(
          "{} scale tensor(s) hold NaN or Inf: every weight they scale is NaN or Inf to the model (a damaged or "
          "badly calibrated quantization; requantize it): {}",
          count, names_text);
    case WarningCode::kScalesZero:
      return fmt::format(
          "{} scale tensor(s) hold zeros: the blocks they scale are all zero to the model, whatever was stored: {}",
          count, names_text);
    case WarningCode::kScalesGrow:
      return fmt::format(
          "the largest quantization scale grows {}x with depth, from {} to {}: the deep layers' weights are large, "
          "and their quantization error with them",
          count, names.at(0), names.at(1));
    case WarningCode::kOptimizerState:
      return fmt::format(
          "{} optimizer-state tensor(s) are reported apart (role \"optimizer\") and kept out of the "
          "model statistics",
          count);
    case WarningCode::kBuffers:
      return fmt::format(
          "{} buffer tensor(s) (running statistics, masks, position tables: not learned) are reported "
          "apart (role \"buffer\") and kept out of the verdict; fp16_risk still counts them. If one the "
          "rules file's buffers list named is a learned parameter, drop its pattern from that list (a role "
          "the file itself gives stays)",
          count);
    case WarningCode::kModelParallelJoined:
      return fmt::format(
          "model-parallel shards: {} tensor(s) split across the files were joined (parts added up), {} "
          "copied in every file were counted once",
          count, other);
    case WarningCode::kEmptySelection:
      return "no tensor matches --include/--exclude; nothing to classify (widen the filter)";
    case WarningCode::kNoFloatParameters:
      return "the model has no floating-point parameters; nothing to classify";
    case WarningCode::kNonFinite:
      return fmt::format(
          "the weights hold {} NaN and {} Inf values: the checkpoint is damaged or overflowed during "
          "training; fine-tuning or serving it spreads them",
          count, other);
    case WarningCode::kAdapterWithoutBase:
      return fmt::format(
          "an adapter ({}) that names no base model: its own weights say nothing about how the base was "
          "pretrained, so the verdict is unknown; scan the base model it is applied to",
          names_text);
    case WarningCode::kAdapterBaseUnknown:
      return fmt::format(
          "the adapter's base model {} is not in the registry of documented precisions and could not be scanned "
          "here ({}): the verdict is unknown; scan the base itself, or download it to the HF cache",
          names.at(0), names.at(1));
    case WarningCode::kRemoteUnpinned:
      return fmt::format(
          "{} remote file(s) came with no validator (no strong ETag, no Last-Modified, no Hub commit and LFS ETag): "
          "a file replaced during the scan by one of the same size could not be told from it, so the results may "
          "mix two versions: {}. Scan a local copy, or serve the files with an ETag",
          count, names_text);
  }
  return "";
}

void warn_about(std::vector<Warning>& warnings, WarningCode code, std::string file, std::vector<std::string> names) {
  if (names.empty()) return;
  uint64_t count = names.size();
  warnings.push_back({.code = code, .file = std::move(file), .names = std::move(names), .count = count});
}

}  // namespace precdetect
