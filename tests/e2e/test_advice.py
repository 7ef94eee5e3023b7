"""What to run a model in (issue 48): documented fp16 failures, the plan per target and GPU (--gpu), and the keep
list in the tools' own syntax, the GGUF one tested for effect with llama.cpp's converter from PyPI.

config.json files are written by transformers' own config classes (AutoConfig.for_model), except plamo2's, which
transformers does not ship (its code is the model's own, trust_remote_code), and SDXL's VAE, a diffusers config
written by hand with the fields its hub file has."""

import json
import os
import subprocess
import sys
import unittest

import numpy
import torch
import transformers
from safetensors.torch import save_file

from helpers import REPO, ScanTestCase, hub_snapshot, requires, run, scan
from test_formats import CONVERTER, train_tokenizer

FAILURES = json.loads((REPO / "src" / "classify" / "fp16_failures.json").read_text())
COMMIT = "0123456789abcdef0123456789abcdef01234567"
HALF = {"bf16", "fp16"}


def weights(abs_max=1.0, overflow=None):
    generator = torch.Generator().manual_seed(0)
    embed = torch.randn(64, 16, generator=generator) * 0.02
    embed[3, 5] = abs_max
    tensors = {"model.embed_tokens.weight": embed, "model.norm.weight": torch.ones(16)}
    if overflow is not None:
        tensors["model.layers.0.mlp.down_proj.weight"] = torch.full((16, 32), 0.01)
        tensors["model.layers.0.mlp.down_proj.weight"][2, 3] = overflow
    return tensors


def config_for(model_type: str) -> dict:
    try:
        return transformers.AutoConfig.for_model(model_type).to_dict()
    except ValueError:  # not shipped by transformers (plamo2): the two fields that name it
        return {"model_type": model_type, "architectures": ["Plamo2ForCausalLM"]}


class Advice(ScanTestCase):
    def model(self, name, config=None, **weight_options):
        folder = self.tmp / name
        folder.mkdir(parents=True)
        if config is not None:
            (folder / "config.json").write_text(json.dumps(config))
        save_file(weights(**weight_options), folder / "model.safetensors")
        return folder

    def cached(self, repo, config):
        snapshot = hub_snapshot(self.tmp / "hub", repo, COMMIT)
        (snapshot / "config.json").write_text(json.dumps(config))
        save_file(weights(), snapshot / "model.safetensors")
        return {"HF_HUB_CACHE": str(self.tmp / "hub")}

    def verdict(self, *args, env=None):
        code, document, stderr = scan(*args, env=env)
        self.assertEqual(code, 0, stderr)
        return document["models"][0]["verdict"]

    def documented_failures(self, verdict):
        return {r["rule"]: r["source"] for r in verdict["fp16_risk_reasons"] if r["kind"] == "documented" and "source" in r}

    def test_every_documented_failure_matches_by_each_of_its_names(self):
        self.assertGreaterEqual(len(FAILURES), 3)
        for entry in FAILURES:
            for model_type in entry.get("model_types", []):
                with self.subTest(entry=entry["id"], model_type=model_type):
                    repo = f"someone/a-{model_type}-fine-tune"  # a hub id no entry names: the config must match
                    verdict = self.verdict(repo, env=self.cached(repo, config_for(model_type)))
                    self.assertEqual(self.documented_failures(verdict), {entry["id"]: entry["source"]})
                    self.assertTrue(verdict["fp16_risk"])
            for index, repo in enumerate(entry.get("ids", [])):
                with self.subTest(entry=entry["id"], id=repo):
                    env = self.cached(repo, {**entry.get("config", {}), "_diffusers_version": "0.30.0"})
                    verdict = self.verdict(repo, env=env)
                    self.assertEqual(self.documented_failures(verdict), {entry["id"]: entry["source"]})

    def test_a_failure_matches_only_with_its_config_fields(self):
        # SDXL's UNet is not its VAE; the fp16-fix VAE shares the VAE's config and is not SDXL's id.
        env = self.cached("stabilityai/stable-diffusion-xl-base-1.0", {"_class_name": "UNet2DConditionModel"})
        self.assertEqual(self.documented_failures(self.verdict("stabilityai/stable-diffusion-xl-base-1.0", env=env)), {})
        env = self.cached("madebyollin/sdxl-vae-fp16-fix", {"_class_name": "AutoencoderKL"})
        self.assertEqual(self.documented_failures(self.verdict("madebyollin/sdxl-vae-fp16-fix", env=env)), {})
        self.assertEqual(self.documented_failures(self.verdict(self.model("llama", config_for("llama")))), {})

    def plans(self, folder, gpu):
        verdict = self.verdict(folder, "--gpu", gpu)
        return verdict["advice"], {(p["target"], p["tool"]): p for p in verdict["advice"]["plans"]}

    def test_a_bf16_range_model_on_a_gpu_without_bf16_is_never_advised_half_precision(self):
        bf16_range = self.model("bf16-range", abs_max=300.0)  # abs-max-above-1e2 fires: bf16|fp32, fp16 risk
        for gpu in ("T4", "V100", "7.5", "sm_70", "Tesla T4"):
            with self.subTest(gpu=gpu):
                advice, plans = self.plans(bf16_range, gpu)
                self.assertFalse(advice["gpu"]["bf16"])
                self.assertEqual({p["precision"] for p in plans.values()}, {"fp32"}, plans)
        advice, plans = self.plans(bf16_range, "A100")
        self.assertEqual(advice["gpu"]["compute_capability"], "8.0")
        self.assertEqual(plans["fine_tuning", "transformers Trainer"]["setting"], "TrainingArguments(bf16=True)")
        self.assertEqual(plans["serving", "vLLM"]["setting"], "--dtype bfloat16")
        self.assertEqual(plans["conversion", "llama.cpp convert_hf_to_gguf.py"]["setting"], "--outtype bf16")
        _, plans = self.plans(bf16_range, "cpu")  # a GGUF in bf16 runs on CPUs; everything else in fp32
        self.assertEqual({p["precision"] for k, p in plans.items() if k[0] != "conversion"}, {"fp32"})
        self.assertEqual(plans["conversion", "llama.cpp convert_hf_to_gguf.py"]["setting"], "--outtype bf16")

    def test_a_documented_keep_list_allows_fp16_in_transformers_only(self):
        t5 = self.model("t5", {**config_for("t5"), "architectures": ["T5ForConditionalGeneration"]}, abs_max=300.0)
        advice, plans = self.plans(t5, "T4")
        self.assertEqual(advice["keep_in_fp32"][0]["module"], "wo")
        self.assertEqual(plans["serving", "transformers"]["precision"], "fp16+keep")
        self.assertIn('T5ForConditionalGeneration._keep_in_fp32_modules = ["wo"]', plans["serving", "transformers"]["setting"])
        self.assertEqual(plans["serving", "vLLM"]["precision"], "fp32")
        self.assertEqual(plans["fine_tuning", "transformers Trainer"]["precision"], "fp32")
        self.assertFalse({p["precision"] for p in plans.values()} & HALF)
        # A documented failure without a remedy (vLLM's gemma2) leaves fp32 alone.
        _, plans = self.plans(self.model("gemma2", config_for("gemma2")), "T4")
        self.assertEqual({p["precision"] for p in plans.values()}, {"fp32"})

    def test_a_model_without_risk_runs_in_half_precision(self):
        _, plans = self.plans(self.model("small", abs_max=1.0), "T4")
        self.assertEqual(plans["serving", "vLLM"]["setting"], "--dtype float16")
        self.assertEqual(plans["conversion", "llama.cpp convert_hf_to_gguf.py"]["setting"], "--outtype f16")

    def test_an_unknown_gpu_is_a_usage_error(self):
        result = run(self.model("small"), "--gpu", "Z80")
        self.assertEqual(result.returncode, 3, result.stderr)  # a run that could not be made (docs/errors.md)
        self.assertIn("--gpu", result.stderr)

    def test_the_keep_list_names_overflowing_tensors_in_both_syntaxes(self):
        llama = self.model("llama", {**config_for("llama"), "architectures": ["LlamaForCausalLM"]}, overflow=1e5)
        advice, plans = self.plans(llama, "T4")
        self.assertEqual([(k["module"], k["basis"]) for k in advice["keep_in_fp32"]],
                         [("model.layers.0.mlp.down_proj", "weights")])
        self.assertEqual(advice["gguf_keep"], [r"blk\.0\.ffn_down\.weight"])
        self.assertEqual(plans["conversion", "llama-quantize"]["setting"], r"--tensor-type blk\.0\.ffn_down\.weight=f32")
        # 1e5 also fires the range rules, which a keep list of weights does not answer: fp32 without bf16.
        self.assertEqual(plans["serving", "transformers"]["precision"], "fp32")
        _, plans = self.plans(llama, "H100")
        self.assertEqual(plans["serving", "transformers"]["precision"], "bf16")


@requires((CONVERTER / "convert_hf_to_gguf.py").is_file(), "llama.cpp's converter")
class GgufConversion(ScanTestCase):
    """A llama holding 1e5 in a 2-D weight (llama.cpp keeps 1-D norms in F32 whatever --outtype says), as
    ComfyUI-GGUF #381's norm_final.weight held: converted with the advised --outtype it has no inf; converted to f16,
    which `--outtype auto` also picks for an fp32 checkpoint, it has."""

    def test_the_advised_outtype_keeps_the_gguf_finite(self):
        folder = self.tmp / "llama"
        torch.manual_seed(0)
        config = transformers.LlamaConfig(vocab_size=48, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                          num_attention_heads=4, num_key_value_heads=4)
        model = transformers.LlamaForCausalLM(config)
        with torch.no_grad():
            model.model.layers[0].mlp.down_proj.weight[3, 5] = 1e5
        model.save_pretrained(folder)
        train_tokenizer(folder / "tokenizer.model")
        for gpu, outtype in (("A100", "bf16"), ("T4", "f32")):
            code, document, stderr = scan(folder, "--gpu", gpu)
            plans = {p["tool"]: p for p in document["models"][0]["verdict"]["advice"]["plans"]}
            self.assertEqual(plans["llama.cpp convert_hf_to_gguf.py"]["setting"], f"--outtype {outtype}")
            self.assertEqual(self.infs(folder, outtype), {})
        self.assertEqual(self.infs(folder, "f16"), {"blk.0.ffn_down.weight": 1})

    def infs(self, folder, outtype) -> dict:
        """Non-finite values per tensor of the GGUF llama.cpp's converter writes, read by its own gguf package."""
        path = folder / f"model-{outtype}.gguf"
        subprocess.run([sys.executable, CONVERTER / "convert_hf_to_gguf.py", folder, "--outtype", outtype,
                        "--outfile", path], env=dict(os.environ, PYTHONPATH=str(CONVERTER)), check=True,
                       capture_output=True)
        reader = subprocess.run(
            [sys.executable, "-c", READ_GGUF, path], env=dict(os.environ, PYTHONPATH=str(CONVERTER)), check=True,
            capture_output=True, text=True)
        return json.loads(reader.stdout)


READ_GGUF = """
import json, sys
import numpy
from gguf import GGUFReader, GGMLQuantizationType
counts = {}
for tensor in GGUFReader(sys.argv[1]).tensors:
    data = numpy.asarray(tensor.data)
    if tensor.tensor_type == GGMLQuantizationType.BF16:
        data = (data.view(numpy.uint16).astype(numpy.uint32) << 16).view(numpy.float32)
    bad = int((~numpy.isfinite(data.astype(numpy.float64))).sum())
    if bad:
        counts[tensor.name] = bad
print(json.dumps(counts))
"""

if __name__ == "__main__":
    unittest.main()
