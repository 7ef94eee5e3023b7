"""A transformers Trainer callback that checks the model at on_train_begin, before the first optimizer step:

    trainer = Trainer(model, args, ..., callbacks=[PrecisionGuardCallback()])

With probe=True the first training batch runs forward once more before step 1, its activations measured module by
module (precdetect.probe). The run computes in fp16 when `args.fp16` or `args.fp16_full_eval` is set, or when the model's parameters are stored
in float16 (loaded with dtype=torch.float16). Then a model fp16 is unsafe for stops the run with Fp16RiskError
(on_risk="raise") or a PrecisionGuardWarning (on_risk="warn"); one it is safe for passes silently."""

import torch
from transformers import TrainerCallback

from precdetect.integrations._guard import guard, validated

INSTEAD = {"bf16": "TrainingArguments(bf16=True)", "fp32": "TrainingArguments(fp16=False)"}


class PrecisionGuardCallback(TrainerCallback):
    def __init__(self, on_risk: str = "raise", probe: bool = False):
        self.on_risk = validated(on_risk)
        self.probe = probe  # also run the first training batch forward and weigh its activations (precdetect.probe)
        self.result = None  # the last check's ScanResult

    def on_train_begin(self, args, state, control, model=None, train_dataloader=None, **kwargs):
        why = fp16_cause(args, model)
        if model is not None and why:
            batch = first_batch(train_dataloader, model) if self.probe else None
            self.result = guard(model, self.on_risk, why, INSTEAD, batch=batch)


def first_batch(dataloader, model):
    """The dataloader's first batch on the model's device: a fresh iterator, so training still sees it first."""
    if dataloader is None:
        return None
    batch = next(iter(dataloader))
    device = next(model.parameters()).device
    return {key: value.to(device) if isinstance(value, torch.Tensor) else value for key, value in batch.items()}


def fp16_cause(args, model) -> str:
    """What makes the run compute in fp16; "" when nothing does."""
    if getattr(args, "fp16", False):
        return "fp16=True"
    if getattr(args, "fp16_full_eval", False):
        return "fp16_full_eval=True"
    if model is not None and any(p.dtype == torch.float16 for p in model.parameters()):
        return "the model's parameters are stored in float16"
    return ""
