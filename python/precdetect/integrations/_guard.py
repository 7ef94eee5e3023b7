"""What every precision guard does once a run is known to compute in fp16: check the model, pass silently when fp16
is safe for it, and otherwise raise Fp16RiskError (or warn) naming the evidence and what to train in instead. A
model that cannot be checked never blocks a run: the guard says so and lets it go on."""

import sys
import warnings

from precdetect.api import check
from precdetect.probe import probe
from precdetect.errors import Fp16RiskError, PrecisionGuardWarning

ON_RISK = ("raise", "warn")


def validated(on_risk: str) -> str:
    if on_risk not in ON_RISK:
        raise ValueError(f"on_risk must be one of {ON_RISK}, not {on_risk!r}")
    return on_risk


def guard(model, on_risk: str, why_fp16: str, instead: dict, batch=None, forward=None):
    """Checks `model` before a run that computes in fp16 (`why_fp16` says what makes it so); `instead` maps "bf16" and
    "fp32" to how this framework asks for them. With a `batch` (the first training batch), probes it instead
    (precdetect.probe: the activations join the evidence; `forward` runs the batch where model(**batch) does not).
    The advice is planned for this machine's GPU. Returns the check's ScanResult, or None when none could be made."""
    try:
        gpu = _this_gpu()
        result = check(model, gpu=gpu) if batch is None else probe(model, batch, forward=forward, gpu=gpu)
    except Exception as e:  # noqa: BLE001 - whatever stops the check, it must not stop the run
        _unchecked(f"the model could not be checked ({type(e).__name__}: {e})")
        return None
    if result.error:
        _unchecked(f"the model could not be checked ({result.error['message']})")
        return result
    skipped = [w for w in result.to_dict()["warnings"] if w["code"] == "live_tensors_skipped"]
    if result.fp16_risk:
        message = (f"precdetect: fp16 is unsafe for {result.path}, and this run computes in fp16 ({why_fp16}): "
                   f"{evidence_text(result)}. Train in {_advice(instead)}. {result.advice.get('why', '')}"
                   f"{_keep_text(result)}")
        if on_risk == "raise":
            raise Fp16RiskError(message, result)
        warnings.warn(message, PrecisionGuardWarning, stacklevel=3)
    elif skipped:
        _unchecked(f"part of the model could not be checked: {skipped[0]['message']}")
    return result


def evidence_text(result) -> str:
    """The verdict's reasons for the fp16 risk, one clause each: "documented bf16-pretrained (google/t5-v1_1-base)",
    "range rule abs-max-above-1e2 (decoder.final_layer_norm.weight: 237)", "encoder.x.weight holds 12 value(s)
    above fp16's 65504 (abs max 8.1e+05)"."""
    clauses = []
    for reason in result.verdict.get("fp16_risk_reasons", []):
        kind, tensor, value = reason["kind"], reason.get("tensor", ""), reason.get("value", 0.0)
        if kind == "documented" and reason.get("source"):
            clauses.append(f"documented fp16 failure ({reason.get('rule')}: {reason['source']})")
        elif kind == "documented":
            clauses.append(f"documented bf16-pretrained ({reason.get('rule')})")
        elif kind == "activation":
            clauses.append(f"module {tensor} reached {value:.4g} in the first batch, over fp16's 65504")
        elif kind == "range":
            clauses.append(f"range rule {reason.get('rule')} ({tensor}: {value:.4g})")
        elif kind == "overflow":
            clauses.append(f"{tensor} holds {reason.get('values')} value(s) above fp16's 65504 (abs max {value:.4g})")
        elif kind == "flush_to_zero":
            clauses.append(f"{value:.0%} of {tensor}'s non-zero values become 0 in fp16")
        else:
            clauses.append(f"{kind} ({tensor})")
    return "; ".join(clauses)


def _advice(instead: dict) -> str:
    """bf16 where this machine's GPU has it, else fp32; without a GPU, both as the hardware allows."""
    import torch

    if torch.cuda.is_available():
        if torch.cuda.is_bf16_supported():
            return f"bf16 ({instead['bf16']}): this machine's GPU supports it"
        return f"fp32 ({instead['fp32']}): this machine's GPU has no bf16"
    return f"bf16 ({instead['bf16']}) where the hardware has it, else fp32 ({instead['fp32']})"


def _this_gpu():
    """This machine's GPU as --gpu takes it (its compute capability), "cpu" without one; None when torch is absent."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    if not torch.cuda.is_available():
        return "cpu"
    major, minor = torch.cuda.get_device_capability()
    return f"{major}.{minor}"


def _keep_text(result) -> str:
    keep = [k["module"] for k in result.advice.get("keep_in_fp32", [])]
    return f" Keep in fp32 if fp16 it must be: {', '.join(keep)}." if keep else ""


def _unchecked(what: str):
    warnings.warn(f"precdetect: {what}; the run goes on unchecked", PrecisionGuardWarning, stacklevel=4)
