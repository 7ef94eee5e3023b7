#pragma once
/// --verify: each weight file against the SHA-256 it should have, from the Hugging Face cache (a snapshot's file
/// is a link to the blob named by its LFS SHA-256) or from a manifest in sha256sum's format. A corrupted or
/// truncated shard is named before anyone loads it.

#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "precdetect/net/streamed_sha256.h"
#include "precdetect/report/gate_failure.h"

namespace precdetect {

/// A manifest: lowercase hex SHA-256 by canonical path.
using Manifest = std::map<std::filesystem::path, std::string>;

/// Reads `sha256sum` output ("HEX  PATH" or "HEX *PATH" a line; paths relative to the manifest's folder).
/// Throws Error(kIo) naming the file and line for anything else.
Manifest read_manifest(const std::filesystem::path& path);

/// The SHA-256 `file` should have: the manifest's, else the HF cache blob's name it links to; nullopt when
/// neither says.
std::optional<std::string> expected_sha256(const std::filesystem::path& file, const Manifest& manifest);

/// The file's SHA-256, lowercase hex. Throws Error(kIo) naming it when it cannot be read.
std::string sha256_of_file(const std::filesystem::path& file);

/// One Gate::kVerify failure per file that differs from its expected SHA-256 or has none to check against, naming
/// the file; empty when all match. A remote file (a URL) is judged by what its scan's hash came to, in `streamed`
/// (core/streamed_sha256.h), against the SHA-256 its server names: one not hashed to its end (--headers-only,
/// --safety-only, a read that failed) is not verified, and fails.
std::vector<GateFailure> verify_files(const std::vector<std::string>& files, const Manifest& manifest,
                                      std::span<const StreamedDigest> streamed = {});

}  // namespace precdetect
