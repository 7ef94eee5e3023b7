#include "precdetect/load/records/training_record.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>

namespace precdetect {

std::string_view record_kind_name(RecordKind kind) {
  switch (kind) {
    case RecordKind::kTrainerArguments:
      return "trainer_arguments";
    case RecordKind::kRunArguments:
      return "run_arguments";
    case RecordKind::kFairseqConfig:
      return "fairseq_config";
    case RecordKind::kDeepSpeedConfig:
      return "deepspeed_config";
    case RecordKind::kDeepSpeedShardName:
      return "deepspeed_shard_name";
    case RecordKind::kGradScaler:
      return "grad_scaler";
    case RecordKind::kLossScale:
      return "loss_scale";
    case RecordKind::kHyperparameters:
      return "hyperparameters";
    case RecordKind::kTrainConfig:
      return "train_config";
    case RecordKind::kNemoConfig:
      return "nemo_config";
    case RecordKind::kUltralyticsArguments:
      return "ultralytics_arguments";
    case RecordKind::kOpenMmlabConfig:
      return "openmmlab_config";
    case RecordKind::kEspnetConfig:
      return "espnet_config";
  }
  return "unknown";
}

std::string_view record_basis(RecordKind kind) {
  switch (kind) {
    case RecordKind::kTrainerArguments:
      return "the arguments the Hugging Face Trainer ran with (torch.save(self.args) in Trainer._save): fp16 or bf16 "
             "turns on mixed precision (transformers 5 also stores mixed_precision); neither means fp32";
    case RecordKind::kRunArguments:
      return "the command-line arguments saved with the checkpoint (fairseq <= 0.10 and Megatron-LM: fp16, bf16, "
             "params_dtype; timm: amp, amp_dtype, model_dtype): the flags the run trained with; none set means fp32";
    case RecordKind::kFairseqConfig:
      return "fairseq's and metaseq's saved config (cfg.common, fairseq/dataclass/configs.py CommonConfig): the "
             "flags the run trained with; none set means fp32";
    case RecordKind::kDeepSpeedConfig:
      return "the DeepSpeed config the engine ran with (ds_config in the model states, or the Trainer's "
             "hf_deepspeed_config): fp16.enabled or bf16.enabled; neither means fp32";
    case RecordKind::kDeepSpeedShardName:
      return "DeepSpeed names ZeRO optimizer shards bf16_zero_pp_rank_* exactly when bf16 is enabled at save time "
             "(engine._get_zero_ckpt_prefix)";
    case RecordKind::kGradScaler:
      return "a GradScaler's state (scale, growth_factor, backoff_factor, growth_interval, _growth_tracker) is saved "
             "only when loss scaling ran, which fp16 mixed precision needs and bf16 does not (accelerate, Lightning "
             "16-mixed, timm, OpenCLIP)";
    case RecordKind::kLossScale:
      return "an optimizer saves a loss scale only under fp16 (fairseq's FP16Optimizer, Megatron-LM's grad_scaler, "
             "apex amp's loss_scaler0); bf16 runs have none";
    case RecordKind::kHyperparameters:
      return "Lightning saves hyper_parameters as the module captured them: a `precision` there is the trainer's "
             "precision only if the module saved it, so it is as good as that habit";
    case RecordKind::kTrainConfig:
      return "nanoGPT's and llama2.c's train.py save their settings as `config`: on CUDA the run autocasts to "
             "`dtype` (float16 with a GradScaler, or bfloat16); on any other device it runs without autocast, in "
             "fp32";
    case RecordKind::kNemoConfig:
      return "NeMo's Megatron-based models copy the trainer's precision into the model config they save in the "
             "archive (megatron_base_model.py: cfg.precision = trainer.precision): bf16-mixed, 16-mixed, 32, ...";
    case RecordKind::kUltralyticsArguments:
      return "Ultralytics saves the arguments a YOLO run trained with as train_args (engine/trainer.py save_model): "
             "amp=True autocasts to float16 on a GPU (unless its AMP check fails on that GPU), amp='bf16' to "
             "bfloat16; on a CPU or MPS AMP is off (utils/checks.py check_amp), and amp=False or 'fp32' is fp32";
    case RecordKind::kOpenMmlabConfig:
      return "OpenMMLab saves the run's config text in the checkpoint's meta: mmengine's Runner as meta.cfg, where "
             "optim_wrapper's type is OptimWrapper (fp32) or AmpOptimWrapper (autocast to its dtype, float16 by "
             "default); mmcv 1.x's tools/train.py as meta.config, where a top-level fp16 = dict(...) turns on "
             "Fp16OptimizerHook (fp16) and its absence leaves fp32";
    case RecordKind::kEspnetConfig:
      return "ESPnet dumps the arguments a run trained with to config.yaml beside its model (espnet2/tasks/"
             "abs_task.py): use_amp with ngpu > 0 autocasts on the GPU, to float16 or, where the GPU supports "
             "bfloat16 (espnet2/train/trainer.py, release 202511), to bfloat16; use_amp false, or ngpu 0, is fp32";
  }
  return "";
}

bool saves_weights_in_half(RecordKind kind) {
  return kind == RecordKind::kUltralyticsArguments;  // engine/trainer.py save_model: deepcopy(ema).half()
}

std::string record_text(const TrainingRecord& record) {
  std::vector<std::string> fields;
  fields.reserve(record.fields.size());
  for (const RecordField& field : record.fields) fields.push_back(field.key + "=" + field.value);
  std::string file = record.files.empty() ? "" : std::filesystem::path(record.files.front()).filename().string();
  std::string more = record.files.size() > 1 ? fmt::format(" (+{} files)", record.files.size() - 1) : "";
  return fmt::format("{}{}: {}", file, more, fmt::join(fields, ", "));
}

}  // namespace precdetect
