#pragma once
/// What an archive member holds, as a loader that extracts it and opens it finds it: one judgement for a zip's, a
/// tar's and a NeMo archive's members, so that a pickle is found in any of them, nested or compressed, whatever
/// the member's name.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "precdetect/load/file_format.h"
#include "precdetect/load/source/byte_source.h"

namespace precdetect {

/// True for bytes (a member's first 262 at least) of a container that a loader extracts or decodes before
/// unpickling what it holds: a zip, a tar, a compressed stream (load/compressed/compressed.h).
bool archive_like(std::span<const std::byte> bytes);

/// True for a member name a loader unpickles: `*pkl` (data.pkl, TorchScript's .debug_pkl), `.pickle`, `.joblib`,
/// `.dill`.
bool pickle_member_name(std::string_view name);

/// Names to `visitor` what member `name` of `archive` holds, its `bytes` lying at `base` of the archive's file
/// (0 for bytes decoded from it): every pickle of a member that is one by its name or its first bytes; a
/// checkpoint by its extension (.pt, .pth, .bin, .ckpt, .npz, .zip, .nemo), or any archive or compressed file by
/// its bytes, opened in its format and nested as `<where>!<name>`. Anything else holds nothing a loader unpickles.
void name_member_contents(std::span<const std::byte> bytes, std::string_view name, const std::string& where,
                          uint64_t base, const ByteSource& archive, PickleVisitor& visitor);

}  // namespace precdetect
