#pragma once
/// NumPy's own files as checkpoints: a .npy (one array, named by the file) and an .npz (np.savez: a zip of .npy
/// members, stored; np.savez_compressed: deflated), each array a tensor named as numpy.load names it.

#include <memory>
#include <string>
#include <vector>

#include "precdetect/load/checkpoint.h"
#include "precdetect/load/zip/zip_reader.h"

namespace precdetect {

/// Reads the .npy that is file `file` of `checkpoint`: a numeric array is one tensor named by the file's stem; an
/// array of objects is a pickle, refused by what it imports (Error kUnsafePickle or kNotACheckpoint). Returns
/// "numpy". Errors: kInvalidNumpy, kUnknownDtype (an array of strings, datetimes, ...).
FileFormat read_npy(Checkpoint& checkpoint, size_t file);

/// Reads the .npz that is file `file`, whose zip directory is `entries`: stored members from the mapping, deflated ones
/// through a DecodedSource (inflated when analyzed, dropped after). Arrays of objects and of dtypes precdetect cannot
/// read are listed in a kDtypesNotRead warning, never unpickled (the safety report judges their pickles). Returns
/// "numpy". Errors: kInvalidZip, kCompressedEntry (a method other than stored or deflated), kInvalidNumpy.
FileFormat read_npz(Checkpoint& checkpoint, size_t file, const std::vector<ZipEntry>& entries);

/// The file opened as a .npy when it starts with NumPy's magic, else nullptr. Its one pickle is an object array's.
std::unique_ptr<FormatFile> open_npy(const ByteSource& source);

/// The file opened as an .npz when it is a zip named *.npz, else nullptr (zip/zip_archive names its pickles).
std::unique_ptr<FormatFile> open_npz(const ByteSource& source);

}  // namespace precdetect
