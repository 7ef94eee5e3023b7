#pragma once
/// A zip archive opened as a checkpoint format (torch.save's zip, TorchScript, NumPy's .npz): its central directory
/// read once, for the format's reader and for naming the pickles its members hold.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "precdetect/load/file_format.h"
#include "precdetect/load/zip/zip_reader.h"

namespace precdetect {

/// Reads the zip that is file `file` of `checkpoint`, whose directory is `entries`; returns Checkpoint::format.
using ReadZip = FileFormat (*)(Checkpoint& checkpoint, size_t file, const std::vector<ZipEntry>& entries);

/// What a format names to the visitor of its own members, beside their pickles (a .keras archive's config.json).
using NameMembers = void (*)(const ByteSource& archive, const std::vector<ZipEntry>& entries, const std::string& where,
                             PickleVisitor& visitor);

/// `source` as a zip archive of `format`, read by `read`. Its pickles are every member a loader would unpickle:
/// pickle members (data.pkl, constants.pkl, *.pkl, *.pickle) and any member outside the storage folders that
/// starts like a pickle, the object arrays among its .npy members, and the pickles of the checkpoints nested in it
/// (.pt, .pth, .bin, .ckpt, .npz, .zip, .nemo members). Two entries of one name, a TorchScript archive's code, and
/// members that cannot be read are unverified. `name_members`, when given, then names what else the members hold.
std::unique_ptr<FormatFile> zip_format_file(const ByteSource& source, FileFormat format, ReadZip read,
                                            NameMembers name_members = nullptr);

/// zip_member_bytes' `limit` for a whole member.
inline constexpr uint64_t kZipWholeMember = std::numeric_limits<uint64_t>::max();

/// Member `entry`'s bytes, or its first `limit` when it holds more: a stored one's straight from `archive` (an
/// entry flagged encrypted as it is stored, as a reader that ignores the flag loads it), a deflated one's inflated
/// into `inflated`, whole ones up to 1 GiB. Throws Error(kCompressedEntry) for another method or a larger member,
/// and inflate's errors for damaged data.
std::span<const std::byte> zip_member_bytes(const ByteSource& archive, const ZipEntry& entry, std::string& inflated,
                                            uint64_t limit = kZipWholeMember);

}  // namespace precdetect
