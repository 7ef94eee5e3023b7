"""precdetect.scan and precdetect.diff (issue 38): the scanner in-process through the precdetect._core extension
answers exactly what the program's --json does, its HTML is the --report page, errors carry their codes, and the
GIL is free while models are read. The package is staged from python/ and PRECDETECT_CORE (the built extension)."""

import json
import os
import shutil
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path

import torch
from safetensors.torch import save_file

from helpers import REPO, run

STAGE = Path(tempfile.mkdtemp(prefix="precdetect-python-"))
shutil.copytree(REPO / "python" / "precdetect", STAGE / "precdetect")
shutil.copy(os.environ["PRECDETECT_CORE"], STAGE / "precdetect")
sys.path.insert(0, str(STAGE))
import precdetect  # noqa: E402

EXAMPLES = [str(REPO / "examples" / "fp16-like"), str(REPO / "examples" / "bf16-like")]


def tearDownModule():
    shutil.rmtree(STAGE)


class Scan(unittest.TestCase):
    def test_each_result_is_the_cli_documents_model(self):
        missing = str(STAGE / "missing.safetensors")
        results = precdetect.scan(*EXAMPLES, missing, jobs=1)
        cli = run("--json", *EXAMPLES, missing, check_json=True)
        self.assertEqual(cli.returncode, 2)
        self.assertEqual([r.to_dict() for r in results], cli.document["models"])
        fp16, bf16, failed = results
        model = cli.document["models"][1]
        self.assertEqual((bf16.label, bf16.candidates, bf16.confidence, bf16.fp16_risk),
                         ("bf16", ["bf16", "fp32"], model["verdict"]["confidence"], True))
        self.assertEqual(bf16.summary, model["summary"])
        self.assertEqual(bf16.safety, model["safety"])
        self.assertEqual((fp16.label, fp16.fp16_risk, fp16.error), ("fp16", False, None))
        self.assertEqual((failed.error["code"], failed.label, failed.candidates), ("not_found", "unknown", ["fp16", "bf16", "fp32"]))

    def test_gates_fill_gate_failures_as_the_cli_does(self):
        results = precdetect.scan(*EXAMPLES, fail_if_fp16_risk=True, max_abs=100)
        cli = run("--json", "--fail-if-fp16-risk", "--max-abs", "100", *EXAMPLES, check_json=True)
        self.assertEqual([r.to_dict() for r in results], cli.document["models"])
        self.assertEqual(len(results[1].to_dict()["gate_failures"]), 2)

    def test_repr_html_is_the_report_page_of_that_model(self):
        [result] = precdetect.scan(EXAMPLES[1])
        page = STAGE / "report.html"
        self.assertEqual(run("--report", page, EXAMPLES[1]).returncode, 0)
        self.assertEqual(result._repr_html_(), page.read_text())

    def test_to_dict_is_a_copy(self):
        [result] = precdetect.scan(EXAMPLES[0])
        result.to_dict()["verdict"]["label"] = "changed"
        self.assertEqual(result.label, "fp16")


class Errors(unittest.TestCase):
    def assert_error(self, code, *inputs, **options):
        with self.assertRaises(precdetect.Error) as raised:
            precdetect.scan(*inputs, **options)
        self.assertEqual(raised.exception.code, code)
        return str(raised.exception)

    def test_options_the_command_line_refuses_are_usage_errors_naming_the_flag(self):
        self.assertEqual(self.assert_error("usage", EXAMPLES[0], device="tpu"),
                         "--device: must be cpu, cuda, cuda:N or auto, not `tpu`")
        self.assertIn("--include", self.assert_error("usage", EXAMPLES[0], include="("))

    def test_a_run_that_cannot_be_made_raises_its_error_code(self):
        rules = STAGE / "rules.json"
        rules.write_text("{not json")
        self.assertIn(str(rules), self.assert_error("invalid_rules", EXAMPLES[0], rules=rules))

    def test_unknown_options_are_type_errors(self):
        with self.assertRaisesRegex(TypeError, "unexpected keyword argument 'json'"):
            precdetect.scan(EXAMPLES[0], json=True)


class Diff(unittest.TestCase):
    def test_each_result_is_the_cli_documents_pair(self):
        pairs = precdetect.diff(EXAMPLES[0], EXAMPLES[0], EXAMPLES[1], atol=1e-6)
        cli = run("diff", "--json", "--atol", "1e-6", EXAMPLES[0], EXAMPLES[0], EXAMPLES[1], check_json=True)
        self.assertEqual([p.to_dict() for p in pairs], cli.document["pairs"])
        self.assertEqual(pairs[0].outcome, "identical")


class Gil(unittest.TestCase):
    def test_other_threads_run_while_a_model_is_read(self):
        path = STAGE / "large.safetensors"
        save_file({f"w{i}": torch.randn(2048, 2048) for i in range(16)}, path)  # 256 MiB of f32
        thread = threading.Thread(target=precdetect.scan, args=(path,) * 8, kwargs={"jobs": 1})
        samples = [time.monotonic()]  # before start(): the new thread may take the GIL at once
        thread.start()
        while thread.is_alive():
            samples.append(time.monotonic())
        took = samples[-1] - samples[0]
        gaps = max(b - a for a, b in zip(samples, samples[1:]))
        self.assertGreater(took, 0.1)  # long enough for a held GIL to show
        self.assertLess(gaps, took / 2, f"the main thread stood still {gaps:.3f} s of the scan's {took:.3f} s")


if __name__ == "__main__":
    unittest.main()
