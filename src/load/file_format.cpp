#include "precdetect/load/file_format.h"

#include "precdetect/load/compressed/compressed.h"
#include "precdetect/load/dcp/dcp.h"
#include "precdetect/load/flax/flax.h"
#include "precdetect/load/gguf/gguf.h"
#include "precdetect/load/hdf5/hdf5.h"
#include "precdetect/load/hdf5/keras_archive.h"
#include "precdetect/load/numpy/npy.h"
#include "precdetect/load/numpy/numpy_arrays.h"
#include "precdetect/load/onnx/onnx.h"
#include "precdetect/load/pickle/pickle_stream.h"
#include "precdetect/load/safetensors/safetensors.h"
#include "precdetect/load/torch/torch_formats.h"

namespace precdetect {
namespace {

class PlainFormatFile final : public FormatFile {
 public:
  PlainFormatFile(const ByteSource& source, FileFormat format, ReadFormat read, NamePickles name_pickles)
      : source_(source), format_(format), read_(read), name_pickles_(name_pickles) {}
  FileFormat format() const override { return format_; }
  FileFormat read(Checkpoint& checkpoint, size_t file) const override { return read_(checkpoint, file); }
  void name_pickles(const std::string& where, PickleVisitor& visitor) const override {
    name_pickles_(source_, where, visitor);
  }

 private:
  const ByteSource& source_;
  FileFormat format_;
  ReadFormat read_;
  NamePickles name_pickles_;
};

}  // namespace

std::string_view file_tampering_name(FileTampering kind) {
  switch (kind) {
    case FileTampering::kPathEscape:
      return "path_escape";
    case FileTampering::kArchiveEscape:
      return "archive_escape";
    case FileTampering::kTemplateCode:
      return "template_code";
    case FileTampering::kSerializedFunction:
      return "serialized_function";
  }
  return "path_escape";
}

std::unique_ptr<FormatFile> plain_format_file(const ByteSource& source, FileFormat format, ReadFormat read,
                                              NamePickles name_pickles) {
  return std::make_unique<PlainFormatFile>(source, format, read, name_pickles);
}

void holds_no_pickles(const ByteSource&, const std::string&, PickleVisitor&) {}

std::unique_ptr<FormatFile> open_format(const ByteSource& source) {
  using Open = std::unique_ptr<FormatFile> (*)(const ByteSource&);
  // Each format's sniff, in the order that keeps any from claiming a file of a format after it: magic numbers
  // first, an .npz and a .keras archive before any other zip, a NeMo archive before any other tar, compressed
  // streams (a compressed .joblib is no bare pickle), then the formats known by their names alone: a DCP folder's
  // .metadata pickle, ONNX (a protobuf has no magic number), and a bare pickle (whose sniff is two bytes or a name)
  // last.
  static constexpr Open kChain[] = {open_gguf,  open_flax,       open_hdf5,         open_safetensors, open_npz,
                                    open_keras, open_torch_zip,  open_torch_legacy, open_nemo,        open_torch_tar,
                                    open_npy,   open_compressed, open_dcp,          open_onnx,        open_pickle};
  for (Open open : kChain)
    if (std::unique_ptr<FormatFile> file = open(source)) return file;
  return nullptr;
}

FileFormat detect_format(const ByteSource& source) {
  std::unique_ptr<FormatFile> file = open_format(source);
  return file ? file->format() : FileFormat::kUnknown;
}

}  // namespace precdetect
