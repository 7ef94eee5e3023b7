"""Issue 7's precision diagnostics end to end: fp16/fp8 cast counts, exactness (storage-cast evidence), the
exponent histogram, groups, layers, the dtype census, and the csv / markdown / -v renderings. Every number is
checked against a float64 computation by torch here, on tensors that sit on each boundary."""

import csv
import io
import math
import re
import unittest

import torch
from safetensors.torch import save_file

from helpers import DTYPE_NAMES, ScanTestCase, reference_precision, run, scan

# fp16 max and just above, rounds-to-Inf, 2^16, the fp8 maxima and just above, 1e2, 2^8, fp16's small end
# (2^-24, 2^-25, subnormals), a float32 subnormal, zero, Inf, NaN, and values exact in one format only.
BOUNDARIES = [65504.0, 65504.0078125, 65520.0, -65536.0, 448.0, 448.00003, 57344.0, -57344.004, 100.0,
              100.00001, 256.0, 255.0, 2**-24, -(2**-25), 1.5 * 2**-24, 2**-14, 2**-15, 1023 * 2**-24, 1e-45,
              0.0, -math.inf, math.nan, 1 + 2**-10, 1 + 2**-7, -(1 + 2**-11), 3e-3, 0.02, -7.5]

class PrecisionCounts(ScanTestCase):
    def scan_tensors(self, tensors, *args):
        path = self.tmp / "model.safetensors"
        save_file(tensors, path)
        code, document, stderr = scan(*args, path)
        self.assertEqual(code, 0, stderr)
        return document["models"][0]

    def test_every_count_at_the_boundaries_in_every_dtype(self):
        base = torch.tensor(BOUNDARIES, dtype=torch.float64)
        tensors = {}
        for dtype in (torch.float64, torch.float32, torch.float16, torch.bfloat16):
            # 3 copies and a shuffle: vector lanes, the scalar tail and every position of a 64-bit word
            values = base.repeat(37)[torch.randperm(37 * len(BOUNDARIES), generator=torch.Generator().manual_seed(1))]
            tensors[f"t.{DTYPE_NAMES[dtype]}"] = values.to(dtype)
        tensors["t.F8_E4M3"] = torch.tensor([448.0, 2**-9, 2**-7, 0.0, -3.5]).to(torch.float8_e4m3fn)
        tensors["t.F8_E5M2"] = torch.tensor([57344.0, 2**-16, 2**-15, -math.inf, 1.0]).to(torch.float8_e5m2)
        model = self.scan_tensors(tensors)
        for reported in model["tensors"]:
            with self.subTest(reported["name"]):
                self.assertEqual(reported["precision"], reference_precision(tensors[reported["name"]]))

    def test_model_groups_and_layers_sum_the_tensors(self):
        generator = torch.Generator().manual_seed(2)
        tensors = {"model.embed_tokens.weight": torch.randn(64, 16, generator=generator).to(torch.bfloat16),
                   "model.layers.0.self_attn.q_proj.weight": torch.randn(16, 16, generator=generator) * 300,
                   "model.layers.0.mlp.up_proj.weight": torch.randn(32, 16, generator=generator).half(),
                   "model.layers.1.input_layernorm.weight": torch.ones(16),
                   "model.layers.1.mlp.down_proj.bias": torch.zeros(16),
                   "model.norm.weight": torch.full((16,), 2.0**-20),
                   "lm_head.weight": torch.randn(64, 16, generator=generator),
                   "tokens_seen": torch.arange(8, dtype=torch.int64)}
        model = self.scan_tensors(tensors)
        summary = model["summary"]
        groups = {t["name"]: t["group"] for t in model["tensors"]}
        self.assertEqual(groups, {"model.embed_tokens.weight": "embedding",
                                  "model.layers.0.self_attn.q_proj.weight": "attention",
                                  "model.layers.0.mlp.up_proj.weight": "mlp",
                                  "model.layers.1.input_layernorm.weight": "norm",
                                  "model.layers.1.mlp.down_proj.bias": "bias", "model.norm.weight": "norm",
                                  "lm_head.weight": "head", "tokens_seen": "other"})
        floats = {n: t for n, t in tensors.items() if t.dtype != torch.int64}
        everything = torch.cat([t.to(torch.float64).reshape(-1) for t in floats.values()])
        expected = reference_precision(everything)
        expected["bf16_exact"] = reference_precision(torch.cat(
            [t.reshape(-1).double() for t in floats.values() if t.dtype == torch.float32]).float())["bf16_exact"]
        self.assertEqual(summary["precision"]["exponents"], expected["exponents"])
        self.assertEqual(summary["precision"]["fp16"], expected["fp16"])
        self.assertEqual(summary["precision"]["above_1e2"], expected["above_1e2"])
        self.assertEqual(summary["precision"]["bf16_exact"], expected["bf16_exact"])
        for group in ("norm", "attention"):
            members = [t for n, t in floats.items() if groups[n] == group]
            self.assertEqual(summary["groups"][group]["parameters"], sum(t.numel() for t in members))
            self.assertEqual(summary["groups"][group]["abs_max"],
                             max(float(t.double().abs().max()) for t in members))
        self.assertEqual(summary["groups"]["attention"]["precision"]["above_1e2"],
                         int((tensors["model.layers.0.self_attn.q_proj.weight"].abs() > 100).sum()))
        self.assertEqual([(l["stack"], l["index"], l["tensors"]) for l in summary["layers"]],
                         [("model.layers", 0, 2), ("model.layers", 1, 2)])
        self.assertEqual(summary["census"], {
            "BF16": {"tensors": 1, "parameters": 1024, "bytes": 2048},
            "F16": {"tensors": 1, "parameters": 512, "bytes": 1024},
            "F32": {"tensors": 5, "parameters": 1328, "bytes": 5312},
            "I64": {"tensors": 1, "parameters": 8, "bytes": 64}})
        parameters = 1024 + 512 + 1328 + 8
        self.assertEqual(summary["footprint"], {"fp32": 4 * parameters, "fp16_bf16": 2 * parameters,
                                                "int8_fp8": parameters})

    def test_storage_cast_tells_an_upcast_file_from_a_full_precision_one(self):
        weights = torch.randn(4096, generator=torch.Generator().manual_seed(3))
        # bf16 values beyond fp16's range are exact in bf16 only
        upcast = self.scan_tensors({"w": (weights * 1e5).to(torch.bfloat16).float()})["storage_cast"]
        self.assertEqual(upcast["bf16_exact"], 1.0)
        self.assertIn("casting bf16 weights up", upcast["says"])
        from_fp16 = self.scan_tensors({"w": weights.half().double()})["storage_cast"]
        self.assertEqual(from_fp16["fp16_exact"], 1.0)
        self.assertIn("casting fp16 weights up", from_fp16["says"])
        full = self.scan_tensors({"w": weights})["storage_cast"]
        self.assertEqual(full["bf16_exact"], reference_precision(weights)["bf16_exact"])
        self.assertIn("full precision", full["says"])
        self.assertIsNone(self.scan_tensors({"w": weights.half()})["storage_cast"])

    def test_rules_may_use_the_new_statistics(self):
        rules = self.tmp / "rules.json"
        rules.write_text('{"rules": [{"id": "upcast", "label": "bf16", "confidence": 0.6, "fp16_risk": false,'
                         ' "says": "stored from bf16", "when": [{"stat": "bf16_exact_fraction", "op": ">=",'
                         ' "value": 1}]}]}')
        model = self.scan_tensors({"w": torch.randn(64).to(torch.bfloat16).float()}, "--rules", rules)
        self.assertEqual(model["verdict"]["label"], "bf16")
        self.assertEqual(model["verdict"]["evidence"][0]["observations"][0]["observed"], 1.0)


class Formats(ScanTestCase):
    def setUp(self):
        super().setUp()
        generator = torch.Generator().manual_seed(4)
        self.tensors = {"encoder.block.0.layer.0.SelfAttention.q.weight": torch.randn(8, 8, generator=generator) * 500,
                        "shared.weight": torch.randn(32, 8, generator=generator).to(torch.bfloat16),
                        "odd,name \"quoted\"": torch.tensor([1e-30, 0.5])}
        self.model = self.tmp / "t5 model"
        self.model.mkdir()
        save_file(self.tensors, self.model / "model.safetensors")
        self.document = scan(self.model)[1]

    def test_csv_has_a_row_per_tensor_with_the_json_values(self):
        result = run("--format", "csv", self.model)
        self.assertEqual(result.returncode, 0, result.stderr)
        rows = list(csv.DictReader(io.StringIO(result.stdout, newline="")))
        reported = {t["name"]: t for t in self.document["models"][0]["tensors"]}
        self.assertEqual([r["tensor"] for r in rows], list(reported))
        for row in rows:
            tensor = reported[row["tensor"]]
            self.assertEqual(row["model"], str(self.model))
            self.assertEqual(float(row["abs_max"]), tensor["abs_max"])
            self.assertEqual(float(row["norm"]), tensor["norm"])
            self.assertEqual(int(row["fp16_overflow"]), tensor["precision"]["fp16"]["overflow"])
            self.assertEqual(int(row["fp8_e4m3_overflow"]), tensor["precision"]["fp8_e4m3"]["overflow"])
            self.assertEqual(int(row["fp16_underflow"]), tensor["precision"]["fp16"]["underflow"])
            self.assertEqual(row["group"], tensor["group"])
            exact = tensor["precision"]["bf16_exact"]
            self.assertEqual(row["bf16_exact"] and float(row["bf16_exact"]), "" if exact is None else exact)

    def test_markdown_is_seed_000s_table(self):
        result = run("--format", "markdown", "-v", self.model)
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = result.stdout.splitlines()
        self.assertTrue(lines[0].startswith("| name | abs min | abs max | norm min | norm max |"))
        summary = self.document["models"][0]["summary"]
        self.assertIn(f"| {summary['abs_max']:.3e} |", lines[2])
        self.assertIn("bf16", lines[2])  # |x| of 500 sigma is far above 1e2
        self.assertIn("| attention | 64 |", result.stdout)

    def test_verbose_table_draws_the_exponent_chart_and_cast_counts(self):
        result = run("-v", self.model)
        self.assertEqual(result.returncode, 0, result.stderr)
        precision = self.document["models"][0]["summary"]["precision"]
        self.assertIn(f"cast to fp16    : {precision['fp16']['overflow']} overflow", result.stdout)
        for exponent, count in precision["exponents"]:
            label = re.escape("<2^-126" if exponent == -127 else f"2^{exponent}")
            self.assertRegex(result.stdout, rf"\n +{label} \| [█▏▎▍▌▋▊▉]+ +\| +{count} \|")
        present = [e for e, _ in precision["exponents"]]
        low, high = next((a, b) for a, b in zip(present, present[1:]) if b - a > 4)  # 1e-30 and the rest
        self.assertIn(f"({high - low - 1} empty binades: 2^{low + 1} to 2^{high - 1})", result.stdout)
        self.assertIn("fp16: flushed to zero", result.stdout)  # the 1e-30 value

    def test_format_and_its_short_forms(self):
        self.assertEqual(run("--format", "json", self.model, check_json=True).document["models"][0]["summary"],
                         self.document["models"][0]["summary"])
        self.assertEqual(run("--format", "yaml", self.model).returncode, 3)
        self.assertEqual(run("--json", "--format", "csv", self.model).returncode, 3)
        lines = run("--format", "jsonl", self.model).stdout.splitlines()
        self.assertEqual(len(lines), 2)


if __name__ == "__main__":
    unittest.main()
