#pragma once
/// NumPy's own files as checkpoints: a .npy (one array, named by the file) and an .npz (np.savez: a zip of .npy
/// members, stored; np.savez_compressed: deflated), each array a tensor named as numpy.load names it.

#include <string>

#include "precdetect/load/checkpoint.h"

namespace precdetect {

/// Reads the .npy that is file `file` of `checkpoint`: a numeric array is one tensor named by the file's stem; an
/// array of objects is a pickle, refused by what it imports (Error kUnsafePickle or kNotACheckpoint). Returns
/// "numpy". Errors: kInvalidNumpy, kUnknownDtype (an array of strings, datetimes, ...).
std::string read_npy(Checkpoint& checkpoint, size_t file);

/// Reads the .npz that is file `file`: stored members from the mapping, deflated ones through a DecodedSource
/// (inflated when analyzed, dropped after). Arrays of objects and of dtypes precdetect cannot read are listed in
/// a kDtypesNotRead warning, never unpickled (the safety report judges their pickles). Returns "numpy". Errors:
/// kInvalidZip, kCompressedEntry (a method other than stored or deflated), kInvalidNumpy.
std::string read_npz(Checkpoint& checkpoint, size_t file);

}  // namespace precdetect
