"""Real checkpoints from ../shared/corpus (skipped when it is absent, as in a user's clone)."""

import unittest

from safetensors.torch import load_file

from helpers import CORPUS, ScanTestCase, scan


@unittest.skipUnless(CORPUS.is_dir(), "../shared/corpus is not beside this checkout")
class Corpus(ScanTestCase):
    def safetensors_files(self):
        return sorted(CORPUS.glob("*/*.safetensors"))

    def test_every_real_safetensors_file_scans_with_exact_statistics(self):
        files = [f for f in self.safetensors_files() if f.stat().st_size > 16]
        self.assertGreaterEqual(len(files), 20)
        code, document, _ = scan(*files)
        self.assertEqual(code, 0)
        for path, model in zip(files, document["models"]):
            with self.subTest(path=path.relative_to(CORPUS)):
                tensors = load_file(path)
                self.assertIsNone(model["error"])
                self.assertSummary(model["summary"], tensors)
                reported = {t["name"]: t for t in model["tensors"]}
                self.assertEqual(set(reported), set(tensors))
                for name, tensor in tensors.items():
                    if tensor.is_floating_point():
                        self.assertTensorStats(reported[name], tensor, name)

    def test_malformed_files_give_named_errors(self):
        cases = {
            "Hirvita6__LoRA-flower-diffusion__malformed/pytorch_lora_weights.safetensors": "header_too_small",
            "tracel-ai__burn__reader-fixtures/broken.pt": "unknown_format",
            "saltyduckegg__llama2xs.c__ckpt/model.bin": "unknown_format",
            "PANDASANG1231__llama_3.2-3B-huggingface-shard0__sharded": "missing_shard",
        }
        code, document, stderr = scan(*(CORPUS / c for c in cases))
        self.assertEqual(code, 2)
        for (case, expected), model in zip(cases.items(), document["models"]):
            self.assertEqual(model["error"]["code"], expected, case)
            self.assertIn(str(CORPUS / case.split("/")[0]), model["error"]["message"], case)
            self.assertIn(model["error"]["message"], stderr)

    def test_the_llama_shards_are_bf16_rmsnorm_weights(self):
        shards = sorted((CORPUS / "PANDASANG1231__llama_3.2-3B-huggingface-shard0__sharded").glob("*.safetensors"))
        code, document, _ = scan(*shards)
        self.assertEqual(code, 0)
        for model in document["models"]:
            self.assertEqual(model["summary"]["dtypes"], {"BF16": 1})
            self.assertEqual(model["summary"]["parameters"], 3072)

    def test_the_whole_corpus_in_one_batch_never_crashes(self):
        folders = sorted(p for p in CORPUS.iterdir() if p.is_dir())
        code, document, _ = scan(*folders)
        self.assertEqual(code, 2)  # PyTorch-only folders and malformed files fail, by name
        self.assertEqual(len(document["models"]), len(folders))
        for model in document["models"]:
            if model["error"]:
                self.assertIn(model["error"]["code"], {"unsupported_format", "header_too_small", "missing_shard",
                                                       "unknown_format"}, model["input"])
            else:
                self.assertNotEqual(model["verdict"]["label"], "", model["input"])


if __name__ == "__main__":
    unittest.main()
