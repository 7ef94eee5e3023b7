"""Quantized safetensors (issue 50): weights stored in fp8 with their scales beside them, analyzed as the values the
model computes with. Each reference is the dequantization of the package that defines the layout, in float32 as it
computes, then its statistics in float64.

- FP8 with 128x128 blocks of `weight_scale_inv` (DeepSeek-V3; transformers' FineGrainedFP8, `quant_method` "fp8"):
  transformers' own `_dequantize_fp8_weight` is the reference. The file is written with torch: transformers writes
  it only on a GPU (its quantizer refuses a CPU), and DeepSeek's converter needs Triton on CUDA.
- compressed-tensors' float8 (per channel, `weight_scale`): written by compressed-tensors 0.20.0 itself
  (apply_quantization_config, its calculate_qparams for the scales, ModelCompressor.compress_model,
  save_pretrained), its `dequantize` the reference.
- MLX's affine quantization (2, 3, 4, 5, 6 and 8 bits; float32, float16, bfloat16 scales): quantized by mx.quantize and written
  by mx.save_safetensors, with the config.json `quantization` block mlx-lm writes (mlx-lm itself was not installed:
  it pins its own transformers); mx.dequantize is the reference.
- Scale checks: NaN/Inf, zeros, and growth with depth, each a named warning."""

import json
import math
import unittest

import torch
from safetensors.torch import save_file
from transformers.integrations.finegrained_fp8 import _dequantize_fp8_weight

from helpers import ScanTestCase, compressed_checkpoint, reference_tensor_stats, run, scan, tensors_by_name

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


class CompressedTensorsFloat8(ScanTestCase):
    def test_a_float_quantized_checkpoint_is_analyzed_as_compressed_tensors_dequantizes_it(self):
        from compressed_tensors.quantization import preset_name_to_scheme
        from compressed_tensors.quantization.lifecycle.forward import dequantize
        from safetensors import safe_open

        scheme = preset_name_to_scheme("FP8_DYNAMIC", ["Linear"])  # float8 weights, one scale per output channel
        folder = self.tmp / "compressed"
        self.assertEqual(compressed_checkpoint(folder, scheme, hidden=64, intermediate=128), "float-quantized")

        code, document, stderr = scan(folder)
        self.assertEqual(code, 0, stderr)
        reported = tensors_by_name(document["models"][0])
        checked = 0
        with safe_open(folder / "model.safetensors", "pt") as stored:
            for name in stored.keys():
                if not name.endswith(".weight_scale"):
                    continue
                weight_name = name[: -len("_scale")]
                weight, scale = stored.get_tensor(weight_name), stored.get_tensor(name)
                self.assertEqual(weight.dtype, torch.float8_e4m3fn)
                reference = dequantize(weight, scale, args=scheme.weights, dtype=torch.float32)
                expected = reference_tensor_stats(reference)
                self.assertEqual(reported[weight_name]["scaled_by"], {"tensor": name, "block": [1, weight.shape[1]]})
                for key in ("abs_min", "abs_max"):
                    self.assertEqual(reported[weight_name][key], expected[key], weight_name)
                self.assertAlmostEqual(reported[weight_name]["norm"], expected["norm"], delta=expected["norm"] * 1e-9)
                checked += 1
        self.assertEqual(checked, 14)  # 7 linear layers per block, 2 blocks


class MlxAffine(ScanTestCase):
    def test_packed_codes_are_analyzed_as_mlx_dequantizes_them(self):
        import mlx.core as mx
        import numpy

        mx.random.seed(0)
        for dtype in (mx.float32, mx.float16, mx.bfloat16):
            for bits, group in ((2, 32), (3, 64), (4, 64), (5, 32), (6, 64), (8, 128)):
                with self.subTest(dtype=str(dtype), bits=bits):
                    folder = self.tmp / f"mlx-{dtype}-{bits}"
                    folder.mkdir()
                    weights = {}
                    references = {}
                    for index in range(2):
                        w = (mx.random.normal((48, 256)) * (index + 1) * 3).astype(dtype)
                        q, scales, biases = mx.quantize(w, group_size=group, bits=bits)
                        name = f"model.layers.{index}.mlp.up_proj"
                        weights.update({f"{name}.weight": q, f"{name}.scales": scales, f"{name}.biases": biases})
                        dequantized = mx.dequantize(q, scales, biases, group_size=group, bits=bits)
                        references[f"{name}.weight"] = torch.from_numpy(numpy.array(dequantized.astype(mx.float32)))
                    mx.save_safetensors(str(folder / "model.safetensors"), weights)
                    (folder / "config.json").write_text(json.dumps(
                        {"model_type": "llama", "quantization": {"group_size": group, "bits": bits}}))
                    code, document, stderr = scan(folder)
                    self.assertEqual(code, 0, stderr)
                    reported = tensors_by_name(document["models"][0])
                    for name, reference in references.items():
                        expected = reference_tensor_stats(reference)
                        self.assertEqual(reported[name]["numel"], 48 * 256)
                        self.assertEqual(reported[name]["scaled_by"]["bits"], bits)
                        for key in ("abs_min", "abs_max", "zeros"):
                            self.assertEqual(reported[name][key], expected[key], (name, key))
                        self.assertAlmostEqual(reported[name]["norm"], expected["norm"], delta=expected["norm"] * 1e-9)
                    self.assertEqual(document["models"][0]["summary"]["parameters"], 2 * 48 * 256)

    def test_an_empty_weight_is_analyzed_as_no_values(self):
        import mlx.core as mx

        folder = self.tmp / "mlx-empty"
        folder.mkdir()
        empty = {"w.weight": mx.zeros((4, 0), dtype=mx.uint32), "w.scales": mx.zeros((4, 0), dtype=mx.float16),
                 "w.biases": mx.zeros((4, 0), dtype=mx.float16)}
        mx.save_safetensors(str(folder / "model.safetensors"), empty)
        (folder / "config.json").write_text(json.dumps({"quantization": {"group_size": 64, "bits": 4}}))
        code, document, stderr = scan(folder)
        self.assertEqual(code, 0, stderr)
        model = document["models"][0]
        self.assertEqual(tensors_by_name(model)["w.weight"]["numel"], 0)
        self.assertEqual(model["verdict"]["label"], "unknown")

    def test_without_its_group_size_and_bits_the_codes_are_counted_not_guessed(self):
        import mlx.core as mx

        q, scales, biases = mx.quantize(mx.random.normal((8, 128)), group_size=64, bits=4)
        folder = self.tmp / "mlx-no-config"
        folder.mkdir()
        mx.save_safetensors(str(folder / "model.safetensors"), {"w.weight": q, "w.scales": scales, "w.biases": biases})
        code, document, stderr = scan(folder)
        reported = tensors_by_name(document["models"][0])
        self.assertEqual(code, 0, stderr)
        self.assertNotIn("scaled_by", reported["w.weight"])
        self.assertFalse(reported["w.weight"]["analyzed"])
        self.assertEqual({reported[n]["role"] for n in ("w.scales", "w.biases")}, {"scale"})  # never weights


if __name__ == "__main__":
    unittest.main()
