#include "precdetect/core/error.h"

#include <fmt/format.h>

#include <array>

#include "precdetect/core/named_enum.h"

namespace precdetect {
namespace {

// docs/errors.md documents each name.
constexpr std::array<NamedValue<ErrorCode>, 48> kErrorCodes = {{
    {ErrorCode::kNotFound, "not_found"},
    {ErrorCode::kIo, "io_error"},
    {ErrorCode::kUnknownFormat, "unknown_format"},
    {ErrorCode::kNoWeights, "no_weights"},
    {ErrorCode::kNoTensors, "no_tensors"},
    {ErrorCode::kSeveralModels, "several_models"},
    {ErrorCode::kDuplicateTensor, "duplicate_tensor"},
    {ErrorCode::kHeaderTooSmall, "header_too_small"},
    {ErrorCode::kHeaderTooLarge, "header_too_large"},
    {ErrorCode::kInvalidHeaderLength, "invalid_header_length"},
    {ErrorCode::kInvalidUtf8, "invalid_utf8"},
    {ErrorCode::kInvalidJson, "invalid_json"},
    {ErrorCode::kInvalidHeader, "invalid_header"},
    {ErrorCode::kDuplicateKey, "duplicate_key"},
    {ErrorCode::kUnknownDtype, "unknown_dtype"},
    {ErrorCode::kInvalidOffset, "invalid_offset"},
    {ErrorCode::kValidationOverflow, "validation_overflow"},
    {ErrorCode::kMisalignedSlice, "misaligned_slice"},
    {ErrorCode::kSizeMismatch, "size_mismatch"},
    {ErrorCode::kOffsetPastEnd, "offset_past_end"},
    {ErrorCode::kTrailingBytes, "trailing_bytes"},
    {ErrorCode::kInvalidIndex, "invalid_index"},
    {ErrorCode::kMissingShard, "missing_shard"},
    {ErrorCode::kMissingTensor, "missing_tensor"},
    {ErrorCode::kInvalidZip, "invalid_zip"},
    {ErrorCode::kCompressedEntry, "compressed_entry"},
    {ErrorCode::kInvalidPickle, "invalid_pickle"},
    {ErrorCode::kMissingRecord, "missing_record"},
    {ErrorCode::kStorageTooSmall, "storage_too_small"},
    {ErrorCode::kInvalidLegacy, "invalid_legacy"},
    {ErrorCode::kInvalidNumpy, "invalid_numpy"},
    {ErrorCode::kInvalidGguf, "invalid_gguf"},
    {ErrorCode::kInvalidMsgpack, "invalid_msgpack"},
    {ErrorCode::kInvalidHdf5, "invalid_hdf5"},
    {ErrorCode::kInvalidDcp, "invalid_dcp"},
    {ErrorCode::kInvalidOnnx, "invalid_onnx"},
    {ErrorCode::kPathEscape, "path_escape"},
    {ErrorCode::kUnsafePickle, "unsafe_pickle"},
    {ErrorCode::kNotACheckpoint, "not_a_checkpoint"},
    {ErrorCode::kHfCacheMiss, "hf_cache_miss"},
    {ErrorCode::kRemote, "remote_error"},
    {ErrorCode::kRangeNotHonoured, "range_not_honoured"},
    {ErrorCode::kRemoteChanged, "remote_changed"},
    {ErrorCode::kRemoteAuth, "auth_error"},
    {ErrorCode::kInvalidRules, "invalid_rules"},
    {ErrorCode::kInvalidRegistry, "invalid_registry"},
    {ErrorCode::kDevice, "device_error"},
    {ErrorCode::kInternal, "internal_error"},
}};
static_assert(listed_in_enum_order(kErrorCodes) && kErrorCodes.size() == static_cast<size_t>(ErrorCode::kInternal) + 1);

}  // namespace

std::string_view to_string(ErrorCode code) { return name_in(kErrorCodes, code); }

void fail(ErrorCode code, const std::filesystem::path& path, std::string_view detail) {
  throw Error(code, fmt::format("{}: {}", path.string(), detail));
}

}  // namespace precdetect
