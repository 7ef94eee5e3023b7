"""Adapters (issue 39): PEFT, diffusers and kohya LoRA files are reported as adapters, and their pretraining
answer is their base model's: the registry's entry for the base the adapter names, or the base itself, scanned
where it lies in the local HF cache. The adapters are written by the real writers (peft's save_pretrained,
diffusers' save_lora_weights); kohya's format has no PyPI writer, so the corpus' real file stands for it."""

import json
import os
import unittest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # peft looks the base up on the Hub; these bases live nowhere

import torch
from diffusers.loaders import StableDiffusionLoraLoaderMixin
from peft import LoraConfig, get_peft_model
from safetensors.torch import save_file
from transformers import LlamaConfig, LlamaForCausalLM, TrainingArguments

from helpers import CORPUS, ScanTestCase, scan, warning_codes

COMMIT = "a" * 40


def tiny_llama(name_or_path, abs_max=None):
    config = LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=4, vocab_size=128)
    config._name_or_path = name_or_path  # what from_pretrained(name_or_path) leaves, and peft records as the base
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    if abs_max is not None:
        with torch.no_grad():
            model.model.embed_tokens.weight[3, 5] = abs_max
    return model


def save_peft_adapter(folder, base_name_or_path):
    model = get_peft_model(tiny_llama(base_name_or_path), LoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
    model.save_pretrained(folder)
    return folder


class Peft(ScanTestCase):
    def test_an_adapter_of_a_documented_base_gets_the_bases_precision(self):
        folder = save_peft_adapter(self.tmp / "adapter", "EleutherAI/pythia-1b")
        self.assertEqual(json.loads((folder / "adapter_config.json").read_text())["base_model_name_or_path"],
                         "EleutherAI/pythia-1b")
        code, document, stderr = scan(folder)
        self.assertEqual(code, 0, stderr)
        model = document["models"][0]
        self.assertEqual(model["adapter"], {"format": "peft", "base_model": "EleutherAI/pythia-1b",
                                            "found_by": "adapter_config.json", "base_scan": None})
        verdict = model["verdict"]
        self.assertEqual((verdict["label"], verdict["decided_by"]), ("bf16", "documented"))
        documented = verdict["documented"]
        self.assertEqual((documented["id"], documented["matched_by"], documented["base_model"]),
                         ("EleutherAI/pythia-1b", "adapter_base", True))
        # The adapter's own tensors are analyzed all the same: lora_A is random, lora_B starts at zero.
        self.assertEqual(model["summary"]["tensors"], 8)
        self.assertEqual(model["summary"]["abs_min"], 0.0)

    def test_the_base_in_the_hf_cache_is_scanned_and_its_verdict_taken(self):
        hub = self.tmp / "hub"
        snapshot = hub / "models--acme--tiny-base" / "snapshots" / COMMIT
        tiny_llama("acme/tiny-base", abs_max=300.0).save_pretrained(snapshot)
        (hub / "models--acme--tiny-base" / "refs").mkdir()
        (hub / "models--acme--tiny-base" / "refs" / "main").write_text(COMMIT)
        folder = save_peft_adapter(self.tmp / "adapter", "acme/tiny-base")
        code, document, stderr = scan(folder, env={"HF_HUB_CACHE": str(hub)})
        self.assertEqual(code, 0, stderr)
        model = document["models"][0]
        base_scan = model["adapter"]["base_scan"]
        self.assertEqual(base_scan["path"], str(snapshot))
        self.assertIsNone(base_scan["error"])
        verdict = model["verdict"]
        # The base's weights reach 300: the ranges leave bf16|fp32; the adapter's own (below 1) would say fp16|fp32.
        self.assertEqual((verdict["label"], verdict["decided_by"]), ("bf16|fp32", "ranges"))
        self.assertEqual((base_scan["label"], base_scan["decided_by"]), ("bf16|fp32", "ranges"))
        self.assertLess(model["summary"]["abs_max"], 1.0)
        self.assertIn("range", [reason["kind"] for reason in verdict["fp16_risk_reasons"]])
        self.assertNotIn("adapter_base_unknown", warning_codes(model))

    def test_an_unknown_base_that_is_not_here_is_unknown_and_says_so(self):
        folder = save_peft_adapter(self.tmp / "adapter", "acme/not-documented")
        code, document, stderr = scan(folder, env={"HF_HUB_CACHE": str(self.tmp / "empty-hub")})
        self.assertEqual(code, 0, stderr)
        model = document["models"][0]
        self.assertEqual((model["verdict"]["label"], model["verdict"]["decided_by"]), ("unknown", "none"))
        self.assertIsNone(model["adapter"]["base_scan"])
        self.assertIn("adapter_base_unknown", warning_codes(model))

    def test_the_adapters_training_record_is_shown_and_never_decides(self):
        folder = save_peft_adapter(self.tmp / "adapter", "EleutherAI/pythia-1b")
        torch.save(TrainingArguments(output_dir=str(self.tmp / "out"), report_to=[]), folder / "training_args.bin")
        code, document, stderr = scan(folder)
        self.assertEqual(code, 0, stderr)
        verdict = document["models"][0]["verdict"]
        self.assertEqual([record["label"] for record in verdict["records"]], ["fp32"])
        self.assertEqual((verdict["label"], verdict["decided_by"]), ("bf16", "documented"))


    def test_an_adapter_config_linked_out_of_the_folder_is_never_read(self):
        """PEFT's adapter_config.json moved out of the adapter's folder and linked back: peft's own loader follows
        the link and reads the outside file's base; precdetect never opens it (issue 66): no base named, no
        documented precision taken from it, and the link is the safety finding."""
        folder = save_peft_adapter(self.tmp / "adapter", "EleutherAI/pythia-1b")
        outside = self.tmp / "outside" / "adapter_config.json"
        outside.parent.mkdir()
        (folder / "adapter_config.json").rename(outside)
        os.symlink("../outside/adapter_config.json", folder / "adapter_config.json")
        from peft import PeftConfig
        self.assertEqual(PeftConfig.from_pretrained(str(folder)).base_model_name_or_path, "EleutherAI/pythia-1b")
        code, document, stderr = scan(folder)
        self.assertEqual(code, 0, stderr)
        model = document["models"][0]
        self.assertIsNone(model["adapter"]["base_model"])
        self.assertNotIn("pythia", json.dumps(document) + stderr)
        self.assertIsNone(model["verdict"]["documented"])
        self.assertEqual(model["safety"]["verdict"], "unsafe")
        self.assertIn("adapter_config.json", [os.path.basename(item["file"]) for item in model["safety"]["tampering"]])


class LoraFiles(ScanTestCase):
    def test_diffusers_lora_weights_are_an_adapter_without_a_base(self):
        generator = torch.Generator().manual_seed(0)
        layers = {f"down_blocks.0.attn.to_{p}.lora_{m}.weight": torch.randn(4, 8, generator=generator)
                  for p in "kqv" for m in "AB"}
        StableDiffusionLoraLoaderMixin.save_lora_weights(self.tmp / "lora", unet_lora_layers=layers)
        code, document, stderr = scan(self.tmp / "lora")
        self.assertEqual(code, 0, stderr)
        model = document["models"][0]
        self.assertEqual((model["adapter"]["format"], model["adapter"]["base_model"]), ("diffusers", None))
        self.assertEqual(model["adapter"]["found_by"], "tensor names: 6 of 6 are diffusers LoRA names")
        self.assertEqual(model["verdict"]["label"], "unknown")
        self.assertIn("adapter_without_base", warning_codes(model))

    @unittest.skipUnless((CORPUS / "timohavdk__sd-lora__kohya-keys").is_dir(), "../shared/corpus is not here")
    def test_kohya_lora_names_are_an_adapter(self):
        code, document, stderr = scan(CORPUS / "timohavdk__sd-lora__kohya-keys")
        self.assertEqual(code, 0, stderr)
        model = document["models"][0]
        self.assertEqual(model["adapter"]["format"], "kohya")
        self.assertEqual(model["adapter"]["found_by"], "tensor names: 256 of 256 are kohya LoRA names")
        self.assertEqual(model["verdict"]["label"], "unknown")

    def test_a_model_holding_a_few_lora_tensors_is_still_a_model(self):
        tensors = {f"layers.{i}.weight": torch.full((4, 4), 0.5) for i in range(5)}
        tensors["layers.0.lora_A.weight"] = torch.full((2, 4), 0.1)
        save_file(tensors, self.tmp / "merged.safetensors")
        code, document, stderr = scan(self.tmp / "merged.safetensors")
        self.assertEqual(code, 0, stderr)
        model = document["models"][0]
        self.assertIsNone(model["adapter"])
        self.assertEqual(model["verdict"]["label"], "fp16|fp32")


if __name__ == "__main__":
    unittest.main()
