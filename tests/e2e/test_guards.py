"""The training guards (issue 38) in the real frameworks: a transformers Trainer with fp16=True and a Lightning
Trainer with precision="16-true" are stopped before their first optimizer step when fp16 is unsafe for the model;
bf16 and fp32 runs, and models fp16 is safe for, train silently; a model that cannot be checked never blocks."""

import os
import subprocess
import sys
import unittest
import warnings
from pathlib import Path

import torch
from transformers import Trainer, TrainingArguments

from live_models import DOCUMENTED_BF16, TokenDataset, tiny_bert, tiny_t5
from staged_package import STAGE
import precdetect  # noqa: E402 (staged_package puts it first on sys.path)
from precdetect.errors import Fp16RiskError, PrecisionGuardWarning  # noqa: E402
from precdetect.integrations.lightning import PrecisionGuard  # noqa: E402
from precdetect.integrations.transformers import PrecisionGuardCallback  # noqa: E402


def weights(model):
    return {name: parameter.detach().clone() for name, parameter in model.named_parameters()}


class TransformersGuard(unittest.TestCase):
    def train(self, model, guard=None, **precision):
        """A real Trainer on CPU for one step, with the guard; returns the trainer (its state tells the steps)."""
        args = TrainingArguments(output_dir=str(STAGE / "trainer"), max_steps=1, per_device_train_batch_size=4,
                                 report_to=[], use_cpu=True, save_strategy="no", **precision)
        trainer = Trainer(model=model, args=args, train_dataset=TokenDataset(seq2seq=model.config.is_encoder_decoder),
                          callbacks=[guard or PrecisionGuardCallback()])
        trainer.train()
        return trainer

    def assert_stopped_before_any_step(self, model, evidence, guard=None, **precision):
        before = weights(model)
        with self.assertRaises(Fp16RiskError) as raised:
            self.train(model, guard, **precision)
        for name, parameter in model.named_parameters():
            self.assertTrue(torch.equal(parameter, before[name]), f"{name} changed: an optimizer step ran")
        message = str(raised.exception)
        self.assertIn(evidence, message)
        self.assertIn("TrainingArguments(bf16=True)", message)
        self.assertTrue(raised.exception.result.fp16_risk)
        return message

    def test_fp16_stops_a_model_in_the_bf16_range(self):
        message = self.assert_stopped_before_any_step(tiny_t5(scale=300), "range rule abs-max-above-1e2", fp16=True)
        self.assertIn("(fp16=True)", message)
        self.assert_stopped_before_any_step(tiny_t5(scale=300), "range rule", fp16_full_eval=True)

    def test_fp16_stops_a_documented_bf16_model_whatever_its_weights(self):
        self.assert_stopped_before_any_step(tiny_t5(name_or_path=DOCUMENTED_BF16),
                                            f"documented bf16-pretrained ({DOCUMENTED_BF16})", fp16=True)

    def test_parameters_stored_in_float16_compute_in_fp16(self):
        message = self.assert_stopped_before_any_step(tiny_t5(scale=300).half(), "range rule")
        self.assertIn("stored in float16", message)

    def test_bf16_and_fp32_runs_train(self):
        for precision in ({"bf16": True}, {}):
            with self.subTest(**precision), warnings.catch_warnings():
                warnings.simplefilter("error", PrecisionGuardWarning)
                guard = PrecisionGuardCallback()
                self.assertEqual(self.train(tiny_t5(scale=300), guard, **precision).state.global_step, 1)
                self.assertIsNone(guard.result)  # nothing computes in fp16: nothing to check

    def test_a_model_fp16_is_safe_for_trains_in_fp16_silently(self):
        guard = PrecisionGuardCallback()
        with warnings.catch_warnings():
            warnings.simplefilter("error", PrecisionGuardWarning)
            self.assertEqual(self.train(tiny_bert(), guard, fp16=True).state.global_step, 1)
        self.assertEqual((guard.result.label, guard.result.fp16_risk), ("fp16|fp32", False))

    def test_warn_names_the_evidence_and_trains(self):
        with self.assertWarnsRegex(PrecisionGuardWarning, "fp16 is unsafe .* range rule"):
            trainer = self.train(tiny_t5(scale=300), PrecisionGuardCallback(on_risk="warn"), fp16=True)
        self.assertEqual(trainer.state.global_step, 1)

    def test_a_model_that_cannot_be_checked_never_blocks(self):
        args = TrainingArguments(output_dir=str(STAGE / "trainer"), fp16=True, use_cpu=True, report_to=[])
        with torch.device("meta"):
            unreadable = torch.nn.Linear(4, 4)
        with self.assertWarnsRegex(PrecisionGuardWarning, "could not be checked .*weight \\(on meta\\).* unchecked"):
            PrecisionGuardCallback().on_train_begin(args, None, None, model=unreadable)
        partly = torch.nn.Linear(4, 4)
        partly.weight.untyped_storage().resize_(0)
        with self.assertWarnsRegex(PrecisionGuardWarning, "part of the model could not be checked"):
            PrecisionGuardCallback().on_train_begin(args, None, None, model=partly)

    def test_on_risk_is_raise_or_warn(self):
        with self.assertRaisesRegex(ValueError, "on_risk"):
            PrecisionGuardCallback(on_risk="ignore")


    def test_probe_names_the_module_the_first_batch_overflows(self):
        model = tiny_t5()
        with torch.no_grad():
            model.get_submodule("encoder.block.0.layer.1.DenseReluDense.wo").weight.mul_(1e5)
        guard = PrecisionGuardCallback(probe=True)
        message = self.assert_stopped_before_any_step(model, "encoder.block.0.layer.1.DenseReluDense.wo reached",
                                                      guard=guard, fp16=True)
        self.assertIn("Keep in fp32 if fp16 it must be:", message)


    def test_a_first_batch_the_probe_cannot_draw_is_warned_about_and_left_out(self):
        from precdetect.integrations.transformers import first_batch

        class Broken:
            def __iter__(self):
                raise RuntimeError("the dataset is gone")

        with self.assertWarnsRegex(PrecisionGuardWarning, "the dataset is gone"):
            self.assertIsNone(first_batch(Broken(), tiny_bert()))
        batch = first_batch([(torch.ones(2), {"mask": torch.zeros(2)}, "text")], tiny_bert())
        self.assertIsInstance(batch, tuple)
        self.assertTrue(torch.equal(batch[1]["mask"], torch.zeros(2)))
        self.assertEqual(batch[2], "text")


class LightningGuard(unittest.TestCase):
    def fit(self, module, precision, guard=None, scale=1.0):
        import lightning.pytorch as pl

        trainer = pl.Trainer(accelerator="cpu", precision=precision, max_steps=1, callbacks=[guard or PrecisionGuard()],
                             logger=False, enable_checkpointing=False, enable_progress_bar=False,
                             enable_model_summary=False)
        torch.manual_seed(1)
        data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(8, 16) * scale), batch_size=4)
        trainer.fit(module, data)
        return trainer

    def test_16_true_stops_a_module_in_the_bf16_range_before_any_step(self):
        module = Regressor(scale=1000)
        before = weights(module)
        with self.assertRaises(Fp16RiskError) as raised:
            self.fit(module, "16-true")
        self.assertIn('precision="16-true"', str(raised.exception))
        self.assertIn('Trainer(precision="bf16-mixed")', str(raised.exception))
        self.assertEqual(module.steps, 0)
        for name, parameter in module.named_parameters():
            self.assertTrue(torch.equal(parameter, before[name]), name)

    def test_probe_stops_a_module_whose_first_batch_overflows_though_its_weights_fit(self):
        module = Regressor(scale=90)  # weights below 100: no range rule fires, the check alone lets it train
        self.assertFalse(precdetect.check(module).fp16_risk)
        with self.assertRaises(Fp16RiskError) as raised:
            self.fit(module, "16-true", PrecisionGuard(probe=True), scale=100.0)
        self.assertIn("module layers.1 reached", str(raised.exception))
        self.assertEqual(module.steps, 0)

    def test_bf16_runs_and_safe_modules_train(self):
        with warnings.catch_warnings():
            warnings.simplefilter("error", PrecisionGuardWarning)
            self.assertEqual(self.fit(Regressor(scale=1000), "bf16-mixed").global_step, 1)
            guard = PrecisionGuard()
            self.assertEqual(self.fit(Regressor(scale=1), "16-true", guard).global_step, 1)
        self.assertFalse(guard.result.fp16_risk)


def regressor_class():
    import lightning.pytorch as pl

    class Regressor(pl.LightningModule):
        """Two linear layers whose weights `scale` multiplies; counts its optimizer steps."""

        def __init__(self, scale):
            super().__init__()
            torch.manual_seed(0)
            self.layers = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Linear(16, 1))
            with torch.no_grad():
                for parameter in self.layers.parameters():
                    parameter.mul_(scale)
            self.steps = 0

        def training_step(self, batch, index):
            return self.layers(batch[0]).pow(2).mean()

        def on_before_optimizer_step(self, optimizer):
            self.steps += 1

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=1e-3)

    return Regressor


Regressor = regressor_class()


# The frameworks' distributions: their packages and their metadata (which torchmetrics, imported by Lightning,
# reads to decide whether transformers is installed).
FRAMEWORKS = {"transformers": ("transformers",), "lightning": ("lightning", "pytorch_lightning")}


def site_packages_without(framework):
    """A view of this environment's site-packages (links) in which `framework` is not installed."""
    view = STAGE / f"without-{framework}"
    view.mkdir(exist_ok=True)
    hidden = FRAMEWORKS[framework]
    for entry in Path(torch.__file__).parents[1].iterdir():
        distribution = entry.name.split("-")[0] if entry.name.endswith(".dist-info") else entry.name
        if distribution not in hidden and not (view / entry.name).exists():
            (view / entry.name).symlink_to(entry)
    return view


class Imports(unittest.TestCase):
    def test_each_guard_imports_without_the_other_framework(self):
        for guard, absent in (("transformers", "lightning"), ("lightning", "transformers")):
            code = f"import sys, precdetect.integrations.{guard}; assert {absent!r} not in sys.modules"
            environment = dict(os.environ, PYTHONPATH=f"{STAGE}:{site_packages_without(absent)}")
            result = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                                    timeout=300, env=environment)
            self.assertEqual(result.returncode, 0, result.stderr)
            hidden = subprocess.run([sys.executable, "-S", "-c", f"import {absent}"], capture_output=True,
                                    timeout=300, env=environment)
            self.assertNotEqual(hidden.returncode, 0)  # the framework really is absent there


if __name__ == "__main__":
    unittest.main()
