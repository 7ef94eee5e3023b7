#include "precdetect/safety/examine.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <set>

#include "precdetect/core/error.h"
#include "precdetect/core/inflate.h"
#include "precdetect/load/checkpoint.h"
#include "precdetect/load/file_format.h"
#include "precdetect/load/hdf5/hdf5.h"
#include "precdetect/load/numpy/npy.h"
#include "precdetect/load/pickle/pickle_stream.h"
#include "precdetect/load/source/zip_reader.h"
#include "precdetect/load/torch/torch_formats.h"

namespace precdetect {
namespace {

constexpr size_t kLegacyPickles = 5;  // magic number, protocol, sys_info, the object, the storage keys
constexpr uint64_t kMaxInflated = 1ull << 30;
constexpr uint64_t kWholeMember = std::numeric_limits<uint64_t>::max();  // member_bytes' limit for all of it
constexpr int kMaxNesting = 4;  // a checkpoint in a zip in a tar: real archives nest two deep
// Zip members that hold a checkpoint of their own; examined like a file.
constexpr std::string_view kNestedExtensions[] = {".pt", ".pth", ".bin", ".ckpt", ".npz", ".zip", ".nemo"};
// Zip members torch or pickle.load reads as pickles: data.pkl, constants.pkl, TorchScript's *.debug_pkl.
constexpr std::string_view kPickleMembers[] = {"pkl", ".pickle"};

bool has_suffix(std::string_view name, std::span<const std::string_view> suffixes) {
  return std::any_of(suffixes.begin(), suffixes.end(), [&](std::string_view s) { return name.ends_with(s); });
}

class Examiner {
 public:
  explicit Examiner(Safety& safety) : safety_(safety) {}

  /// Examines `source` by its first bytes, whatever its name; false when it is no format examined here.
  bool source(const ByteSource& source, const std::string& where, int depth = 0) {
    if (depth > kMaxNesting) return unverified(where, "archives nested too deeply to follow"), true;
    switch (detect_format(source)) {
      case FileFormat::kSafetensors:  // a JSON header, GGUF key/values or a msgpack tree, and raw numbers:
      case FileFormat::kGguf:         // nothing to execute
      case FileFormat::kFlax:
        return true;
      case FileFormat::kHdf5:
        return keras_model(source, where), true;
      case FileFormat::kNpz:
      case FileFormat::kTorchZip:
        return zip(source, where, depth), true;
      case FileFormat::kTorchLegacy:
        return stream(source.view(0, source.size()), where, 0, kLegacyPickles), true;
      case FileFormat::kNemo:
      case FileFormat::kTorchTar:
        return tar(source, where, depth), true;
      case FileFormat::kNpy:
        return npy(source.view(0, source.size()), where), true;
      case FileFormat::kPickle:
        return stream(source.view(0, source.size()), where, 0), true;
      case FileFormat::kUnknown:
        return false;
    }
    return false;
  }

 private:
  void unverified(const std::string& where, std::string_view why) {
    safety_.unverified.push_back(fmt::format("{}: {}", where, why));
  }

  /// HDF5 holds no pickles, but a whole Keras model's config may hold Lambda layers: marshalled Python code that
  /// keras.models.load_model runs (Keras 3 only with safe_mode=False), which precdetect does not judge.
  void keras_model(const ByteSource& source, const std::string& where) {
    std::vector<std::string> lambdas = keras_lambda_layers(source);
    if (!lambdas.empty())
      unverified(where, fmt::format("a Keras model config with Lambda layers ({}): Python code that "
                                    "keras.models.load_model may run, not judged here",
                                    fmt::join(lambdas, ", ")));
  }

  /// Pickles from `bytes[0]`, at offset `base` of the file: each import judged, and a stop named.
  void stream(std::span<const std::byte> bytes, const std::string& where, uint64_t base,
              size_t max_pickles = std::numeric_limits<size_t>::max()) {
    PickleStream read = read_pickle_stream(bytes, where, base, max_pickles);
    add_log(read.log, where);
    if (read.stopped) unverified(where, fmt::format("the pickle machine could not follow it: {}", *read.stopped));
  }

  void add_log(const pickle::PickleLog& log, const std::string& where) {
    for (const pickle::Tampering& item : log.tampering)
      safety_.tampering.push_back({.kind = item.kind, .detail = item.detail, .file = where, .offset = item.offset});
    for (const pickle::Import& item : log.imports)
      safety_.imports.push_back({.module = item.module,
                                 .name = item.name,
                                 .judgement = judge_global(item.module, item.name),
                                 .file = where,
                                 .offset = item.offset,
                                 .called = item.called});
  }

  /// The header of the .npy whose first bytes are `head`; nullopt, and the reason noted, when it is not one.
  std::optional<NpyHeader> npy_header(std::span<const std::byte> head, const std::string& where) {
    try {
      return read_npy_header(head, where);
    } catch (const Error& e) {
      unverified(where, e.what());
      return std::nullopt;
    }
  }

  void npy(std::span<const std::byte> bytes, const std::string& where) {
    std::optional<NpyHeader> header = npy_header(bytes, where);
    if (header && header->holds_objects) stream(bytes.subspan(header->data_offset), where, header->data_offset, 1);
  }

  void zip(const ByteSource& source, const std::string& where, int depth) {
    std::vector<ZipEntry> entries;
    try {
      entries = read_zip_entries(source);
    } catch (const Error& e) {
      return unverified(where, e.what());
    }
    std::set<std::string> names;
    bool torchscript = false;
    for (const ZipEntry& entry : entries) {
      if (!names.insert(entry.name).second)
        unverified(where, fmt::format("two entries named `{}`: readers disagree on which one they load", entry.name));
      torchscript |= entry.name.ends_with("/constants.pkl") || entry.name.find("/code/") != std::string::npos;
    }
    if (torchscript)
      unverified(where,
                 "a TorchScript archive: torch.jit.load compiles and runs its code/, which precdetect does "
                 "not judge");
    for (const ZipEntry& entry : entries) member(source, entry, where, depth);
  }

  /// One zip member: a pickle, an array, a nested checkpoint, or raw data (tensor records) that nothing unpickles.
  void member(const ByteSource& archive, const ZipEntry& entry, const std::string& where, int depth) {
    std::string inside = fmt::format("{}!{}", where, entry.name);
    bool pickle_name = has_suffix(entry.name, kPickleMembers);
    bool array = entry.name.ends_with(".npy");
    bool nested = has_suffix(entry.name, kNestedExtensions);
    bool storage = entry.name.find("/data/") != std::string::npos ||
                   entry.name.find("/constants/") != std::string::npos || entry.name.starts_with(".data/") ||
                   entry.name.find("/.data/") != std::string::npos;
    if (storage && !pickle_name) return;
    std::string inflated;
    std::span<const std::byte> bytes;
    try {
      // An array's header tells whether a pickle follows: numbers are not inflated to find that out.
      bytes = member_bytes(archive, entry, inflated, array ? kMaxNpyHead : kWholeMember);
    } catch (const Error& e) {
      if (pickle_name || array || nested) unverified(inside, e.what());
      return;
    }
    bool stored = entry.method == 0;
    uint64_t base = stored ? entry.data_offset : 0;  // offsets in a compressed member count from its start
    if (array) return array_member(archive, entry, bytes, inside, base);
    if (pickle_name || starts_like_pickle(bytes)) return stream(bytes, inside, base);
    if (nested) source(*span_source(bytes, archive.path()), inside, depth + 1);
  }

  /// An .npy member, from its first bytes `head`: the rest is read only when it is a pickle.
  void array_member(const ByteSource& archive, const ZipEntry& entry, std::span<const std::byte> head,
                    const std::string& where, uint64_t base) {
    std::optional<NpyHeader> header = npy_header(head, where);
    if (!header || !header->holds_objects) return;
    std::string inflated;
    std::span<const std::byte> bytes;
    try {
      bytes = member_bytes(archive, entry, inflated, kWholeMember);
    } catch (const Error& e) {
      return unverified(where, e.what());
    }
    stream(bytes.subspan(header->data_offset), where, base + header->data_offset, 1);
  }

  /// A member's bytes, or its first `limit` when it holds more: stored ones straight from the archive, deflated
  /// ones inflated into `inflated` (whole ones up to kMaxInflated).
  std::span<const std::byte> member_bytes(const ByteSource& archive, const ZipEntry& entry, std::string& inflated,
                                          uint64_t limit) {
    // An entry flagged encrypted is read as it is stored: a reader that ignores the flag loads those bytes (and
    // bytes truly encrypted are no pickle the machine can follow: unverified).
    std::span<const std::byte> raw = archive.view(entry.data_offset, entry.size);
    if (entry.method == 0) return raw.first(std::min<uint64_t>(raw.size(), limit));
    if (entry.method != 8)
      fail(ErrorCode::kCompressedEntry, archive.path(), fmt::format("compression method {}", entry.method));
    if (limit < entry.uncompressed) {
      inflated = inflate_head(raw, limit, archive.path(), entry.name);
    } else if (entry.uncompressed > kMaxInflated) {
      fail(ErrorCode::kCompressedEntry, archive.path(),
           fmt::format("inflates to {} bytes, more than a safety check reads", entry.uncompressed));
    } else {
      inflated = inflate_entry(raw, entry.uncompressed, archive.path(), entry.name);
    }
    return std::as_bytes(std::span(inflated));
  }

  /// A NeMo archive's checkpoints, or pre-0.4 torch.save's pickles (found by its own reader: they lie between raw
  /// storage bytes).
  void tar(const ByteSource& source, const std::string& where, int depth) {
    std::map<std::string, TarMember> members;
    try {
      members = read_tar_members(source);
    } catch (const Error& e) {
      return unverified(where, e.what());
    }
    if (detect_format(source) == FileFormat::kNemo) {
      for (const auto& [name, member] : members)
        if (name.ends_with(".ckpt") || name.ends_with(".pt"))
          this->source(*span_source(source.view(member.offset, member.size), source.path()),
                       fmt::format("{}!{}", where, name), depth + 1);
      return;
    }
    if (auto sys_info = members.find("sys_info"); sys_info != members.end())
      stream(source.view(sys_info->second.offset, sys_info->second.size), where, sys_info->second.offset, 1);
    pickle::PickleLog log;
    Checkpoint scratch{.pickle_log = &log};
    scratch.files.push_back(span_source(source.view(0, source.size()), source.path()));
    try {
      read_torch_tar(scratch, 0);
    } catch (const Error& e) {
      unverified(where, e.what());
    }
    add_log(log, where);
  }

  Safety& safety_;
};

}  // namespace

bool examine_source(const ByteSource& source, const std::string& where, Safety& safety) {
  return Examiner(safety).source(source, where);
}

void examine_file(const std::filesystem::path& path, Safety& safety, bool weights) {
  try {
    std::unique_ptr<ByteSource> source = map_file(path);
    bool examined = examine_source(*source, path.string(), safety);
    if (examined || weights) safety.files.push_back(path.string());
    if (!examined && weights)
      safety.unverified.push_back(fmt::format(
          "{}: not a format precdetect examines (no safetensors, GGUF, msgpack, HDF5, zip, pickle, tar or npy header)",
          path.string()));
  } catch (const std::exception& e) {  // our Error, or memory: never the batch's failure, never passed
    safety.files.push_back(path.string());
    safety.unverified.emplace_back(e.what());
  }
}

Safety examine_model(const ModelSource& source) {
  Safety safety;
  for (const auto& file : source.files) examine_file(file, safety, true);
  for (const auto& file : source.pickles_beside) examine_file(file, safety, false);
  return safety;
}

}  // namespace precdetect
