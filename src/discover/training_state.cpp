#include "precdetect/discover/training_state.h"

#include <algorithm>
#include <array>
#include <span>

namespace precdetect {
namespace {

constexpr std::array<std::string_view, 5> kTrainerState = {"training_args.bin", "optimizer.pt", "scheduler.pt",
                                                           "scaler.pt", "distrib_optim.pt"};
constexpr std::array<std::string_view, 3> kRecordFiles = {"training_args.bin", "scaler.pt", "config.yaml"};
constexpr std::array<std::string_view, 12> kPickleExtensions = {".bin", ".pt",     ".pth",    ".ckpt", ".jit", ".nemo",
                                                                ".pkl", ".pickle", ".joblib", ".dill", ".npy", ".npz"};

bool is_one_of(std::string_view name, std::span<const std::string_view> names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

bool is_trainer_state(std::string_view file_name) {
  return file_name.starts_with("rng_state") || file_name.ends_with("_optim_states.pt") ||
         is_one_of(file_name, kTrainerState);
}

bool is_record_file(std::string_view file_name) { return is_one_of(file_name, kRecordFiles); }

bool is_bf16_zero_shard(std::string_view file_name) { return file_name.starts_with("bf16_zero_pp_rank_"); }

bool is_training_state_folder(std::string_view folder_name) { return folder_name.starts_with("global_step"); }

bool may_hold_pickle(std::string_view file_name) {
  size_t dot = file_name.rfind('.');
  // As std::filesystem::path::extension(): a name that starts with its only dot has none.
  return dot != std::string_view::npos && dot != 0 && is_one_of(file_name.substr(dot), kPickleExtensions);
}

}  // namespace precdetect
