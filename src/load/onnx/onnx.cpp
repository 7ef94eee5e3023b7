#include "precdetect/load/onnx/onnx.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "precdetect/core/bytes.h"
#include "precdetect/core/error.h"
#include "precdetect/load/onnx/onnx_graph.h"
#include "precdetect/load/onnx/onnx_sparse.h"
#include "precdetect/load/onnx/protobuf.h"
#include "precdetect/load/source/decoded_source.h"
#include "precdetect/load/source/joined_source.h"
#include "precdetect/net/url.h"

namespace precdetect {
namespace {

/// An ONNX data type (TensorProto.DataType): its name, the dtype precdetect reads it as (nullopt: not read), and
/// the typed field that holds its values when raw_data does not, with that field's encoding.
struct OnnxType {
  int32_t id;
  std::string_view name;
  std::optional<DType> dtype;
  uint32_t field = 0;
  WireType wire = WireType::kVarint;
};

// float_data (4, floats), int32_data (5: every type of 16 bits or fewer as its bit pattern), int64_data (7),
// double_data (10), uint64_data (11: uint32 and uint64). Types under 8 bits share bytes and are not read.
constexpr OnnxType kTypes[] = {{1, "FLOAT", DType::F32, 4, WireType::kFixed32},
                               {2, "UINT8", DType::U8, 5},
                               {3, "INT8", DType::I8, 5},
                               {4, "UINT16", DType::U16, 5},
                               {5, "INT16", DType::I16, 5},
                               {6, "INT32", DType::I32, 5},
                               {7, "INT64", DType::I64, 7},
                               {8, "STRING", std::nullopt},
                               {9, "BOOL", DType::BOOL, 5},
                               {10, "FLOAT16", DType::F16, 5},
                               {11, "DOUBLE", DType::F64, 10, WireType::kFixed64},
                               {12, "UINT32", DType::U32, 11},
                               {13, "UINT64", DType::U64, 11},
                               {14, "COMPLEX64", DType::C64, 4, WireType::kFixed32},
                               {15, "COMPLEX128", std::nullopt},
                               {16, "BFLOAT16", DType::BF16, 5},
                               {17, "FLOAT8E4M3FN", DType::F8_E4M3, 5},
                               {18, "FLOAT8E4M3FNUZ", DType::F8_E4M3FNUZ, 5},
                               {19, "FLOAT8E5M2", DType::F8_E5M2, 5},
                               {20, "FLOAT8E5M2FNUZ", DType::F8_E5M2FNUZ, 5},
                               {21, "UINT4", std::nullopt},
                               {22, "INT4", std::nullopt},
                               {23, "FLOAT4E2M1", std::nullopt},
                               {24, "FLOAT8E8M0", DType::F8_E8M0, 5},
                               {25, "UINT2", std::nullopt},
                               {26, "INT2", std::nullopt},
                               {27, "FLOAT6E2M3", std::nullopt},
                               {28, "FLOAT6E3M2", std::nullopt}};
constexpr int32_t kInt64 = 7;  // the type of a sparse tensor's indices

class OnnxReader {
 public:
  OnnxReader(Checkpoint& checkpoint, size_t file)
      : checkpoint_(checkpoint),
        file_(file),
        path_(checkpoint.files[file]->path()),
        model_(*checkpoint.files[file]),
        graph_(read_onnx_graph(model_)) {}

  void read() {
    ReadMode mode = model_.zero_copy() ? ReadMode::kMmap : ReadMode::kPread;
    auto joined = std::make_unique<JoinedSource>(std::move(checkpoint_.files[file_]));
    // Every external file is joined before the first decoded region is added after them.
    std::vector<const OnnxTensor*> stored;
    stored.reserve(graph_.tensors.size() + 2 * graph_.sparse.size());
    for (const OnnxTensor& tensor : graph_.tensors) stored.push_back(&tensor);
    for (const OnnxSparse& sparse : graph_.sparse) {
      stored.push_back(&sparse.values);
      if (sparse.indices) stored.push_back(&*sparse.indices);
    }
    for (const OnnxTensor* tensor : stored)
      if (tensor->external && !externals_.contains(tensor->external->location)) {
        auto file = open_external(*tensor, mode);
        uint64_t size = file->size();
        externals_[tensor->external->location] = {joined->append(std::move(file)), size};
      }
    decoded_ = std::make_unique<DecodedSource>(std::move(joined));
    std::vector<std::string> not_read;
    for (const OnnxTensor& tensor : graph_.tensors) add(tensor, not_read);
    for (const OnnxSparse& sparse : graph_.sparse) add_sparse(sparse, not_read);
    record_dequantize_nodes();
    warn_about(checkpoint_.warnings, WarningCode::kDtypesNotRead, path_.string(), std::move(not_read));
    checkpoint_.files[file_] = std::move(decoded_);
  }

 private:
  [[noreturn]] void fail(const OnnxTensor& tensor, std::string_view what) const {
    fail_at_offset(ErrorCode::kInvalidOnnx, path_, "ONNX", tensor.message_offset,
                   fmt::format("tensor `{}`: {}", tensor.name, what));
  }

  /// The external file of `tensor` opened, which must be there: a missing one (a remote model's answered 404) is
  /// named with the model and the tensor. A remote model's external data is the URL beside it, read by range.
  std::unique_ptr<ByteSource> open_external(const OnnxTensor& tensor, ReadMode mode) const {
    std::filesystem::path file = onnx_external_path(path_, tensor.external->location, tensor.name);
    std::error_code ec;
    try {
      if (is_url(file.native()) || std::filesystem::exists(file, ec)) return map_file(file, mode);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kNotFound) throw;
    }
    precdetect::fail(ErrorCode::kNotFound, path_,
                     fmt::format("tensor `{}`: its external data file `{}` is not there", tensor.name, file.string()));
  }

  const OnnxType& type_of(const OnnxTensor& tensor) const {
    auto type = std::ranges::find(kTypes, tensor.data_type, &OnnxType::id);
    if (type == std::end(kTypes)) fail(tensor, fmt::format("unknown data type {}", tensor.data_type));
    return *type;
  }

  void add(const OnnxTensor& tensor, std::vector<std::string>& not_read) {
    const OnnxType& type = type_of(tensor);
    if (!type.dtype) return not_read.push_back(fmt::format("{} ({})", tensor.name, type.name));
    checkpoint_.tensors.push_back(record(tensor, type));
  }

  /// A sparse tensor: its values a tensor of their own, [NNZ], standing for the dense tensor (TensorRecord::
  /// sparse_of) once its shape and indices pass onnx's checker's rules (load/onnx/onnx_sparse.h).
  void add_sparse(const OnnxSparse& sparse, std::vector<std::string>& not_read) {
    const OnnxTensor& values = sparse.values;
    const OnnxType& type = type_of(values);
    std::string error;
    std::optional<uint64_t> dense = sparse_dense_count(sparse.dims, error);
    if (!dense) fail(values, error);
    if (values.dims.size() != 1)
      fail(values, fmt::format("sparse values of rank {} (they must be one list, [NNZ])", values.dims.size()));
    if (!type.dtype) return not_read.push_back(fmt::format("{} ({}, sparse)", values.name, type.name));
    // The running sum is at most 2^60 before this one: it wraps only for a count over 2^60, refused as well.
    sparse_elements_ += *dense;
    if (sparse_elements_ > kMaxSparseElements || *dense > kMaxSparseElements)
      fail(values,
           "sparse tensors standing for over 2^60 elements in all (the most a model may: its parameter "
           "count stays within 64 bits)");
    TensorRecord record = this->record(values, type);
    check_indices(sparse, record.numel, *dense);
    record.sparse_of = SparseOf{.shape = sparse.dims, .numel = *dense};
    checkpoint_.tensors.push_back(std::move(record));
  }

  /// The indices of a sparse tensor of `nnz` values and `dense` elements: INT64, of the shape the values and dims
  /// need, each inside the tensor and after the one before it. Read once from where they are stored (raw_data,
  /// int64_data or external data, bounded by their file like any tensor's values) and released.
  void check_indices(const OnnxSparse& sparse, uint64_t nnz, uint64_t dense) {
    const OnnxTensor& values = sparse.values;
    if (!sparse.indices) {
      if (nnz != 0) fail(values, fmt::format("{} sparse values without indices", nnz));
      return;
    }
    OnnxTensor indices = *sparse.indices;
    indices.name = values.name + " (indices)";
    if (indices.data_type != kInt64)
      fail(values, fmt::format("sparse indices of data type {} (they must be INT64)", indices.data_type));
    SparseIndexLayout layout = SparseIndexLayout::kLinear;
    if (auto wrong = sparse_index_shape_error(indices.dims, nnz, sparse.dims, layout)) fail(values, *wrong);
    TensorRecord where = record(indices, type_of(indices));
    if (where.nbytes == 0) return;
    std::optional<std::string> wrong =
        sparse_indices_error(decoded_->view(where.offset, where.nbytes), layout, sparse.dims, dense);
    decoded_->release(where.offset, where.nbytes);
    if (wrong) fail(values, *wrong);
  }

  /// Each DequantizeLinear node (or QOperator one) whose codes are a stored tensor of this file, as the graph says:
  /// quantize/dequantize_linear.cpp reads them.
  void record_dequantize_nodes() {
    std::set<std::string> stored;
    for (size_t i = first_tensor_; i < checkpoint_.tensors.size(); ++i) stored.insert(checkpoint_.tensors[i].name);
    for (const OnnxDequantize& node : graph_.dequantized)
      if (stored.contains(node.codes))  // else an activation's
        checkpoint_.dequantize_nodes.push_back({.op_type = node.op_type,
                                                .file = file_,
                                                .codes = node.codes,
                                                .scale = node.scale,
                                                .zero_point = node.zero_point,
                                                .axis = node.axis,
                                                .block_size = node.block_size});
  }

  /// The record of a tensor of a type precdetect reads: its count and size checked, its values found.
  TensorRecord record(const OnnxTensor& tensor, const OnnxType& type) {
    TensorRecord record{.name = tensor.name, .dtype = *type.dtype, .shape = tensor.dims, .file = file_};
    record.numel = 1;
    for (int64_t extent : tensor.dims) {
      auto product = checked_mul(record.numel, static_cast<uint64_t>(extent));
      if (!product) fail(tensor, "element count overflows");
      record.numel = *product;
    }
    auto nbytes = dtype_bytes(record.dtype, record.numel);
    if (!nbytes) fail(tensor, "byte size overflows");
    record.nbytes = record.storage_nbytes = *nbytes;
    if (tensor.external)
      record.offset = external_offset(tensor, *nbytes);
    else if (tensor.raw_size)
      record.offset = raw_offset(tensor, *nbytes);
    else
      record.offset = typed_values(tensor, type, record.numel, *nbytes);
    // The exporter's: a buffer, listed apart by diff. What the graph uses as a weight is one, initializer or
    // Constant (onnx_uses.h); what it reads otherwise is not; one it never reads is as stored.
    record.graph_constant = true;
    bool exporters = tensor.use == OnnxUse::kOther || (tensor.use == OnnxUse::kUnread && tensor.constant);
    if (exporters || tensor.origin == OnnxOrigin::kExporter) {
      record.role = TensorRole::kBuffer;
      record.role_from_file = true;
      record.computed_from_config = true;
    }
    if (tensor.transposed_from) {  // diff pairs it with the weight, transposed back
      record.torch_name = tensor.transposed_from;
      record.torch_layout = TorchLayout::kTransposed;
    }
    if (tensor.origin == OnnxOrigin::kBuffer || tensor.origin == OnnxOrigin::kParameter) {  // the module's own word
      record.role = tensor.origin == OnnxOrigin::kBuffer ? TensorRole::kBuffer : TensorRole::kModel;
      record.role_from_file = true;
    }
    return record;
  }

  uint64_t raw_offset(const OnnxTensor& tensor, uint64_t nbytes) const {
    if (*tensor.raw_size != nbytes)
      fail(tensor, fmt::format("raw_data of {} bytes, its shape and type need {}", *tensor.raw_size, nbytes));
    return tensor.raw_offset;
  }

  /// Where the external bytes lie in the joined source: inside their file, exactly as many as the shape needs.
  uint64_t external_offset(const OnnxTensor& tensor, uint64_t nbytes) const {
    const OnnxExternal& external = *tensor.external;
    auto [start, file_size] = externals_.at(external.location);
    if (external.offset > file_size)
      fail(tensor, fmt::format("external data offset {} is past the end of `{}` ({} bytes)", external.offset,
                               external.location, file_size));
    uint64_t length = external.length.value_or(file_size - external.offset);
    if (length > file_size - external.offset)
      fail(tensor, fmt::format("external data [{}, +{}) runs past the end of `{}` ({} bytes)", external.offset, length,
                               external.location, file_size));
    if (length != nbytes)
      fail(tensor, fmt::format("external data of {} bytes, its shape and type need {}", length, nbytes));
    return start + external.offset;
  }

  /// Values in the type's own field (or the Constant attribute's), packed or not: counted now, decoded
  /// little-endian when analyzed.
  uint64_t typed_values(const OnnxTensor& tensor, const OnnxType& type, uint64_t numel, uint64_t nbytes) {
    uint64_t per_element = type.dtype == DType::C64 ? 2 : 1;  // a real and an imaginary float
    uint32_t field = tensor.values_field != 0 ? tensor.values_field : type.field;
    uint64_t count =
        for_each_value(model_, tensor.message_offset, tensor.message_size, field, type.wire, [](uint64_t) {});
    if (count / per_element != numel || count % per_element != 0)
      fail(tensor, fmt::format("{} values in field {}, its shape needs {}", count, field, numel * per_element));
    if (nbytes == 0) return 0;
    size_t width = nbytes / count;
    return decoded_->add_region(nbytes, [&model = model_, offset = tensor.message_offset, size = tensor.message_size,
                                         field, wire = type.wire, width](std::span<std::byte> dest) {
      uint64_t at = 0;
      for_each_value(model, offset, size, field, wire, [&](uint64_t value) {
        for (size_t i = 0; i < width && at < dest.size(); ++i, ++at) dest[at] = std::byte(value >> (8 * i));
      });
    });
  }

  Checkpoint& checkpoint_;
  size_t file_;
  std::filesystem::path path_;
  /// The model's file: joined with its external files and decoded regions once read() starts, alive as long as
  /// they are (the decoded regions read their values from it).
  const ByteSource& model_;
  OnnxGraph graph_;
  /// Each external file's location -> where it starts in the joined source, and its size.
  std::map<std::string, std::pair<uint64_t, uint64_t>> externals_;
  std::unique_ptr<DecodedSource> decoded_;
  uint64_t sparse_elements_ = 0;                      ///< the dense elements of the sparse tensors read so far
  size_t first_tensor_ = checkpoint_.tensors.size();  ///< this file's first record
};

}  // namespace

std::filesystem::path onnx_external_path(const std::filesystem::path& model, std::string_view location,
                                         std::string_view tensor) {
  std::filesystem::path relative(location);
  bool nul = location.find('\0') != std::string_view::npos;
  bool escapes = relative.is_absolute() || relative.has_root_path();
  for (const std::filesystem::path& part : relative) escapes = escapes || part == "..";
  if (escapes || nul) {
    std::string shown(location);
    std::replace(shown.begin(), shown.end(), '\0', '?');  // a NUL would cut the message short where it is printed
    // A location out of the folder is an attack on whoever loads the model (onnx's CVE-2022-25882,
    // CVE-2024-27318): path_escape, which makes it unsafe. A NUL is only a broken file.
    fail(nul ? ErrorCode::kInvalidOnnx : ErrorCode::kPathEscape, model,
         fmt::format("tensor `{}`: external data location `{}` is not a path inside the model's folder: refused",
                     tensor, shown));
  }
  // Beside a remote model, the name becomes part of a URL: as a loader joins it (`./x` is `x`), each segment
  // percent-encoded once, so that `?`, `#`, `%` or a space stay the file's own characters.
  if (is_url(model.native())) {
    std::string name = relative.lexically_normal().generic_string();
    if (!is_clean_path(name))
      fail(ErrorCode::kInvalidOnnx, model,
           fmt::format("tensor `{}`: external data location `{}` names no file", tensor, std::string(location)));
    return url_folder(model.native()) + percent_encode(name, /*keep_slash=*/true);
  }
  return model.parent_path() / relative;
}

FileFormat read_onnx(Checkpoint& checkpoint, size_t file) {
  OnnxReader(checkpoint, file).read();
  return FileFormat::kOnnx;
}

std::unique_ptr<FormatFile> open_onnx(const ByteSource& source) {
  if (source.path().extension() != ".onnx") return nullptr;
  return plain_format_file(source, FileFormat::kOnnx, read_onnx, holds_no_pickles);
}

}  // namespace precdetect
