#pragma once
/// A training record: what the framework that trained a checkpoint wrote down about its precision (a flag it ran
/// with, its config, a loss scaler's state), with where it was read. Evidence that outranks weight ranges
/// (docs/method.md, "Evidence order").

#include <string>
#include <string_view>
#include <vector>

#include "precdetect/core/label.h"
#include "precdetect/core/named_enum.h"

namespace precdetect {

/// What kind of record it is; each kind states the basis on which it names a precision (record_basis).
enum class RecordKind {
  kTrainerArguments,    ///< transformers' TrainingArguments (training_args.bin): fp16, bf16, mixed_precision
  kRunArguments,        ///< an argparse Namespace (fairseq, Megatron-LM, timm `args`): fp16, bf16, params_dtype, amp
  kFairseqConfig,       ///< fairseq / metaseq `cfg.common`: fp16, bf16, memory_efficient_*, amp
  kDeepSpeedConfig,     ///< a DeepSpeed config (`ds_config`, the Trainer's hf_deepspeed_config): fp16/bf16.enabled
  kDeepSpeedShardName,  ///< ZeRO optimizer shards named `bf16_zero_pp_rank_*`: bf16 was enabled when saved
  kGradScaler,          ///< a torch.amp GradScaler's state: loss scaling, which only fp16 mixed precision needs
  kLossScale,           ///< an optimizer's loss scale (fairseq, Megatron-LM, apex amp): fp16
  kHyperparameters,     ///< Lightning's `hyper_parameters.precision`, when the module saved the trainer's precision
  kTrainConfig,         ///< nanoGPT's and llama2.c's `config` (train.py's settings): dtype, the autocast dtype on CUDA
  kNemoConfig,  ///< a NeMo archive's model_config.yaml: `precision`, the trainer's, as Megatron-based models copy it
  kUltralyticsArguments,  ///< Ultralytics' `train_args` (every YOLO .pt it saves): amp, and the device AMP needs
  kOpenMmlabConfig,       ///< OpenMMLab's config text in `meta`: mmengine's optim_wrapper, or mmcv 1.x's fp16
  kEspnetConfig,          ///< ESPnet's config.yaml beside the weights: use_amp, and ngpu
};

/// snake_case name (JSON `records[].kind`), e.g. "trainer_arguments".
std::string_view record_kind_name(RecordKind kind);

/// Why a record of this kind names a precision, with the framework source it rests on.
std::string_view record_basis(RecordKind kind);

/// Whether the framework that writes this kind of record casts the weights it saves to half precision whatever
/// the run trained in (Ultralytics), so that half storage says nothing against the record.
bool saves_weights_in_half(RecordKind kind);

/// One value read: its key path in the file ("args.bf16", "cfg.common.fp16") and the value as Python prints it.
struct RecordField {
  std::string key;
  std::string value;
  bool operator==(const RecordField&) const = default;
};

struct TrainingRecord {
  RecordKind kind;
  Label label = Label::kUnknown;    ///< fp16, bf16 or fp32: the precision of the run that wrote it
  std::vector<RecordField> fields;  ///< what was read
  std::vector<std::string> files;   ///< the files that hold it (shards of one model repeat it: merged)
};

/// The record in words, as reports show its source: "training_args.bin: bf16=True, fp16=False" (the first
/// file's name; "(+2 files)" when shards repeat it).
std::string record_text(const TrainingRecord& record);

}  // namespace precdetect

template <>
struct fmt::formatter<precdetect::RecordKind>
    : precdetect::NamedEnumFormatter<precdetect::RecordKind, precdetect::record_kind_name> {};
