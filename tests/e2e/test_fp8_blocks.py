"""fp8 weights with 2-D block scales (DeepSeek-V3; transformers' FineGrainedFP8, `quant_method` "fp8" with
`weight_block_size`): e4m3 weights with float32 `weight_scale_inv` per 128x128 block beside them, analyzed as the
values the model computes with. transformers' own `_dequantize_fp8_weight` is the reference, in float32 as it
computes, then its statistics in float64; weights with a per-tensor or per-channel `weight_scale` (their blocks the
whole tensor and a row) against the stored value times that scale. The files are written with torch (safetensors'
save_file): transformers writes them only on a GPU (its quantizer refuses a CPU), and DeepSeek's converter needs
Triton on CUDA.
- Scale checks: NaN/Inf, zeros, and growth with depth, each a named warning; a scale that fits no blocking is a
  named error (size_mismatch).
compressed-tensors' float8 weights, written by compressed-tensors itself, are test_compressed_tensors'."""

import json
import math
import unittest

import torch
from safetensors.torch import save_file
from transformers.integrations.finegrained_fp8 import _dequantize_fp8_weight

from helpers import ScanTestCase, reference_tensor_stats, run, scan, tensors_by_name

FP8_CONFIG = {"model_type": "deepseek_v3", "architectures": ["DeepseekV3ForCausalLM"],
              "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                                      "weight_block_size": [128, 128]}}


def fp8_block_quantized(rows, columns, block=128, seed=0, scale_range=(1e-3, 1e-2)):
    """A weight quantized per 128x128 block as DeepSeek-V3's are: e4m3 values and float32 scales (`scale_inv`)."""
    generator = torch.Generator().manual_seed(seed)
    weight = (torch.rand(rows, columns, generator=generator) * 2 - 1) * 448
    scale = torch.empty(math.ceil(rows / block), math.ceil(columns / block)).uniform_(*scale_range, generator=generator)
    return weight.to(torch.float8_e4m3fn), scale


class Fp8Blocks(ScanTestCase):
    def write(self, tensors, config=FP8_CONFIG):
        folder = self.tmp / "fp8"
        folder.mkdir(exist_ok=True)
        (folder / "config.json").write_text(json.dumps(config))
        save_file(tensors, folder / "model.safetensors")
        return folder

    def test_weights_are_analyzed_as_stored_value_times_their_block_scale(self):
        # 200 x 300: neither a multiple of 128, so the last blocks are short as DeepSeek's are at the edges.
        tensors, references = {}, {}
        for index, (rows, columns) in enumerate([(200, 300), (256, 128), (64, 1000)]):
            weight, scale = fp8_block_quantized(rows, columns, seed=index)
            name = f"model.layers.{index}.mlp.down_proj"
            tensors[f"{name}.weight"], tensors[f"{name}.weight_scale_inv"] = weight, scale
            references[f"{name}.weight"] = _dequantize_fp8_weight(weight, scale, [128, 128], torch.float32)
        tensors["model.norm.weight"] = torch.ones(64)
        code, document, stderr = scan(self.write(tensors))
        self.assertEqual(code, 0, stderr)
        model = document["models"][0]
        reported = tensors_by_name(model)
        for name, reference in references.items():
            with self.subTest(tensor=name):
                self.assertEqual(reported[name]["dtype"], "F8_E4M3")
                self.assertEqual(reported[name]["scaled_by"], {"tensor": f"{name}_scale_inv", "block": [128, 128]})
                expected = reference_tensor_stats(reference)
                for key in ("abs_min", "abs_max"):
                    self.assertEqual(reported[name][key], expected[key], key)
                self.assertAlmostEqual(reported[name]["norm"], expected["norm"], delta=expected["norm"] * 1e-9)
                self.assertEqual(reported[f"{name}_scale_inv"]["role"], "scale")
        # The summary is the dequantized weights' and the norm's: the scales are no weights.
        self.assertEqual(model["summary"]["abs_max"], max(float(r.abs().max()) for r in references.values()))
        self.assertEqual(model["summary"]["tensors"], 4)
        codes = [w["code"] for w in model["warnings"]]
        self.assertIn("scaled_weights", codes)

    def test_scales_with_nan_zeros_or_growing_with_depth_are_named(self):
        tensors = {}
        for index, largest in enumerate([0.6, 20.0, 548.0]):  # ROCm/hip-ep#168: AWQ scales from 0.6 to 548
            weight, scale = fp8_block_quantized(256, 256, seed=index, scale_range=(largest / 2, largest))
            scale[0, 0] = largest
            tensors[f"model.layers.{index}.mlp.up_proj.weight"] = weight
            tensors[f"model.layers.{index}.mlp.up_proj.weight_scale_inv"] = scale
        tensors["model.layers.1.mlp.up_proj.weight_scale_inv"][1, 1] = float("nan")
        tensors["model.layers.2.mlp.up_proj.weight_scale_inv"][1, 1] = 0.0
        code, document, stderr = scan(self.write(tensors))
        self.assertEqual(code, 0, stderr)
        warnings = {w["code"]: w for w in document["models"][0]["warnings"]}
        self.assertTrue(warnings["scales_nonfinite"]["message"].endswith(": model.layers.1.mlp.up_proj.weight_scale_inv"))
        self.assertTrue(warnings["scales_zero"]["message"].endswith(": model.layers.2.mlp.up_proj.weight_scale_inv"))
        self.assertIn("from block 0 (6.000e-01) to block 2", warnings["scales_grow"]["message"])
        self.assertIn("precdetect: warning:", run(self.write(tensors)).stderr)

    def test_a_scale_that_fits_no_blocking_is_a_named_error(self):
        weight, _ = fp8_block_quantized(200, 300)
        folder = self.write({"w.weight": weight, "w.weight_scale_inv": torch.ones(3, 3)})
        result = run(folder, "--json")
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("size_mismatch", result.stdout)
        self.assertIn("scale `w.weight_scale_inv` of shape [3, 3] fits no blocking of weight `w.weight` of shape "
                      "[200, 300] in the configured blocks of 128x128", result.stdout)

    def test_per_tensor_and_per_channel_scales(self):
        weight, _ = fp8_block_quantized(64, 96)
        per_channel = torch.linspace(0.01, 2.0, 64).unsqueeze(1)
        per_tensor = torch.tensor([0.5])
        folder = self.write({"a.weight": weight, "a.weight_scale": per_channel, "b.weight": weight.clone(),
                             "b.weight_scale": per_tensor}, config={"model_type": "llama"})
        code, document, stderr = scan(folder)
        self.assertEqual(code, 0, stderr)
        reported = tensors_by_name(document["models"][0])
        self.assertEqual(reported["a.weight"]["scaled_by"]["block"], [1, 96])
        self.assertEqual(reported["b.weight"]["scaled_by"]["block"], [64, 96])
        for name, scale in (("a.weight", per_channel), ("b.weight", per_tensor)):
            expected = reference_tensor_stats(weight.float() * scale)
            self.assertEqual(reported[name]["abs_max"], expected["abs_max"], name)
            self.assertAlmostEqual(reported[name]["norm"], expected["norm"], delta=expected["norm"] * 1e-9)


if __name__ == "__main__":
    unittest.main()
