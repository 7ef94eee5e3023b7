#include "precdetect/load/hdf5/hdf5.h"

#include <fmt/format.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "precdetect/core/bytes.h"
#include "precdetect/core/error.h"
#include "precdetect/load/hdf5/helper_process.h"
#include "precdetect/load/source/decoded_source.h"

namespace precdetect {
namespace {

constexpr char kSignature[] = "\x89HDF\r\n\x1a\n";
constexpr size_t kSignatureSize = 8;
// Deflate, HDF5's usual filter, makes at most 1032 bytes of one; the shuffle filter does not change sizes.
constexpr uint64_t kMaxInflation = 1032;
constexpr std::string_view kHelper = "precdetect-hdf5";

/// How long the helper may take: the walk of a file's structure, and a dataset's read (which may inflate it).
constexpr std::chrono::seconds kWalkLimit{60};
std::chrono::seconds read_limit(uint64_t nbytes) { return std::chrono::seconds(60 + nbytes / (10 << 20)); }

/// precdetect-hdf5's arguments: `request` on the file at `path`, then `more`, then the HDF5 file's range in it
/// when that is not the whole file (a .keras archive's member).
std::vector<std::string> helper_args(std::string request, const std::filesystem::path& path, Hdf5Range range,
                                     uint64_t file_size, std::vector<std::string> more = {}) {
  std::vector<std::string> args = {std::move(request), path.string()};
  args.insert(args.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  if (range.offset != 0 || range.size != file_size)
    args.insert(args.end(), {std::to_string(range.offset), std::to_string(range.size)});
  return args;
}

/// The records of the datasets precdetect-hdf5 described, placed in the mapping or in decoded regions.
class Hdf5Reader {
 public:
  Hdf5Reader(Checkpoint& checkpoint, size_t file, Hdf5Range range)
      : checkpoint_(checkpoint),
        file_(file),
        range_(range),
        decoded_(std::make_unique<DecodedSource>(std::move(checkpoint.files[file]))),
        file_size_(decoded_->size()),
        image_(decoded_->view(range.offset, range.size)) {}

  void read() {
    std::string described =
        run_helper(helper_path(kHelper), helper_args("describe", path(), range_, file_size_), ErrorCode::kInvalidHdf5,
                   path(), "precdetect-hdf5, reading the file's structure,", kWalkLimit);
    nlohmann::json walk = nlohmann::json::parse(described);
    addresses_are_offsets_ = walk["userblock"] == 0;
    for (const nlohmann::json& dataset : walk["datasets"]) add(dataset);
    warn_about(checkpoint_.warnings, WarningCode::kDtypesNotRead, path().string(), std::move(not_read_));
    checkpoint_.files[file_] = std::move(decoded_);
  }

 private:
  const std::filesystem::path& path() const { return decoded_->path(); }

  void add(const nlohmann::json& dataset) {
    std::string name = dataset["name"];
    if (!dataset.contains("dtype"))
      return not_read_.push_back(fmt::format("{} (HDF5 type class {})", name, dataset["type_class"].get<int>()));
    auto dtype_name = dataset["dtype"].get<std::string>();
    std::optional<DType> dtype = parse_dtype(dtype_name);
    if (!dtype)
      fail(ErrorCode::kInvalidHdf5, path(),
           fmt::format("dataset `{}`: precdetect-hdf5 named dtype `{}`, which precdetect does not know", name,
                       dtype_name));
    TensorRecord record{.name = name, .dtype = *dtype, .file = file_};
    // Keras 2's model.save() writes the optimizer's slots and step counter under this group, beside the weights;
    // Keras 3's saving_lib under "optimizer/vars/" (a .keras archive's model.weights.h5).
    if (name.starts_with("optimizer_weights/") || name.starts_with("optimizer/vars/"))
      record.role = TensorRole::kOptimizer, record.role_from_file = true;
    uint64_t numel = 1;
    for (uint64_t extent : dataset["shape"]) {
      auto product = checked_mul(numel, extent);
      if (!product || extent > static_cast<uint64_t>(INT64_MAX))
        fail(ErrorCode::kInvalidHdf5, path(), fmt::format("dataset `{}`: element count overflows", name));
      numel = *product;
      record.shape.push_back(static_cast<int64_t>(extent));
    }
    auto nbytes = dtype_bytes(record.dtype, numel);
    if (!nbytes) fail(ErrorCode::kInvalidHdf5, path(), fmt::format("dataset `{}`: byte size overflows", name));
    record.numel = numel;
    record.nbytes = record.storage_nbytes = *nbytes;
    record.big_endian = dataset["big_endian"].get<bool>() && dtype_bits(record.dtype) > 8;
    record.offset = place(dataset, name, *nbytes);
    checkpoint_.tensors.push_back(std::move(record));
  }

  /// Where the dataset's bytes are: its address in the mapping when HDF5 stores them there whole and raw, else
  /// a region precdetect-hdf5 reads them into when they are analyzed.
  uint64_t place(const nlohmann::json& dataset, const std::string& name, uint64_t nbytes) {
    auto stored = dataset["stored"].get<uint64_t>();
    if (dataset["address"].is_number_unsigned() && addresses_are_offsets_ && stored == nbytes) {
      auto address = dataset["address"].get<uint64_t>();
      auto end = checked_add(address, nbytes);
      if (!end || *end > range_.size)  // past the HDF5 file: past the file, or into the archive beyond the member
        fail(ErrorCode::kOffsetPastEnd, path(),
             fmt::format("dataset `{}`: {} bytes at {} lie past the HDF5 file's {} bytes", name, nbytes, address,
                         range_.size));
      return range_.offset + address;
    }
    if (nbytes == 0) return 0;
    // Only what the file stores is read: a dataset never written (its fill value only), or one declaring more than
    // its compressed chunks can inflate to, would cost memory the file does not justify.
    if (stored == 0 || stored > image_.size() || nbytes / kMaxInflation > stored)
      fail(ErrorCode::kInvalidHdf5, path(),
           fmt::format("dataset `{}` declares {} bytes but stores {}: {}", name, nbytes, stored,
                       stored == 0 ? "it was never written" : "more than the file's chunks can hold"));
    std::vector<std::string> args = helper_args("read", path(), range_, file_size_, {name, std::to_string(nbytes)});
    return decoded_->add_region(nbytes, [path = path(), name, args](std::span<std::byte> dest) {
      run_helper(helper_path(kHelper), args, ErrorCode::kInvalidHdf5, path,
                 fmt::format("precdetect-hdf5, reading dataset `{}`,", name), read_limit(dest.size()), dest);
    });
  }

  Checkpoint& checkpoint_;
  size_t file_;
  Hdf5Range range_;
  std::unique_ptr<DecodedSource> decoded_;
  uint64_t file_size_;                ///< the whole file's
  std::span<const std::byte> image_;  ///< the HDF5 file's bytes
  bool addresses_are_offsets_ = true;
  std::vector<std::string> not_read_;
};

}  // namespace

bool looks_like_hdf5(const ByteSource& source) {
  return source.size() >= kSignatureSize &&
         std::memcmp(source.view(0, kSignatureSize).data(), kSignature, kSignatureSize) == 0;
}

FileFormat read_hdf5(Checkpoint& checkpoint, size_t file) {
  read_hdf5_range(checkpoint, file, {.offset = 0, .size = checkpoint.files[file]->size()});
  return FileFormat::kHdf5;
}

void read_hdf5_range(Checkpoint& checkpoint, size_t file, Hdf5Range range) {
  Hdf5Reader(checkpoint, file, range).read();
}

void name_hdf5_safety(const std::filesystem::path& file, Hdf5Range range, uint64_t file_size, const std::string& where,
                      PickleVisitor& visitor) {
  nlohmann::json answer;
  try {
    answer = nlohmann::json::parse(run_helper(helper_path(kHelper), helper_args("safety", file, range, file_size),
                                              ErrorCode::kInvalidHdf5, file,
                                              "precdetect-hdf5, reading what loading it reads,", kWalkLimit));
  } catch (const std::exception& e) {  // our Error, or an answer that is no JSON
    return visitor.unverified(where, e.what());
  }
  if (std::string config = answer.value("model_config", ""); !config.empty())
    visitor.keras_config(config, where + "!model_config");
  // libhdf5 resolves a relative name from the HDF5 file's own folder (external links, virtual datasets: H5Fint.c's
  // search, ${ORIGIN} for external storage) among other places: judged from there.
  std::filesystem::path folder = file.parent_path();
  for (const nlohmann::json& reach : answer.value("reaches", nlohmann::json::array())) {
    std::string kind = reach.value("kind", ""), object = reach.value("object", ""), named = reach.value("file", "");
    std::string at = fmt::format("{}!{}", where, object);
    if (kind == "user_defined_link") {
      visitor.unverified(at, fmt::format("a link of a user-defined class ({}), which only its handler follows",
                                         reach.value("target", "")));
      continue;
    }
    std::filesystem::path target =
        std::filesystem::path(named).is_absolute() ? std::filesystem::path(named) : folder / named;
    std::string what = kind == "external_link" ? fmt::format("an external link to `{}` in", reach.value("target", ""))
                       : kind == "external_storage"
                           ? "its data stored in"
                           : fmt::format("a virtual dataset of `{}` in", reach.value("target", ""));
    visitor.reaches(at, target, fmt::format("`{}`: {}", object, what));
  }
}

namespace {

/// What loading the HDF5 file reads beyond its own bytes: a whole Keras model's config (the root's `model_config`,
/// judged by safety/keras_config) and every file its objects reach; a file HDF5 cannot open is unverified.
void name_hdf5_contents(const ByteSource& source, const std::string& where, PickleVisitor& visitor) {
  name_hdf5_safety(source.path(), {.offset = 0, .size = source.size()}, source.size(), where, visitor);
}

}  // namespace

std::unique_ptr<FormatFile> open_hdf5(const ByteSource& source) {
  return looks_like_hdf5(source) ? plain_format_file(source, FileFormat::kHdf5, read_hdf5, name_hdf5_contents)
                                 : nullptr;
}

}  // namespace precdetect
