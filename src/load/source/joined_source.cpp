#include "precdetect/load/source/joined_source.h"

#include <fmt/format.h>

#include <algorithm>

#include "precdetect/core/error.h"

namespace precdetect {

JoinedSource::JoinedSource(std::unique_ptr<ByteSource> first) { append(std::move(first)); }

uint64_t JoinedSource::append(std::unique_ptr<ByteSource> part) {
  uint64_t start = size_;
  size_ += part->size();
  starts_.push_back(start);
  parts_.push_back(std::move(part));
  return start;
}

std::vector<std::filesystem::path> JoinedSource::files() const {
  std::vector<std::filesystem::path> files;
  for (const auto& part : parts_)
    for (std::filesystem::path& file : part->files()) files.push_back(std::move(file));
  return files;
}

std::pair<const ByteSource*, uint64_t> JoinedSource::part_of(uint64_t offset, uint64_t length) const {
  // The last part starting at or before `offset`; empty parts share their start with the next one.
  size_t part = std::upper_bound(starts_.begin(), starts_.end(), offset) - starts_.begin() - 1;
  uint64_t within = offset - starts_[part];
  if (within > parts_[part]->size() || length > parts_[part]->size() - within)
    fail(ErrorCode::kOffsetPastEnd, path(),
         fmt::format("bytes [{}, +{}) are not inside one of the model's files", offset, length));
  return {parts_[part].get(), within};
}

std::span<const std::byte> JoinedSource::view(uint64_t offset, uint64_t length) const {
  auto [part, within] = part_of(offset, length);
  return part->view(within, length);
}

void JoinedSource::release(uint64_t offset, uint64_t length) const {
  auto [part, within] = part_of(offset, length);
  part->release(within, length);
}

void JoinedSource::read(uint64_t offset, std::span<std::byte> dest) const {
  auto [part, within] = part_of(offset, dest.size());
  part->read(within, dest);
}

std::string JoinedSource::version() const {
  std::string versions = parts_.front()->version();
  if (versions.empty()) return versions;  // a local model, whose files a cache knows by their status
  for (size_t i = 1; i < parts_.size(); ++i) versions += "|" + parts_[i]->version();
  return versions;
}

}  // namespace precdetect
