#pragma once
/// Keras and TensorFlow weights in HDF5 (tf_model.h5, *.weights.h5, model.h5), read through the HDF5 C library
/// (read-only, over the mapped file's image): every dataset of a float or integer type is a tensor named by its
/// path ("bert/embeddings/word_embeddings/weight:0").

#include <filesystem>
#include <memory>
#include <string>

#include "precdetect/load/checkpoint.h"

namespace precdetect {

/// True when the source starts with HDF5's signature ("\x89HDF\r\n\x1a\n").
bool looks_like_hdf5(const ByteSource& source);

/// Reads the HDF5 file that is file `file` of `checkpoint`. Contiguous datasets are read straight from the mapping
/// (their address and size checked against the file); chunked, compressed and compact ones through HDF5's own
/// reads, as regions of a DecodedSource (read when analyzed, dropped after). Datasets of other types (strings,
/// enums such as h5py's booleans, compounds) are listed in a kDtypesNotRead warning. Only hard links are followed.
/// Returns "hdf5". Errors: kInvalidHdf5 (HDF5 cannot open or read it; a dataset stored in other files: external
/// storage or a virtual dataset, which precdetect never opens).
FileFormat read_hdf5(Checkpoint& checkpoint, size_t file);

/// Where an HDF5 file lies in the file precdetect opened: the whole file, or a stored archive member.
struct Hdf5Range {
  uint64_t offset = 0;
  uint64_t size = 0;
};

/// read_hdf5 of the HDF5 file that lies at `range` of file `file` (a .keras archive's stored model.weights.h5,
/// which the helper opens as the image of those bytes): the records' offsets are the file's, and a dataset that
/// lies past the range is Error(kOffsetPastEnd).
void read_hdf5_range(Checkpoint& checkpoint, size_t file, Hdf5Range range);

/// Names to `visitor` what loading the HDF5 file at `range` of `file` (of `file_size` bytes) reads beyond its own
/// bytes, as precdetect-hdf5 finds it (hdf5_safety): a whole Keras model's config (the root's `model_config`
/// attribute, which keras.models.load_model rebuilds the model from) as a Keras config, "<where>!model_config";
/// each file its objects reach (external links, external storage, virtual datasets' sources) to
/// PickleVisitor::reaches, a relative name taken from the file's own folder, as "<where>!<object>"; a link of a
/// user-defined class, and a file HDF5 cannot open, unverified.
void name_hdf5_safety(const std::filesystem::path& file, Hdf5Range range, uint64_t file_size, const std::string& where,
                      PickleVisitor& visitor);

/// The file opened as HDF5 when it starts with HDF5's signature, else nullptr. It holds no pickles; what loading
/// it reads beyond it is named as name_hdf5_safety names it.
std::unique_ptr<FormatFile> open_hdf5(const ByteSource& source);

}  // namespace precdetect
