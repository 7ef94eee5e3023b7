#include "precdetect/load/source/decoded_source.h"

#include <fmt/format.h>

#include <cstring>

#include "precdetect/core/error.h"

namespace precdetect {

uint64_t DecodedSource::add_region(uint64_t size, Decoder decode, EncodedRange encoded) {
  uint64_t offset = this->size();
  regions_.emplace(offset, Region{.size = size, .decode = std::move(decode), .encoded = encoded});
  regions_size_ += size;
  return offset;
}

const DecodedSource::Region* DecodedSource::region_of(uint64_t offset, uint64_t length, uint64_t& begin) const {
  if (offset < file_->size() && length <= file_->size() - offset) return nullptr;
  auto after = regions_.upper_bound(offset);
  if (after != regions_.begin()) {
    const auto& [start, region] = *std::prev(after);
    if (offset >= start && length <= region.size - (offset - start)) {
      begin = offset - start;
      return &region;
    }
  }
  fail(ErrorCode::kOffsetPastEnd, path(),
       fmt::format("bytes [{}, +{}) are not inside the file or one of its decoded tensors", offset, length));
}

std::span<const std::byte> DecodedSource::view(uint64_t offset, uint64_t length) const {
  uint64_t begin = 0;
  const Region* region = region_of(offset, length, begin);
  if (!region) return file_->view(offset, length);
  std::lock_guard lock(mutex_);
  if (region->decoded.size() != region->size) {
    std::string bytes(region->size, '\0');
    region->decode(std::as_writable_bytes(std::span(bytes)));
    region->decoded = std::move(bytes);
  }
  return std::as_bytes(std::span(region->decoded)).subspan(begin, length);
}

void DecodedSource::release(uint64_t offset, uint64_t length) const {
  uint64_t begin = 0;
  const Region* region = region_of(offset, length, begin);
  if (!region) return file_->release(offset, length);
  std::lock_guard lock(mutex_);
  std::string().swap(region->decoded);
  if (region->encoded.length > 0) file_->release(region->encoded.offset, region->encoded.length);
}

void DecodedSource::read(uint64_t offset, std::span<std::byte> dest) const {
  uint64_t begin = 0;
  if (!region_of(offset, dest.size(), begin)) return file_->read(offset, dest);
  std::span<const std::byte> bytes = view(offset, dest.size());
  std::memcpy(dest.data(), bytes.data(), bytes.size());
}

}  // namespace precdetect
