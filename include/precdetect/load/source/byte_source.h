#pragma once
/// Where a parser's bytes come from: a memory-mapped file in production, a byte string in tests and fuzzers.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace precdetect {

/// How tensor bytes come off a file (--io). Headers are always read through the mapping.
enum class ReadMode {
  kMmap,   ///< straight from the mapping: fastest when the page cache holds the file
  kPread,  ///< parallel pread into our own buffers: many requests in flight, for cold disks and network filesystems
};

/// Bytes [offset, offset + length) of a source.
struct ByteRange {
  uint64_t offset = 0;
  uint64_t length = 0;
};

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  /// The file these bytes belong to, named in every error.
  virtual const std::filesystem::path& path() const = 0;
  virtual uint64_t size() const = 0;
  /// Bytes [offset, offset+length). Throws Error(kOffsetPastEnd) when the range is not inside the source.
  virtual std::span<const std::byte> view(uint64_t offset, uint64_t length) const = 0;
  /// view(offset, length), and the bytes after them that are at hand without another read, up to the end: the
  /// rest of a mapped file, a remote file's fetched blocks. How a cursor reads a file piecewise
  /// (source_cursor.h): it asks for the bytes it needs, and walks on through what it got.
  virtual std::span<const std::byte> view_at_least(uint64_t offset, uint64_t length) const {
    return view(offset, length);
  }
  /// Hint that bytes [offset, offset+length) will not be read again, so resident memory stays bounded by the
  /// tensor in hand rather than growing with the file. Views of that range stay valid (pages are re-read).
  /// Called once a tensor's bytes are consumed, it also vouches for them: a mapped file that shrank while being
  /// read (its lost pages read as zeros, see MappingGuard) throws Error(kIo) naming the path.
  virtual void release(uint64_t offset, uint64_t length) const { (void)offset, (void)length; }
  /// Hint that view() will soon be asked for each of `ranges` (a zip's local headers, once its directory is read):
  /// a remote source fetches the ones it lacks together, in a few parallel requests, rather than one round trip
  /// each. Views nothing; ranges past the end are ignored; throws what a view of them would (a network error). A
  /// local source has nothing to do.
  virtual void prefetch(std::span<const ByteRange> ranges) const { (void)ranges; }
  /// Copies bytes [offset, offset + dest.size()) into `dest`, large ranges in parallel parts. Throws
  /// Error(kOffsetPastEnd) like view(), Error(kIo) when the file cannot be read.
  virtual void read(uint64_t offset, std::span<std::byte> dest) const;
  /// True when view() is the cheap way to a tensor's bytes; false when they should be read() (ReadMode::kPread).
  virtual bool zero_copy() const { return true; }
  /// The files the bytes are read from, path() first; more where a source joins several (an ONNX model and its
  /// external data), so that a results cache sees a change to any of them.
  virtual std::vector<std::filesystem::path> files() const { return {path()}; }
  /// How many bytes from offset 0 are path()'s own, before what a source adds after them (decoded regions, joined
  /// files): the bytes a results cache may hash in one view().
  virtual uint64_t own_size() const { return size(); }
  /// The version of a file read over the network (its ETag), which a results cache keys by instead of a local
  /// file's status; empty for a local file.
  virtual std::string version() const { return {}; }
};

/// Maps `path` read-only; with ReadMode::kPread also keeps it open for read(). Throws Error(kNotFound / kIo)
/// naming the path. The mapping lives as long as the object. A URL (net/url.h: an http(s) file, as remote
/// discovery names a remote model's files) opens a remote_source instead, whatever `mode`.
std::unique_ptr<ByteSource> map_file(const std::filesystem::path& path, ReadMode mode = ReadMode::kMmap);

/// The bytes [offset, offset+size) of `archive` (a member stored uncompressed in it) as a source of their own,
/// named by the archive's path. Throws Error(kOffsetPastEnd) when the range is not inside the archive.
std::unique_ptr<ByteSource> member_source(std::unique_ptr<ByteSource> archive, uint64_t offset, uint64_t size);

/// `bytes` owned elsewhere (a member of a mapped archive), reported as coming from `path`; the bytes must outlive
/// the source.
std::unique_ptr<ByteSource> span_source(std::span<const std::byte> bytes, std::filesystem::path path);

/// Owns a copy of `bytes`, reported as coming from `path`.
std::unique_ptr<ByteSource> memory_source(std::string bytes, std::filesystem::path path = "<memory>");

}  // namespace precdetect
