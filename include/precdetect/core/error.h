#pragma once
/// The one error type of precdetect: thrown deep in the pipeline, caught per model (the batch goes on) and in main.

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace precdetect {

/// Stable machine names for every failure, written to JSON as models[].error.code (docs/errors.md lists them).
enum class ErrorCode {
  kNotFound,
  kIo,
  kUnknownFormat,
  kNoWeights,
  kNoTensors,
  kSeveralModels,
  kDuplicateTensor,
  kHeaderTooSmall,
  kHeaderTooLarge,
  kInvalidHeaderLength,
  kInvalidUtf8,
  kInvalidJson,
  kInvalidHeader,
  kDuplicateKey,
  kUnknownDtype,
  kInvalidOffset,
  kValidationOverflow,
  kMisalignedSlice,
  kSizeMismatch,
  kOffsetPastEnd,
  kTrailingBytes,
  kInvalidIndex,
  kMissingShard,
  kMissingTensor,
  kInvalidZip,
  kCompressedEntry,
  kInvalidPickle,
  kMissingRecord,
  kStorageTooSmall,
  kInvalidLegacy,
  kInvalidNumpy,
  kInvalidGguf,
  kInvalidMsgpack,
  kInvalidHdf5,
  kInvalidDcp,
  kInvalidOnnx,
  kPathEscape,  ///< a link or a path the model names resolves outside the model's root (never opened)
  kUnsafePickle,
  kNotACheckpoint,
  kHfCacheMiss,
  kRemote,            ///< a remote file could not be read: HTTP status, transport failure, timeout after retries
  kRangeNotHonoured,  ///< a server answered a range request with other bytes than asked (200, Content-Range, length)
  kRemoteChanged,     ///< a remote file's ETag changed while it was being read
  kRemoteAuth,        ///< 401 or 403: credentials missing or refused
  kInvalidRules,
  kInvalidRegistry,
  kDevice,
  kInternal,
};

/// snake_case name of a code, e.g. "header_too_small".
std::string_view to_string(ErrorCode code);

/// An error whose message always names the file (and the tensor, where one is involved).
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

/// An error as a report carries it, for a model or a diff pair that could not be read.
struct ModelError {
  ErrorCode code;       ///< written by its name (to_string) in reports
  std::string message;  ///< names the file
};

/// Throws Error(code, "<path>: <detail>").
[[noreturn]] void fail(ErrorCode code, const std::filesystem::path& path, std::string_view detail);

}  // namespace precdetect
