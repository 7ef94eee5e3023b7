"""Pickle safety (docs/security.md): the malicious corpus (tests/malicious_corpus.py) is `unsafe` case by case
with its global named and nothing executed, every benign format `safe`, and --fail-if-unsafe gates a batch."""

import json
import os
import pickle
import sys
import tempfile
import unittest
from pathlib import Path

import torch
from safetensors.torch import save_file

from helpers import CORPUS, ScanTestCase, run, scan

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import malicious_corpus  # noqa: E402


class MaliciousCorpus(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.temp = tempfile.TemporaryDirectory()
        cls.dest = Path(cls.temp.name)
        cls.expected = malicious_corpus.build(cls.dest)
        paths = [case["path"] for case in cls.expected.values()]
        cls.result = run("--json", "-q", *paths, check_json=True, cwd=cls.dest)
        cls.models = {model["input"]: model for model in cls.result.document["models"]}

    @classmethod
    def tearDownClass(cls):
        cls.temp.cleanup()

    def test_corpus_is_large_enough(self):
        malicious = [c for c in self.expected.values() if c["verdict"] == "unsafe" and "global" in c]
        self.assertGreaterEqual(len(malicious), 40)
        families = {c["family"] for c in malicious}
        self.assertEqual(families, {"code_execution", "process", "filesystem", "network", "import_machinery",
                                    "attribute_access", "nested_deserialization"})

    def test_every_case_gets_its_verdict(self):
        for case, expected in self.expected.items():
            with self.subTest(case):
                safety = self.models[expected["path"]]["safety"]
                self.assertEqual(safety["verdict"], expected["verdict"], safety)
                if expected["verdict"] == "safe":
                    self.assertEqual((safety["unverified"], safety["tampering"]), ([], []))
                    continue
                if "tampering" in expected:  # unsafe by the tampering alone: no dangerous global is imported
                    self.assertEqual([t["kind"] for t in safety["tampering"]], [expected["tampering"]], safety)
                    self.assertFalse([i for i in safety["imports"] if i["class"] == "dangerous"], safety)
                    self.assertTrue(safety["says"].startswith(f"unsafe: {expected['tampering']} ("), safety["says"])
                    continue
                dangerous = {f"{i['module']}.{i['name']}": i for i in safety["imports"] if i["class"] == "dangerous"}
                self.assertIn(expected["global"], dangerous)
                self.assertEqual(dangerous[expected["global"]]["family"], expected["family"])

    def test_nothing_was_executed(self):
        self.assertFalse((self.dest / "PWNED").exists())
        self.assertNotIn("PWNED", os.listdir(os.getcwd()))

    def test_bare_pickles_are_named_errors(self):
        bare = self.models[self.expected["os-system"]["path"]]
        self.assertEqual(bare["error"]["code"], "unsafe_pickle")
        self.assertIn("os.system", bare["error"]["message"])
        plain = self.models[self.expected["benign-plain-pickle"]["path"]]
        self.assertEqual(plain["error"]["code"], "not_a_checkpoint")
        legacy_payload = self.models[self.expected["legacy-magic-is-payload"]["path"]]
        self.assertEqual(legacy_payload["error"]["code"], "unsafe_pickle")
        npy = self.models[self.expected["npy-object-array"]["path"]]
        self.assertEqual(npy["error"]["code"], "unsafe_pickle")

    def test_tampering_is_named_where_it_is(self):
        straddled = self.models[self.expected["frame-straddled"]["path"]]
        self.assertEqual(straddled["error"]["code"], "unsafe_pickle")
        [tampering] = straddled["safety"]["tampering"]
        past = len(b"ccollections\nOrderedDict\n") - 3  # the GLOBAL, less the frame's 3 bytes
        self.assertEqual((tampering["offset"], tampering["detail"]),
                         (11, f"an opcode runs {past} bytes past the end of its FRAME"))
        data = Path(self.expected["frame-straddled"]["path"]).read_bytes()
        self.assertEqual(data[11:12], b"c")  # the GLOBAL that straddles the frame
        built = self.models[self.expected["build-on-allowed-function"]["path"]]["safety"]["tampering"]
        self.assertEqual(built[0]["detail"], "BUILD on torch._utils._rebuild_tensor_v2")
        # The encrypted flag hides nothing: the clear bytes behind it are judged.
        flagged = self.models[self.expected["zip-flag-bits"]["path"]]["safety"]
        self.assertEqual(flagged["unverified"], [])

    def test_where_and_how_a_global_is_used(self):
        safety = self.models[self.expected["torch-save-reduce"]["path"]]["safety"]
        system = next(i for i in safety["imports"] if i["name"] == "system")
        self.assertTrue(system["called"])
        self.assertTrue(system["file"].endswith("model.pt!archive/data.pkl"), system["file"])
        data = Path(self.expected["torch-save-reduce"]["path"]).read_bytes()
        self.assertEqual(data[system["offset"]:system["offset"] + 1], b"c")  # GLOBAL, at the offset named
        extra = self.models[self.expected["zip-extra-pickle-member"]["path"]]["safety"]
        self.assertTrue(any(i["file"].endswith("archive/extra.pkl") for i in extra["imports"]))

    def test_a_loadable_unsafe_checkpoint_is_still_scanned(self):
        model = self.models[self.expected["torch-save-reduce"]["path"]]
        self.assertIsNone(model["error"])
        self.assertEqual(model["summary"]["tensors"], 1)


class Gates(ScanTestCase):
    def setUp(self):
        super().setUp()
        self.good = self.tmp / "good.safetensors"
        save_file({"w": torch.randn(8)}, self.good)
        self.evil = self.tmp / "evil.pt"
        torch.save({"w": torch.randn(8), "x": malicious_corpus.Reduce(os.system, "true")}, self.evil)
        self.trainer = self.tmp / "trainer"
        self.trainer.mkdir()
        save_file({"w": torch.randn(8)}, self.trainer / "model.safetensors")
        from transformers import TrainingArguments
        torch.save(TrainingArguments(output_dir=str(self.tmp / "out"), bf16=False), self.trainer / "training_args.bin")

    def test_fail_if_unsafe_exits_1_and_scans_the_others(self):
        code, document, stderr = scan("--fail-if-unsafe", self.good, self.evil, self.trainer)
        self.assertEqual(code, 1)
        by_input = {m["input"]: m for m in document["models"]}
        self.assertEqual(by_input[str(self.good)]["safety"]["verdict"], "safe")
        self.assertEqual(by_input[str(self.good)]["gate_failures"], [])
        self.assertEqual(by_input[str(self.evil)]["safety"]["verdict"], "unsafe")
        self.assertIn("--fail-if-unsafe", by_input[str(self.evil)]["gate_failures"][0])
        self.assertEqual(by_input[str(self.trainer)]["safety"]["verdict"], "unverified")
        self.assertEqual(by_input[str(self.trainer)]["gate_failures"], [])
        for model in document["models"]:
            self.assertIsNone(model["error"])
        self.assertIn("gate failed", stderr)

    def test_without_the_gate_an_unsafe_model_does_not_fail_the_run(self):
        code, document, _ = scan(self.good, self.evil)
        self.assertEqual(code, 0)

    def test_strict_safety_fails_unverified(self):
        code, document, _ = scan("--fail-if-unsafe", "--strict-safety", self.good, self.trainer)
        self.assertEqual(code, 1)
        trainer = next(m for m in document["models"] if m["input"] == str(self.trainer))
        self.assertIn("TrainingArguments", trainer["gate_failures"][0])
        self.assertEqual(scan("--fail-if-unsafe", "--strict-safety", self.good)[0], 0)

    def test_gate_on_a_model_that_failed_to_load(self):
        bare = self.tmp / "evil.pkl"
        bare.write_bytes(malicious_corpus.system_call())
        code, document, _ = scan("--fail-if-unsafe", self.good, bare)
        self.assertEqual(code, 1)  # the gate wins over the error (2)
        self.assertEqual(scan(self.good, bare)[0], 2)

    def test_jsonl_merge_and_table_carry_safety(self):
        lines = run("--jsonl", "-q", self.good, self.evil).stdout.splitlines()
        models = [json.loads(line) for line in lines if json.loads(line)["type"] == "model"]
        self.assertEqual({m["safety"]["verdict"] for m in models}, {"safe", "unsafe"})
        shard = self.tmp / "shard.jsonl"
        shard.write_text("\n".join(lines) + "\n")
        merged = run("merge", shard, check_json=True).document
        self.assertEqual({m["safety"]["verdict"] for m in merged["models"]}, {"safe", "unsafe"})
        table = run(self.good, self.evil).stdout
        self.assertIn("UNSAFE pickle: posix.system", table)
        verbose = run("-v", self.evil).stdout
        self.assertIn("safety: unsafe: posix.system (process)", verbose)

    def test_cached_rescan_still_examines(self):
        cache = self.tmp / "cache.sqlite"
        scan("--cache", cache, self.evil)
        code, document, _ = scan("--cache", cache, self.evil)
        self.assertEqual(document["models"][0]["safety"]["verdict"], "unsafe")

    def test_trainer_folder_state_is_examined(self):
        torch.save({"state": {}, "param_groups": []}, self.trainer / "optimizer.pt")
        code, document, _ = scan(self.trainer)
        files = document["models"][0]["safety"]["files"]
        self.assertTrue(any(f.endswith("optimizer.pt") for f in files), files)
        self.assertTrue(any(f.endswith("training_args.bin") for f in files), files)


@unittest.skipUnless(CORPUS.is_dir(), "../shared/corpus is not here")
class RealCheckpoints(unittest.TestCase):
    def test_corpus_checkpoints_get_a_verdict_and_none_is_unsafe(self):
        files = [p for p in CORPUS.rglob("*") if p.is_file() and p.suffix in {".pt", ".pth", ".bin", ".ckpt", ".safetensors"}]
        self.assertTrue(files)
        result = run("--json", "-q", *files, check_json=True)
        for model in result.document["models"]:
            with self.subTest(model["input"]):
                self.assertIsNotNone(model["safety"])
                self.assertIn(model["safety"]["verdict"], {"safe", "unverified"})


if __name__ == "__main__":
    unittest.main()
