#pragma once
/// Keras 3's own format, a `.keras` archive (keras.saving's saving_lib): a zip of `config.json` (the model, as
/// Keras rebuilds it), `metadata.json`, `model.weights.h5` (the weights, an HDF5 file) and maybe `assets/`.

#include <memory>

#include "precdetect/load/file_format.h"
#include "precdetect/load/source/byte_source.h"

namespace precdetect {

/// The file opened as a Keras archive when it is a zip named `.keras` (keras.models.load_model goes by the name
/// too), else nullptr. Its tensors are the datasets of its `model.weights.h5` member, read as a `*.weights.h5`
/// file is (read_hdf5_range over the member's bytes: keras stores it, and precdetect reads no other way; a
/// compressed one is Error(kCompressedEntry)), named as Keras names them ("layers/dense/vars/0"); an archive
/// without it is Error(kNoWeights). Its pickles are a zip's (zip_archive.h), and its `config.json` is named to
/// the visitor as a Keras config (each, should the archive hold several).
std::unique_ptr<FormatFile> open_keras(const ByteSource& source);

}  // namespace precdetect
