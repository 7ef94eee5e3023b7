#include <fmt/format.h>

#include "precdetect/classify/training_records.h"
#include "precdetect/core/error.h"
#include "precdetect/load/torch/torch_formats.h"

namespace precdetect {
namespace {

constexpr std::string_view kWeights = "model_weights.ckpt";
constexpr std::string_view kConfig = "model_config.yaml";

/// NeMo adds the archive's folder as "." (`./model_weights.ckpt`); members are matched by their last part.
std::vector<std::pair<std::string, TarMember>> members_named(const std::map<std::string, TarMember>& members,
                                                             std::string_view name) {
  std::vector<std::pair<std::string, TarMember>> found;
  for (const auto& [path, member] : members)
    if (path == name || path.ends_with("/" + std::string(name))) found.emplace_back(path, member);
  return found;
}

}  // namespace

bool looks_like_nemo(const ByteSource& source) {
  return looks_like_tar(source) && !members_named(read_tar_members(source), kWeights).empty();
}

std::string read_nemo(Checkpoint& checkpoint, size_t file) {
  const ByteSource& archive = *checkpoint.files[file];
  auto members = read_tar_members(archive);
  auto weights = members_named(members, kWeights);
  if (weights.size() != 1)
    fail(ErrorCode::kUnknownFormat, archive.path(),
         fmt::format("a model-parallel NeMo archive ({} weight files, first `{}`): unpack it and scan its "
                     "mp_rank folder",
                     weights.size(), weights.front().first));
  for (const auto& [path, config] : members_named(members, kConfig)) {
    auto bytes = archive.view(config.offset, config.size);
    FoundRecords found = find_nemo_config_record(
        std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), archive.path());
    for (TrainingRecord& record : found.records) merge_record(checkpoint.records, std::move(record));
    checkpoint.warnings.insert(checkpoint.warnings.end(), found.warnings.begin(), found.warnings.end());
  }
  const TarMember& ckpt = weights.front().second;
  checkpoint.files[file] = member_source(std::move(checkpoint.files[file]), ckpt.offset, ckpt.size);
  read_torch_zip(checkpoint, file);
  return "nemo";
}

}  // namespace precdetect
