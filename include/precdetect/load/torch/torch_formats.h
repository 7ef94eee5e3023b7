#pragma once
/// PyTorch's file formats, read without executing their pickles (docs/using.md, "PyTorch files, safely").

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "precdetect/load/checkpoint.h"
#include "precdetect/load/zip/zip_reader.h"

namespace precdetect {

/// torch.save >= 1.6 or TorchScript: a zip archive holding data.pkl and one record per storage.
/// Reads file `file` of `checkpoint`, whose zip directory is `entries`, and returns its format, "pytorch-zip" or
/// "torchscript". Errors: kInvalidZip, kCompressedEntry, kMissingRecord, kInvalidPickle, kStorageTooSmall.
FileFormat read_torch_zip(Checkpoint& checkpoint, size_t file, const std::vector<ZipEntry>& entries);

/// The file opened as torch.save's zip when it is a zip archive (an .npz is claimed before), else nullptr.
std::unique_ptr<FormatFile> open_torch_zip(const ByteSource& source);

/// True when the file starts with the legacy torch.save magic number (a pickled 0x1950a86a20f9469cfc6c).
bool looks_like_torch_legacy(const ByteSource& source);

/// Legacy torch.save (before 1.6, or _use_new_zipfile_serialization=False): a sequence of pickles, then each
/// storage as an int64 element count and its bytes. Returns "pytorch-legacy". Errors: kInvalidLegacy,
/// kInvalidPickle, kStorageTooSmall.
FileFormat read_torch_legacy(Checkpoint& checkpoint, size_t file);

/// The file opened as legacy torch.save when it starts with its magic number, else nullptr. Its pickles: the
/// five torch.load reads (magic number, protocol, sys_info, the object, the storage keys).
std::unique_ptr<FormatFile> open_torch_legacy(const ByteSource& source);

/// True for a tar archive ("ustar" at offset 257): the torch.save layout before 0.4, or a NeMo archive.
bool looks_like_tar(const ByteSource& source);

/// Where a tar member's bytes lie in the archive.
struct TarMember {
  uint64_t offset = 0, size = 0;
};

/// The regular-file members of a ustar archive by name: 512-byte headers (name at 0, octal size at 124, type at
/// 156, link at 157, ustar's prefix at 345), data padded to 512 bytes, two zero blocks at the end; GNU long names
/// and pax `path`/`linkpath` records rename the member after them. With `escapes`, also why each member that
/// extraction would write outside its folder does (load/archive_member.h). Error kInvalidLegacy for a damaged
/// archive.
std::map<std::string, TarMember> read_tar_members(const ByteSource& source,
                                                  std::vector<std::string>* escapes = nullptr);

/// The file opened as a NeMo archive when it is one (a tar holding model_weights.ckpt and model_config.yaml, as
/// NeMo's SaveRestoreConnector writes it uncompressed), else nullptr. Reading it reads the torch.save zip in its
/// model_weights.ckpt member (file `file` of the checkpoint becomes that member) and the trainer precision
/// model_config.yaml records; it returns "nemo". Errors: kUnknownFormat (a model-parallel archive holding several
/// weight files), and those of read_torch_zip. Its pickles are those of the checkpoints it holds (.ckpt, .pt).
/// Throws Error(kInvalidLegacy) for a tar too damaged to list its members.
std::unique_ptr<FormatFile> open_nemo(const ByteSource& source);

/// The pre-0.4 tar layout: members "storages" (each storage's key, type and bytes), "tensors" (views of them,
/// absent from some writers) and "pickle" (the object graph). Returns "pytorch-tar". Errors: kInvalidLegacy,
/// kInvalidPickle, kMissingRecord, kStorageTooSmall.
FileFormat read_torch_tar(Checkpoint& checkpoint, size_t file);

/// The file opened as the pre-0.4 tar layout when it is a tar archive (a NeMo archive is claimed before), else
/// nullptr. Its pickles: sys_info, and every pickle read_torch_tar finds between the raw storages.
std::unique_ptr<FormatFile> open_torch_tar(const ByteSource& source);

}  // namespace precdetect
