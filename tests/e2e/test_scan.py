"""`precdetect --json` on safetensors files written at test time: every statistic against torch in float64."""

import json
import struct
import unittest

import torch
from safetensors.torch import save_file

from helpers import ScanTestCase, messages, run, scan


def planted(tensor, *values):
    """`tensor` with its first values replaced by `values` (zeros, NaN, Inf, subnormals, boundaries)."""
    flat = tensor.reshape(-1).clone()
    flat[: len(values)] = torch.tensor(values, dtype=torch.float64).to(tensor.dtype)
    return flat.reshape(tensor.shape)


def every_dtype_model():
    torch.manual_seed(0)
    return {
        "f64": planted(torch.randn(7, 9, dtype=torch.float64) * 40, 0.0, float("nan"), 1e-310, -float("inf")),
        "f32": planted(torch.randn(33, 17) * 3, 0.0, float("nan"), 1e-42, -3e38),
        "f16": planted((torch.randn(64, 5) * 7).half(), 0.0, float("nan"), 2**-24, 65504.0, -2**-14),
        "bf16": planted((torch.randn(129, 3) * 300).bfloat16(), 0.0, float("nan"), 1e-39, -float("inf")),
        "f8_e4m3": planted((torch.randn(50) * 100).clamp(-448, 448).to(torch.float8_e4m3fn), 448.0, 2**-9, 0.0),
        "f8_e5m2": planted((torch.randn(50) * 1000).to(torch.float8_e5m2), 57344.0, 2**-16, float("nan")),
        "scalar": torch.tensor(-2.5),
        "empty": torch.zeros(0, 4),
        "all_zero": torch.zeros(3, 3, dtype=torch.bfloat16),
        "steps": torch.arange(12, dtype=torch.int64),
        "mask": torch.tensor([True, False, True]),
        "ids": torch.arange(5, dtype=torch.int32),
        "bytes": torch.arange(7, dtype=torch.uint8),
    }


class EveryDtype(ScanTestCase):
    def test_every_tensor_and_the_summary_match_float64(self):
        tensors = every_dtype_model()
        save_file(tensors, self.tmp / "model.safetensors", metadata={"format": "pt"})
        code, document, _ = scan(self.tmp)
        self.assertEqual(code, 0)
        self.assertEqual(document["schema_version"], 14)
        model = document["models"][0]
        self.assertIsNone(model["error"])
        self.assertEqual(model["format"], "safetensors")
        self.assertEqual(model["files"], [str(self.tmp / "model.safetensors")])
        reported = {t["name"]: t for t in model["tensors"]}
        self.assertEqual(set(reported), set(tensors))
        for name, tensor in tensors.items():
            self.assertEqual(reported[name]["shape"], list(tensor.shape), name)
            if tensor.is_floating_point():
                self.assertTensorStats(reported[name], tensor, name)
            else:
                self.assertFalse(reported[name]["analyzed"], name)
                self.assertIsNone(reported[name]["abs_max"], name)
        self.assertSummary(model["summary"], tensors)
        self.assertEqual(model["summary"]["nans"], 5)  # f64, f32, f16, bf16, f8_e5m2
        self.assertEqual(model["summary"]["infs"], 2)
        self.assertEqual(model["summary"]["abs_max"], "inf")
        self.assertTrue(any("NaN" in w for w in messages(model)))

    def test_empty_and_all_zero_tensors_follow_the_seed_definitions(self):
        tensors = {"zero": torch.zeros(4), "w": torch.tensor([0.5, -2.0]), "empty": torch.zeros(0)}
        save_file(tensors, self.tmp / "model.safetensors")
        _, document, _ = scan(self.tmp)
        summary = document["models"][0]["summary"]
        self.assertEqual(summary["abs_min"], 0.0)  # zeros count toward abs min
        self.assertEqual(summary["norm_min"], summary["norm_max"])  # the all-zero norm is skipped
        self.assertAlmostEqual(summary["norm_max"], (0.25 + 4.0) ** 0.5, delta=1e-12)
        empty = next(t for t in document["models"][0]["tensors"] if t["name"] == "empty")
        self.assertIsNone(empty["abs_min"])
        self.assertEqual(empty["norm"], 0.0)


class Misaligned(ScanTestCase):
    def test_tensors_at_odd_offsets_are_read_exactly(self):
        """Many writers do not align tensors; a 3-byte U8 tensor shifts every later tensor off its alignment."""
        torch.manual_seed(1)
        values = {"a_f32": torch.randn(1001), "b_f64": torch.randn(77, dtype=torch.float64),
                  "c_bf16": torch.randn(333).bfloat16()}
        entries, data = {"pad": {"dtype": "U8", "shape": [3], "data_offsets": [0, 3]}}, b"\x01\x02\x03"
        for name, tensor in values.items():
            raw = tensor.view(torch.uint8).numpy().tobytes()
            dtype = {torch.float32: "F32", torch.float64: "F64", torch.bfloat16: "BF16"}[tensor.dtype]
            entries[name] = {"dtype": dtype, "shape": list(tensor.shape), "data_offsets": [len(data), len(data) + len(raw)]}
            data += raw
        header = json.dumps(entries).encode()
        header += b" " * ((8 - len(header)) % 8 + 1)  # an odd header length: the data section starts unaligned
        (self.tmp / "odd.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + data)
        for io in ("mmap", "pread"):  # pread: into our own aligned buffers
            code, document, _ = scan("--io", io, self.tmp / "odd.safetensors")
            self.assertEqual(code, 0)
            reported = {t["name"]: t for t in document["models"][0]["tensors"]}
            for name, tensor in values.items():
                self.assertTensorStats(reported[name], tensor, f"{name}, --io {io}")
        self.assertEqual(run("--io", "nfs", self.tmp).returncode, 3)


class Selection(ScanTestCase):
    def test_include_and_exclude_select_what_the_summary_covers(self):
        """Seed 000's t5-3b demo: the blocks alone give a different (smaller) abs max than the whole model."""
        torch.manual_seed(2)
        tensors = {
            "shared.weight": torch.randn(100, 8) * 50,
            "encoder.block.0.layer.0.SelfAttention.q.weight": torch.randn(8, 8),
            "decoder.block.0.layer.0.SelfAttention.q.weight": torch.randn(8, 8) * 2,
            "encoder.final_layer_norm.weight": torch.ones(8) * 30,
        }
        save_file(tensors, self.tmp / "model.safetensors")
        _, whole, _ = scan(self.tmp)
        _, blocks, _ = scan(self.tmp, "--include", r"(encoder|decoder)\.block")
        _, no_shared, _ = scan(self.tmp, "--exclude", "^shared")
        block_tensors = {k: v for k, v in tensors.items() if ".block." in k}
        self.assertSummary(whole["models"][0]["summary"], tensors)
        self.assertSummary(blocks["models"][0]["summary"], block_tensors)
        self.assertSummary(no_shared["models"][0]["summary"], {k: v for k, v in tensors.items() if k != "shared.weight"})
        self.assertEqual(len(blocks["models"][0]["tensors"]), 2)

    def test_a_filter_that_matches_nothing_is_a_warning_not_an_error(self):
        save_file({"w": torch.ones(2)}, self.tmp / "model.safetensors")
        code, document, _ = scan(self.tmp, "--include", "nothing-matches")
        self.assertEqual(code, 0)
        model = document["models"][0]
        self.assertEqual(model["verdict"]["label"], "unknown")
        self.assertTrue(any("--include" in w for w in messages(model)))


class Verdicts(ScanTestCase):
    def test_small_weights_leave_fp16_or_fp32_and_large_bf16_or_fp32_with_risk(self):
        torch.manual_seed(3)
        save_file({"w": torch.randn(64, 64).half() * 0.05}, self.tmp / "small.safetensors")
        save_file({"w": (torch.randn(64, 64) * 0.05).bfloat16(), "ln": torch.full((4,), 250.0).bfloat16()},
                  self.tmp / "large.safetensors")
        _, document, _ = scan(self.tmp / "small.safetensors", self.tmp / "large.safetensors")
        small, large = (m["verdict"] for m in document["models"])
        self.assertEqual((small["label"], small["candidates"], small["fp16_risk"]), ("fp16|fp32", ["fp16", "fp32"], False))
        self.assertEqual((large["label"], large["candidates"], large["fp16_risk"]), ("bf16|fp32", ["bf16", "fp32"], True))
        fired = [e["rule"] for e in large["evidence"] if e["fired"]]
        self.assertEqual(fired, ["abs-max-above-1e2"])
        self.assertEqual(large["evidence"][1]["observations"][0]["observed"], 250.0)
        self.assertEqual(large["hints"]["stored_dtypes"], ["BF16"])

    def test_config_dtype_is_a_hint(self):
        save_file({"w": torch.ones(4)}, self.tmp / "model.safetensors")
        (self.tmp / "config.json").write_text(json.dumps({"text_config": {"torch_dtype": "bfloat16"}}))
        _, document, _ = scan(self.tmp)
        self.assertEqual(document["models"][0]["verdict"]["hints"]["config_dtype"], "bfloat16")
        (self.tmp / "config.json").write_text(json.dumps({"dtype": "float16", "torch_dtype": "float32"}))
        _, document, _ = scan(self.tmp)
        self.assertEqual(document["models"][0]["verdict"]["hints"]["config_dtype"], "float16")
        (self.tmp / "config.json").write_text("{ not json")
        code, document, _ = scan(self.tmp)
        self.assertEqual(code, 0)
        self.assertIsNone(document["models"][0]["verdict"]["hints"]["config_dtype"])


if __name__ == "__main__":
    unittest.main()
