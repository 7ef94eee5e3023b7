"""What to keep in fp32, tested for effect (issue 48): a small T5 built with transformers whose encoder's last `wo`
is scaled so that its output reaches ~1.7e5, past fp16's 65504 (its weights alone stay inside fp16's range).

- precdetect.probe, run on the fp32 model, names that module before any inf exists; transformers'
  DebugUnderflowOverflow finds nothing in the fp32 forward and names it only once the fp16 forward has produced inf.
- Loaded in fp16 through transformers with the advice's keep list kept in fp32, every module's output is finite and
  the logits follow the fp32 model's; without it (T5's own `_keep_in_fp32_modules = ["wo"]` switched off), wo's
  output is inf. T5's blocks clamp inf to 64504 afterwards, so the logits stay finite there but wrong: the
  assertions are on the modules' outputs, as DebugUnderflowOverflow's are."""

import io
import tempfile
import unittest
from contextlib import contextmanager, redirect_stdout
from pathlib import Path

import torch
from transformers import T5Config, T5ForConditionalGeneration
from transformers.debug_utils import DebugUnderflowOverflow
from transformers.models.t5 import modeling_t5

from staged_package import STAGE  # noqa: F401 (puts the staged package first on sys.path)
import precdetect  # noqa: E402

SCALED = "encoder.block.1.layer.1.DenseReluDense.wo"


def scaled_t5(folder: Path) -> T5ForConditionalGeneration:
    torch.manual_seed(0)
    config = T5Config(vocab_size=64, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4,
                      decoder_start_token_id=0)
    model = T5ForConditionalGeneration(config).eval()
    with torch.no_grad():
        model.get_submodule(SCALED).weight.mul_(1e5)
    model.save_pretrained(folder)
    return model


@contextmanager
def keep_in_fp32(modules):
    """transformers' keep list for T5 while loading: the class attribute T5's stacks carry (["wo"] by default)."""
    saved = modeling_t5.T5PreTrainedModel._keep_in_fp32_modules
    modeling_t5.T5PreTrainedModel._keep_in_fp32_modules = list(modules)
    try:
        yield
    finally:
        modeling_t5.T5PreTrainedModel._keep_in_fp32_modules = saved


def module_outputs(model, inputs) -> dict:
    """Every module's output, as its forward returned it."""
    outputs = {}
    handles = [module.register_forward_hook(lambda m, a, o, name=name: outputs.__setitem__(name, o))
               for name, module in model.named_modules() if name]
    try:
        with torch.no_grad():
            logits = model(**inputs).logits
    finally:
        for handle in handles:
            handle.remove()
    return outputs, logits


class Probe(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory()
        cls.folder = Path(cls._tmp.name) / "t5"
        cls.model = scaled_t5(cls.folder)
        generator = torch.Generator().manual_seed(1)
        cls.inputs = {"input_ids": torch.randint(0, 64, (2, 8), generator=generator),
                      "decoder_input_ids": torch.randint(0, 64, (2, 4), generator=generator)}
        with torch.no_grad():
            cls.reference = cls.model(**cls.inputs).logits

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def fp16_model(self, keep):
        with keep_in_fp32(keep):
            return T5ForConditionalGeneration.from_pretrained(self.folder, dtype=torch.float16).eval()

    def test_the_probe_names_the_module_before_any_inf(self):
        outputs, _ = module_outputs(self.model, self.inputs)
        self.assertTrue(all(torch.isfinite(o).all() for o in outputs.values() if isinstance(o, torch.Tensor)))
        result = precdetect.probe(self.model, self.inputs, gpu="T4")
        measured = {a["module"]: a for a in result.activations}
        # The probe's own number against the hook's: the largest |output| of the scaled module, in float64.
        expected = outputs[SCALED].double().abs().max().item()
        self.assertAlmostEqual(measured[SCALED]["output"], expected, delta=expected * 1e-6)
        self.assertGreater(expected, 65504)
        self.assertAlmostEqual(measured[SCALED]["fp16_headroom"], 65504 / expected, delta=1e-9)
        reasons = [r for r in result.verdict["fp16_risk_reasons"] if r["kind"] == "activation"]
        self.assertEqual([r["tensor"] for r in reasons], [SCALED])
        keep = [k["module"] for k in result.advice["keep_in_fp32"]]
        self.assertIn(SCALED, keep)
        serving = {p["tool"]: p for p in result.advice["plans"] if p["target"] == "serving"}
        self.assertEqual(serving["transformers"]["precision"], "fp16+keep")
        self.assertIn(f'"{SCALED}"', serving["transformers"]["setting"])
        self.assertEqual(serving["vLLM"]["precision"], "fp32")

    def test_debug_underflow_overflow_names_it_only_after_the_fp16_forward_made_inf(self):
        DebugUnderflowOverflow(self.model)  # fp32: nothing to detect, the forward runs through
        with torch.no_grad():
            self.model(**self.inputs)
        for module in self.model.modules():
            module._forward_hooks.clear()
        half = self.fp16_model(keep=[])
        DebugUnderflowOverflow(half)
        printed = io.StringIO()
        with self.assertRaisesRegex(ValueError, "inf/nan"), torch.no_grad(), redirect_stdout(printed):
            half(**self.inputs)
        # Its trace ends with the frame that produced the inf: the scaled wo, whose output is already inf.
        last_frame = printed.getvalue().rstrip().split("\n")[-4:]
        self.assertIn(f"{SCALED} Linear", last_frame[0])
        self.assertIn("inf output", last_frame[-1])

    def test_the_keep_list_keeps_the_fp16_forward_finite(self):
        result = precdetect.probe(self.model, self.inputs, gpu="T4")
        keep = [k["module"] for k in result.advice["keep_in_fp32"]]
        kept = self.fp16_model(keep)
        self.assertEqual(kept.get_submodule(SCALED).weight.dtype, torch.float32)
        outputs, logits = module_outputs(kept, self.inputs)
        for name, output in outputs.items():
            if isinstance(output, torch.Tensor):
                self.assertTrue(torch.isfinite(output).all(), name)
        torch.testing.assert_close(logits.float(), self.reference, rtol=0.05, atol=0.05)

    def test_without_the_keep_list_the_fp16_forward_overflows(self):
        bare = self.fp16_model(keep=[])
        self.assertEqual(bare.get_submodule(SCALED).weight.dtype, torch.float16)
        outputs, logits = module_outputs(bare, self.inputs)
        self.assertTrue(torch.isinf(outputs[SCALED]).any())
        # T5 clamps the inf to 64504 after the block: finite logits, far from the fp32 model's.
        self.assertGreater((logits.float() - self.reference).abs().max().item(), 0.05)

    def test_the_scan_of_the_saved_model_gives_transformers_documented_keep_list(self):
        [result] = precdetect.scan(self.folder, gpu="T4")
        keep = {k["module"]: k["basis"] for k in result.advice["keep_in_fp32"]}
        self.assertEqual(keep, {"wo": "documented"})
        kept = self.fp16_model(list(keep))
        outputs, logits = module_outputs(kept, self.inputs)
        self.assertTrue(torch.isfinite(outputs[SCALED]).all())
        torch.testing.assert_close(logits.float(), self.reference, rtol=0.05, atol=0.05)


if __name__ == "__main__":
    unittest.main()
