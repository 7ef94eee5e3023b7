"""The malformed-input corpus (tests/malformed_corpus.py): every case a named error with its path, exit 2 and
valid JSON, alone and in one batch with a good model, which is still scanned."""

import json
import os
import sys
import tempfile
import unittest
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch
from safetensors.torch import save_file

from helpers import ScanTestCase, run, scan

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import malformed_corpus  # noqa: E402


class MalformedCorpus(ScanTestCase):
    @classmethod
    def setUpClass(cls):
        cls._corpus = tempfile.TemporaryDirectory(prefix="precdetect-malformed-")
        cls.corpus = Path(cls._corpus.name)
        cls.expected = malformed_corpus.build(cls.corpus)

    @classmethod
    def tearDownClass(cls):
        cls._corpus.cleanup()

    def assertNamedError(self, model, case):
        self.assertIsNotNone(model["error"], case)
        self.assertEqual(model["error"]["code"], self.expected[case], f"{case}: {model['error']['message']}")
        self.assertIn(case, model["error"]["message"])
        # The pickle machine names the offset; a list nesting bomb is a valid pickle whose object graph the
        # walker refuses, where no offset applies.
        if case.startswith("pickle-") and case != "pickle-list-nesting-bomb.pt":
            self.assertIn("at offset", model["error"]["message"], case)
        self.assertEqual(model["tensors"], [], case)  # no partial statistics

    def test_the_corpus_has_every_kind_of_damage(self):
        self.assertGreaterEqual(len(self.expected), 40)
        for kind in ("st-", "zip", "pickle-", "legacy-", "index-", "symlink-", "fifo-", "folder-"):
            self.assertTrue(any(case.startswith(kind) for case in self.expected), kind)

    def test_each_case_alone_is_a_named_error_with_exit_code_2(self):
        def scan_case(case):
            return case, scan(self.corpus / case)

        with ThreadPoolExecutor(max_workers=2) as pool:
            for case, (code, document, stderr) in pool.map(scan_case, self.expected):
                with self.subTest(case=case):
                    self.assertEqual(code, 2)
                    self.assertNamedError(document["models"][0], case)
                    self.assertIn(case, stderr)

    def test_a_config_json_that_would_block_or_never_end_is_not_read(self):
        for name, make in (("fifo", os.mkfifo), ("dev-zero", lambda path: os.symlink("/dev/zero", path))):
            model = self.tmp / name
            model.mkdir()
            save_file({"w": torch.full((8,), 0.5)}, model / "model.safetensors")
            make(model / "config.json")
            code, document, _ = scan(model)
            self.assertEqual(code, 0, name)
            self.assertEqual(document["models"][0]["summary"]["abs_max"], 0.5, name)

    def test_one_batch_of_every_case_still_scans_the_good_model(self):
        good = self.tmp / "good"
        good.mkdir()
        save_file({"w": torch.full((8,), 0.5)}, good / "model.safetensors")
        cases = list(self.expected)
        inputs = [self.corpus / case for case in cases[: len(cases) // 2]] + [good]
        inputs += [self.corpus / case for case in cases[len(cases) // 2:]]
        code, document, _ = scan("--jobs", "3", *inputs)
        self.assertEqual(code, 2)
        models = {Path(m["input"]).name: m for m in document["models"]}
        self.assertIsNone(models["good"]["error"])
        self.assertEqual(models["good"]["summary"]["abs_max"], 0.5)
        for case in cases:
            self.assertNamedError(models[case], case)
        lines = run("--jsonl", "--jobs", "3", *inputs).stdout.splitlines()
        self.assertEqual(len(lines), len(inputs) + 1)  # one per model, then the summary
        for line in lines:
            json.loads(line)


if __name__ == "__main__":
    unittest.main()
