#pragma once
/// A file read over HTTP by byte ranges (net/http.h), behind ByteSource: every format reads a remote file as it
/// reads a local one, with no remote path of its own.

#include <memory>
#include <string>

#include "precdetect/load/source/byte_source.h"

namespace precdetect {

/// The bytes a ByteSource view() of a remote file may hold at once: a format that views more of a file than this
/// (a pickle, a deflated .npz member, which must be held whole to be read) is refused with
/// Error(kRemote), never held unbounded in memory. Structure walked through a source_cursor never asks this much.
inline constexpr uint64_t kMaxRemoteView = uint64_t{256} << 20;

/// Opens `url` (an http(s) URL; credentials from the environment for its host, net/remote_env.h): one ranged
/// request reads its first 64 KiB, its size and ETag. view() then fetches what it is asked (in 4 KiB blocks, kept
/// until release(); a view that misses where the last fetch ended reads ahead twice as far as that fetch went, up
/// to 4 MiB, so a walk through megabytes of header takes a few requests); view_at_least() gives the fetched blocks
/// after the view too; read() fetches into the caller's buffer in parallel ranges; zero_copy() is false, so tensors
/// are read(), never held by views. release() frees the blocks wholly inside its range (anonymous memory: unlike a
/// mapped file's pages they are not re-read), so a view of them must not outlive it: formats view a remote file's
/// structure, which no tensor's range covers. Throws what http_get throws, naming the URL.
std::unique_ptr<ByteSource> open_remote(const std::string& url);

}  // namespace precdetect
