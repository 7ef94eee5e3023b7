#pragma once
/// Finds every pickle a file holds, whatever its container, and judges what each imports (safety.h).

#include <filesystem>
#include <string_view>

#include "precdetect/discover/discover.h"
#include "precdetect/load/checkpoint.h"
#include "precdetect/load/source/byte_source.h"
#include "precdetect/safety/safety.h"

namespace precdetect {

/// Examines `source` (named `where` in the report) into `safety`, by its format whatever its name: the pickles its
/// format names (file_format.h: a safetensors, GGUF or Flax file holds none; a zip's pickle members, object
/// arrays and nested checkpoints; a legacy torch.save file's five pickles; a pre-0.4 tar's pickles; a NeMo
/// archive's checkpoints; a .npy's object-array pickle; a bare pickle stream, appended pickles included), each
/// run by the pickle machine with every import judged. What cannot be opened or followed is listed as
/// unverified, never passed. Reads headers and pickles only, never tensor data. Returns false, adding nothing, for
/// bytes of no format precdetect reads.
bool examine_source(const ByteSource& source, const std::string& where, Safety& safety);

/// The pickles written as base64 into `text`, a config no format claims (load/embedded_pickles.h), judged as a
/// file's (named `where`). Never throws (but std::bad_alloc).
void examine_text(std::string_view text, const std::string& where, Safety& safety);

/// `format`'s pickles (the file at `path`, opened in it), the file listed in Safety::files; never throws (what
/// escapes a format, or memory, is unverified: never the batch's failure, never passed).
void examine_format(const FormatFile& format, const std::filesystem::path& path, Safety& safety);

/// examine_source on the file at `path`, listed in Safety::files when examined; never throws. A file that cannot
/// be opened or examined to the end (any exception), or, for `weights`, one of no format examined here, is
/// unverified; a file beside the weights that is no pickle container is passed over (nothing would unpickle it).
void examine_file(const std::filesystem::path& path, Safety& safety, bool weights);

/// Every file of the model and every pickle beside it that loading the folder would unpickle
/// (ModelSource::pickles_beside: the trainer's state, other weight formats). With `loaded`, the checkpoint the scan
/// opened from `source`, its files are examined through the formats it opened (Checkpoint::formats), so that no
/// file's structure (a zip's directory) is read twice; without it, or when the load stopped short of opening
/// them, each file is opened again.
Safety examine_model(const ModelSource& source, const Checkpoint* loaded = nullptr);

}  // namespace precdetect
