"""bitsandbytes' quantized weights as transformers saves them: a two-block Llama quantized by bitsandbytes 0.50.2 on
this CPU through transformers' from_pretrained(quantization_config=BitsAndBytesConfig) and written by
save_pretrained; bitsandbytes' dequantize_4bit and int8_vectorwise_dequant are the reference, its statistics then
taken in float64.
- 4-bit (nf4 with nested quantization, fp4 without; bf16 and fp16) and 8-bit (LLM.int8), the quantization state
  beside each weight role `scale`;
- 4-bit weights with every `bnb_4bit_quant_storage` dtype (bfloat16, float16, float32: the packed bytes viewed as
  that dtype): recognized by the tensor names bitsandbytes alone writes, and read as the bytes they are, never as
  the floats they are stored as."""

import unittest

import torch

from helpers import (ScanTestCase, check_dequantized, check_stats, float_tensors, scan, scanned, small_llama,
                     tensors_by_name, warning_codes)


class BitsAndBytes(ScanTestCase):
    def quantize(self, folder, config, dtype):
        from transformers import AutoModelForCausalLM

        plain = self.tmp / "plain"
        if not plain.exists():
            small_llama().save_pretrained(plain)
        model = AutoModelForCausalLM.from_pretrained(plain, quantization_config=config, device_map="cpu", dtype=dtype)
        model.save_pretrained(folder)

    def references(self, folder):
        """Each quantized weight's values as bitsandbytes dequantizes them, by name."""
        import bitsandbytes.functional as F
        from safetensors import safe_open

        references = {}
        with safe_open(folder / "model.safetensors", "pt") as stored:
            names = list(stored.keys())
            for name in names:
                if name.endswith(".SCB"):
                    weight = name[: -len("SCB")] + "weight"
                    references[weight] = F.int8_vectorwise_dequant(stored.get_tensor(weight), stored.get_tensor(name))
                if ".quant_state.bitsandbytes__" in name:
                    weight = name.split(".quant_state.")[0]
                    parts = {key[len(weight) + 1:]: stored.get_tensor(key) for key in names
                             if key.startswith(weight + ".")}
                    state = F.QuantState.from_dict(parts, device=torch.device("cpu"))
                    references[weight] = F.dequantize_4bit(stored.get_tensor(weight), state)
        return references

    def test_4bit_and_8bit_weights_are_analyzed_as_bitsandbytes_dequantizes_them(self):
        from transformers import BitsAndBytesConfig

        cases = {
            "nf4-nested-bf16": (BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                                   bnb_4bit_use_double_quant=True,
                                                   bnb_4bit_compute_dtype=torch.bfloat16), torch.bfloat16),
            "fp4-f16": (BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="fp4"), torch.float16),
            "int8": (BitsAndBytesConfig(load_in_8bit=True), torch.float16),
        }
        for label, (config, dtype) in cases.items():
            with self.subTest(case=label):
                folder = self.tmp / label
                self.quantize(folder, config, dtype)
                references = self.references(folder)
                self.assertEqual(len(references), 14)  # 7 linear layers per block, 2 blocks
                code, document, stderr = scan(folder)
                self.assertEqual(code, 0, stderr)
                reported = tensors_by_name(document["models"][0])
                for name, reference in references.items():
                    self.assertEqual(reported[name]["scaled_by"]["bits"], 8 if label == "int8" else 4)
                    check_stats(self, reported, name, reference)
                roles = {name: tensor["role"] for name, tensor in reported.items()}
                self.assertTrue(all(roles[name] == "scale" for name in roles
                                    if name.endswith((".SCB", ".absmax", ".quant_map", ".nested_absmax"))))
                # nf4's and fp4's code maps hold 0 as a value: no scale of theirs is zero
                self.assertNotIn("scales_zero", warning_codes(document["models"][0]))


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


if __name__ == "__main__":
    unittest.main()
