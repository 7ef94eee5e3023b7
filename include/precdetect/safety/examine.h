#pragma once
/// Finds every pickle a file holds, whatever its container, and judges what each imports (safety.h).

#include <filesystem>

#include "precdetect/discover/discover.h"
#include "precdetect/load/source/byte_source.h"
#include "precdetect/safety/safety.h"

namespace precdetect {

/// Examines `source` (named `where` in the report) into `safety`, by its first bytes whatever its name: a
/// safetensors file holds no code; a zip's every pickle member (data.pkl, constants.pkl, *.pkl, any member that
/// starts like a pickle outside the storage folders), its .npy members and nested checkpoints; a legacy
/// torch.save file's five pickles; a tar's pickles (pre-0.4 torch.save) or the checkpoint inside (NeMo); a .npy's
/// object-array pickle; a bare pickle stream, appended pickles included. What cannot be opened or followed is
/// listed as unverified, never passed. Reads headers and pickles only, never tensor data. Returns false, adding
/// nothing, for bytes of no format examined here.
bool examine_source(const ByteSource& source, const std::string& where, Safety& safety);

/// examine_source on the file at `path`, listed in Safety::files when examined; never throws. A file that cannot
/// be opened or examined to the end (any exception), or, for `weights`, one of no format examined here, is
/// unverified; a file beside the weights that is no pickle container is passed over (nothing would unpickle it).
void examine_file(const std::filesystem::path& path, Safety& safety, bool weights);

/// Every file of the model and every pickle beside it that loading the folder would unpickle
/// (ModelSource::pickles_beside: the trainer's state, other weight formats).
Safety examine_model(const ModelSource& source);

}  // namespace precdetect
