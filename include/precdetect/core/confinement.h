#pragma once
/// Confinement: every file precdetect opens while reading a model resolves inside the model's root, whatever the
/// format, so that a link or a path a model names can never make precdetect read (and report numbers about) a
/// file the model's author chose elsewhere on the machine. Enforced where files are opened (open_for_reading):
/// openat2 with RESOLVE_BENEATH where the kernel has it, else a walk of the path component by component that
/// reads links itself and opens each component with O_NOFOLLOW.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "precdetect/core/hard_links.h"

namespace precdetect {

/// Where a model's files must resolve. Empty (`folder` empty): nothing is confined.
struct ModelRoot {
  std::filesystem::path folder;   ///< canonical: the model's folder, a file's own folder, an HF cache repository
  std::filesystem::path base;     ///< canonical: the folder the model's paths are spelled from, beneath `folder`
  std::filesystem::path spelled;  ///< `base` as those paths spell it (the folder the user typed, not resolved)
  /// The file the user typed, when the model is one file: the user chose it, so it is opened even when it is
  /// itself a link that leads elsewhere (confinement starts below what was typed).
  std::filesystem::path entry;
  /// The names of `folder`'s files of several names, counted when a file of several names is first opened: one
  /// with a name outside is a link out (core/hard_links.h). Shared by the root's copies.
  std::shared_ptr<HardLinkCensus> census;
};

/// The root of a model given as `typed`, a folder or a file (followed if it is a link: the user chose it): that
/// folder, or the file's own folder; a Hugging Face cache snapshot (`models--org--name/snapshots/<rev>`) widens to
/// its repository `models--org--name`, whose `blobs/` its files link into. Throws Error(kIo) when the folder
/// cannot be resolved.
ModelRoot model_root_of(const std::filesystem::path& typed, bool is_folder);

/// True when `status`, of a file opened beneath `root` by another path than its entry, has names outside the root.
bool has_names_outside(const ModelRoot& root, const struct stat& status);

/// A link (or a path the model names) that leads outside the root, and where it leads.
struct EscapingLink {
  std::filesystem::path link;  ///< as spelled from the model's folder
  std::string target;          ///< what the link holds, or the path itself
};

/// How `path` resolves against `root`: nullopt when beneath it (or missing there), else the first link, or the
/// path itself, that leaves it. Opens nothing outside the root: links are read with readlinkat, never followed.
std::optional<EscapingLink> escape_of(const ModelRoot& root, const std::filesystem::path& path);

/// Opens `path` read-only (with `flags`, O_RDONLY | O_CLOEXEC added) so that it resolves beneath `root`.
/// Returns the descriptor. Throws Error(kPathEscape) naming the link and where it points when it leads outside;
/// otherwise returns -1 with errno set, as open(2) does.
int open_beneath(const ModelRoot& root, const std::filesystem::path& path, int flags);

/// Forces the component walk instead of openat2, for the tests that hold the two to each other.
void use_openat2_for_tests(bool enabled);

/// While it lives, this thread's open_for_reading calls resolve beneath `root` (the innermost scope wins; an empty
/// root leaves the enclosing one). Set where a model's reading starts: discover, open_checkpoint, examine_model.
class Confined {
 public:
  explicit Confined(const ModelRoot& root);
  explicit Confined(const ModelRoot&& root) = delete;  // the scope keeps a pointer: never to a temporary
  ~Confined();
  Confined(const Confined&) = delete;
  Confined& operator=(const Confined&) = delete;

 private:
  const ModelRoot* previous_;
};

/// The root this thread's opens are confined to, or nullptr.
const ModelRoot* confinement();

}  // namespace precdetect
