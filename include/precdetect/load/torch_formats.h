#pragma once
/// PyTorch's file formats, read without executing their pickles (docs/using.md, "PyTorch files, safely").

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

/// True for a tar archive ("ustar" at offset 257): the torch.save layout before 0.4.
bool looks_like_tar(const ByteSource& source);

/// The pre-0.4 tar layout: members "storages" (each storage's key, type and bytes), "tensors" (views of them,
/// absent from some writers) and "pickle" (the object graph). Returns "pytorch-tar". Errors: kInvalidLegacy,
/// kInvalidPickle, kMissingRecord, kStorageTooSmall.
std::string read_torch_tar(Checkpoint& checkpoint, size_t file);

}  // namespace precdetect
