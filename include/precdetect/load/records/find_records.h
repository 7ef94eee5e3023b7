#pragma once
/// Finding training records: in a torch pickle's object graph (inert values only: nothing is called) and in the
/// names of the training-state files a checkpoint folder holds (docs/method.md, "Training records").

#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

#include "precdetect/core/warning.h"
#include "precdetect/load/pickle/pickle.h"
#include "precdetect/load/records/training_record.h"

namespace precdetect {

struct FoundRecords {
  std::vector<TrainingRecord> records;
  std::vector<Warning> warnings;  ///< kRecordUnreadable: a record recognised whose precision cannot be read
};

/// The records in the object graph of `file`'s pickle: TrainingArguments, an argparse Namespace of run flags,
/// fairseq's cfg.common, a DeepSpeed config, a GradScaler's state, an optimizer's loss scale, Lightning's
/// hyper_parameters.precision, wherever they sit. A record whose flags contradict each other or whose values
/// name no precision (an unknown layout, "auto", fp8) is a warning, never a guess.
FoundRecords find_training_records(const pickle::Result& pickle, const std::filesystem::path& file);

/// The record a NeMo archive's model_config.yaml holds: its top-level `precision:` line (nothing when it has none).
FoundRecords find_nemo_config_record(std::string_view model_config_yaml, const std::filesystem::path& file);

/// The record ESPnet's config.yaml holds (the run's arguments, dumped beside its model): `use_amp` and `ngpu`;
/// nothing for a config.yaml without both (another framework's).
FoundRecords find_espnet_config_record(std::string_view config_yaml, const std::filesystem::path& file);

/// The record a training-state file's name carries: DeepSpeed's `bf16_zero_pp_rank_*` optimizer shards.
std::optional<TrainingRecord> record_in_file_name(const std::filesystem::path& file);

/// Adds `record` to `records`, or its files to an equal record already there (shards repeat their records).
void merge_record(std::vector<TrainingRecord>& records, TrainingRecord record);

}  // namespace precdetect
