#pragma once
/// What precdetect asks of the HDF5 C library, run only by the helper program precdetect-hdf5 (src/hdf5_helper.cpp):
/// libhdf5 is not hardened against damaged files, so it never runs inside precdetect itself (load/hdf5.h). Each
/// function opens the file from `image` (its bytes, mapped; never copied) and throws Error(kInvalidHdf5) naming
/// `path` when HDF5 cannot.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>

namespace precdetect {

/// The file's datasets reached by hard links, as JSON: {"userblock": n, "datasets": [{"name", "type_class", and for
/// a type precdetect reads "dtype", "shape", "big_endian", "stored" (bytes stored), "address" (of contiguous data,
/// else null)}]}. Error for what lives in other files: a dataset's external storage, a virtual dataset, an external
/// (or user-defined) link.
std::string describe_hdf5(std::span<const std::byte> image, const std::filesystem::path& path);

/// Takes a dataset's bytes, a slab (whole rows of its first dimension) at a time, in order.
using SlabWriter = std::function<void(std::span<const std::byte>)>;

/// Dataset `name`'s bytes as stored (its own type: no conversion), `bytes` of them (exactly its size), handed to
/// `write` slab by slab.
void read_hdf5_dataset(std::span<const std::byte> image, const std::filesystem::path& path, const std::string& name,
                       uint64_t bytes, const SlabWriter& write);

/// What the safety examination asks of the file, as JSON: {"model_config": the root's `model_config` attribute
/// (Keras's model as JSON, "" when there is none), "reaches": [{"object", "kind", "file", "target"}]}, every place
/// its objects reach another file, none followed: `kind` "external_link" (`target` the object in `file`),
/// "external_storage" (a dataset's raw data in `file`, `target` "N bytes at OFFSET"), "virtual" (a virtual
/// dataset's source dataset `target` in `file`), "user_defined_link" (`file` empty).
std::string hdf5_safety(std::span<const std::byte> image, const std::filesystem::path& path);

}  // namespace precdetect
