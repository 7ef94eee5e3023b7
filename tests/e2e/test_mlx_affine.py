"""MLX's affine quantization (2, 3, 4, 5, 6 and 8 bits; float32, float16, bfloat16 scales): codes packed in uint32
words beside a scale and a bias per group, quantized by mx.quantize and written by mx.save_safetensors, with the
config.json `quantization` block mlx-lm writes; mx.dequantize is the reference (each operation in the scales' dtype,
as it computes), its statistics then taken in float64. An empty weight is analyzed as no values; without the
config's group size and bits the codes are counted, not guessed, and the scales and biases are never weights.
MLX's other modes (mxfp4, nvfp4, mxfp8: float codes with one 8-bit scale a group and no biases) are another scheme,
the one gpt-oss's MXFP4 shares (quantize/microscaling.cpp beside quantize/mlx_affine.cpp), so they and mlx-lm's own
writer are test_microscaling's."""

import json
import unittest

import torch

from helpers import ScanTestCase, reference_tensor_stats, scan, tensors_by_name


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
