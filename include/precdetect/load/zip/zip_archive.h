#pragma once
/// A zip archive opened as a checkpoint format (torch.save's zip, TorchScript, NumPy's .npz): its central directory
/// read once, for the format's reader and for naming the pickles its members hold.

#include <memory>
#include <string>
#include <vector>

#include "precdetect/load/file_format.h"
#include "precdetect/load/zip/zip_reader.h"

namespace precdetect {

/// Reads the zip that is file `file` of `checkpoint`, whose directory is `entries`; returns Checkpoint::format.
using ReadZip = std::string (*)(Checkpoint& checkpoint, size_t file, const std::vector<ZipEntry>& entries);

/// `source` as a zip archive of `format`, read by `read`. Its pickles are every member a loader would unpickle:
/// pickle members (data.pkl, constants.pkl, *.pkl, *.pickle) and any member outside the storage folders that
/// starts like a pickle, the object arrays among its .npy members, and the pickles of the checkpoints nested in it
/// (.pt, .pth, .bin, .ckpt, .npz, .zip, .nemo members). Two entries of one name, a TorchScript archive's code, and
/// members that cannot be read are unverified.
std::unique_ptr<FormatFile> zip_format_file(const ByteSource& source, FileFormat format, ReadZip read);

}  // namespace precdetect
