#include "precdetect/core/error.h"

#include <fmt/format.h>

#include <array>

namespace precdetect {

std::string_view to_string(ErrorCode code) {
  // Indexed by the enum's order; keep the two lists in step (docs/errors.md documents each name).
  static constexpr std::array<std::string_view, 48> kNames = {
      "not_found",           "io_error",
      "unknown_format",      "no_weights",
      "no_tensors",          "several_models",
      "duplicate_tensor",    "header_too_small",
      "header_too_large",    "invalid_header_length",
      "invalid_utf8",        "invalid_json",
      "invalid_header",      "duplicate_key",
      "unknown_dtype",       "invalid_offset",
      "validation_overflow", "misaligned_slice",
      "size_mismatch",       "offset_past_end",
      "trailing_bytes",      "invalid_index",
      "missing_shard",       "missing_tensor",
      "invalid_zip",         "compressed_entry",
      "invalid_pickle",      "missing_record",
      "storage_too_small",   "invalid_legacy",
      "invalid_numpy",       "invalid_gguf",
      "invalid_msgpack",     "invalid_hdf5",
      "invalid_dcp",         "invalid_onnx",
      "path_escape",         "unsafe_pickle",
      "not_a_checkpoint",    "hf_cache_miss",
      "remote_error",        "range_not_honoured",
      "remote_changed",      "auth_error",
      "invalid_rules",       "invalid_registry",
      "device_error",        "internal_error",
  };
  static_assert(kNames.size() == static_cast<size_t>(ErrorCode::kInternal) + 1);
  return kNames[static_cast<size_t>(code)];
}

void fail(ErrorCode code, const std::filesystem::path& path, std::string_view detail) {
  throw Error(code, fmt::format("{}: {}", path.string(), detail));
}

}  // namespace precdetect
