"""Known models (issue 25): the documented training precision from the registry, matched by hub id, cache folder,
config.json's `_name_or_path`, then family and size fields, and weighed against the weight ranges.

config.json files are written by transformers' own config classes, as the families' real configs are.
transformers 5 no longer writes `_name_or_path`; the hub's configs, saved by older versions, carry it (the pythia
configs do), so the tests add it to the file where they need it."""

import json
import unittest
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import BloomConfig, GPTNeoXConfig, LlamaConfig, T5Config

from helpers import REPO, ScanTestCase, hub_snapshot, run, scan

REGISTRY = REPO / "src" / "classify" / "registry.json"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def pythia_config(hidden_size, layers):
    return GPTNeoXConfig(hidden_size=hidden_size, num_hidden_layers=layers, num_attention_heads=8,
                         intermediate_size=4 * hidden_size, vocab_size=50304, architectures=["GPTNeoXForCausalLM"])


def weights(abs_max):
    """Small weights whose largest magnitude is `abs_max` (and whose norms stay below 1e3 when it is small)."""
    generator = torch.Generator().manual_seed(0)
    embed = torch.randn(64, 16, generator=generator) * 0.02
    embed[3, 5] = abs_max
    return {"gpt_neox.embed_in.weight": embed, "gpt_neox.final_layer_norm.weight": torch.ones(16)}


def write_model(folder, config, abs_max=1.0, name_or_path=None):
    folder.mkdir(parents=True, exist_ok=True)
    config.save_pretrained(folder)
    if name_or_path:
        document = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({"_name_or_path": name_or_path, **document}, indent=2))
    save_file(weights(abs_max), folder / "model.safetensors")
    return folder


class Documented(ScanTestCase):
    def cached(self, repo, config, abs_max=1.0, name_or_path=None):
        """The hub cache layout of `repo`: snapshots/<commit>/ with config.json and the weights, refs/main."""
        write_model(hub_snapshot(self.tmp / "hub", repo, COMMIT), config, abs_max, name_or_path)
        return {"HF_HUB_CACHE": str(self.tmp / "hub")}

    def verdict(self, *args, env=None):
        code, document, stderr = scan(*args, env=env)
        self.assertEqual(code, 0, stderr)
        return document["models"][0]["verdict"]

    def test_pythia_1b_is_bf16_by_its_hub_id_and_narrows_the_ranges(self):
        env = self.cached("EleutherAI/pythia-1b", pythia_config(2048, 16), abs_max=300.0)
        verdict = self.verdict("EleutherAI/pythia-1b", env=env)
        documented = verdict["documented"]
        self.assertEqual((documented["id"], documented["precision"], documented["grade"]),
                         ("EleutherAI/pythia-1b", "bf16", "high"))
        self.assertEqual((documented["matched_by"], documented["base_model"]), ("hub_id", False))
        self.assertIn("pythia", documented["source"])
        self.assertEqual(verdict["decided_by"], "documented")
        # The range rule leaves bf16|fp32; the documented entry decides between them and agrees.
        self.assertEqual(verdict["candidates"], ["bf16"])
        self.assertAlmostEqual(verdict["confidence"], 0.99)  # 1 - (1 - 0.9)(1 - 0.93) = 0.993, capped at 0.99
        self.assertEqual(verdict["conflicts"], [])
        kinds = [reason["kind"] for reason in verdict["fp16_risk_reasons"]]
        self.assertIn("documented", kinds)

    def test_pythia_410m_is_fp16_by_its_cache_folder(self):
        env = self.cached("EleutherAI/pythia-410m", pythia_config(1024, 24))
        snapshot = self.tmp / "hub" / "models--EleutherAI--pythia-410m" / "snapshots" / COMMIT
        verdict = self.verdict(snapshot, env=env)
        self.assertEqual(verdict["documented"]["matched_by"], "cache_folder")
        self.assertEqual((verdict["label"], verdict["candidates"]), ("fp16", ["fp16"]))
        self.assertAlmostEqual(verdict["confidence"], 0.99)  # 1 - 0.1 * 0.1: fp16-sized ranges agree
        self.assertFalse(verdict["fp16_risk"])

    def test_bloom_sizes_match_by_config_one_grade_lower(self):
        small = write_model(self.tmp / "bloom-small", BloomConfig(hidden_size=1024, n_layer=24, n_head=16))
        verdict = self.verdict(small)
        self.assertEqual((verdict["label"], verdict["documented"]["id"]), ("fp16", "bigscience/bloom-560m"))
        self.assertEqual((verdict["documented"]["matched_by"], verdict["documented"]["grade"]), ("config", "medium"))
        self.assertIn("hidden_size=1024", verdict["documented"]["matched"])

        large = write_model(self.tmp / "bloom-176b", BloomConfig(hidden_size=14336, n_layer=70, n_head=112),
                            abs_max=500.0)
        verdict = self.verdict(large)
        self.assertEqual((verdict["label"], verdict["documented"]["id"]), ("bf16", "bigscience/bloom"))
        self.assertEqual(verdict["candidates"], ["bf16"])

    def test_older_config_keys_match_like_the_current_ones(self):
        folder = write_model(self.tmp / "bloom-176b", BloomConfig(hidden_size=14336, n_layer=70, n_head=112))
        config = json.loads((folder / "config.json").read_text())
        config["n_embed"] = config.pop("hidden_size")  # the key BloomConfig still accepts from older configs
        (folder / "config.json").write_text(json.dumps(config))
        self.assertEqual(self.verdict(folder)["documented"]["id"], "bigscience/bloom")

    def test_a_fine_tune_gets_its_base_models_precision_as_pretraining_evidence(self):
        env = self.cached("acme/pythia-1b-chat", pythia_config(2048, 16), name_or_path="EleutherAI/pythia-1b")
        verdict = self.verdict("acme/pythia-1b-chat", env=env)
        documented = verdict["documented"]
        self.assertEqual((documented["id"], documented["matched_by"]), ("EleutherAI/pythia-1b", "name_or_path"))
        self.assertTrue(documented["base_model"])
        self.assertIn("base model", documented["describes"])
        self.assertEqual(verdict["label"], "bf16")

        plain = write_model(self.tmp / "checkpoint-500", pythia_config(2048, 16), name_or_path="EleutherAI/pythia-1b")
        documented = self.verdict(plain)["documented"]
        self.assertEqual((documented["matched_by"], documented["base_model"]), ("name_or_path", False))

    def test_a_config_two_entries_of_different_precisions_share_matches_neither(self):
        # pythia-1b (bf16) and pythia-1b-deduped (fp16) have one config: the shape cannot tell them apart.
        folder = write_model(self.tmp / "pythia-1b-or-deduped", pythia_config(2048, 16), abs_max=300.0)
        verdict = self.verdict(folder)
        self.assertIsNone(verdict["documented"])
        self.assertEqual((verdict["decided_by"], verdict["candidates"]), ("ranges", ["bf16", "fp32"]))

    def test_an_unknown_model_has_range_evidence_only(self):
        config = LlamaConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)
        env = self.cached("acme/unknown-llama", config, abs_max=300.0)
        verdict = self.verdict("acme/unknown-llama", env=env)
        self.assertIsNone(verdict["documented"])
        self.assertEqual(verdict["decided_by"], "ranges")

    def test_a_documented_precision_the_weights_contradict_shows_both(self):
        env = self.cached("EleutherAI/pythia-410m", pythia_config(1024, 24), abs_max=500.0)
        verdict = self.verdict("EleutherAI/pythia-410m", env=env)
        self.assertEqual((verdict["label"], verdict["decided_by"]), ("fp16", "documented"))
        self.assertEqual(verdict["candidates"], ["fp16", "bf16", "fp32"])
        self.assertEqual(verdict["confidence"], 0.5)
        [conflict] = verdict["conflicts"]
        self.assertEqual(conflict["kind"], "ranges_not_documented")
        self.assertIn("documented fp16", conflict["detail"])
        self.assertIn("abs-max-above-1e2", conflict["detail"])
        table = run("EleutherAI/pythia-410m", "-v", env=env).stdout
        self.assertIn("documented fp16 for EleutherAI/pythia-410m (high, by hub_id)", table)
        self.assertIn("conflict: ranges_not_documented", table)


class LegacyIds(ScanTestCase):
    """`from_pretrained("t5-small")` writes `_name_or_path: "t5-small"`: a hub id from before organisations, which a
    folder name also looks like."""

    def t5(self, folder, name_or_path):
        config = T5Config(vocab_size=64, d_model=16, d_ff=32, num_layers=1, num_heads=2, d_kv=8)
        return write_model(folder, config, name_or_path=name_or_path)

    def documented(self, folder, cwd=None):
        result = run("--json", folder, cwd=cwd or self.tmp, check_json=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        return result.document["models"][0]["verdict"]["documented"]

    def test_a_slash_less_registry_id_is_matched_and_says_how(self):
        for name, entry in (("t5-small", "t5-small"), ("T5-Base", "t5-base"), ("roberta-base", "roberta-base")):
            with self.subTest(name):
                documented = self.documented(self.t5(self.tmp / "models" / f"fine-tune-of-{name}", name))
                self.assertEqual((documented["id"], documented["matched_by"], documented["matched"]),
                                 (entry, "legacy_id", name))

    def test_a_folder_of_that_name_where_it_would_resolve_is_no_match(self):
        model = self.t5(self.tmp / "models" / "fine-tune", "t5-small")
        (self.tmp / "models" / "t5-small").mkdir()  # beside the model
        self.assertIsNone(self.documented(model))
        (self.tmp / "models" / "t5-small").rmdir()
        (self.tmp / "work" / "t5-small").mkdir(parents=True)  # in the working directory
        self.assertIsNone(self.documented(model, cwd=self.tmp / "work"))
        self.assertEqual(self.documented(model, cwd=self.tmp)["matched_by"], "legacy_id")

    def test_a_slash_less_name_matches_only_a_registry_id_itself(self):
        for name in ("t5-small-finetuned", "my-model", "t5"):  # no pattern, no variant, no prefix
            with self.subTest(name):
                self.assertIsNone(self.documented(self.t5(self.tmp / name.upper(), name)))


class Registry(ScanTestCase):
    def test_every_entry_has_a_source_and_a_grade_and_no_id_is_listed_twice(self):
        entries = json.loads(REGISTRY.read_text())
        seen = {}
        for entry in entries:
            self.assertTrue(entry.get("source", "").strip(), entry)
            self.assertIn(entry.get("grade"), ("high", "medium", "low"), entry)
            self.assertIn(entry.get("precision"), ("fp16", "fp16-mixed", "bf16", "bf16-mixed", "fp32", "fp8-mixed"))
            self.assertTrue(entry["ids"] or entry["variants"], entry)
            for model_id in entry["ids"] + entry.get("variants", []):
                self.assertNotIn(model_id.lower(), seen, f"{model_id} listed twice")
                seen[model_id.lower()] = entry
        # Sizes that differ in precision are entries of their own (the examples).
        self.assertEqual(seen["eleutherai/pythia-1b"]["precision"], "bf16")
        self.assertEqual(seen["eleutherai/pythia-410m"]["precision"], "fp16")
        self.assertEqual(seen["bigscience/bloom"]["precision"], "bf16")
        self.assertEqual(seen["bigscience/bloom-560m"]["precision"], "fp16")
        self.assertEqual(seen["thudm/cogvideox-2b"]["precision"], "fp16")
        self.assertEqual(seen["thudm/cogvideox-5b"]["precision"], "bf16")

    def test_every_slash_less_id_has_its_organisations_spelling_too(self):
        for entry in json.loads(REGISTRY.read_text()):
            for model_id in entry["ids"]:
                if "/" not in model_id:
                    self.assertTrue([i for i in entry["ids"] if i.endswith("/" + model_id)], entry["ids"])

    def test_instruct_variants_reach_their_base(self):
        cases = {"Qwen/Qwen-7B-Chat": ("Qwen/Qwen-7B", "bf16"),
                 "meta-llama/Llama-3.1-8B-Instruct": ("meta-llama/Llama-3.1-8B", "bf16"),
                 "allenai/OLMo-2-1124-7B-Instruct": ("allenai/OLMo-2-1124-7B", "bf16"),
                 "facebook/wav2vec2-base-960h": ("facebook/wav2vec2-base", "fp16")}
        for variant, (base, label) in cases.items():
            with self.subTest(variant=variant):
                env = Documented.cached(self, variant, pythia_config(64, 2))
                code, document, stderr = scan(variant, env=env)
                self.assertEqual(code, 0, stderr)
                documented = document["models"][0]["verdict"]["documented"]
                self.assertEqual((documented["id"], documented["matched_by"], documented["base_model"]),
                                 (base, "hub_id", True))
                self.assertEqual(document["models"][0]["verdict"]["label"], label)

    def test_print_registry_prints_the_built_in_file(self):
        result = run("--print-registry")
        self.assertEqual(result.returncode, 0)
        self.assertEqual(json.loads(result.stdout), json.loads(REGISTRY.read_text()))

    def test_a_users_registry_replaces_the_built_in_one(self):
        folder = write_model(self.tmp / "model", pythia_config(1024, 24), abs_max=300.0)
        mine = self.tmp / "mine.json"
        mine.write_text(json.dumps([{"ids": ["acme/house-model"], "precision": "fp32", "grade": "low",
                                     "source": "our training log", "config": {"model_type": "gpt_neox",
                                                                               "hidden_size": 1024}}]))
        code, document, stderr = scan(folder, "--registry", mine)
        self.assertEqual(code, 0, stderr)
        verdict = document["models"][0]["verdict"]
        self.assertEqual((verdict["documented"]["id"], verdict["label"]), ("acme/house-model", "fp32"))
        # With the built-in registry the same folder is pythia-410m by its config.
        self.assertEqual(scan(folder)[1]["models"][0]["verdict"]["documented"]["id"], "EleutherAI/pythia-410m")

    def test_a_malformed_registry_is_a_usage_error_naming_the_line(self):
        folder = write_model(self.tmp / "model", pythia_config(1024, 24))
        cases = {
            '[\n  {"ids": ["a/b"], "precision": "bf16", "grade": "high", "source": "x"},\n  {"ids": ["c/d"],\n'
            '   "precision": "bf16", "grade": "high"}\n]': ("line 3", "source"),
            '[\n  {"ids": ["a/b"], "precision": "bf16", "grade": "high", "source": "x"},\n'
            '  {"ids": ["A/B"], "precision": "fp16", "grade": "high", "source": "y"}\n]': ("line 3", "listed twice"),
            '[\n  {"ids": ["a/b"], "precision": "bfloat16", "grade": "high", "source": "x"}\n]': ("line 2", "precision"),
            '[\n  {"ids": ["a/b"], "precision": "bf16", "grade": "high", "source": "x", "sorce": 1}\n]':
                ("line 2", "unknown field `sorce`"),
            '[\n  {"ids": ["a/b"],\n   "precision": "bf16" "grade": "high"}\n]': ("line 3", "not JSON"),
        }
        for text, (line, needle) in cases.items():
            with self.subTest(needle=needle):
                path = self.tmp / "registry.json"
                path.write_text(text)
                result = run("--json", folder, "--registry", path)
                self.assertEqual(result.returncode, 3, result.stderr)
                self.assertIn(f"{path}: {line}:", result.stderr)
                self.assertIn(needle, result.stderr)
                self.assertEqual(result.stdout, "")


if __name__ == "__main__":
    unittest.main()
