"""The malformed-input corpus (tests/malformed_corpus.py): every case a named error with its path, exit 2 and
valid JSON, alone and in one batch with a good model, which is still scanned."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import tempfile
import unittest
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch
from safetensors.torch import save_file

from helpers import BINARY, ScanTestCase, run, scan

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


NOBODY = 65534


def unprivileged_launcher():
    """A command prefix that runs precdetect as a user whom mode 000 keeps out. Root reads any file, so as root it
    runs as nobody (setpriv, from util-linux); None when that is not possible here."""
    if os.geteuid() != 0:
        return ()
    if shutil.which("setpriv") is None:
        return None
    return ("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--")


class UnreadableInput(ScanTestCase):
    """Files and folders the scanning user may not read: each a named io_error, the rest of the batch scanned."""

    @classmethod
    def setUpClass(cls):
        cls.launcher = unprivileged_launcher()
        if cls.launcher is None or run("--version", launcher=cls.launcher).returncode != 0:
            raise unittest.SkipTest("cannot run precdetect as a user without read access here")

    def setUp(self):
        super().setUp()
        self.tmp.chmod(0o755)

    def scan_unprivileged(self, *args):
        return scan(*args, launcher=self.launcher)

    def model(self, name):
        folder = self.tmp / name
        folder.mkdir(mode=0o755)
        save_file({"w": torch.full((8,), 0.5)}, folder / "model.safetensors")
        (folder / "model.safetensors").chmod(0o644)  # safetensors writes 0600
        return folder

    def locked_cases(self):
        """Each case's folder and the path its error must name."""
        weights = self.model("locked-weights")
        (weights / "model.safetensors").chmod(0)
        folder = self.model("locked-folder")
        folder.chmod(0)
        index = self.model("locked-index")
        (index / "model.safetensors.index.json").write_text('{"weight_map": {"w": "model.safetensors"}}')
        (index / "model.safetensors.index.json").chmod(0)
        shard = self.model("locked-shard")
        (shard / "model.safetensors").rename(shard / "model-00002-of-00002.safetensors")
        save_file({"v": torch.ones(4)}, shard / "model-00001-of-00002.safetensors")
        (shard / "model-00001-of-00002.safetensors").chmod(0o644)
        (shard / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {
            "v": "model-00001-of-00002.safetensors", "w": "model-00002-of-00002.safetensors"}}))
        (shard / "model-00002-of-00002.safetensors").chmod(0)
        return {weights: weights / "model.safetensors", folder: folder,
                index: index / "model.safetensors.index.json", shard: shard / "model-00002-of-00002.safetensors"}

    def assertLockedOut(self, model, named):
        self.assertEqual(model["error"]["code"], "io_error", model["error"]["message"])
        self.assertIn(str(named), model["error"]["message"])
        self.assertEqual(model["tensors"], [])

    def test_each_unreadable_file_or_folder_is_a_named_io_error(self):
        for folder, named in self.locked_cases().items():
            with self.subTest(case=folder.name):
                code, document, stderr = self.scan_unprivileged(folder)
                self.assertEqual(code, 2)
                self.assertLockedOut(document["models"][0], named)
                self.assertIn(str(named), stderr)

    def test_a_batch_scans_the_readable_models(self):
        cases = self.locked_cases()
        good = self.model("good")
        config = self.model("locked-config")  # a hint only: ignored when unreadable, as when absent
        (config / "config.json").write_text('{"torch_dtype": "bfloat16"}')
        (config / "config.json").chmod(0)
        code, document, _ = self.scan_unprivileged(*cases, good, config)
        self.assertEqual(code, 2)
        models = {Path(m["input"]).name: m for m in document["models"]}
        for folder, named in cases.items():
            self.assertLockedOut(models[folder.name], named)
        for name in ("good", "locked-config"):
            self.assertIsNone(models[name]["error"], name)
            self.assertEqual(models[name]["summary"]["abs_max"], 0.5, name)

    def test_recursive_reports_a_folder_it_cannot_list(self):
        self.model("good")
        locked = self.model("locked")
        locked.chmod(0)
        code, document, _ = self.scan_unprivileged("--recursive", self.tmp)
        self.assertEqual(code, 2)
        self.assertEqual([Path(m["input"]).name for m in document["models"]], ["good", "locked"])
        self.assertIsNone(document["models"][0]["error"])
        self.assertLockedOut(document["models"][1], locked)


class FileShrinksDuringTheScan(ScanTestCase):
    """A weights file truncated while precdetect reads it (a download or rsync rewriting it): the process is
    stopped as soon as it has mapped the file, the file is cut to its first tensor, and the scan resumes."""

    TENSORS = 64  # of 8 MiB each: reading them takes long enough to stop the process before the last one

    def setUp(self):
        super().setUp()
        self.weights = self.tmp / "shrinking" / "model.safetensors"
        self.weights.parent.mkdir()
        self.good = self.tmp / "good"
        self.good.mkdir()
        save_file({"w": torch.full((8,), 0.25)}, self.good / "model.safetensors")

    def wait_until_mapped(self, process):
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if str(self.weights) in Path(f"/proc/{process.pid}/maps").read_text():
                    return
            except (FileNotFoundError, ProcessLookupError):
                pass
            if process.poll() is not None:
                self.fail("precdetect ended before it mapped the file")
            time.sleep(0.0002)
        self.fail("precdetect never mapped the file")

    def scan_while_cutting(self, *args):
        save_file({f"w{i:02}": torch.full((2 << 20,), 0.5) for i in range(self.TENSORS)}, self.weights)
        process = subprocess.Popen([BINARY, "--json", *args, self.weights.parent, self.good],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            self.wait_until_mapped(process)
            process.send_signal(signal.SIGSTOP)
            with self.weights.open("rb") as weights:
                header = 8 + int.from_bytes(weights.read(8), "little")
            os.truncate(self.weights, header + (8 << 20))  # the header and the first tensor stay
            process.send_signal(signal.SIGCONT)
            stdout, stderr = process.communicate(timeout=300)
        finally:
            process.kill()
            process.wait()
        return process.returncode, json.loads(stdout), stderr.decode(errors="replace")

    def test_the_model_fails_with_a_named_io_error_and_the_batch_goes_on(self):
        for io, says in (("mmap", "the file shrank while being read"), ("pread", "the file ended at offset")):
            with self.subTest(io=io):
                code, document, stderr = self.scan_while_cutting("--io", io, "--jobs", "1")
                self.assertEqual(code, 2, stderr)
                shrunk, good = document["models"]
                self.assertEqual(shrunk["error"]["code"], "io_error", stderr)
                self.assertIn(str(self.weights), shrunk["error"]["message"])
                self.assertIn(says, shrunk["error"]["message"])
                self.assertEqual(shrunk["tensors"], [])
                self.assertIsNone(good["error"])
                self.assertEqual(good["summary"]["abs_max"], 0.25)


if __name__ == "__main__":
    unittest.main()
