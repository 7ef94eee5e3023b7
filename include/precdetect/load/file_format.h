#pragma once
/// A checkpoint file's format behind one interface, as bloaty keeps each object format behind `ObjectFile`: the
/// format detects its files, lists their tensor records, and names the pickles they hold. `open_format` is the one
/// detection: the load chain (load/checkpoint), the safety examination (safety/examine) and `diff` (through the
/// load chain) all ask it, so they never disagree about a file. Each format's `open_*` and `looks_like_*` live in
/// its folder; the chain's order in file_format.cpp is the only place they are weighed.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "precdetect/core/format.h"
#include "precdetect/core/named_enum.h"
#include "precdetect/load/pickle/pickle.h"
#include "precdetect/load/source/byte_source.h"

namespace precdetect {

struct Checkpoint;

class FormatFile;

/// What a model's files hold outside any pickle that only an attack needs: each makes the model unsafe on its own
/// (docs/security.md; JSON `safety.tampering[].kind`, beside the pickle machine's kinds).
enum class FileTampering {
  /// A link, or a path the model names (an ONNX external-data location, a shard index's file), that resolves outside
  /// the model's root: precdetect never opens it, and a loader that follows it reads a file the author chose.
  kPathEscape,
  /// An archive member that extraction would write outside its folder: an absolute or `..` name, a symbolic or
  /// hard link (what PEP 706's `filter='data'` refuses).
  kArchiveEscape,
  /// A chat template that does what Jinja2's sandbox refuses: an `_` attribute, a string's `format`, an attribute
  /// or item name built at render time.
  kTemplateCode,
  /// A Keras config holding a serialized Python function (marshalled bytecode) that loading the model runs.
  kSerializedFunction,
};

/// "path_escape", "archive_escape", "template_code", "serialized_function".
std::string_view file_tampering_name(FileTampering kind);

/// Receives the pickles a file holds as its format names them; safety/examine runs and judges them. `where` names
/// the place in reports: the file, and after each "!" the archive member ("x.pt!archive/data.pkl").
class PickleVisitor {
 public:
  virtual ~PickleVisitor() = default;
  /// Pickles laid end to end from `bytes[0]`, at offset `base` (of the file, or of the member when it is
  /// compressed), as a loader reads them: at most `max_pickles` of them.
  virtual void pickles(std::span<const std::byte> bytes, const std::string& where, uint64_t base,
                       size_t max_pickles = std::numeric_limits<size_t>::max()) = 0;
  /// What pickles only the format's own reader can find (they lie between raw data) import and tamper with.
  virtual void log(const pickle::PickleLog& log, const std::string& where) = 0;
  /// A member that is a file of its own (a checkpoint inside an archive), opened in its format.
  virtual void nested(const FormatFile& member, const std::string& where) = 0;
  /// What the format cannot open or vouch for, and why: never passed as safe.
  virtual void unverified(const std::string& where, std::string_view why) = 0;
  /// What the file holds, outside any pickle, that only an attack needs (an archive member that escapes).
  virtual void tampering(FileTampering kind, const std::string& where, std::string detail) = 0;
  /// A chat template the file carries (GGUF's `tokenizer.chat_template`), which servers render with Jinja2.
  virtual void chat_template(std::string_view text, const std::string& where) = 0;
  /// A Keras model config (JSON) the file carries, which keras.models.load_model deserializes.
  virtual void keras_config(std::string_view json, const std::string& where) = 0;
  /// A file the format's loader opens beside this one (an HDF5 external link, external storage, a virtual
  /// dataset's source), resolved as the format resolves it (`target`), `what` reaches it in words: judged inside or
  /// outside the model, never opened.
  virtual void reaches(const std::string& where, const std::filesystem::path& target, std::string what) = 0;
  /// How many more bytes this examination may decompress (archive members, compressed layers, nested in any
  /// depth): one budget over the whole file, so that a compression bomb is a named error, never a hang.
  virtual uint64_t decompression_left() const = 0;
  /// Takes `bytes` decompressed out of that budget.
  virtual void decompressed(uint64_t bytes) = 0;
};

/// One file opened in its format. It refers to the bytes it was opened on, which must outlive it; what it needs of
/// the file's structure it reads once, for both of its uses.
class FormatFile {
 public:
  virtual ~FormatFile() = default;
  virtual FileFormat format() const = 0;
  /// Appends the file's tensor records (and the training records, warnings and metadata its reader finds) to
  /// `checkpoint`, whose file `file` holds the bytes this was opened on; returns the format it read, which
  /// Checkpoint::format takes (format() but where reading tells more: a torch zip that is TorchScript). Throws Error
  /// with the format's own codes (docs/errors.md).
  virtual FileFormat read(Checkpoint& checkpoint, size_t file) const = 0;
  /// Names to `visitor` every pickle the file holds, as the format's own loader (torch.load, numpy.load,
  /// pickle.load) would unpickle them; what the format cannot follow it names unverified. Reads headers and
  /// pickles, never tensor data.
  virtual void name_pickles(const std::string& where, PickleVisitor& visitor) const = 0;
};

/// A format whose reading and pickle naming need nothing read in advance: its two functions, over the bytes.
using ReadFormat = FileFormat (*)(Checkpoint& checkpoint, size_t file);
using NamePickles = void (*)(const ByteSource& source, const std::string& where, PickleVisitor& visitor);
std::unique_ptr<FormatFile> plain_format_file(const ByteSource& source, FileFormat format, ReadFormat read,
                                              NamePickles name_pickles);

/// NamePickles of the formats that hold no pickles: a JSON header, GGUF key/values or a msgpack tree, and raw
/// numbers, nothing to execute.
void holds_no_pickles(const ByteSource& source, const std::string& where, PickleVisitor& visitor);

/// `source` opened as the first format whose sniff claims it, or nullptr when none does. The result refers to
/// `source`. May throw Error for an archive too damaged to tell which format it is (a tar's members).
std::unique_ptr<FormatFile> open_format(const ByteSource& source);

/// The format `source` holds: open_format's, or kUnknown.
FileFormat detect_format(const ByteSource& source);

}  // namespace precdetect

template <>
struct fmt::formatter<precdetect::FileTampering>
    : precdetect::NamedEnumFormatter<precdetect::FileTampering, precdetect::file_tampering_name> {};
