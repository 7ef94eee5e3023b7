#pragma once
/// Stage 1 for a model that lives elsewhere: `hf://org/name[@revision]`, `s3://bucket/key`, `s3://bucket/prefix/`,
/// `https://host/path` (and `http://`) become a ModelSource whose files are http(s) URLs, which map_file opens as
/// remote_source: the formats read them as they read local files.

#include <string>

#include "precdetect/discover/discover.h"

namespace precdetect {

/// Resolves a remote `input` (is_url). A file URL is one model; an `.index.json` URL a sharded model whose shards
/// sit beside it; a Hub repository (its file list from the Hub's revision API, at the commit the revision names,
/// which the source's `path` then names: `hf://org/name@<commit>`) and an S3 folder (ListObjectsV2) are one model
/// as a local folder of the same files would be: the shard index, else one weight file or one shard group.
/// `config.json` and the text files a loader acts on are named beside the weights when the listing holds them.
/// Throws Error: kRemote, kRemoteAuth, kNotFound (from core/http.h, naming the URL; kRemote also under
/// HF_HUB_OFFLINE=1), kInvalidIndex, kMissingShard (an index names a file the listing lacks), kPathEscape (an index
/// names a file outside its folder), kSeveralModels, kNoWeights.
ModelSource discover_remote(const std::string& input);

}  // namespace precdetect
