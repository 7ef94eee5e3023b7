"""Microscaling formats (float codes in groups, one 8-bit scale a group), each on files its own producer writes on
this CPU or in its own layout, read as their dequantizers compute them: each weight's numel, abs min, abs max and norm
against the library's own dequantized tensor in float64, its scales role `scale`.
- MLX 0.32's mxfp4, nvfp4 and mxfp8 modes (mx.quantize, mx.save_safetensors, the `quantization` block mlx-lm
  writes) against mx.dequantize, and mlx-lm 0.32.2's own quantize_model and save_model with modules of a mode of
  their own (nvfp4, mxfp8 for the down projections) against its load_model and mx.dequantize;
- gpt-oss's MXFP4 (`*_blocks`, `*_scales`; transformers quantizes to it only on a GPU, through Triton kernels, so
  the codes and scales are drawn at random in its layout) against transformers' convert_moe_packed_tensors.
One module for the scheme, whichever library wrote the file, as quantize/microscaling.cpp reads both: MLX's modes and
gpt-oss's MXFP4 share one reading (each code times its group's 8-bit scale, rounded to bfloat16). MLX's affine mode
(a scale and a bias per group) is test_mlx_affine's; compressed-tensors' nvfp4 and mxfp4 are
test_compressed_tensors'."""

import json
import unittest

import torch

from helpers import ScanTestCase, check_dequantized, scanned


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


if __name__ == "__main__":
    unittest.main()
