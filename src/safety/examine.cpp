#include "precdetect/safety/examine.h"

#include <fmt/format.h>

#include <algorithm>

#include "precdetect/core/confinement.h"
#include "precdetect/core/error.h"
#include "precdetect/core/format.h"
#include "precdetect/load/embedded_pickles.h"
#include "precdetect/load/file_format.h"
#include "precdetect/load/pickle/pickle_stream.h"
#include "precdetect/safety/chat_template.h"
#include "precdetect/safety/custom_code.h"
#include "precdetect/safety/keras_config.h"
#include "precdetect/safety/template_files.h"

namespace precdetect {
namespace {

constexpr int kMaxNesting = 4;  // a checkpoint in a zip in a tar: real archives nest two deep
// What one file's examination decompresses at most, over all its members and layers: four times what one layer
// may hold, so that a real archive of a few large members is read and a bomb (42.zip's layers) is named.
constexpr uint64_t kDecompressionBudget = uint64_t{4} << 30;

/// Runs every pickle a format names through the pickle machine and judges what each imports (the format says
/// where its pickles are: file_format.h).
class Examiner final : public PickleVisitor {
 public:
  explicit Examiner(Safety& safety) : safety_(safety) {}

  void pickles(std::span<const std::byte> bytes, const std::string& where, uint64_t base, size_t max_pickles) override {
    PickleStream read = read_pickle_stream(bytes, where, base, max_pickles);
    log(read.log, where);
    if (read.stopped) unverified(where, fmt::format("the pickle machine could not follow it: {}", *read.stopped));
  }

  void log(const pickle::PickleLog& log, const std::string& where) override {
    for (const pickle::Tampering& item : log.tampering)
      safety_.tampering.push_back({.kind = item.kind, .detail = item.detail, .file = where, .offset = item.offset});
    for (const pickle::Import& item : log.imports) {
      if (item.references_methods && !item.called) continue;  // judged by the method references it made
      safety_.imports.push_back({.module = item.module,
                                 .name = item.name,
                                 .judgement = item.attribute.empty()
                                                  ? judge_global(item.module, item.name)
                                                  : judge_method_reference(item.module, item.name, item.attribute),
                                 .spelling = item.spelling,
                                 .file = where,
                                 .offset = item.offset,
                                 .called = item.called});
    }
  }

  void nested(const FormatFile& member, const std::string& where) override {
    if (depth_ >= kMaxNesting) return unverified(where, "archives nested too deeply to follow");
    ++depth_;
    member.name_pickles(where, *this);
    --depth_;
  }

  void unverified(const std::string& where, std::string_view why) override {
    safety_.unverified.push_back(fmt::format("{}: {}", where, why));
  }

  void tampering(FileTampering kind, const std::string& where, std::string detail) override {
    safety_.add_tampering({.kind = kind, .detail = std::move(detail), .file = where});
  }

  void chat_template(std::string_view text, const std::string& where) override {
    examine_chat_template(text, where, safety_);
  }

  void keras_config(std::string_view json, const std::string& where) override {
    judge_keras_config(json, where, safety_);
    name_embedded_pickles(json, where, *this);  // a TorchModuleWrapper's torch.save archive
  }

  /// Inside the root (and there), it is another file of the model that precdetect does not read as weights:
  /// unverified. Outside, or missing from the folder (libhdf5 then looks in the working directory and its prefixes),
  /// a loader reads a file the model's author chose: path_escape.
  void reaches(const std::string& where, const std::filesystem::path& target, std::string what) override {
    const ModelRoot* root = confinement();
    std::error_code ec;
    bool inside = root && !escape_of(*root, target) && std::filesystem::exists(target, ec);
    if (inside)
      return unverified(where, fmt::format("{} `{}`, another file of the model, which precdetect does not read", what,
                                           target.string()));
    safety_.add_tampering(
        {.kind = FileTampering::kPathEscape,
         .detail = fmt::format("{} `{}`, outside the model's folder (or not in it, where libhdf5 then looks in the "
                               "working directory): a loader reads it; never opened",
                               what, target.string()),
         .file = where});
  }

  uint64_t decompression_left() const override { return budget_; }
  void decompressed(uint64_t bytes) override { budget_ -= std::min(bytes, budget_); }

 private:
  Safety& safety_;
  int depth_ = 0;
  uint64_t budget_ = kDecompressionBudget;
};

}  // namespace

void examine_format(const FormatFile& format, const std::filesystem::path& path, Safety& safety) {
  safety.files.push_back(path.string());
  try {
    Examiner examiner(safety);
    format.name_pickles(path.string(), examiner);
  } catch (const std::exception& e) {
    safety.add_failure(e, path.string());
  }
}

void examine_text(std::string_view text, const std::string& where, Safety& safety) {
  Examiner examiner(safety);
  name_embedded_pickles(text, where, examiner);
}

bool examine_source(const ByteSource& source, const std::string& where, Safety& safety) {
  std::unique_ptr<FormatFile> format = open_format(source);
  if (!format) return false;
  Examiner examiner(safety);
  format->name_pickles(where, examiner);
  return true;
}

void examine_file(const std::filesystem::path& path, Safety& safety, bool weights) {
  try {
    std::unique_ptr<ByteSource> source = map_file(path);
    bool examined = examine_source(*source, path.string(), safety);
    if (examined || weights) safety.files.push_back(path.string());
    if (!examined && weights)
      safety.unverified.push_back(
          fmt::format("{}: not a format precdetect examines (no {} header)", path.string(), examined_headers()));
  } catch (const std::exception& e) {  // our Error, or memory: never the batch's failure, never passed
    safety.files.push_back(path.string());
    safety.add_failure(e, path.string());
  }
}

Safety examine_model(const ModelSource& source, const Checkpoint* loaded) {
  Confined confined(source.root);
  Safety safety;
  for (const EscapingLink& link : source.escaping_links)
    safety.add_tampering({.kind = FileTampering::kPathEscape,
                          .detail = fmt::format("a link out of the model's folder {}: {} -> {}; never followed",
                                                source.root.folder.string(), link.link.string(), link.target),
                          .file = link.link.string()});
  if (!source.links_walked)
    safety.unverified.push_back(fmt::format("{}: too many entries to look at every link", source.path.string()));
  for (size_t file = 0; file < source.files.size(); ++file) {
    if (loaded && file < loaded->formats.size())
      examine_format(*loaded->formats[file], source.files[file], safety);
    else
      examine_file(source.files[file], safety, true);
  }
  for (const auto& file : source.pickles_beside) examine_file(file, safety, false);
  examine_custom_code(source, safety);
  examine_templates_beside(source, safety);
  return safety;
}

}  // namespace precdetect
