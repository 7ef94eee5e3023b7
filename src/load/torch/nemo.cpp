#include <fmt/format.h>

#include "precdetect/core/error.h"
#include "precdetect/load/member_contents.h"
#include "precdetect/load/records/find_records.h"
#include "precdetect/load/torch/torch_formats.h"
#include "precdetect/load/zip/zip_archive.h"

namespace precdetect {
namespace {

constexpr std::string_view kWeights = "model_weights.ckpt";
constexpr std::string_view kConfig = "model_config.yaml";

using Members = std::map<std::string, TarMember>;

/// NeMo adds the archive's folder as "." (`./model_weights.ckpt`); members are matched by their last part.
std::vector<std::pair<std::string, TarMember>> members_named(const Members& members, std::string_view name) {
  std::vector<std::pair<std::string, TarMember>> found;
  for (const auto& [path, member] : members)
    if (path == name || path.ends_with("/" + std::string(name))) found.emplace_back(path, member);
  return found;
}

/// A NeMo archive; its weights member, a torch.save zip, is opened once for both of the archive's uses.
class NemoFile final : public FormatFile {
 public:
  NemoFile(const ByteSource& archive, Members members, std::vector<std::string> escapes)
      : archive_(archive), members_(std::move(members)), escapes_(std::move(escapes)) {}
  FileFormat format() const override { return FileFormat::kNemo; }

  FileFormat read(Checkpoint& checkpoint, size_t file) const override {
    auto weights = members_named(members_, kWeights);
    if (weights.size() != 1)
      fail(ErrorCode::kUnknownFormat, archive_.path(),
           fmt::format("a model-parallel NeMo archive ({} weight files, first `{}`): unpack it and scan its "
                       "mp_rank folder",
                       weights.size(), weights.front().first));
    for (const auto& [path, config] : members_named(members_, kConfig)) {
      auto bytes = archive_.view(config.offset, config.size);
      FoundRecords found = find_nemo_config_record(
          std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), archive_.path());
      for (TrainingRecord& record : found.records) merge_record(checkpoint.records, std::move(record));
      checkpoint.warnings.insert(checkpoint.warnings.end(), found.warnings.begin(), found.warnings.end());
    }
    const TarMember& ckpt = weights.front().second;
    const FormatFile& zip = weights_zip(ckpt);
    checkpoint.files[file] = member_source(std::move(checkpoint.files[file]), ckpt.offset, ckpt.size);
    zip.read(checkpoint, file);
    return FileFormat::kNemo;
  }

  /// The checkpoints the archive holds (.ckpt, .pt), each examined as a file, and what its other members hold.
  void name_pickles(const std::string& where, PickleVisitor& visitor) const override {
    // NeMo's restore extracts the whole archive: a member that lands outside its folder writes anywhere.
    for (const std::string& escape : escapes_) visitor.tampering(FileTampering::kArchiveEscape, where, escape);
    auto weights = members_named(members_, kWeights);
    for (const auto& [name, member] : members_) {
      if (!name.ends_with(".ckpt") && !name.ends_with(".pt")) {
        name_member_contents(archive_.view(member.offset, member.size), name, where, member.offset, archive_, visitor);
        continue;
      }
      std::string inside = fmt::format("{}!{}", where, name);
      std::unique_ptr<ByteSource> bytes = member_bytes(member);
      bool the_weights = weights.size() == 1 && weights.front().first == name;
      if (the_weights && looks_like_zip(*bytes)) {
        visitor.nested(weights_zip(member), inside);  // the zip read() reads: its directory is read once
      } else if (std::unique_ptr<FormatFile> file = open_format(*bytes)) {
        visitor.nested(*file, inside);
      }
    }
  }

 private:
  std::unique_ptr<ByteSource> member_bytes(const TarMember& member) const {
    return span_source(archive_.view(member.offset, member.size), archive_.path());
  }

  /// The weights member `ckpt` as the torch.save zip NeMo writes there, opened on first use.
  const FormatFile& weights_zip(const TarMember& ckpt) const {
    if (!weights_zip_) {
      weights_source_ = member_bytes(ckpt);
      weights_zip_ = zip_format_file(*weights_source_, FileFormat::kTorchZip, read_torch_zip);
    }
    return *weights_zip_;
  }

  const ByteSource& archive_;
  Members members_;
  mutable std::unique_ptr<ByteSource> weights_source_;
  mutable std::unique_ptr<FormatFile> weights_zip_;
  std::vector<std::string> escapes_;  ///< why each member that extraction writes outside its folder does
};

}  // namespace

std::unique_ptr<FormatFile> open_nemo(const ByteSource& source) {
  if (!looks_like_tar(source)) return nullptr;
  std::vector<std::string> escapes;
  Members members = read_tar_members(source, &escapes);
  if (members_named(members, kWeights).empty()) return nullptr;
  return std::make_unique<NemoFile>(source, std::move(members), std::move(escapes));
}

}  // namespace precdetect
