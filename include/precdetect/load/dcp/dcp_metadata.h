#pragma once
/// The `.metadata` of a torch.distributed.checkpoint (DCP) folder: a pickle of
/// torch.distributed.checkpoint.metadata.Metadata, read by the restricted pickle machine (never executed) into
/// the table of where each tensor's chunks lie in the folder's `.distcp` files. dcp.save writes each chunk, and
/// each entry that is no tensor, as a torch.save archive of its own at (offset, length) of a `.distcp` file
/// (torch/distributed/checkpoint/filesystem.py `_write_item`); docs/using.md.

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace precdetect {

/// Where a torch.save archive lies: in the `.distcp` file `file` (a file name in the metadata's folder), bytes
/// [offset, offset + length).
struct DcpArchive {
  std::string file;
  uint64_t offset = 0, length = 0;
  bool zstd = false;  ///< written through DCP's zstd stream transform (`stream.zstd/1`): a zstd frame of the archive
};

/// One chunk of a tensor: the box [offsets, offsets + sizes) of the whole tensor, and its archive.
struct DcpChunk {
  std::vector<int64_t> offsets, sizes;
  DcpArchive archive;
};

/// A tensor (TensorStorageMetadata) under its fully qualified name, of shape `size`, whose chunks tile it
/// exactly: no gap, no overlap, none outside.
struct DcpTensor {
  std::string fqn;
  std::vector<int64_t> size;
  std::vector<DcpChunk> chunks;
};

/// An entry that is no tensor (BytesStorageMetadata: a number, a string, an optimizer's param_groups): a torch.save
/// archive that dcp.load unpickles with weights_only=False.
struct DcpObject {
  std::string fqn;
  DcpArchive archive;
};

struct DcpMetadata {
  std::vector<DcpTensor> tensors;  ///< in the metadata's order
  std::vector<DcpObject> objects;
  std::vector<std::string> files;  ///< every `.distcp` file an entry names, sorted, each once
};

/// Reads the metadata pickle `bytes` of the file `path`. Throws Error: kInvalidPickle (the pickle machine's
/// refusals, a truncated file); kInvalidDcp (not a Metadata object, a field of the wrong type, a tensor or chunk
/// without its storage entry, a name twice, a file name that is not a plain name in the folder, chunks that leave
/// a gap in the tensor, overlap or reach outside it); kCompressedEntry (an entry written through a stream
/// transform other than DCP's zstd extension, `stream.zstd/1`, which DcpArchive::zstd marks);
/// kValidationOverflow. Messages name
/// the path and the tensor. With `whole` false (one rank's metadata of a rank-local folder, which lists only the
/// chunks that rank wrote) a tensor's chunks need not cover it; they are still checked to lie inside it and not
/// overlap.
DcpMetadata read_dcp_metadata(std::span<const std::byte> bytes, const std::filesystem::path& path, bool whole = true);

/// Checks that the chunks of `tensor` tile it (each inside it, none overlapping, every element covered), as
/// read_dcp_metadata checks a `.metadata`'s. Throws Error kInvalidDcp naming `path`; kValidationOverflow.
void check_dcp_tiling(const DcpTensor& tensor, const std::filesystem::path& path);

/// Joins the metadata of a folder that dcp.save(..., use_collectives=False) wrote, one `__N.metadata` per rank
/// (each read with `whole` false, in rank order; `paths` their files), into the folder's one table: a tensor's
/// chunks are those of every rank, a chunk that several ranks wrote alike (the same box: a replicated tensor) and
/// an entry that is no tensor (each rank writes its own) are read from the lowest rank. Throws Error
/// kInvalidDcp: ranks that give a tensor different shapes, a name that is a tensor in one rank and no tensor in
/// another, chunks of different ranks that overlap other than alike, or that leave a gap in their tensor;
/// kValidationOverflow. Messages name the rank's file.
DcpMetadata join_dcp_ranks(std::vector<DcpMetadata> ranks, std::span<const std::filesystem::path> paths);

}  // namespace precdetect
