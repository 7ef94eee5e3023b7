"""Single-file pipeline checkpoints (issue 50): the file SD 1/2 and XL are shipped as (A1111 and ComfyUI load it),
and the one ComfyUI saves for SD3 and FLUX, hold the denoiser, the VAE and the text encoders side by side under
component prefixes. Each component is scanned as a model of its own, `FILE#COMPONENT`, with its own verdict.

No library on PyPI writes this layout (diffusers reads it: loaders/single_file_utils.py); the test builds one from
real modules' state dicts (a diffusers AutoencoderKL, a transformers CLIPTextModel) under the prefixes diffusers'
reader names: LDM_UNET_KEY, LDM_VAE_KEYS[0] and the SDXL text encoders' conditioner.embedders.N."""

import unittest

import torch
from diffusers import AutoencoderKL
from diffusers.loaders import single_file_utils
from safetensors.torch import save_file
from transformers import CLIPTextConfig, CLIPTextModel

from helpers import ScanTestCase, run, scan


def tiny_vae(scale):
    torch.manual_seed(0)
    vae = AutoencoderKL(block_out_channels=(8,), layers_per_block=1, norm_num_groups=8, latent_channels=4)
    with torch.no_grad():
        for parameter in vae.parameters():
            parameter.mul_(scale)
    return vae.state_dict()


def tiny_clip(seed):
    torch.manual_seed(seed)
    return CLIPTextModel(CLIPTextConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                        num_attention_heads=2, max_position_embeddings=16)).state_dict()


def prefixed(prefix, state_dict):
    return {prefix + name: tensor.contiguous() for name, tensor in state_dict.items()}


class SingleFile(ScanTestCase):
    def sdxl_like(self):
        """An SDXL-layout file: a small denoiser, a VAE whose weights were scaled into bf16's range, two CLIPs, and
        a scheduler buffer outside every component."""
        parts = {
            "diffusion_model": prefixed(single_file_utils.LDM_UNET_KEY, {"input_blocks.0.0.weight": torch.randn(8, 4, 3, 3) * 0.1}),
            "vae": prefixed(single_file_utils.LDM_VAE_KEYS[0], tiny_vae(scale=500.0)),
            "text_encoder": prefixed("conditioner.embedders.0.transformer.", tiny_clip(1)),
            "text_encoder_2": prefixed("conditioner.embedders.1.model.", tiny_clip(2)),
            "other": {"alphas_cumprod": torch.linspace(0.99, 0.01, 10)},
        }
        self.assertTrue(single_file_utils.CHECKPOINT_KEY_NAMES["xl_base"].startswith("conditioner.embedders.1."))
        path = self.tmp / "sd_xl_like.safetensors"
        save_file({name: tensor for part in parts.values() for name, tensor in part.items()}, path)
        return path, parts

    def test_each_component_is_a_model_with_its_own_verdict(self):
        path, parts = self.sdxl_like()
        code, document, stderr = scan(path)
        self.assertEqual(code, 0, stderr)
        models = {m["input"]: m for m in document["models"]}
        self.assertEqual(list(models), [f"{path}#{name}" for name in parts])
        for name, tensors in parts.items():
            with self.subTest(component=name):
                model = models[f"{path}#{name}"]
                self.assertEqual(model["path"], str(path))
                self.assertEqual(sorted(t["name"] for t in model["tensors"]), sorted(tensors))
                if name == "other":  # alphas_cumprod is a buffer by the rules' names: out of the summary
                    self.assertEqual([t["role"] for t in model["tensors"]], ["buffer"])
                else:
                    self.assertSummary(model["summary"], tensors)
        self.assertTrue(models[f"{path}#vae"]["verdict"]["fp16_risk"])
        self.assertFalse(models[f"{path}#text_encoder"]["verdict"]["fp16_risk"])
        self.assertNotEqual(models[f"{path}#vae"]["verdict"]["label"], models[f"{path}#text_encoder"]["verdict"]["label"])

    def test_one_component_can_be_scanned_alone_and_a_missing_one_is_named(self):
        path, parts = self.sdxl_like()
        code, document, stderr = scan(f"{path}#vae")
        self.assertEqual(code, 0, stderr)
        self.assertEqual(len(document["models"]), 1)
        self.assertEqual(document["models"][0]["summary"]["tensors"], len(parts["vae"]))
        clip_only = self.tmp / "clip.safetensors"
        save_file(prefixed("text_encoders.clip_l.transformer.", tiny_clip(3)), clip_only)
        result = run(f"{clip_only}#vae", "--json")
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("holds no tensor of the component `vae`", result.stderr)

    def test_a_file_under_one_prefix_is_one_model(self):
        clip_only = self.tmp / "clip.safetensors"
        save_file(prefixed("text_encoders.clip_l.transformer.", tiny_clip(3)), clip_only)
        code, document, _ = scan(clip_only)
        self.assertEqual([m["input"] for m in document["models"]], [str(clip_only)])

    def test_a_comfyui_models_folder_scans_as_a_zoo(self):
        path, parts = self.sdxl_like()
        checkpoints = self.tmp / "ComfyUI" / "models" / "checkpoints"
        vae_folder = self.tmp / "ComfyUI" / "models" / "vae"
        checkpoints.mkdir(parents=True)
        vae_folder.mkdir(parents=True)
        path.rename(checkpoints / path.name)
        save_file(tiny_vae(scale=1.0), vae_folder / "sdxl_vae.safetensors")
        code, document, stderr = scan(self.tmp / "ComfyUI" / "models", "--recursive")
        self.assertEqual(code, 0, stderr)
        inputs = [m["input"] for m in document["models"]]
        self.assertEqual(inputs, [f"{checkpoints}#{name}" for name in parts] + [str(vae_folder)])


if __name__ == "__main__":
    unittest.main()
