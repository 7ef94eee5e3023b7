#include "precdetect/load/pickle/pickle_stream.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "precdetect/core/error.h"
#include "precdetect/core/format.h"
#include "precdetect/load/checkpoint.h"
#include "precdetect/load/pickle/pickle_globals.h"

namespace precdetect {

PickleStream read_pickle_stream(std::span<const std::byte> bytes, const std::filesystem::path& path, uint64_t base,
                                size_t max_pickles) {
  PickleStream stream{.end = base};
  uint64_t at = 0;
  while (at < bytes.size() && stream.pickles < max_pickles) {
    try {
      at = pickle::run(bytes.subspan(at), path, base + at, nullptr, &stream.log).end - base;
    } catch (const Error& e) {
      stream.stopped = e.what();
      return stream;
    }
    ++stream.pickles;
    stream.end = base + at;
  }
  return stream;
}

bool starts_like_pickle(std::span<const std::byte> bytes) {
  return bytes.size() >= 2 && bytes[0] == std::byte{0x80} && static_cast<uint8_t>(bytes[1]) <= 5;
}

bool looks_like_pickle(const ByteSource& source) {
  std::span<const std::string_view> extensions = format_info(FileFormat::kPickle).extensions;
  if (std::ranges::find(extensions, source.path().extension().string()) != extensions.end()) return true;
  return starts_like_pickle(source.view(0, std::min<uint64_t>(source.size(), 2)));
}

void refuse_pickle(const ByteSource& source, std::span<const std::byte> bytes, uint64_t base) {
  PickleStream stream = read_pickle_stream(bytes, source.path(), base);
  if (!stream.log.tampering.empty()) {
    const pickle::Tampering& first = stream.log.tampering.front();
    fail(ErrorCode::kUnsafePickle, source.path(),
         fmt::format("a tampered pickle ({}: {}) at offset {}; not a checkpoint, and never to be unpickled",
                     pickle::tampering_kind_name(first.kind), first.detail, first.offset));
  }
  std::set<std::string> globals;
  for (const pickle::Import& item : stream.log.imports) {
    GlobalJudgement judged = judge_global(item.module, item.name);
    if (judged.kind == GlobalClass::kDangerous)
      fail(ErrorCode::kUnsafePickle, source.path(),
           fmt::format("a pickle that imports {}.{} ({}: {}) at offset {}{}; not a checkpoint, and never to be "
                       "unpickled",
                       item.module, item.name, judged.family, judged.why, item.offset,
                       item.called ? " and calls it" : ""));
    globals.insert(fmt::format("{}.{}", item.module, item.name));
  }
  std::string what = globals.empty() ? "no globals" : fmt::format("{}", fmt::join(globals, ", "));
  fail(ErrorCode::kNotACheckpoint, source.path(),
       fmt::format("a pickle of {} object(s) importing {}{}: no tensors precdetect can read", stream.pickles, what,
                   stream.stopped ? fmt::format(" (and then: {})", *stream.stopped) : ""));
}

namespace {

FileFormat read_pickle(Checkpoint& checkpoint, size_t file) {
  const ByteSource& source = *checkpoint.files[file];
  refuse_pickle(source, source.view(0, source.size()), 0);
}

void name_stream_pickles(const ByteSource& source, const std::string& where, PickleVisitor& visitor) {
  visitor.pickles(source.view(0, source.size()), where, 0);
}

}  // namespace

std::unique_ptr<FormatFile> open_pickle(const ByteSource& source) {
  return looks_like_pickle(source) ? plain_format_file(source, FileFormat::kPickle, read_pickle, name_stream_pickles)
                                   : nullptr;
}

}  // namespace precdetect
