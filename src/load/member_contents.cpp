#include "precdetect/load/member_contents.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "precdetect/load/compressed/compressed.h"
#include "precdetect/load/embedded_pickles.h"
#include "precdetect/load/pickle/pickle_stream.h"

namespace precdetect {
namespace {

// Members that hold a checkpoint of their own, examined like a file.
constexpr std::array<std::string_view, 7> kNestedExtensions = {".pt", ".pth", ".bin", ".ckpt", ".npz", ".zip", ".nemo"};
// Members pickle.load or torch reads as pickles: data.pkl, constants.pkl, TorchScript's *.debug_pkl, joblib's.
constexpr std::array<std::string_view, 4> kPickleMembers = {"pkl", ".pickle", ".joblib", ".dill"};
// Members looked through for base64 pickles at most: configs are kilobytes, tensors are not text.
constexpr uint64_t kScannedText = uint64_t{64} << 20;

bool has_suffix(std::string_view name, std::span<const std::string_view> suffixes) {
  return std::any_of(suffixes.begin(), suffixes.end(), [&](std::string_view s) { return name.ends_with(s); });
}

}  // namespace

bool archive_like(std::span<const std::byte> bytes) {
  constexpr size_t kTarMagicAt = 257;
  auto has = [&](size_t at, std::string_view magic) {
    return bytes.size() >= at + magic.size() && std::memcmp(bytes.data() + at, magic.data(), magic.size()) == 0;
  };
  return has(0, "PK\x03\x04") || has(kTarMagicAt, "ustar") ||
         compression_of(bytes.first(std::min<size_t>(bytes.size(), 16))).has_value();
}

bool pickle_member_name(std::string_view name) { return has_suffix(name, kPickleMembers); }

void name_member_contents(std::span<const std::byte> bytes, std::string_view name, const std::string& where,
                          uint64_t base, const ByteSource& archive, PickleVisitor& visitor) {
  std::string inside = fmt::format("{}!{}", where, name);
  if (pickle_member_name(name) || starts_like_pickle(bytes)) return visitor.pickles(bytes, inside, base);
  if (!has_suffix(name, kNestedExtensions) && !archive_like(bytes)) {
    // A config whose loader decodes pickles from its text (Stable-Baselines3's `data`).
    if (bytes.size() <= kScannedText)
      name_embedded_pickles({reinterpret_cast<const char*>(bytes.data()), bytes.size()}, inside, visitor);
    return;
  }
  // Named like the member, so that what a `.pkl.gz` member decodes to is a pickle by its name.
  std::unique_ptr<ByteSource> member = span_source(bytes, fmt::format("{}!{}", archive.path().string(), name));
  if (std::unique_ptr<FormatFile> file = open_format(*member)) visitor.nested(*file, inside);
}

}  // namespace precdetect
