"""A Lightning callback that checks the module at setup, before the first step:

    trainer = lightning.Trainer(precision="16-mixed", callbacks=[PrecisionGuard()])

With probe=True the check waits for the first training batch and runs it forward once before step 1, its
activations measured module by module (precdetect.probe). For a trainer.precision of "16-mixed" or "16-true", a module fp16 is unsafe for stops the run with Fp16RiskError
(on_risk="raise") or a PrecisionGuardWarning (on_risk="warn"); one it is safe for passes silently. Works with the
`lightning` package or the older `pytorch_lightning`."""

try:
    from lightning.pytorch.callbacks import Callback
except ImportError:
    from pytorch_lightning.callbacks import Callback

from precdetect.integrations._guard import guard, validated

FP16_PRECISIONS = ("16-mixed", "16-true")
INSTEAD = {"bf16": 'Trainer(precision="bf16-mixed")', "fp32": 'Trainer(precision="32-true")'}


class PrecisionGuard(Callback):
    def __init__(self, on_risk: str = "raise", probe: bool = False):
        self.on_risk = validated(on_risk)
        self.probe = probe  # check at the first training batch instead, its activations measured (precdetect.probe)
        self.result = None  # the last check's ScanResult

    def setup(self, trainer, pl_module, stage):
        precision = str(trainer.precision)
        if precision in FP16_PRECISIONS and not self.probe:
            self.result = guard(pl_module, self.on_risk, f'precision="{precision}"', INSTEAD)

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        precision = str(trainer.precision)
        if self.probe and trainer.global_step == 0 and batch_idx == 0 and precision in FP16_PRECISIONS:
            self.result = guard(pl_module, self.on_risk, f'precision="{precision}"', INSTEAD, batch=batch,
                                forward=lambda inputs: pl_module.training_step(inputs, batch_idx))
