#pragma once
/// Pickles laid end to end, as pickle.load called again and again reads them (a bare .pkl, a legacy torch.save
/// file's header, an appended payload after a STOP): each run by the restricted machine, its imports logged.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "precdetect/load/file_format.h"
#include "precdetect/load/pickle/pickle.h"
#include "precdetect/load/source/byte_source.h"

namespace precdetect {

struct PickleStream {
  pickle::PickleLog log;  ///< every global imported and every tampering, including a failed pickle's before it failed
  size_t pickles = 0;     ///< pickles read through to their STOP
  uint64_t end = 0;       ///< offset (in the file) just past the last STOP
  std::optional<std::string> stopped;  ///< why the machine could not follow the bytes to their end: its error
};

/// Runs pickles from `bytes[0]` (offset `base` of `path`) until the bytes end or `max_pickles` were read; bytes
/// after that are not looked at (a legacy file's storages). Never throws for bad pickle bytes: the error is kept
/// in `stopped`.
PickleStream read_pickle_stream(std::span<const std::byte> bytes, const std::filesystem::path& path, uint64_t base = 0,
                                size_t max_pickles = std::numeric_limits<size_t>::max());

}  // namespace precdetect

namespace precdetect {

/// PROTO 0-5 first: how every pickle of protocol 2 or later starts.
bool starts_like_pickle(std::span<const std::byte> bytes);

/// A pickle by its look: PROTO 0-5 first (every pickle of protocol 2 or later), or a name that only pickles carry
/// (.pkl, .pickle, .joblib, .dill: protocols 0 and 1 start with any opcode).
bool looks_like_pickle(const ByteSource& source);

/// The named refusal of a file that is a pickle (or a NumPy object array) and no checkpoint: Error(kUnsafePickle)
/// naming its first dangerous global and where it is imported, else Error(kNotACheckpoint) saying what it
/// imports. `bytes` (at offset `base` of the file) are the pickles.
[[noreturn]] void refuse_pickle(const ByteSource& source, std::span<const std::byte> bytes, uint64_t base);

/// The file opened as a bare pickle stream when looks_like_pickle claims it, else nullptr. Its pickles are all of
/// it, appended ones included; reading it refuses it (refuse_pickle): a pickle is no checkpoint of weights.
std::unique_ptr<FormatFile> open_pickle(const ByteSource& source);

}  // namespace precdetect
