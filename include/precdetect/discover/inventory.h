#pragma once
/// The inventory: every file under an input the user gave, each accounted to one model of that input with one
/// disposition (docs/security.md, "The inventory"). The input's safety is judged over its inventory, not over the
/// files a scan chose to read as a model: a pickle beside several models, in a sub-folder, or in a folder of no
/// weights is judged like the weights themselves.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "precdetect/core/confinement.h"
#include "precdetect/core/named_enum.h"
#include "precdetect/discover/discover.h"

namespace precdetect {

/// What an inventory entry is on disk.
enum class EntryKind {
  kFile,    ///< a regular file
  kLink,    ///< a symbolic link, listed as a link: what it leads to inside the input is judged through it
  kFolder,  ///< a folder named and not walked: a repository's store (.git), the HF cache's own bookkeeping
  kOther,   ///< a FIFO, socket or device: no file a loader reads
};

/// "file", "link", "folder", "other" (JSON `inventory.files[].kind`).
std::string_view entry_kind_name(EntryKind kind);

/// What a file is to the model it is accounted to.
enum class Disposition {
  kWeights,        ///< weights of the model: what its scan reads as tensors
  kLoaderFile,     ///< a file its loaders read: config, tokenizer, template, processor, index, adapter config
  kTrainingState,  ///< the trainer's state beside it: optimizer.pt, scheduler.pt, rng_state*, training_args.bin, ...
  kJudged,         ///< judged on its own: a pickle, archive, compressed file, code, weights no model of the run reads
  kNotRead,        ///< not read past its first bytes (an image, a README), or not at all (.git), with the reason
};

/// "weights", "loader_file", "training_state", "judged", "not_read" (JSON `inventory.files[].disposition`).
std::string_view disposition_name(Disposition disposition);

/// Why a file was not read, as the table counts them.
enum class Unread {
  kStore,       ///< a folder of a repository's or the HF cache's own bookkeeping, named and not walked
  kLinkOut,     ///< a link that leaves the input: never followed
  kDocument,    ///< a README, licence, notes, a page
  kImage,       ///< a picture (a model card's figures, a sample)
  kMedia,       ///< audio or video
  kPlainData,   ///< text or tabular data no loader unpickles: CSV, YAML, JSON a loader does not read
  kNoFormat,    ///< bytes of no format precdetect knows a loader to unpickle or extract
  kNotAFile,    ///< a FIFO, socket or device
  kNotSniffed,  ///< past the files a scan sniffs, or unreadable: not vouched for (the model is then unverified)
};

/// "store", "link_out", "document", "image", "media", "plain_data", "no_format", "not_a_file", "not_sniffed".
std::string_view unread_name(Unread why);

struct InventoryEntry {
  std::filesystem::path path;  ///< spelled from the input, as discover spells a model's files
  EntryKind kind = EntryKind::kFile;
  std::optional<uint64_t> size;  ///< bytes; a link's are those of the file it leads to inside the input
  std::string link;              ///< a link's target, as the link holds it
  bool leaves = false;           ///< a link that resolves outside the input's root: never followed
  uint64_t names_outside = 0;    ///< a hard link's names outside the input's root: it leaves too, never read
  Disposition disposition = Disposition::kNotRead;
  std::optional<Unread> unread;  ///< why, for a file not read
  std::string reason;            ///< the disposition's why, in words ("a pickle, by its first bytes")
  bool judged = false;           ///< a safety judge read it (its first bytes at least): it has a verdict
};

/// The entries of one input, or the part of them accounted to one of its models.
struct Inventory {
  ModelRoot root;                       ///< the input's: every entry is opened beneath it
  std::filesystem::path path;           ///< the folder or file listed, as discover resolves the input
  std::vector<InventoryEntry> entries;  ///< in path order
  uint64_t unlisted = 0;                ///< entries past the listing bound: counted, not kept
  bool walked = true;                   ///< false when a folder could not be read or the walk stopped short
};

/// Entries listed one by one; past them an input's entries are counted (Inventory::unlisted), and not vouched for.
inline constexpr size_t kMaxListed = 100000;

/// Lists `input` as discover resolves it (a path, a hub id in the HF cache at `hf_cache`): a folder's whole tree,
/// whatever --recursive makes of its sub-folders, or a file alone. Reads no file: each entry's kind and size come
/// from the directory and stat (a link's from where it lands, when that is inside the input's root; a file of
/// several names with one outside the root leaves it, as a link out: core/hard_links.h). `.git` (and
/// `.hg`, `.svn`), a local download's `.cache/huggingface`, and in the HF cache `.locks`, `.no_exist`, a
/// repository's `refs` and `blobs` are named as folders and not walked. Nullopt for what is no local path (a URL,
/// a hub id not in the cache, a path that does not exist): its scan reports that.
std::optional<Inventory> list_input(const std::string& input, const std::filesystem::path& hf_cache);

/// The path a model of the run names, as discover resolves it and list_input spells its entries: a folder, a file,
/// or a shard group (`folder/consolidated.*.pth`); nullopt when the model does not resolve.
std::optional<std::filesystem::path> model_path(const std::string& model, const std::filesystem::path& hf_cache);

/// Splits `listing` among the models of its input, named by `paths` (model_path's, one per model, in the run's
/// order). An entry a model names (its file, a file of its shard group) is that model's; any other is accounted to
/// the model whose folder is the deepest one holding it, the first of them when several models share that folder,
/// and to the first model when no model's folder holds it (a file at the top of a --recursive zoo). Every entry is
/// accounted once; `unlisted` and `walked` go with the first model.
std::vector<Inventory> account(const Inventory& listing,
                               const std::vector<std::optional<std::filesystem::path>>& paths);

/// True for a file a model's loaders read by its name: config, generation and quantization configs, tokenizers and
/// their vocabularies, processors, chat templates, shard indexes, adapter configs, a pipeline's or a
/// sentence-transformers model's module lists.
bool loader_reads(std::string_view file_name);

/// How many files of one or more inventories have each disposition, and why those not read were not (the table's
/// and the JSON Lines summary's counts).
struct InventoryCounts {
  std::map<Disposition, size_t> files;
  std::map<Unread, size_t> unread;
  uint64_t unlisted = 0;  ///< entries past the listing bound, counted apart
  void add(const Inventory& inventory);
  bool empty() const { return files.empty() && unlisted == 0; }
};

/// Gives each entry what discovery found it to be: `source`'s weights, training state, and the files its loaders
/// read (config.json and the texts beside; any name loader_reads knows); files discovery reads beside a single
/// file that the listing did not hold are added as loader files. The rest stays kNotRead until the safety
/// examination sniffs it.
void dispose(Inventory& inventory, const ModelSource& source);

}  // namespace precdetect

template <>
struct fmt::formatter<precdetect::Disposition>
    : precdetect::NamedEnumFormatter<precdetect::Disposition, precdetect::disposition_name> {};
