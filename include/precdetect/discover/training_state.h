#pragma once
/// What a model's folder may hold beside its weights, by file name: training state (the trainer's, DeepSpeed's,
/// Megatron's), the files among it whose records precdetect reads, and files that a load may unpickle. One list for
/// a local folder (discover.cpp) and a remote one (remote.cpp), so that both see the same files.

#include <string_view>

namespace precdetect {

/// The trainer's state, not the model: the HF Trainer's files (training_args.bin, optimizer.pt, scheduler.pt,
/// scaler.pt, rng_state*), DeepSpeed ZeRO's optimizer partitions (*_optim_states.pt), Megatron-LM's distributed
/// optimizer (distrib_optim.pt). Never a weight file of the model.
bool is_trainer_state(std::string_view file_name);

/// Training state whose records precdetect reads: the HF Trainer's arguments and GradScaler state
/// (training_args.bin, scaler.pt), ESPnet's config.yaml (the run's arguments beside its model).
bool is_record_file(std::string_view file_name);

/// DeepSpeed's bf16 ZeRO shards (bf16_zero_pp_rank_*), whose name records the run's precision.
bool is_bf16_zero_shard(std::string_view file_name);

/// A folder where a Trainer checkpoint keeps more training state: DeepSpeed's `global_step*`.
bool is_training_state_folder(std::string_view folder_name);

/// A file that torch.load, pickle.load, joblib or numpy may unpickle, by its extension (.bin, .pt, .pth, .ckpt,
/// .jit, .nemo, .pkl, .pickle, .joblib, .dill, .npy, .npz).
bool may_hold_pickle(std::string_view file_name);

}  // namespace precdetect
