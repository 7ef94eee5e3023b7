#pragma once
/// Stage 1: turn what the user typed (folder, file, shard index, hub id) into a list of weight files.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "precdetect/core/confinement.h"

namespace precdetect {

/// Who named a model's path: the user (a PATH, a --from list's line) or discovery (a file or a pipeline's component
/// that models_in split out of a folder).
enum class Named { kByUser, kByDiscovery };

struct ModelSource {
  std::string input;                              ///< as the user typed it
  std::filesystem::path path;                     ///< the resolved model folder or file
  std::vector<std::filesystem::path> files;       ///< weight files, in scan order
  std::map<std::string, std::string> weight_map;  ///< from a shard index: tensor -> shard name; else empty
  std::optional<std::filesystem::path> config;    ///< config.json beside the weights, when present
  /// Training state beside the weights of a folder that is one model, read for its training records
  /// (training_args.bin, scaler.pt, ESPnet's config.yaml) or its name (DeepSpeed's bf16_zero_pp_rank_* shards,
  /// also in global_step*/).
  std::vector<std::filesystem::path> training_files;
  /// Files beside the weights of a folder that is one model that loading or resuming it may unpickle, examined
  /// for safety only: the trainer's state (optimizer.pt, scheduler.pt, rng_state*.pth, training_args.bin, also
  /// in global_step*/), weights in a format the scan did not pick (pytorch_model.bin beside model.safetensors),
  /// bare pickles and NumPy files.
  std::vector<std::filesystem::path> pickles_beside;
  /// Text files beside the weights that a loader reads and may act on, judged for safety: config.json and
  /// tokenizer_config.json (`auto_map`, `custom_pipelines`, `chat_template`), chat_template.jinja,
  /// chat_template.json and additional_chat_templates/*.jinja, and Python files (*.py), which `trust_remote_code`
  /// imports.
  std::vector<std::filesystem::path> texts_beside;
  /// Where every file of the model must resolve (core/confinement.h): the folder given, a single file's own folder,
  /// or a Hugging Face cache snapshot's `models--org--name` repository.
  ModelRoot root;
  /// Links in the model's folder that resolve outside `root` (the link, and where it points): never followed.
  std::vector<EscapingLink> escaping_links;
  /// False when the folder held too many entries to be walked for links to the end: not vouched for.
  bool links_walked = true;
  /// Weight formats the folder also holds, beside the one scanned (formats_in's preference: safetensors, pytorch,
  /// flax, tf, gguf, numpy, onnx): "flax" for a flax_model.msgpack beside model.safetensors. --all-formats scans each.
  std::vector<std::string> other_formats;
  /// The files are model-parallel shards (consolidated.00.pth, mp_rank_00, ...): each holds a part of every
  /// tensor under its full name.
  bool model_parallel = false;
};

/// Resolves `input` to one model: a file; a folder's shard index, or its one set of weight files (a single file,
/// or files whose names follow one shard pattern, discover/shard_pattern.h; Megatron's `mp_rank_NN` folders; a
/// torch.distributed.checkpoint folder's `.metadata`, whose reader opens the `*.distcp` files it names);
/// `folder/group`, a shard group named as models_in() names it. Throws Error: kNotFound (no such path, not a hub
/// id), kHfCacheMiss, kInvalidIndex, kMissingShard (an indexed shard is absent), kSeveralModels (a folder of
/// independent checkpoints, or a diffusers pipeline), kNoWeights, kInvalidDcp (`*.distcp` files without the
/// `.metadata` that indexes them).
/// `named`: who named the model's path. A path the user typed is opened as named, even a link that leads
/// elsewhere (they chose it); one that models_in split out of a folder (a file, a pipeline's component) is part of
/// that folder like any other, so its root is the folder and a link or hard link out of it is refused.
ModelSource discover(const std::string& input, const std::filesystem::path& hf_cache, Named named = Named::kByUser);

/// The path `input` names: itself when it exists (or names a shard group, `folder/group`), else a hub id's snapshot
/// in the HF cache at `hf_cache`. Throws Error: kNotFound, kHfCacheMiss (as discover).
std::filesystem::path resolve_input(const std::string& input, const std::filesystem::path& hf_cache);

/// The models an input stands for, each an input of discover(): a folder of independent checkpoints gives
/// `folder/file` for each (`folder/group` for a set of shards), a diffusers pipeline `folder/component` for each
/// component; anything else (a file, a one-model folder, an input that does not resolve) stays as it is. A hub
/// id whose snapshot holds several models gives their paths. With `all_formats`, a folder holding weights in
/// several formats gives each format's index, file or shard group, so each is scanned as a model of its own.
std::vector<std::string> models_in(const std::string& input, const std::filesystem::path& hf_cache,
                                   bool all_formats = false);

/// True when `folder` holds a model of its own: a shard index, weight files, Megatron rank folders or a diffusers
/// pipeline's components. Also true when it cannot be read: it may hold one, and scanning it reports the
/// io_error, so a batch never passes over weights it could not read.
bool may_hold_model(const std::filesystem::path& folder);

/// True for a folder whose sub-folders are parts of its models (a diffusers pipeline, Megatron rank folders): a
/// --recursive walk takes the folder and does not list those sub-folders again.
bool holds_model_parts(const std::filesystem::path& folder);

}  // namespace precdetect
