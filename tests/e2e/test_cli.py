"""The command-line contract: exit codes, output files, batches with failures, rules, devices, the table."""

import json
import os
import re
import unittest

import torch
from safetensors.torch import save_file

from helpers import REPO, ScanTestCase, reference_precision, run, scan, warning_codes


class ExitCodes(ScanTestCase):
    def test_help_and_version_exit_zero(self):
        help_ = run("--help")
        self.assertEqual(help_.returncode, 0)
        self.assertIn("Exit status", help_.stdout)
        version = run("--version")
        self.assertEqual(version.returncode, 0)
        self.assertRegex(version.stdout, r"^precdetect \d+\.\d+\.\d+")

    def test_usage_errors_exit_three_and_name_the_flag(self):
        save_file({"w": torch.ones(2)}, self.tmp / "m.safetensors")
        for args, flag in [(["--no-such-flag", self.tmp], "--no-such-flag"), ([], "PATH"),
                           (["--device", "tpu", self.tmp], "--device"), (["--include", "(", self.tmp], "--include"),
                           (["--rules", self.tmp / "absent.json", self.tmp], "--rules")]:
            result = run(*args)
            self.assertEqual(result.returncode, 3, args)
            self.assertIn(flag, result.stderr, args)
            self.assertEqual(result.stdout, "", args)

    def test_a_batch_with_failures_scans_the_rest_and_exits_two(self):
        save_file({"w": torch.full((3,), 0.5)}, self.tmp / "good.safetensors")
        (self.tmp / "truncated.safetensors").write_bytes((self.tmp / "good.safetensors").read_bytes()[:-4])
        (self.tmp / "text.safetensors").write_text("not a checkpoint at all")
        code, document, stderr = scan(self.tmp / "truncated.safetensors", self.tmp / "good.safetensors",
                                      self.tmp / "text.safetensors", self.tmp / "absent")
        self.assertEqual(code, 2)
        truncated, good, text, absent = document["models"]
        self.assertEqual(truncated["error"]["code"], "offset_past_end")
        self.assertIn(str(self.tmp / "truncated.safetensors"), truncated["error"]["message"])
        self.assertIsNone(good["error"])
        self.assertEqual(good["summary"]["abs_max"], 0.5)
        self.assertEqual(text["error"]["code"], "header_too_large")
        self.assertEqual(absent["error"]["code"], "not_found")
        self.assertEqual(stderr.count("precdetect: "), 3)
        self.assertEqual(truncated["tensors"], [])

    def test_cuda_without_a_gpu_is_a_named_error(self):
        if torch.cuda.is_available():
            self.skipTest("a GPU is present")
        save_file({"w": torch.ones(2)}, self.tmp / "m.safetensors")
        result = run("--device", "cuda", self.tmp)
        self.assertEqual(result.returncode, 3)
        self.assertIn("no CUDA device", result.stderr)
        auto = run("--device", "auto", "--json", self.tmp, check_json=True)
        self.assertEqual(auto.returncode, 0)  # auto falls back to the CPU


class FormatLists(unittest.TestCase):
    """--help lists the formats from one table (core/format); every other list of them is checked against it."""

    @classmethod
    def setUpClass(cls):
        cls.help = run("--help").stdout
        formats = cls.help[cls.help.index("Formats: "):cls.help.index("Docs: ")]
        cls.extensions = sorted(set(re.findall(r"(?<=[(\s])\.[a-z0-9]+(?=[\s)])", formats)))

    def test_help_lists_every_format_and_says_what_precdetect_reads_remotely(self):
        self.assertEqual(self.extensions, sorted([".bin", ".ckpt", ".dill", ".distcp", ".gguf", ".h5", ".hdf5", ".jit",
                                                  ".joblib", ".keras", ".msgpack", ".nemo", ".npy", ".npz", ".onnx",
                                                  ".pickle", ".pkl", ".pt", ".pth", ".safetensors"]))
        for remote in ("hf://org/name[@revision][/folder]", "s3://bucket/prefix/", "http(s)://"):
            self.assertIn(remote, self.help)
        self.assertNotIn("never downloads", self.help)

    def test_readme_and_using_md_name_every_extension(self):
        readme = (REPO / "README.md").read_text()
        start = readme.index("- **Formats**:")
        using = (REPO / "docs" / "using.md").read_text()
        one_file = re.search(r"^\| one file: .*$", using, re.M).group(0)
        for where, text in (("README's Formats", readme[start:readme.index("\n- **", start + 1)]),
                            ("using.md's one file", one_file)):
            for extension in self.extensions:
                self.assertRegex(text, re.escape(extension) + r"(?![a-z0-9])", f"{where}: {extension}")

    def test_the_pre_commit_hook_takes_every_format_and_readme_shows_its_pattern(self):
        hooks = (REPO / ".pre-commit-hooks.yaml").read_text()
        pattern = re.search(r"^  files: '(.*)'$", hooks, re.M).group(1)
        for extension in self.extensions:
            self.assertRegex(f"models/m{extension}", pattern, extension)
        self.assertEqual(re.findall(r"^ +files: '(.*)'$", (REPO / "README.md").read_text(), re.M), [pattern])

    def test_fuzzing_md_has_a_row_and_the_count_of_every_fuzz_target(self):
        targets = re.search(r"set\(PRECDETECT_FUZZ_TARGETS([^)]*)\)", (REPO / "tests/fuzz/targets.cmake").read_text())
        names = targets.group(1).split()
        fuzzing = (REPO / "docs/fuzzing.md").read_text()
        self.assertEqual(sorted(re.findall(r"^\| `fuzz_([a-z0-9_]+)` \|", fuzzing, re.M)), sorted(names))
        for count in re.findall(r"\((\d+) targets", fuzzing):
            self.assertEqual(int(count), len(names))


@unittest.skipUnless(torch.cuda.is_available(), "no CUDA device: the CUDA path is tested on GPU machines")
class CudaDevice(ScanTestCase):
    def test_cuda_scans_match_the_float64_reference_in_both_read_modes(self):
        # Tensors above a 64 MiB staging buffer, with small ones behind them (staged ahead while the GPU still
        # computes on the large one), each with its own scale so that results handed to the wrong tensor show.
        generator = torch.Generator().manual_seed(4)
        shards = [{}, {}]
        for i, (dtype, numel) in enumerate([(torch.bfloat16, 40_000_003), (torch.float16, 7), (torch.float32, 4096),
                                            (torch.float32, 17_000_001), (torch.bfloat16, 1), (torch.float16, 3_000_000),
                                            (torch.float64, 1000), (torch.bfloat16, 4096)]):
            values = torch.randn(numel, generator=generator) * 10.0 ** (i - 4)
            values[:3] = torch.tensor([0.0, float("inf"), float("nan")])[:numel]
            shards[i % 2][f"t{i}"] = values.to(dtype)
        for k, shard in enumerate(shards):
            save_file(shard, self.tmp / f"model-0000{k + 1}-of-00002.safetensors")
        tensors = {**shards[0], **shards[1]}
        for io in ("pread", "mmap"):
            code, document, _ = scan("--device", "cuda", "--io", io, self.tmp)
            self.assertEqual(code, 0, io)
            reported = document["models"][0]["tensors"]
            self.assertEqual(sorted(t["name"] for t in reported), sorted(tensors), io)
            for entry in reported:
                self.assertTensorStats(entry, tensors[entry["name"]], f"{io} {entry['name']}")
                self.assertEqual(entry["precision"], reference_precision(tensors[entry["name"]]), entry["name"])


class Output(ScanTestCase):
    def test_output_file_holds_what_the_format_gives_and_stdout_nothing(self):
        save_file({"w": torch.randn(10, 10)}, self.tmp / "m.safetensors")
        out = self.tmp / "out" / "report"
        out.parent.mkdir()
        code, document, _ = scan(self.tmp / "m.safetensors")
        for args in (["--json"], [], ["--format", "csv"], ["--format", "markdown"], ["--format", "sarif"],
                     ["--format", "junit"], ["--format", "gitlab"], ["--format", "github"], ["-v"]):
            with self.subTest(args=args):
                printed = run(*args, self.tmp / "m.safetensors")
                written = run(*args, self.tmp / "m.safetensors", "--output", out)
                self.assertEqual(written.returncode, printed.returncode)
                self.assertEqual(written.stdout, "")
                self.assertEqual(out.read_bytes().decode(), printed.stdout)  # CSV ends lines in \r\n
                self.assertEqual([p.name for p in out.parent.iterdir()], ["report"])  # no temporary left
        run("--json", self.tmp / "m.safetensors", "-o", out)
        self.assertEqual(json.loads(out.read_text()), document)

    def test_json_output_holds_the_document_beside_any_format(self):
        save_file({"w": torch.randn(10, 10)}, self.tmp / "m.safetensors")
        code, document, _ = scan(self.tmp / "m.safetensors")
        sarif = self.tmp / "results.sarif"
        result = run(self.tmp / "m.safetensors", "--format", "sarif", "-o", sarif, "--json-output",
                     self.tmp / "document.json")
        self.assertEqual(result.returncode, code)
        self.assertEqual(json.loads(sarif.read_text())["version"], "2.1.0")
        self.assertEqual(json.loads((self.tmp / "document.json").read_text()), document)
        table = run(self.tmp / "m.safetensors", "--json-output", self.tmp / "document.json")
        self.assertIn("abs min", table.stdout)
        self.assertEqual(json.loads((self.tmp / "document.json").read_text()), document)

    def test_warnings_reach_every_format_and_quiet_silences_them(self):
        torch.save({"model": {"w": torch.tensor([1.0, float("nan")]), "bn.running_var": torch.ones(2)},
                    "optimizer": {"state": {0: {"exp_avg": torch.zeros(2)}}}}, self.tmp / "ckpt.pt")
        expected = ["optimizer_state", "buffers", "non_finite"]
        _, document, stderr = scan(self.tmp / "ckpt.pt")
        self.assertEqual(warning_codes(document["models"][0]), expected)
        for format in ("table", "csv", "markdown"):
            with self.subTest(format=format):
                result = run("--format", format, self.tmp / "ckpt.pt")
                lines = [l for l in result.stderr.splitlines() if l.startswith("precdetect: warning: ")]
                self.assertEqual(len(lines), 3, result.stderr)
                self.assertIn(f"precdetect: warning: {self.tmp / 'ckpt.pt'}: the weights hold 1 NaN and 0 Inf values",
                              result.stderr)
                self.assertNotIn("warning", result.stdout)
        self.assertEqual(run("--quiet", self.tmp / "ckpt.pt").stderr, "")

    def test_unwritable_output_is_an_error(self):
        save_file({"w": torch.ones(2)}, self.tmp / "m.safetensors")
        for flag in ("-o", "--json-output"):
            result = run(self.tmp, flag, self.tmp / "no" / "such" / "dir" / "r.json")
            self.assertEqual(result.returncode, 3)
            self.assertIn("r.json", result.stderr)

    def test_paths_that_are_not_utf8_still_give_valid_json(self):
        folder = os.fsdecode(bytes(self.tmp) + b"/model-\xff")
        os.mkdir(folder)
        save_file({"w": torch.ones(2)}, os.path.join(folder, "model.safetensors"))
        code, document, _ = scan(folder, os.fsdecode(bytes(self.tmp) + b"/absent-\xfe"))
        self.assertEqual(code, 2)
        self.assertIn("\ufffd", document["models"][0]["input"])
        self.assertEqual(document["models"][0]["summary"]["abs_max"], 1.0)
        self.assertEqual(document["models"][1]["error"]["code"], "not_found")

    def test_table_rows_use_the_seed_format(self):
        save_file({"a": torch.tensor([0.0, 1.5e-11, -792.0]), "b": torch.ones(4) * 3}, self.tmp / "t5ish.safetensors")
        result = run(self.tmp / "t5ish.safetensors")
        self.assertEqual(result.returncode, 0)
        header, rule, row = result.stdout.splitlines()[:3]
        self.assertTrue(header.startswith("name"))
        cells = [c.strip() for c in row.split(" | ")]  # the verdict's candidates are joined by a bare "|"
        self.assertEqual(cells[1:5], ["0.000e+00", "7.920e+02", "6.000e+00", "7.920e+02"])
        self.assertTrue(cells[7].startswith("bf16|fp32 (0.93)"), cells[7])
        self.assertIn("fp16-risk", cells[7])
        verbose = run("-v", self.tmp / "t5ish.safetensors").stdout
        self.assertRegex(verbose, re.compile(r"^\s+a\s+\| F32\s+\| 0\.000e\+00 \| 7\.920e\+02", re.M))

    def test_scan_subcommand_is_the_default_command(self):
        save_file({"w": torch.randn(5)}, self.tmp / "m.safetensors")
        plain = run("--json", self.tmp / "m.safetensors", check_json=True).document
        explicit = run("scan", "--json", self.tmp / "m.safetensors", check_json=True).document
        self.assertEqual(plain, explicit)


class Rules(ScanTestCase):
    def test_print_rules_is_the_documented_default(self):
        printed = json.loads(run("--print-rules").stdout)
        shipped = json.loads((REPO / "src" / "classify" / "default_rules.json").read_text())
        self.assertEqual(printed, shipped)

    def test_custom_rules_replace_the_default(self):
        save_file({"w": torch.ones(3) * 5}, self.tmp / "m.safetensors")
        rules = {"rules": [{"id": "five", "when": [{"stat": "abs_max", "op": ">=", "value": 5}], "label": "fp32",
                            "confidence": 0.42, "fp16_risk": True, "says": "test rule"}]}
        (self.tmp / "rules.json").write_text(json.dumps(rules))
        code, document, _ = scan(self.tmp / "m.safetensors", "--rules", self.tmp / "rules.json")
        self.assertEqual(code, 0)
        verdict = document["models"][0]["verdict"]
        self.assertEqual((verdict["label"], verdict["confidence"], verdict["fp16_risk"]), ("fp32", 0.42, True))
        self.assertEqual([e["rule"] for e in verdict["evidence"]], ["five"])

    def test_invalid_rules_stop_the_run_with_the_file_named(self):
        save_file({"w": torch.ones(3)}, self.tmp / "m.safetensors")
        (self.tmp / "rules.json").write_text('{"rules": [{"id": "x", "when": []}]}')
        result = run(self.tmp / "m.safetensors", "--rules", self.tmp / "rules.json")
        self.assertEqual(result.returncode, 3)
        self.assertIn("rules.json", result.stderr)
        self.assertEqual(result.stdout, "")


if __name__ == "__main__":
    unittest.main()
