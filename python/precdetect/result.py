"""What precdetect.scan and precdetect.diff return: the --json document's items, with attributes for what people
read first. `to_dict()` is the item itself (docs/json-schema.md, docs/diff.md)."""

import copy
import json


class ScanResult:
    """One model of a scan: `to_dict()` is its object in the --json document's "models"."""

    def __init__(self, model: dict, document: dict):
        self._model = model
        self._document = document

    def to_dict(self) -> dict:
        return copy.deepcopy(self._model)

    @property
    def path(self) -> str:
        return self._model["path"]

    @property
    def error(self):
        """{"code", "message"} when the model could not be scanned, else None."""
        return self._model.get("error")

    @property
    def verdict(self) -> dict:
        return self._model.get("verdict") or {}

    @property
    def label(self):
        """fp16, bf16 or fp32 where evidence decides it; fp16|fp32 or bf16|fp32 where the weight ranges alone speak
        and cannot tell the two apart; unknown (also for a model that could not be scanned, with `error`)."""
        return self.verdict.get("label")

    @property
    def candidates(self) -> list:
        """The labels the evidence does not rule out (["bf16", "fp32"]: the ranges cannot tell those two apart)."""
        return self.verdict.get("candidates", [])

    @property
    def confidence(self):
        return self.verdict.get("confidence")

    @property
    def fp16_risk(self) -> bool:
        """Whether fp16 is unsafe for this model: its range, or a tensor a cast to fp16 breaks."""
        return bool(self.verdict.get("fp16_risk"))

    @property
    def advice(self) -> dict:
        """What to run the model in on the GPU class given as `gpu=` (default: any GPU with bf16): `plans` (each
        target's and tool's precision and setting), `keep_in_fp32`, `gguf_keep` and `why` (docs/json-schema.md)."""
        return self.verdict.get("advice") or {}

    @property
    def activations(self) -> list:
        """precdetect.probe's measurements, module by module: largest |output| and |input| and their headroom to
        fp16's and fp8 E4M3's largest values; empty for scan() and check()."""
        return self._model.get("activations", [])

    @property
    def adapter(self):
        """{"format", "base_model", "found_by", "base_scan"} when the weights are an adapter (PEFT, diffusers, kohya
        LoRA), whose verdict is its base model's; None for a model."""
        return self._model.get("adapter")

    @property
    def summary(self) -> dict:
        return self._model.get("summary") or {}

    @property
    def safety(self) -> dict:
        return self._model.get("safety") or {}

    def _repr_html_(self) -> str:
        """The page `precdetect --report` writes for this model alone (self-contained, offline)."""
        from precdetect import _binding

        return _binding.html(dict(self._document, models=[self._model]))

    def __repr__(self) -> str:
        if self.error:
            return f"<ScanResult {self.path}: error {self.error['code']}>"
        adapter = ""
        if self.adapter:
            base = self.adapter["base_model"]
            adapter = f" adapter ({self.adapter['format']})" + (f" of {base}" if base else ", no base named")
        return f"<ScanResult {self.path}: {self.label} ({self.confidence}){adapter}" + (
            " fp16-risk>" if self.fp16_risk else ">")


class DiffResult:
    """One pair of a diff: `to_dict()` is its object in the diff --json document's "pairs"."""

    def __init__(self, pair: dict):
        self._pair = pair

    def to_dict(self) -> dict:
        return copy.deepcopy(self._pair)

    @property
    def error(self):
        return self._pair.get("error")

    @property
    def outcome(self):
        """identical, lossless or changed; None for a pair that could not be compared."""
        return self._pair.get("outcome")

    def __repr__(self) -> str:
        return f"<DiffResult {self._pair.get('base')} -> {self._pair.get('other')}: {self.outcome or self.error}>"
