#pragma once
/// The files of an inventory (discover/inventory.h) that a model's own examination (examine_model) did not read,
/// judged: `safe` is a verdict over every file under the input, not over the files a scan chose to read as a model.

#include <cstddef>
#include <optional>

#include "precdetect/discover/inventory.h"
#include "precdetect/safety/safety.h"

namespace precdetect {

/// Files an examination sniffs at most beyond the model's own: past them a file is kNotRead (Unread::kNotSniffed)
/// and the model unverified, so that a folder of a million small files costs a listing, not a million opens.
inline constexpr size_t kMaxSniffed = 20000;

/// Judges every entry of `inventory` that `safety` has not examined yet (Safety::files), each opened beneath the
/// inventory's root: its first bytes are sniffed by the one format detection (open_format), and what a format
/// claims (a pickle by its bytes or its name, an archive, compressed bytes, a checkpoint no model of the run reads)
/// is examined as a file beside the weights and becomes kJudged; a Python file is code a loader may import
/// (custom code, unverified); a 7z or RAR archive, which precdetect does not open, is unverified; the rest is
/// kNotRead with the reason its name gives. A link that leaves the input is path_escape tampering. A file that
/// cannot be opened, one past kMaxSniffed, entries past the listing bound and a walk that stopped short are
/// unverified. Never throws (but std::bad_alloc).
void examine_inventory(Inventory& inventory, Safety& safety);

/// One entry's verdict over what `safety` says of it (its imports, tampering, custom code and what could not be
/// followed, each by the file it names): nullopt for an entry precdetect did not judge (a file not read past its
/// first bytes, a named folder) and that no finding names.
std::optional<SafetyVerdict> file_verdict(const Safety& safety, const InventoryEntry& entry);

}  // namespace precdetect
