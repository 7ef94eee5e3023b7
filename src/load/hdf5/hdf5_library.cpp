#include "precdetect/load/hdf5/hdf5_library.h"

#include <fmt/format.h>
#include <hdf5.h>

#include <algorithm>
#include <array>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "precdetect/core/dtype.h"
#include "precdetect/core/error.h"

namespace precdetect {
namespace {

constexpr int kMaxDims = 32;  // H5S_MAX_RANK

/// What the helper reads of a chunked dataset at a time, at least one chunk row: a dataset's size in the helper on
/// top of the one in precdetect would double the peak a compressed tensor costs.
constexpr uint64_t kSlabBytes = uint64_t{8} << 20;

/// An HDF5 identifier, closed by its own close function when it goes.
class Handle {
 public:
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

/// HDF5 prints its error stack on stderr unless told not to; precdetect names the error itself.
void silence_hdf5() {
  static std::once_flag once;
  std::call_once(once, [] { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); });
}

/// The innermost message of HDF5's error stack: what it could not do.
std::string hdf5_error() {
  std::string message;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned, const H5E_error2_t* error, void* out) -> herr_t {
        auto& text = *static_cast<std::string*>(out);
        if (text.empty() && error->desc) text = error->desc;
        return 0;
      },
      &message);
  H5Eclear2(H5E_DEFAULT);
  return message.empty() ? "unknown HDF5 error" : message;
}

/// An HDF5 file opened over bytes we hold (the mapping), never copied: the core driver reads a "file image", and
/// these callbacks hand it our bytes where it would allocate and copy. (H5LTopen_file_image does the same but
/// leaks its bookkeeping on every open in HDF5 1.10.)
class ImageFile {
 public:
  ImageFile(std::span<const std::byte> bytes, const std::filesystem::path& path) : bytes_(bytes) {
    silence_hdf5();
    Handle access(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    H5FD_file_image_callbacks_t callbacks = {&ImageFile::image,
                                             &ImageFile::copy,
                                             &ImageFile::resize,
                                             &ImageFile::drop,
                                             &ImageFile::share,
                                             &ImageFile::unshare,
                                             this};
    bool ready = access.valid() && H5Pset_fapl_core(access.get(), 1 << 16, /*backing_store=*/0) >= 0 &&
                 H5Pset_file_image_callbacks(access.get(), &callbacks) >= 0 &&
                 H5Pset_file_image(access.get(), const_cast<std::byte*>(bytes_.data()), bytes_.size()) >= 0;
    // A name of its own: the core driver refuses one that names a file on disk (it would be read, not the image).
    std::string name = fmt::format("precdetect-image-{}", static_cast<const void*>(bytes_.data()));
    file_ = ready ? H5Fopen(name.c_str(), H5F_ACC_RDONLY, access.get()) : -1;
    if (file_ < 0) fail(ErrorCode::kInvalidHdf5, path, fmt::format("HDF5 cannot open it: {}", hdf5_error()));
  }
  ImageFile(const ImageFile&) = delete;
  ImageFile& operator=(const ImageFile&) = delete;
  ~ImageFile() { H5Fclose(file_); }
  hid_t get() const { return file_; }

 private:
  // The core driver asks for memory for the image and copies it in; it gets our bytes, already there.
  static void* image(size_t, H5FD_file_image_op_t, void* self) {
    return const_cast<std::byte*>(static_cast<ImageFile*>(self)->bytes_.data());
  }
  static void* copy(void* dest, const void* src, size_t, H5FD_file_image_op_t, void*) {
    return dest == src ? dest : nullptr;  // only ever asked to copy our bytes onto themselves
  }
  static void* resize(void*, size_t, H5FD_file_image_op_t, void*) { return nullptr; }  // read-only: never grows
  static herr_t drop(void*, H5FD_file_image_op_t, void*) { return 0; }                 // the mapping is not HDF5's
  static void* share(void* self) { return self; }
  static herr_t unshare(void*) { return 0; }

  std::span<const std::byte> bytes_;
  hid_t file_ = -1;
};

/// The dtype of a dataset's stored type, when precdetect reads it: IEEE floats of 16, 32, 64 bits (and bfloat16),
/// integers of 8 to 64 bits.
std::optional<DType> dataset_dtype(hid_t type) {
  size_t size = H5Tget_size(type);
  if (H5Tget_class(type) == H5T_FLOAT) {
    size_t sign = 0, exponent_at = 0, exponent_bits = 0, mantissa_at = 0, mantissa_bits = 0;
    if (H5Tget_fields(type, &sign, &exponent_at, &exponent_bits, &mantissa_at, &mantissa_bits) < 0) return std::nullopt;
    if (size == 2 && exponent_bits == 5 && mantissa_bits == 10) return DType::F16;
    if (size == 2 && exponent_bits == 8 && mantissa_bits == 7) return DType::BF16;
    if (size == 4 && exponent_bits == 8 && mantissa_bits == 23) return DType::F32;
    if (size == 8 && exponent_bits == 11 && mantissa_bits == 52) return DType::F64;
    return std::nullopt;
  }
  if (H5Tget_class(type) != H5T_INTEGER) return std::nullopt;
  bool is_signed = H5Tget_sign(type) == H5T_SGN_2;
  switch (size) {
    case 1:
      return is_signed ? DType::I8 : DType::U8;
    case 2:
      return is_signed ? DType::I16 : DType::U16;
    case 4:
      return is_signed ? DType::I32 : DType::U32;
    case 8:
      return is_signed ? DType::I64 : DType::U64;
    default:
      return std::nullopt;
  }
}

/// What precdetect needs of one dataset to place it: everything libhdf5 is needed for.
nlohmann::json describe_dataset(const std::string& name, hid_t dataset, const std::filesystem::path& path) {
  Handle type(H5Dget_type(dataset), H5Tclose);
  Handle space(H5Dget_space(dataset), H5Sclose);
  Handle plist(H5Dget_create_plist(dataset), H5Pclose);
  if (!type.valid() || !space.valid() || !plist.valid())
    fail(ErrorCode::kInvalidHdf5, path, fmt::format("HDF5 cannot read dataset `{}`: {}", name, hdf5_error()));
  H5D_layout_t layout = H5Pget_layout(plist.get());
  if (layout == H5D_VIRTUAL || H5Pget_external_count(plist.get()) > 0)
    fail(ErrorCode::kInvalidHdf5, path,
         fmt::format("dataset `{}` keeps its data in other files (a virtual dataset or external storage), which "
                     "precdetect does not open",
                     name));
  nlohmann::json entry = {{"name", name}, {"type_class", static_cast<int>(H5Tget_class(type.get()))}};
  std::optional<DType> dtype = dataset_dtype(type.get());
  int rank = H5Sget_simple_extent_ndims(space.get());
  if (!dtype || H5Sget_simple_extent_type(space.get()) == H5S_NULL || rank < 0 || rank > kMaxDims) return entry;
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  haddr_t address = H5Dget_offset(dataset);
  entry["dtype"] = dtype_name(*dtype);
  entry["shape"] = dims;
  entry["big_endian"] = H5Tget_order(type.get()) == H5T_ORDER_BE;
  entry["stored"] = H5Dget_storage_size(dataset);
  entry["address"] = layout == H5D_CONTIGUOUS && address != HADDR_UNDEF ? nlohmann::json(address) : nullptr;
  return entry;
}

/// Every dataset reached by hard links, described ({"userblock", "datasets": [...]}).
class DatasetWalk {
 public:
  DatasetWalk(std::span<const std::byte> image, const std::filesystem::path& path) : file_(image, path), path_(path) {}

  std::string run() {
    Handle plist(H5Fget_create_plist(file_.get()), H5Pclose);
    hsize_t userblock = 0;
    if (plist.valid()) H5Pget_userblock(plist.get(), &userblock);
    herr_t status = H5Lvisit(file_.get(), H5_INDEX_NAME, H5_ITER_INC, &DatasetWalk::visit, this);
    if (failure_) std::rethrow_exception(failure_);
    if (status < 0) fail(ErrorCode::kInvalidHdf5, path_, fmt::format("HDF5 cannot walk it: {}", hdf5_error()));
    return nlohmann::json{{"userblock", userblock}, {"datasets", datasets_}}.dump(
        -1, ' ', false, nlohmann::json::error_handler_t::replace);
  }

 private:
  /// H5Lvisit's callback: C code cannot unwind an exception, so it is kept and the walk stopped.
  static herr_t visit(hid_t group, const char* name, const H5L_info_t* info, void* self) {
    auto& walk = *static_cast<DatasetWalk*>(self);
    try {
      if (info->type == H5L_TYPE_HARD) walk.visit_object(group, name);
      // What an external or user-defined link leads to is in another file (or only its handler knows where): a
      // loader reads it as the file's own, precdetect never opens it, so the weights are not read whole.
      if (info->type != H5L_TYPE_HARD && info->type != H5L_TYPE_SOFT)
        fail(ErrorCode::kInvalidHdf5, walk.path_,
             fmt::format("`{}` is a link to an object in another file, which precdetect does not open", name));
      return 0;
    } catch (...) {
      walk.failure_ = std::current_exception();
      return 1;
    }
  }

  void visit_object(hid_t group, const char* name) {
    Handle object(H5Oopen(group, name, H5P_DEFAULT), H5Oclose);
    if (!object.valid())
      fail(ErrorCode::kInvalidHdf5, path_, fmt::format("HDF5 cannot open `{}`: {}", name, hdf5_error()));
    if (H5Iget_type(object.get()) == H5I_DATASET) datasets_.push_back(describe_dataset(name, object.get(), path_));
  }

  ImageFile file_;
  const std::filesystem::path& path_;
  nlohmann::json datasets_ = nlohmann::json::array();
  std::exception_ptr failure_;
};

/// Where a file's objects reach other files, without following any (H5Lvisit follows hard links alone): an
/// external link's file and object (H5Lget_val, H5Lunpack_elink_val), a dataset's external storage files
/// (H5Pget_external) and a virtual dataset's source files (H5Pget_virtual_filename, "." being this file), each as
/// {"object", "kind", "file", "target"}; a link of a user-defined class, whose meaning only its registered
/// handler knows, as kind "user_defined_link".
class ReachWalk {
 public:
  ReachWalk(std::span<const std::byte> image, const std::filesystem::path& path) : file_(image, path), path_(path) {}

  nlohmann::json run() {
    herr_t status = H5Lvisit(file_.get(), H5_INDEX_NAME, H5_ITER_INC, &ReachWalk::visit, this);
    if (failure_) std::rethrow_exception(failure_);
    if (status < 0) fail(ErrorCode::kInvalidHdf5, path_, fmt::format("HDF5 cannot walk it: {}", hdf5_error()));
    return reaches_;
  }

 private:
  static herr_t visit(hid_t group, const char* name, const H5L_info_t* info, void* self) {
    auto& walk = *static_cast<ReachWalk*>(self);
    try {
      if (info->type == H5L_TYPE_EXTERNAL) walk.external_link(group, name, info->u.val_size);
      if (info->type == H5L_TYPE_HARD) walk.dataset_storage(group, name);
      if (info->type >= H5L_TYPE_UD_MIN && info->type != H5L_TYPE_EXTERNAL)
        walk.add(name, "user_defined_link", "", fmt::format("link class {}", static_cast<int>(info->type)));
      return 0;
    } catch (...) {
      walk.failure_ = std::current_exception();
      return 1;
    }
  }

  void add(std::string object, std::string_view kind, std::string file, std::string target) {
    reaches_.push_back(
        {{"object", std::move(object)}, {"kind", kind}, {"file", std::move(file)}, {"target", std::move(target)}});
  }

  void external_link(hid_t group, const char* name, size_t size) {
    std::vector<char> value(size);
    unsigned flags = 0;
    const char* file = nullptr;
    const char* object = nullptr;
    if (H5Lget_val(group, name, value.data(), size, H5P_DEFAULT) < 0 ||
        H5Lunpack_elink_val(value.data(), size, &flags, &file, &object) < 0 || !file || !object)
      fail(ErrorCode::kInvalidHdf5, path_, fmt::format("HDF5 cannot read external link `{}`: {}", name, hdf5_error()));
    add(name, "external_link", file, object);
  }

  void dataset_storage(hid_t group, const char* name) {
    Handle object(H5Oopen(group, name, H5P_DEFAULT), H5Oclose);
    if (!object.valid() || H5Iget_type(object.get()) != H5I_DATASET) return;
    Handle plist(H5Dget_create_plist(object.get()), H5Pclose);
    if (!plist.valid()) return;
    for (int i = 0, count = H5Pget_external_count(plist.get()); i < count; ++i) {
      std::array<char, 4096> file{};
      off_t offset = 0;
      hsize_t size = 0;
      if (H5Pget_external(plist.get(), static_cast<unsigned>(i), file.size() - 1, file.data(), &offset, &size) >= 0)
        add(name, "external_storage", file.data(), fmt::format("{} bytes at {}", size, offset));
    }
    size_t sources = 0;
    if (H5Pget_layout(plist.get()) != H5D_VIRTUAL || H5Pget_virtual_count(plist.get(), &sources) < 0) return;
    for (size_t i = 0; i < sources; ++i) {
      std::string file = virtual_text(plist.get(), i, H5Pget_virtual_filename);
      if (file != ".") add(name, "virtual", file, virtual_text(plist.get(), i, H5Pget_virtual_dsetname));
    }
  }

  /// A virtual dataset's source file or dataset name: its length asked first, as HDF5 documents.
  static std::string virtual_text(hid_t plist, size_t index, ssize_t (*get)(hid_t, size_t, char*, size_t)) {
    ssize_t length = get(plist, index, nullptr, 0);
    if (length < 0) return "";
    std::string text(static_cast<size_t>(length) + 1, '\0');
    get(plist, index, text.data(), text.size());
    text.resize(static_cast<size_t>(length));
    return text;
  }

  ImageFile file_;
  const std::filesystem::path& path_;
  nlohmann::json reaches_ = nlohmann::json::array();
  std::exception_ptr failure_;
};

/// Rows (indices of the first dimension) per read of a dataset: whole chunk rows, so that each chunk is
/// inflated once, and as many as fit in kSlabBytes.
hsize_t slab_rows(hid_t dataset, const std::vector<hsize_t>& dims, size_t element_size) {
  hsize_t row_bytes = element_size;
  for (size_t d = 1; d < dims.size(); ++d) row_bytes *= dims[d];
  hsize_t chunk_rows = 1;
  Handle plist(H5Dget_create_plist(dataset), H5Pclose);
  std::vector<hsize_t> chunk(dims.size());
  if (plist.valid() && H5Pget_layout(plist.get()) == H5D_CHUNKED &&
      H5Pget_chunk(plist.get(), static_cast<int>(chunk.size()), chunk.data()) == static_cast<int>(chunk.size()))
    chunk_rows = std::clamp<hsize_t>(chunk[0], 1, dims[0]);  // an extendible dataset's chunk may pass its end
  hsize_t chunks_per_slab = std::max<hsize_t>(kSlabBytes / std::max<hsize_t>(row_bytes * chunk_rows, 1), 1);
  return std::min(chunk_rows * chunks_per_slab, dims[0]);
}

/// The `model_config` attribute of the file's root, Keras's model as JSON; empty when there is none.
std::string model_config(hid_t file) {
  if (H5Aexists(file, "model_config") <= 0) return "";
  Handle attribute(H5Aopen(file, "model_config", H5P_DEFAULT), H5Aclose);
  Handle type(attribute.valid() ? H5Aget_type(attribute.get()) : -1, H5Tclose);
  if (!type.valid() || H5Tget_class(type.get()) != H5T_STRING) return "";
  if (H5Tis_variable_str(type.get()) > 0) {
    char* text = nullptr;
    if (H5Aread(attribute.get(), type.get(), static_cast<void*>(&text)) < 0 || !text) return "";
    std::string config(text);
    H5free_memory(text);
    return config;
  }
  std::string config(H5Tget_size(type.get()), '\0');
  if (H5Aread(attribute.get(), type.get(), config.data()) < 0) return "";
  config.resize(std::min(config.size(), config.find('\0')));  // a fixed-size string is padded with NULs
  return config;
}

}  // namespace

std::string describe_hdf5(std::span<const std::byte> image, const std::filesystem::path& path) {
  return DatasetWalk(image, path).run();
}

void read_hdf5_dataset(std::span<const std::byte> image, const std::filesystem::path& path, const std::string& name,
                       uint64_t bytes, const SlabWriter& write) {
  ImageFile file(image, path);
  Handle dataset(H5Dopen2(file.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
  Handle type(dataset.valid() ? H5Dget_type(dataset.get()) : -1, H5Tclose);
  Handle space(dataset.valid() ? H5Dget_space(dataset.get()) : -1, H5Sclose);
  hssize_t points = space.valid() ? H5Sget_simple_extent_npoints(space.get()) : -1;
  int rank = space.valid() ? H5Sget_simple_extent_ndims(space.get()) : -1;
  auto cannot_read = [&] {
    fail(ErrorCode::kInvalidHdf5, path, fmt::format("HDF5 cannot read dataset `{}`: {}", name, hdf5_error()));
  };
  if (!type.valid() || rank < 0 || rank > kMaxDims) cannot_read();
  size_t element_size = H5Tget_size(type.get());
  if (points < 0 || static_cast<uint64_t>(points) * element_size != bytes)
    fail(ErrorCode::kInvalidHdf5, path, fmt::format("dataset `{}` does not hold the {} bytes asked for", name, bytes));
  if (rank == 0 || points == 0) {  // a scalar, or nothing to read
    std::vector<std::byte> all(bytes);
    if (points > 0 && H5Dread(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, all.data()) < 0) cannot_read();
    return write(all);
  }
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  uint64_t row_bytes = bytes / dims[0];
  hsize_t rows_per_slab = slab_rows(dataset.get(), dims, element_size);
  std::vector<std::byte> slab(rows_per_slab * row_bytes);
  std::vector<hsize_t> start(dims.size(), 0), count = dims;
  for (hsize_t row = 0; row < dims[0]; row += rows_per_slab) {
    start[0] = row;
    count[0] = std::min(rows_per_slab, dims[0] - row);
    Handle memory(H5Screate_simple(rank, count.data(), nullptr), H5Sclose);
    if (!memory.valid() ||
        H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr) < 0 ||
        H5Dread(dataset.get(), type.get(), memory.get(), space.get(), H5P_DEFAULT, slab.data()) < 0)
      cannot_read();
    write(std::span(slab).first(count[0] * row_bytes));
  }
}

std::string hdf5_safety(std::span<const std::byte> image, const std::filesystem::path& path) {
  std::string config = model_config(ImageFile(image, path).get());
  return nlohmann::json{{"model_config", config}, {"reaches", ReachWalk(image, path).run()}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace precdetect
