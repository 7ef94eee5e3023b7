#pragma once
/// PyTorch's file formats, read without executing their pickles (docs/using.md, "PyTorch files, safely").

#include <map>
#include <string>

#include "precdetect/load/checkpoint.h"

namespace precdetect {

/// torch.save >= 1.6 or TorchScript: a zip archive holding data.pkl and one record per storage.
/// Reads file `file` of `checkpoint` and returns its format, "pytorch-zip" or "torchscript".
/// Errors: kInvalidZip, kCompressedEntry, kMissingRecord, kInvalidPickle, kStorageTooSmall.
std::string read_torch_zip(Checkpoint& checkpoint, size_t file);

/// True when the file starts with the legacy torch.save magic number (a pickled 0x1950a86a20f9469cfc6c).
bool looks_like_torch_legacy(const ByteSource& source);

/// Legacy torch.save (before 1.6, or _use_new_zipfile_serialization=False): a sequence of pickles, then each
/// storage as an int64 element count and its bytes. Returns "pytorch-legacy". Errors: kInvalidLegacy,
/// kInvalidPickle, kStorageTooSmall.
std::string read_torch_legacy(Checkpoint& checkpoint, size_t file);

/// True for a tar archive ("ustar" at offset 257): the torch.save layout before 0.4, or a NeMo archive.
bool looks_like_tar(const ByteSource& source);

/// Where a tar member's bytes lie in the archive.
struct TarMember {
  uint64_t offset = 0, size = 0;
};

/// The regular-file members of a ustar archive by name: 512-byte headers (name at 0, octal size at 124, type at
/// 156), data padded to 512 bytes, two zero blocks at the end. Error kInvalidLegacy for a damaged archive.
std::map<std::string, TarMember> read_tar_members(const ByteSource& source);

/// True for a NeMo archive: a tar holding model_weights.ckpt (and model_config.yaml), as NeMo's
/// SaveRestoreConnector writes it uncompressed.
bool looks_like_nemo(const ByteSource& source);

/// A NeMo archive: the torch.save zip in its model_weights.ckpt member (file `file` of `checkpoint` becomes that
/// member), and the trainer precision model_config.yaml records. Returns "nemo". Errors: kUnknownFormat (a
/// model-parallel archive holding several weight files), and those of read_torch_zip.
std::string read_nemo(Checkpoint& checkpoint, size_t file);

/// The pre-0.4 tar layout: members "storages" (each storage's key, type and bytes), "tensors" (views of them,
/// absent from some writers) and "pickle" (the object graph). Returns "pytorch-tar". Errors: kInvalidLegacy,
/// kInvalidPickle, kMissingRecord, kStorageTooSmall.
std::string read_torch_tar(Checkpoint& checkpoint, size_t file);

}  // namespace precdetect
