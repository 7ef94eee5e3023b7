"""Quantization schemes read or counted (issue 59), each on files its own producer writes on this CPU.

A weight that config.json declares quantized (or bitsandbytes' tensor names do) is never analyzed as the floats or
integers it is stored as: where precdetect cannot read its scheme, it is counted, named with the scheme in the
`quantized_not_read` warning and kept out of the verdict, and the tensors stored beside it have the role `scale`
(compressed-tensors' mxfp4-pack-quantized; torchao's subclasses are read or counted in test_torchao).
Read as their library dequantizes them, each weight's numel, abs min, abs max and norm against the library's own
dequantized tensor in float64 (compressed-tensors 0.20.0's files through its own apply_quantization_config,
calculate_qparams, generate_gparam for nvfp4's global scale, and ModelCompressor):
- compressed-tensors' nvfp4-pack-quantized (NVFP4A16) against NVFP4PackedCompressor.decompress, and int-quantized
  (W8A8 with float32 and bfloat16 scales, and asymmetric in groups of 64 with float16 ones) against its dequantize;
- MLX 0.32's mxfp4, nvfp4 and mxfp8 modes (mx.quantize, mx.save_safetensors, the `quantization` block mlx-lm
  writes) against mx.dequantize, and mlx-lm 0.32.2's own quantize_model and save_model with modules of a mode of
  their own (nvfp4, mxfp8 for the down projections) against its load_model and mx.dequantize;
- gpt-oss's MXFP4 (`*_blocks`, `*_scales`; transformers quantizes to it only on a GPU, through Triton kernels, so
  the codes and scales are drawn at random in its layout) against transformers' convert_moe_packed_tensors;
- bitsandbytes 0.50.2's 4-bit weights with every `bnb_4bit_quant_storage` dtype (bfloat16, float16, float32: the
  packed bytes viewed as that dtype), through transformers' BitsAndBytesConfig; dequantize_4bit is the reference.
- compressed-tensors' float8 weights with bfloat16 and float16 scales, multiplied in the scales' dtype as its
  dequantize does (`x_q.to(scale.dtype) * scale`); its dequantize is the reference.
One interpreter per module; each model is a two-block Llama of hidden size 128."""

import json
import unittest

import torch

from helpers import (ScanTestCase, compressed_checkpoint, reference_summary, reference_tensor_stats, scan, small_llama,
                     tensors_by_name, warning_codes)


def float_tensors(folder):
    """The tensors of `folder`'s safetensors file, by name."""
    from safetensors.torch import load_file

    return load_file(folder / "model.safetensors")


def scanned(case, folder):
    """The JSON model of `folder`'s scan, which must succeed, and its tensors by name."""
    code, document, stderr = scan(folder)
    case.assertEqual(code, 0, stderr)
    model = document["models"][0]
    return model, tensors_by_name(model)


def check_dequantized(case, reported, name, reference):
    """`name`'s statistics against `reference` (the library's dequantized tensor) in float64."""
    expected = reference_tensor_stats(reference.double())
    case.assertTrue(reported[name]["analyzed"], name)
    case.assertEqual(reported[name]["numel"], reference.numel(), name)
    for key in ("abs_min", "abs_max", "norm"):
        case.assertAlmostEqual(reported[name][key], expected[key], delta=abs(expected[key]) * 1e-6, msg=(name, key))


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


class Microscaling(ScanTestCase):
    def test_mlx_modes_as_mx_dequantize_computes_them(self):
        import mlx.core as mx
        import numpy

        mx.random.seed(0)
        for mode, group in (("mxfp4", 32), ("nvfp4", 16), ("mxfp8", 32)):
            with self.subTest(mode=mode):
                folder = self.tmp / f"mlx-{mode}"
                folder.mkdir()
                arrays, references = {"model.norm.weight": mx.ones((256,))}, {}
                for index in range(2):
                    name = f"model.layers.{index}.mlp"
                    q, scales = mx.quantize(mx.random.normal((64, 256)) * (index + 1), group_size=group, mode=mode)
                    arrays[f"{name}.weight"], arrays[f"{name}.scales"] = q, scales
                    dequantized = mx.dequantize(q, scales, group_size=group, mode=mode)  # bfloat16
                    references[f"{name}.weight"] = torch.from_numpy(numpy.array(dequantized.astype(mx.float32)))
                mx.save_safetensors(str(folder / "model.safetensors"), arrays)
                quantization = {"group_size": group, "bits": 8 if mode == "mxfp8" else 4, "mode": mode}
                (folder / "config.json").write_text(json.dumps({"model_type": "llama", "quantization": quantization,
                                                                "quantization_config": quantization}))
                _, reported = scanned(self, folder)
                for name, reference in references.items():
                    check_dequantized(self, reported, name, reference)
                    self.assertEqual(reported[name]["scaled_by"]["format"], mode)
                    self.assertEqual(reported[name[: -len("weight")] + "scales"]["role"], "scale")

    def test_mlx_lm_modules_of_their_own_mode_as_mlx_lm_loads_them(self):
        """mlx-lm quantizes a Llama in nvfp4 with each MLP's down_proj in mxfp8, as its quant_predicate asks:
        config.json's `quantization` holds those modules' own settings beside the model's. Each weight is read in its
        module's mode, against mlx-lm's own loader (load_model) and mx.dequantize of what it loads."""
        import mlx.core as mx
        import numpy
        from mlx_lm.models import llama
        from mlx_lm.utils import load_model, quantize_model, save_config, save_model

        mx.random.seed(0)
        config = {"model_type": "llama", "hidden_size": 128, "num_hidden_layers": 2, "intermediate_size": 256,
                  "num_attention_heads": 4, "num_key_value_heads": 4, "rms_norm_eps": 1e-5, "vocab_size": 64}
        model = llama.Model(llama.ModelArgs.from_dict(config))
        own_mode = {"group_size": 32, "bits": 8, "mode": "mxfp8"}
        model, config = quantize_model(model, config, 16, 4, mode="nvfp4",
                                       quant_predicate=lambda path, _: own_mode if path.endswith("down_proj") else True)
        folder = self.tmp / "mlx-lm-modes"
        save_model(folder, model)
        save_config(config, folder / "config.json")
        self.assertEqual(json.loads((folder / "config.json").read_text())["quantization"]["model.layers.0.mlp.down_proj"],
                         own_mode)
        loaded, _ = load_model(folder)
        references, modes = {}, {}
        for name, module in loaded.named_modules():
            if not hasattr(module, "scales"):
                continue
            dequantized = mx.dequantize(module.weight, module.scales, module.get("biases"), module.group_size,
                                        module.bits, module.mode)
            references[f"{name}.weight"] = torch.from_numpy(numpy.array(dequantized.astype(mx.float32)))
            modes[f"{name}.weight"] = module.mode
        self.assertEqual(set(modes.values()), {"nvfp4", "mxfp8"})
        _, reported = scanned(self, folder)
        for name, reference in references.items():
            with self.subTest(weight=name):
                check_dequantized(self, reported, name, reference)
                self.assertEqual(reported[name]["scaled_by"]["format"], modes[name])
                self.assertEqual(reported[name[: -len("weight")] + "scales"]["role"], "scale")

    def test_gpt_oss_mxfp4_as_transformers_dequantizes_it(self):
        from safetensors.torch import save_file
        from transformers.integrations.mxfp4 import convert_moe_packed_tensors

        generator = torch.Generator().manual_seed(0)
        tensors, references = {"model.norm.weight": torch.ones(64)}, {}
        for index in range(2):  # experts x rows x groups of 32 codes, as gpt-oss's gate_up_proj and down_proj
            prefix = f"model.layers.{index}.mlp.experts.gate_up_proj"
            blocks = torch.randint(0, 256, (4, 64, 2, 16), dtype=torch.uint8, generator=generator)
            scales = torch.randint(117, 131, (4, 64, 2), dtype=torch.uint8, generator=generator)
            tensors[f"{prefix}_blocks"], tensors[f"{prefix}_scales"] = blocks, scales
            references[f"{prefix}_blocks"] = convert_moe_packed_tensors(blocks, scales, dtype=torch.bfloat16)
        folder = self.tmp / "gpt-oss"
        folder.mkdir()
        save_file(tensors, folder / "model.safetensors")
        (folder / "config.json").write_text(json.dumps({"model_type": "gpt_oss",
                                                        "quantization_config": {"quant_method": "mxfp4"}}))
        _, reported = scanned(self, folder)
        for name, reference in references.items():
            check_dequantized(self, reported, name, reference)
            self.assertEqual(reported[name[: -len("blocks")] + "scales"]["role"], "scale")


class BitsAndBytesQuantStorage(ScanTestCase):
    def test_4bit_codes_stored_in_any_dtype_are_read_as_their_bytes(self):
        import bitsandbytes.functional as F
        from transformers import AutoModelForCausalLM, BitsAndBytesConfig

        plain = self.tmp / "plain"
        small_llama().save_pretrained(plain)
        for storage in (torch.bfloat16, torch.float16, torch.float32):
            with self.subTest(storage=storage):
                folder = self.tmp / f"nf4-{storage}"
                config = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                                            bnb_4bit_quant_storage=storage, bnb_4bit_compute_dtype=torch.bfloat16)
                AutoModelForCausalLM.from_pretrained(plain, quantization_config=config, device_map="cpu",
                                                     dtype=torch.bfloat16).save_pretrained(folder)
                stored = float_tensors(folder)
                weights = [name.split(".quant_state.")[0] for name in stored if ".quant_state.bitsandbytes__" in name]
                self.assertEqual(len(weights), 14)
                model, reported = scanned(self, folder)
                self.assertNotIn("quantized_not_read", warning_codes(model))
                for name in weights:
                    self.assertEqual(stored[name].dtype, storage)  # the packed bytes, viewed as `storage`
                    self.assertEqual(reported[name]["dtype"], {torch.bfloat16: "BF16", torch.float16: "F16",
                                                               torch.float32: "F32"}[storage])
                    parts = {key[len(name) + 1:]: stored[key] for key in stored if key.startswith(name + ".")}
                    state = F.QuantState.from_dict(parts, device=torch.device("cpu"))
                    check_dequantized(self, reported, name, F.dequantize_4bit(stored[name], state))
                    self.assertEqual(reported[name + ".absmax"]["role"], "scale")


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


if __name__ == "__main__":
    unittest.main()
