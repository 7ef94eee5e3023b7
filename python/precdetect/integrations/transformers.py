"""A transformers Trainer callback that checks the model at on_train_begin, before the first optimizer step:

    trainer = Trainer(model, args, ..., callbacks=[PrecisionGuardCallback()])

With probe=True the first training batch runs forward once more before step 1, its activations measured module by
module (precdetect.probe). The run computes in fp16 when `args.fp16` or `args.fp16_full_eval` is set, or when the model's parameters are stored
in float16 (loaded with dtype=torch.float16). Then a model fp16 is unsafe for stops the run with Fp16RiskError
(on_risk="raise") or a PrecisionGuardWarning (on_risk="warn"); one it is safe for passes silently."""

import warnings
from collections.abc import Mapping

import torch
from transformers import TrainerCallback

from precdetect.errors import PrecisionGuardWarning
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
    """The dataloader's first batch on the model's device (a fresh iterator, so training still sees it first), or
    None, with a warning, where it cannot be drawn or moved: the check then runs without the probe, never stopping
    the run for it."""
    if dataloader is None:
        return None
    try:
        batch = next(iter(dataloader))
        device = next(model.parameters()).device
        return _on_device(batch, device)
    except Exception as e:  # noqa: BLE001 - a batch the probe cannot use must not stop the run
        warnings.warn(f"precdetect: the first batch could not be probed ({type(e).__name__}: {e}); the model is "
                      f"checked without it", PrecisionGuardWarning, stacklevel=3)
        return None


def _on_device(value, device):
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, Mapping):
        return {key: _on_device(item, device) for key, item in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(_on_device(item, device) for item in value)
    return value


def fp16_cause(args, model) -> str:
    """What makes the run compute in fp16; "" when nothing does."""
    if getattr(args, "fp16", False):
        return "fp16=True"
    if getattr(args, "fp16_full_eval", False):
        return "fp16_full_eval=True"
    if model is not None and any(p.dtype == torch.float16 for p in model.parameters()):
        return "the model's parameters are stored in float16"
    return ""
