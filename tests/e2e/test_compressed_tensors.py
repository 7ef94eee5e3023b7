"""compressed-tensors' checkpoints, each written by compressed-tensors 0.20.0 itself on this CPU (helpers'
compressed_checkpoint: a two-block Llama, seven Linear layers a block, through its apply_quantization_config, its
calculate_qparams for the scales and zero points, generate_gparam for nvfp4's global scale, ModelCompressor and
save_pretrained), each weight read as compressed-tensors dequantizes it, its statistics then taken in float64:
- float-quantized (float8, one scale per output channel: FP8_DYNAMIC) with float32, bfloat16 and float16 scales,
  multiplied in the scales' dtype as its dequantize does (`x_q.to(scale.dtype) * scale`); its dequantize is the
  reference;
- nvfp4-pack-quantized (NVFP4A16) against NVFP4PackedCompressor.decompress, and int-quantized (W8A8 with float32
  and bfloat16 scales, and asymmetric in groups of 64 with float16 ones) against its dequantize;
- pack-quantized (int4 per group, symmetric and asymmetric; int8 per group; int3 per channel, whose codes straddle
  words; llm-compressor's mixed recipes, config groups of other bits by module names) against
  PackedQuantizationCompressor.decompress; config groups their shapes cannot tell apart are counted, not guessed;
- mxfp4-pack-quantized, which precdetect does not read: a weight config.json declares quantized is never analyzed
  as the integers it is stored as; it is counted, named with its scheme in the `quantized_not_read` warning and kept
  out of the verdict, and the tensors stored beside it have the role `scale`.
AWQ's files, whose reference goes through compressed-tensors' AutoAWQConverter, are test_awq's."""

import unittest

import torch

from helpers import (ScanTestCase, check_dequantized, check_stats, compressed_checkpoint, float_tensors,
                     reference_summary, reference_tensor_stats, scan, scanned, tensors_by_name, warning_codes)


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


class Float8ScaleDtypes(ScanTestCase):
    def test_products_are_rounded_to_the_scales_dtype(self):
        from compressed_tensors.quantization import preset_name_to_scheme
        from compressed_tensors.quantization.lifecycle.forward import dequantize

        scheme = preset_name_to_scheme("FP8_DYNAMIC", ["Linear"])  # one scale per output channel
        for dtype in (torch.bfloat16, torch.float16):
            with self.subTest(dtype=dtype):
                folder = self.tmp / f"fp8-{dtype}"
                compressed_checkpoint(folder, scheme, hidden=64, intermediate=128, dtype=dtype)
                stored = float_tensors(folder)
                _, reported = scanned(self, folder)
                scales = [name for name in stored if name.endswith(".weight_scale")]
                self.assertEqual(len(scales), 14)
                for name in scales:
                    weight = name[: -len("_scale")]
                    self.assertEqual(stored[name].dtype, dtype)
                    reference = dequantize(stored[weight], stored[name], args=scheme.weights)  # in the scale's dtype
                    self.assertEqual(reference.dtype, dtype)
                    expected = reference_tensor_stats(reference.double())
                    for key in ("abs_min", "abs_max"):  # each value the library's, to the last bit
                        self.assertEqual(reported[weight][key], expected[key], (weight, key))
                    check_dequantized(self, reported, weight, reference)


class CompressedTensorsSchemes(ScanTestCase):
    def test_nvfp4_and_int_quantized_as_compressed_tensors_decompresses_them(self):
        from compressed_tensors.compressors.nvfp4.base import NVFP4PackedCompressor
        from compressed_tensors.quantization import preset_name_to_scheme
        from compressed_tensors.quantization.lifecycle.forward import dequantize

        asymmetric = {"symmetric": False, "strategy": "group", "group_size": 64}  # zero points, groups of 64
        for preset, dtype, changes in (("NVFP4A16", torch.float32, {}), ("W8A8", torch.float32, {}),
                                       ("W8A8", torch.bfloat16, {}), ("W8A8", torch.float16, asymmetric)):
            with self.subTest(preset=preset, dtype=dtype, changes=changes):
                folder = self.tmp / f"{preset}-{dtype}-{len(changes)}"
                scheme = preset_name_to_scheme(preset, ["Linear"])
                scheme.weights = scheme.weights.model_copy(update=changes)
                written = compressed_checkpoint(folder, scheme, dtype=dtype)
                self.assertEqual(written, "nvfp4-pack-quantized" if preset.startswith("NVFP4") else "int-quantized")
                stored = float_tensors(folder)
                model, reported = scanned(self, folder)
                self.assertNotIn("quantized_not_read", warning_codes(model))
                scales = [name for name in stored if name.endswith(".weight_scale")]
                self.assertEqual(len(scales), 14)
                for scale in scales:
                    module = scale[: -len(".weight_scale")]
                    if preset.startswith("NVFP4"):
                        parts = {key[len(module) + 1:]: stored[key] for key in stored if key.startswith(module + ".")}
                        reference = NVFP4PackedCompressor.decompress(parts, scheme)["weight"]
                        weight = module + ".weight_packed"
                        self.assertEqual(reported[module + ".weight_global_scale"]["role"], "scale")
                    else:
                        weight = module + ".weight"
                        zero_point = stored.get(module + ".weight_zero_point")
                        self.assertEqual(zero_point is not None, bool(changes))
                        reference = dequantize(stored[weight], stored[scale], zero_point, args=scheme.weights)
                    self.assertEqual(reported[scale]["role"], "scale")
                    check_dequantized(self, reported, weight, reference)
                    expected = reference_tensor_stats(reference.double())
                    self.assertEqual(reported[weight]["abs_max"], expected["abs_max"], weight)


class CompressedTensorsPackQuantized(ScanTestCase):
    def check(self, folder, scheme_of):
        """Every packed weight against decompress with its module's scheme (`scheme_of(module name)`)."""
        from compressed_tensors.compressors.pack_quantized.base import PackedQuantizationCompressor
        from safetensors import safe_open

        code, document, stderr = scan(folder)
        self.assertEqual(code, 0, stderr)
        reported = tensors_by_name(document["models"][0])
        checked = 0
        with safe_open(folder / "model.safetensors", "pt") as stored:
            for name in stored.keys():
                if not name.endswith(".weight_packed"):
                    continue
                module = name[: -len(".weight_packed")]
                parts = {key: stored.get_tensor(f"{module}.{key}") for key in
                         ("weight_packed", "weight_scale", "weight_shape", "weight_zero_point")
                         if f"{module}.{key}" in stored.keys()}
                scheme = scheme_of(module)
                reference = PackedQuantizationCompressor.decompress(parts, scheme)["weight"]
                self.assertEqual(reported[name]["scaled_by"]["tensor"], f"{module}.weight_scale")
                self.assertEqual(reported[name]["scaled_by"]["bits"], scheme.weights.num_bits)
                check_stats(self, reported, name, reference)
                self.assertEqual(reported[f"{module}.weight_scale"]["role"], "scale")
                checked += 1
        self.assertEqual(checked, 14)  # 7 linear layers per block, 2 blocks
        return document

    def test_int4_int8_and_int3_codes_are_analyzed_as_compressed_tensors_decompresses_them(self):
        from compressed_tensors.quantization import QuantizationArgs, QuantizationScheme, preset_name_to_scheme

        schemes = {name: preset_name_to_scheme(name, ["Linear"]) for name in ("W4A16", "W4A16_ASYM", "W8A16")}
        schemes["int3-channel-asym"] = QuantizationScheme(
            targets=["Linear"], weights=QuantizationArgs(num_bits=3, type="int", strategy="channel", symmetric=False))
        for name, scheme in schemes.items():
            with self.subTest(scheme=name):
                folder = self.tmp / name
                self.assertEqual(compressed_checkpoint(folder, scheme), "pack-quantized")
                document = self.check(folder, lambda module, scheme=scheme: scheme)
                self.assertIn("scaled_weights", [w["code"] for w in document["models"][0]["warnings"]])

    def test_config_groups_of_other_bits_are_told_apart_by_their_shapes(self):
        # llm-compressor's mixed recipes: 8-bit attention, 4-bit MLP, by patterns of module names the tensors do not
        # record. Each weight takes the group whose bits and group size fit its packed words and scales.
        from compressed_tensors.quantization import preset_name_to_scheme

        groups = {"attention": preset_name_to_scheme("W8A16", ["re:.*self_attn.*"]),
                  "mlp": preset_name_to_scheme("W4A16_ASYM", ["re:.*mlp.*"])}
        folder = self.tmp / "mixed"
        self.assertEqual(compressed_checkpoint(folder, groups, hidden=256, intermediate=512), "pack-quantized")
        self.check(folder, lambda module: groups["attention" if "self_attn" in module else "mlp"])

    def test_config_groups_their_shapes_cannot_tell_apart_are_counted_not_guessed(self):
        # Per-channel scales fit any width: 8-bit and 4-bit groups per channel leave a weight's reading open.
        from compressed_tensors.quantization import QuantizationArgs, QuantizationScheme

        groups = {f"int{bits}": QuantizationScheme(targets=[pattern], weights=QuantizationArgs(
                      num_bits=bits, type="int", strategy="channel", symmetric=True))
                  for bits, pattern in ((8, "re:.*self_attn.*"), (4, "re:.*mlp.*"))}
        folder = self.tmp / "mixed-channels"
        self.assertEqual(compressed_checkpoint(folder, groups), "pack-quantized")
        code, document, stderr = scan(folder)
        self.assertEqual(code, 0, stderr)
        reported = tensors_by_name(document["models"][0])
        packed = [name for name in reported if name.endswith(".weight_packed")]
        self.assertEqual(len(packed), 14)
        for name in packed:
            self.assertNotIn("scaled_by", reported[name])
            self.assertFalse(reported[name]["analyzed"])
            self.assertEqual(reported[name.replace("_packed", "_scale")]["role"], "scale")


class UnreadSchemes(ScanTestCase):
    def check_counted(self, folder, scheme, weights, scales):
        """`weights` counted and named with `scheme`, never analyzed; `scales` role scale; the summary is the other
        float tensors' alone."""
        model, reported = scanned(self, folder)
        self.assertIn("quantized_not_read", warning_codes(model))
        message = next(w["message"] for w in model["warnings"] if w["code"] == "quantized_not_read")
        for name in weights:
            with self.subTest(weight=name):
                self.assertFalse(reported[name]["analyzed"])
                self.assertEqual(reported[name]["role"], "model")
                self.assertIn(f"{name} ({scheme})", message)
        for name in scales:
            self.assertEqual(reported[name]["role"], "scale", name)
        stored = float_tensors(folder)
        others = {name: tensor for name, tensor in stored.items()
                  if name not in weights and name not in scales and tensor.is_floating_point()}
        self.assertEqual(model["summary"]["abs_max"], reference_summary(others)["abs_max"])

    def test_compressed_tensors_mxfp4_is_counted_with_its_scheme(self):
        from compressed_tensors.quantization import preset_name_to_scheme

        folder = self.tmp / "mxfp4"
        scheme = "compressed-tensors " + compressed_checkpoint(folder, preset_name_to_scheme("MXFP4A16", ["Linear"]))
        modules = [name[: -len(".weight_packed")] for name in float_tensors(folder) if name.endswith(".weight_packed")]
        self.assertEqual(len(modules), 14)
        self.check_counted(folder, scheme, [m + ".weight_packed" for m in modules],
                           [m + ".weight_scale" for m in modules])


if __name__ == "__main__":
    unittest.main()
