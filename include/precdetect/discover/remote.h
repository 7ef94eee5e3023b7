#pragma once
/// Stage 1 for a model that lives elsewhere: `hf://org/name[@revision][/folder]`, `s3://bucket/key`,
/// `s3://bucket/prefix/`, `https://host/path` (and `http://`) become a ModelSource whose files are http(s) URLs, which
/// map_file opens as remote_source: the formats read them as they read local files.

#include <string>
#include <vector>

#include "precdetect/discover/discover.h"

namespace precdetect {

/// Resolves a remote `input` (is_url). A file URL is one model; an `.index.json` URL a sharded model whose shards
/// sit beside it; a Hub repository (its file list from the Hub's revision API, at the commit the revision names,
/// which the source's `path` then names: `hf://org/name@<commit>[/folder]`) and an S3 folder (ListObjectsV2) are one
/// model as a local folder of the same files would be: the shard index, else one weight file or one shard group.
/// `config.json` and the text files a loader acts on are named beside the weights when the listing holds them.
/// Throws Error: kRemote, kRemoteAuth, kNotFound (from net/http.h, naming the URL; kRemote also under
/// HF_HUB_OFFLINE=1), kInvalidIndex, kMissingShard (an index names a file the listing lacks), kPathEscape (an index
/// names a file outside its folder), kSeveralModels, kNoWeights.
ModelSource discover_remote(const std::string& input);

/// The models a remote `input` stands for, as models_in() gives a local folder's: a diffusers pipeline (a Hub
/// repository or folder, `hf://org/name[@revision][/folder]`, or an S3 folder, `s3://bucket/prefix/`, holding
/// model_index.json and no weights of its own) gives one input per component sub-folder that holds weights
/// (`hf://org/name@<commit>/unet`, the commit listed; `s3://bucket/prefix/unet/`); anything else, an input that does
/// not list (its scan names why), and any input under HF_HUB_OFFLINE stay as they are. Lists over the network.
std::vector<std::string> remote_models_in(const std::string& input);

}  // namespace precdetect
