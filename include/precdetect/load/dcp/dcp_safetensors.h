#pragma once
/// The safetensors files of DCP's HuggingFaceStorageWriter(save_distributed=True) without consolidation
/// (`shard-<rank>-model-<n>-of-<m>.safetensors`): each rank's file holds its slices of the tensors under their own
/// names, and says where each slice lies in its tensor in its `__metadata__` entry `DCP_SHARDING_INFO`
/// (torch/distributed/checkpoint/_hf_utils.py): a JSON object {fqn: {"saved_offsets": [...]}}. torch's
/// HuggingFaceStorageReader joins them: each tensor's shape is the furthest any slice reaches.

#include <filesystem>
#include <map>
#include <span>
#include <string>

#include "precdetect/load/checkpoint.h"

namespace precdetect {

/// Marks the records of one safetensors file, whose `__metadata__` is `metadata`, as chunks of their tensors
/// (TensorRecord::chunk_of, offsets from DCP_SHARDING_INFO, the whole shape left empty until
/// join_dcp_safetensors_chunks) when it holds DCP_SHARDING_INFO; else leaves them. Throws Error kInvalidDcp,
/// naming the file and the tensor: the info is no JSON object, a tensor has no saved_offsets or offsets of another
/// rank than its shape, or negative ones.
void mark_dcp_safetensors_chunks(std::span<TensorRecord> records, const std::map<std::string, std::string>& metadata,
                                 const std::filesystem::path& path);

/// Gives each tensor that mark_dcp_safetensors_chunks marked, once every file is read, its whole shape (per
/// dimension the furthest its chunks reach, as torch's reader computes it); a tensor that is one chunk at offset 0
/// is a whole tensor again. Throws Error kInvalidDcp: chunks that leave a gap in their tensor or overlap (a rank's
/// file missing, or one file named alone), chunks of several ranks (dimensions).
void join_dcp_safetensors_chunks(Checkpoint& checkpoint);

}  // namespace precdetect
