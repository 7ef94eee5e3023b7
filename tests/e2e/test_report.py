"""--report FILE.html end to end: the page carries the JSON document it is drawn from, opens offline in headless
Chromium with no console error and no network request, and its charts draw that document's numbers (each chart
item names its datum in an aria-label, compared here with the document and with float64 references)."""

import json
import os
import re
import struct
import unittest
import zlib

import torch
from safetensors.torch import save_file

from headless_chromium import HeadlessPage, find_chromium
from helpers import ScanTestCase, reference_tensor_stats, requires, run

CHROMIUM = find_chromium()
HOSTILE_NAME = "</script><script>window.pwned = 1</script><!--.weight"


def t5_like_tensors():
    """Two stacks of two blocks, every group, four float dtypes, a value past fp16's max, an all-zero tensor."""
    generator = torch.Generator().manual_seed(7)
    normal = lambda *shape: torch.randn(*shape, generator=generator)  # noqa: E731
    shared = normal(64, 16) * 3
    shared[5, 7] = 70000.0  # exactly a bf16 value: overflows fp16
    tensors = {"shared.weight": shared.to(torch.bfloat16)}
    for stack, dtype in (("encoder.block", torch.float32), ("decoder.block", torch.float16)):
        for block in range(2):
            prefix = f"{stack}.{block}.layer"
            tensors[f"{prefix}.0.SelfAttention.q.weight"] = (normal(16, 16) * (block + 1)).to(dtype)
            tensors[f"{prefix}.1.DenseReluDense.wi.weight"] = (normal(32, 16) * 2 ** -12).to(dtype)
            tensors[f"{prefix}.0.layer_norm.weight"] = (normal(16).abs() * 150).to(dtype)
    tensors["encoder.final_layer_norm.weight"] = torch.zeros(16)
    tensors["lm_head.weight"] = normal(64, 16).to(torch.float64)
    tensors["position_ids"] = torch.arange(8)
    return tensors


def reference_exponents(tensors):
    """[[e, count]] of the non-zero finite values, e = floor(log2 |x|), computed by torch.frexp in float64."""
    counts = {}
    for tensor in tensors.values():
        if not tensor.is_floating_point():
            continue
        values = tensor.to(torch.float64).reshape(-1)
        values = values[torch.isfinite(values) & (values != 0)]
        exponents = torch.frexp(values).exponent - 1
        for e, n in zip(*torch.unique(exponents, return_counts=True)):
            counts[int(e)] = counts.get(int(e), 0) + int(n)
    return [[e, counts[e]] for e in sorted(counts)]


def embedded_document(page):
    match = re.search(r'<script type="application/json" id="precdetect-document">(.*?)</script>', page, re.S)
    return json.loads(match.group(1))


def png_size_and_pixels(png):
    """(width, height, raw scanlines) of an 8-bit PNG, read with zlib alone."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", png[16:24])
    chunks, at = [], 8
    while at < len(png):
        length, kind = struct.unpack(">I4s", png[at:at + 8])
        if kind == b"IDAT":
            chunks.append(png[at + 8:at + 8 + length])
        at += 12 + length
    return width, height, zlib.decompress(b"".join(chunks))


def labels(page, selector):
    """The aria-labels of the items a Vega mark drew, in drawing order."""
    return page.evaluate(f"[...document.querySelectorAll({json.dumps(selector)})]"
                         ".map(node => node.getAttribute('aria-label'))")


def label_values(items):
    """{'name': value} from "name: value" labels."""
    return {label.rsplit(": ", 1)[0]: float(label.rsplit(": ", 1)[1]) for label in items}


class ReportCase(ScanTestCase):
    def scan_with_report(self, *inputs):
        report = self.tmp / "report.html"
        result = run("--json", "--report", report, *inputs, check_json=True)
        return result, report.read_text(encoding="utf-8")

    def write_model(self, tensors, name="t5-like"):
        folder = self.tmp / name
        folder.mkdir()
        save_file(tensors, str(folder / "model.safetensors"))
        return folder


class ReportTest(ReportCase):
    def test_page_carries_the_document_and_no_outside_asset(self):
        result, page = self.scan_with_report(self.write_model(t5_like_tensors()))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(embedded_document(page), result.document)
        outside = re.search(r"<script[^>]+src=|<link|<img|<iframe|@import", page)
        self.assertIsNone(outside, "the page loads an outside asset")
        self.assertIn("precdetect report", page)

    def test_merge_writes_the_page_of_the_merged_document(self):
        model = self.write_model(t5_like_tensors())
        lines = self.tmp / "shard.jsonl"
        lines.write_text(run("--jsonl", model).stdout)
        report = self.tmp / "merged.html"
        merged = run("merge", lines, "--report", report, check_json=True)
        self.assertEqual(merged.returncode, 0, merged.stderr)
        self.assertEqual(embedded_document(report.read_text(encoding="utf-8")), merged.document)

    def test_unwritable_report_is_a_named_error(self):
        missing = self.tmp / "no-such-folder" / "report.html"
        result = run("--report", missing, self.write_model(t5_like_tensors()))
        self.assertEqual(result.returncode, 3)
        self.assertIn(str(missing), result.stderr)
        self.assertFalse(missing.parent.exists())


@requires(CHROMIUM, "Debian's chromium")
class ReportInChromiumTest(ReportCase):
    def open_page(self, path):
        page = HeadlessPage(CHROMIUM)
        self.addCleanup(page.__exit__)
        page.open(path.resolve().as_uri())
        page.wait_for("document.body?.dataset.rendered")
        return page

    def report_page(self, model):
        """The page --report writes for one model that scans cleanly, open, quiet and offline."""
        result, _ = self.scan_with_report(model)
        self.assertEqual(result.returncode, 0, result.stderr)
        page = self.open_page(self.tmp / "report.html")
        self.assertQuietAndOffline(page)
        return page

    def assertQuietAndOffline(self, page):
        page.evaluate("1")  # drains the events sent before this answer
        self.assertEqual(page.console_errors, [])
        outside = [url for url in page.requests if not url.startswith(("file:", "data:", "blob:", "about:"))]
        self.assertEqual(outside, [])

    def test_charts_draw_the_document(self):
        tensors = t5_like_tensors()
        result, _ = self.scan_with_report(self.write_model(tensors))
        self.assertEqual(result.returncode, 0, result.stderr)
        model = result.document["models"][0]
        page = self.open_page(self.tmp / "report.html")
        self.assertQuietAndOffline(page)
        # Six charts per model: exponents, abs max per tensor, two per group, two per block; all SVG.
        self.assertEqual(page.evaluate("document.body.dataset.rendered"), "6")
        self.assertEqual(page.evaluate("document.querySelectorAll('#model-0 svg.marks').length"), 6)
        self.assertEqual(page.evaluate("document.querySelectorAll('canvas').length"), 0)

        expected_exponents = reference_exponents(tensors)
        self.assertEqual(model["summary"]["precision"]["exponents"], expected_exponents)
        self.assertEqual(labels(page, "#model-0 .exponent-bars path"),
                         [f"2^{e}: {n}" for e, n in expected_exponents])

        expected_abs_max = {name: reference_tensor_stats(t)["abs_max"] for name, t in tensors.items()
                            if t.is_floating_point() and reference_tensor_stats(t)["abs_max"] > 0}
        self.assertEqual(label_values(labels(page, "#model-0 .tensor-dots path")), expected_abs_max)

        # One bar per group holding float values (position_ids alone makes "other": no bar), per chart.
        groups = {g: s for g, s in model["summary"]["groups"].items() if s["abs_max"] is not None}
        self.assertEqual(len(groups), 5)
        group_bars = labels(page, "#model-0 .group-bars path")
        self.assertEqual(label_values(group_bars[:5]), {g: s["abs_max"] for g, s in groups.items()})
        self.assertEqual(label_values(group_bars[5:]), {g: s["norm_max"] for g, s in groups.items()})
        blocks = {f"{layer['stack']}.{layer['index']}": layer["abs_max"] for layer in model["summary"]["layers"]}
        self.assertEqual(len(blocks), 4)
        self.assertEqual(label_values(labels(page, "#model-0 .block-dots path")[:4]), blocks)
        self.assertEqual(blocks["decoder.block.1"], max(reference_tensor_stats(t)["abs_max"]
                                                        for n, t in tensors.items() if n.startswith("decoder.block.1")))
        # The reference lines: fp16's max and the default rules' thresholds (1e2 and 1e3).
        references = page.evaluate("[...document.querySelectorAll('#model-0 .reference-labels text')]"
                                   ".map(node => node.textContent)")
        self.assertIn("fp16 max 65504", references)
        self.assertIn("rule threshold 100", references)
        self.assertIn("rule threshold 1000", references)

        verdict = page.evaluate("document.querySelector('#model-0 .verdict .label').textContent")
        self.assertEqual(verdict, model["verdict"]["label"])
        self.assertEqual(verdict, "bf16|fp32")
        cast_rows = page.evaluate("[...document.querySelectorAll('#model-0 table')]"
                                  ".find(table => table.innerText.startsWith('cast to')).tBodies[0].innerText")
        fp16_row = cast_rows.splitlines()[0].split("\t")
        self.assertEqual(fp16_row[:2], ["fp16 (max 65504)", "1"])  # 70000 alone overflows

        png = page.screenshot()
        (self.tmp / "report.png").write_bytes(png)
        width, height, pixels = png_size_and_pixels(png)
        self.assertGreaterEqual(width, 1000)
        self.assertGreater(height, 2000)  # the whole page, not the window
        self.assertGreater(len(set(pixels[::101])), 16, "the screenshot is blank")

    def test_the_verdict_says_its_candidates_risks_and_buffers(self):
        tensors = {"conv.weight": torch.full((4, 4), 0.5), "bn.running_var": torch.tensor([7e4, 1.0])}
        page = self.report_page(self.write_model(tensors))
        verdict = page.evaluate("document.querySelector('#model-0 .verdict').innerText")
        self.assertIn("The evidence leaves fp16 and fp32 open: weight ranges cannot tell them apart.", verdict)
        self.assertEqual(page.evaluate("document.querySelector('#model-0 .verdict .label').className"), "label open")
        self.assertIn("Cast to fp16, buffer bn.running_var becomes inf: 1 value(s) above 65504", verdict)
        section = page.evaluate("document.getElementById('model-0').innerText")
        self.assertIn("Buffers (not in the verdict)", section)
        self.assertIn("abs max 7.000e+4 (bn.running_var)", section)
        self.assertIn("What to run it in, on a GPU with bf16 (compute capability 8.0 or newer)", section)
        self.assertIn("TrainingArguments(bf16=True)", section)
        self.assertIn("bn (weights): bn.running_var overflows fp16", section)

    def test_the_page_shows_the_training_record_its_basis_and_the_conflict(self):
        folder = self.write_model({"w": torch.full((4,), 300.0)})
        torch.save({"scale": 65536.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2000,
                    "_growth_tracker": 0}, folder / "scaler.pt")  # torch.amp.GradScaler.state_dict()'s keys
        page = self.report_page(folder)
        verdict = page.evaluate("document.querySelector('#model-0 .verdict').innerText")
        self.assertIn("Decided by what the training framework recorded", verdict)
        self.assertIn("Conflict (ranges_disagree): recorded fp16 (scaler.pt: scale=65536.0)", verdict)
        section = page.evaluate("document.getElementById('model-0').innerText")
        self.assertIn("Training records (they outrank the ranges)", section)
        self.assertIn("only when loss scaling ran", section)  # the record's basis
        self.assertIn("Confidence: 12 of 12 labelled models", section)  # the rule's counted basis
        self.assertIn("The evidence does not rule out: bf16, fp32.", verdict)  # the record decided, the rule left them

    def test_a_method_reference_shows_what_it_resolves_to_and_its_spelling(self):
        # A module whose forward is another of its bound methods (as fuse() leaves Ultralytics' convolutions):
        # torch.save writes getattr(<the Linear>, 'extra_repr').
        module = torch.nn.Linear(2, 2)
        module.forward = module.extra_repr
        torch.save({"model": module}, self.tmp / "fused.pt")
        resolved = "torch.nn.modules.linear.Linear.extra_repr"
        spelling = "__builtin__.getattr(<torch.nn.modules.linear.Linear object>, 'extra_repr')"
        table = run("-v", self.tmp / "fused.pt").stdout
        self.assertIn(f"import (unknown): {resolved} (written {spelling}) in {self.tmp / 'fused.pt'}!fused/data.pkl",
                      table)
        result, _ = self.scan_with_report(self.tmp / "fused.pt")
        self.assertEqual(result.document["models"][0]["safety"]["verdict"], "unverified")
        page = self.open_page(self.tmp / "report.html")
        section = page.evaluate("document.getElementById('model-0').innerText")
        self.assertIn(resolved, section)
        self.assertIn(f"written {spelling}", section)

    def test_failed_model_and_hostile_names(self):
        good = self.write_model({HOSTILE_NAME: torch.ones(4), "b.bias": torch.full((3,), 2.0)}, "good")
        broken = self.tmp / "broken.safetensors"
        broken.write_bytes(struct.pack("<Q", 1 << 40) + b"{}")
        result, page_text = self.scan_with_report(good, broken)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertEqual(embedded_document(page_text), result.document)
        page = self.open_page(self.tmp / "report.html")
        self.assertQuietAndOffline(page)
        self.assertIsNone(page.evaluate("window.pwned === undefined ? null : window.pwned"))
        self.assertIn(HOSTILE_NAME, page.evaluate("document.getElementById('model-0').innerText"))
        error = result.document["models"][1]["error"]
        failed = page.evaluate("document.getElementById('model-1').innerText")
        self.assertIn(error["code"], failed)
        self.assertIn(error["message"], failed)
        self.assertIn("1 could not be scanned", page.evaluate("document.getElementById('headline').textContent"))
        # No blocks in these names: the exponents, the tensors and the two group charts.
        self.assertEqual(page.evaluate("document.body.dataset.rendered"), "4")

    def test_a_scan_without_values_shows_its_safety_and_no_statistic(self):
        good = self.write_model({"w": torch.full((8,), 0.5)}, "good")
        evil = self.tmp / "evil"
        evil.mkdir()
        torch.save({"w": torch.ones(4), "hook": os.system}, evil / "pytorch_model.bin")  # a global, never called
        report = self.tmp / "report.html"
        result = run("--json", "--safety-only", "--report", report, good, evil, check_json=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        page = self.open_page(report)
        self.assertQuietAndOffline(page)
        self.assertEqual(page.evaluate("document.getElementById('headline').textContent"),
                         "2 model(s) scanned: none classified")
        good_section = page.evaluate("document.getElementById('model-0').innerText")
        self.assertIn("safety only", good_section)
        self.assertIn("no tensor value was read", good_section)
        evil_section = page.evaluate("document.getElementById('model-1').innerText")
        self.assertIn("unsafe", evil_section)
        self.assertIn("posix.system", evil_section)
        self.assertEqual(page.evaluate("document.querySelectorAll('svg.marks').length"), 0)


if __name__ == "__main__":
    unittest.main()
