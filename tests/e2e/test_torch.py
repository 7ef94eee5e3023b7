"""PyTorch checkpoints written at test time by the pinned torch: zip, legacy, TorchScript, whole modules, and
damaged or hostile files. Expected statistics come from torch in float64."""

import io
import json
import os
import pickle
import sys
import unittest
import zipfile
from pathlib import Path

import torch

from helpers import ScanTestCase, messages, run, scan

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pre04_tar import pre04_tar  # noqa: E402


def every_dtype_state_dict():
    torch.manual_seed(6)
    return {
        "f64": torch.randn(5, 7, dtype=torch.float64) * 9,
        "f32": torch.randn(33, 3),
        "f16": (torch.randn(40) * 300).half(),
        "bf16": (torch.randn(17, 4) * 500).bfloat16(),
        "f8_e4m3": (torch.randn(64) * 50).clamp(-448, 448).to(torch.float8_e4m3fn),  # _rebuild_tensor_v3
        "f8_e5m2": (torch.randn(64) * 900).to(torch.float8_e5m2),
        "u16": torch.arange(9, dtype=torch.int32).to(torch.uint16),
        "steps": torch.tensor(12),
        "mask": torch.tensor([True, False]),
    }


class ZipStateDicts(ScanTestCase):
    def scan_tensors(self, path):
        code, document, _ = scan(path)
        self.assertEqual(code, 0, document["models"][0]["error"])
        model = document["models"][0]
        return model, {t["name"]: t for t in model["tensors"]}

    def assertScansLikeTorch(self, path, tensors, format):
        """Every floating tensor and the summary against float64 references, and the reported format."""
        model, reported = self.scan_tensors(path)
        self.assertEqual(model["format"], format)
        for name, tensor in tensors.items():
            if tensor.is_floating_point():
                self.assertTensorStats(reported[name], tensor, name)
        self.assertSummary(model["summary"], tensors)

    def test_every_dtype_against_float64(self):
        tensors = every_dtype_state_dict()
        for protocol in (2, 4):
            with self.subTest(protocol=protocol):
                torch.save(tensors, self.tmp / f"p{protocol}.pt", pickle_protocol=protocol)
                self.assertScansLikeTorch(self.tmp / f"p{protocol}.pt", tensors, "pytorch-zip")

    def test_views_shared_storage_and_parameters(self):
        torch.manual_seed(7)
        base = torch.randn(6, 8)
        tensors = {"base": base, "rows": base[2:4], "transposed": base.t(), "column": base[:, 3],
                   "param": torch.nn.Parameter(torch.randn(3, 3) * 4)}
        torch.save(tensors, self.tmp / "views.pt")
        model, reported = self.scan_tensors(self.tmp / "views.pt")
        for name, tensor in tensors.items():
            self.assertTensorStats(reported[name], tensor, name)
        self.assertIsNone(reported["base"]["shares_storage_with"])
        self.assertEqual(reported["rows"]["shares_storage_with"], "base")
        self.assertEqual(reported["transposed"]["shares_storage_with"], "base")

    def test_wrappers_nested_dicts_and_optimizer_state(self):
        net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
        optimizer = torch.optim.Adam(net.parameters())
        net(torch.randn(3, 4)).sum().backward()
        optimizer.step()
        torch.save({"epoch": 3, "state_dict": net.state_dict(), "optimizer": optimizer.state_dict(),
                    "extra": {"nested": {"scale": torch.tensor([2.5, -7.0])}}}, self.tmp / "ckpt.pth")
        model, reported = self.scan_tensors(self.tmp / "ckpt.pth")
        for name, tensor in net.state_dict().items():
            self.assertTensorStats(reported[name], tensor, name)  # the wrapper key is stripped
            self.assertEqual(reported[name]["role"], "model")
        self.assertTensorStats(reported["extra.nested.scale"], torch.tensor([2.5, -7.0]))
        optimizer_tensors = [t for t in model["tensors"] if t["role"] == "optimizer"]
        self.assertEqual(len(optimizer_tensors), 3 * 4)  # step, exp_avg, exp_avg_sq per parameter (4 of them)
        self.assertSummary(model["summary"], net.state_dict() | {"extra.nested.scale": torch.tensor([2.5, -7.0])})

    def test_lightning_style_checkpoint_with_foreign_objects(self):
        """Protocol 5, an optimizer_states list, numpy arrays, a set, and a defaultdict (pickled as REDUCE then
        SETITEMS on the object) whose tensor is still found."""
        import collections
        import numpy as np

        net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.LayerNorm(4))
        extra = collections.defaultdict(int, ema=torch.full((3,), 7.0))
        torch.save({"state_dict": net.state_dict(), "optimizer_states": [{"state": {0: {"exp_avg": torch.ones(2)}}}],
                    "array": np.arange(5.0), "tags": {"a", "b"}, "hparams": extra}, self.tmp / "l.ckpt",
                   pickle_protocol=5)
        model, reported = self.scan_tensors(self.tmp / "l.ckpt")
        for name, tensor in net.state_dict().items():
            self.assertTensorStats(reported[name], tensor, name)
        self.assertTensorStats(reported["hparams.ema"], extra["ema"])
        self.assertEqual(reported["optimizer_states.0.state.0.exp_avg"]["role"], "optimizer")
        self.assertTrue(any("collections.defaultdict" in w for w in messages(model)))

    def test_a_bare_tensor_and_a_list(self):
        torch.save(torch.full((3,), 2.5), self.tmp / "bare.pt")
        torch.save([torch.ones(2), torch.full((2,), -4.0)], self.tmp / "list.pt")
        _, bare = self.scan_tensors(self.tmp / "bare.pt")
        self.assertTensorStats(bare["(root)"], torch.full((3,), 2.5))
        _, items = self.scan_tensors(self.tmp / "list.pt")
        self.assertTensorStats(items["1"], torch.full((2,), -4.0))

    def test_tied_weights_are_reported_twice_and_counted_once(self):
        embedding = torch.nn.Embedding(10, 4)
        head = torch.nn.Linear(4, 10, bias=False)
        head.weight = embedding.weight
        state = {"embed.weight": embedding.weight.detach(), "head.weight": head.weight.detach()}
        torch.save(state, self.tmp / "tied.pt")
        model, reported = self.scan_tensors(self.tmp / "tied.pt")
        self.assertEqual(reported["head.weight"]["shares_storage_with"], "embed.weight")
        self.assertEqual(model["summary"]["tensors"], 1)
        self.assertEqual(model["summary"]["parameters"], 40)
        rows = run("-v", self.tmp / "tied.pt").stdout
        self.assertRegex(rows, r"head\.weight .*\| shares embed\.weight")

    def test_legacy_format(self):
        tensors = {k: v for k, v in every_dtype_state_dict().items() if k not in ("f8_e4m3", "f8_e5m2", "u16")}
        torch.save(tensors, self.tmp / "legacy.pt", _use_new_zipfile_serialization=False)
        self.assertScansLikeTorch(self.tmp / "legacy.pt", tensors, "pytorch-legacy")

    def test_whole_pickled_module_is_read_without_its_classes(self):
        net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4))
        torch.save(net, self.tmp / "module.pt")
        model, reported = self.scan_tensors(self.tmp / "module.pt")
        for name, tensor in net.state_dict().items():
            self.assertIn(name, reported)
            if tensor.is_floating_point():
                self.assertTensorStats(reported[name], tensor, name)
        self.assertTrue(any("none was executed" in w for w in messages(model)))

    def test_torchscript_archive(self):
        net = torch.jit.script(torch.nn.Sequential(torch.nn.Linear(5, 3), torch.nn.Tanh()))
        net.save(str(self.tmp / "scripted.pt"))
        model, reported = self.scan_tensors(self.tmp / "scripted.pt")
        self.assertEqual(model["format"], "torchscript")
        for name, tensor in net.state_dict().items():
            self.assertTensorStats(reported[name], tensor, name)

    def test_sharded_bin_with_index(self):
        torch.manual_seed(8)
        tensors = {f"layer.{i}.weight": torch.randn(4, 4) * (i + 1) for i in range(4)}
        folder = self.tmp / "sharded"
        folder.mkdir()
        weight_map = {}
        for shard, names in enumerate((["layer.0.weight", "layer.1.weight"], ["layer.2.weight", "layer.3.weight"])):
            file = f"pytorch_model-0000{shard + 1}-of-00002.bin"
            torch.save({n: tensors[n] for n in names}, folder / file)
            weight_map |= {n: file for n in names}
        (folder / "pytorch_model.bin.index.json").write_text(json.dumps({"weight_map": weight_map}))
        (folder / "training_args.bin").write_bytes(pickle.dumps({"lr": 1e-4}))
        model, _ = self.scan_tensors(folder)
        self.assertEqual(len(model["files"]), 2)
        self.assertSummary(model["summary"], tensors)


def write_pre04_tar(path, tensors):
    Path(path).write_bytes(pre04_tar(tensors))


class Pre04Tar(ScanTestCase):
    def test_the_pre_0_4_tar_layout_matches_torch_legacy_load(self):
        torch.manual_seed(9)
        tensors = {"w": torch.randn(4, 5) * 3, "b": torch.randn(5, dtype=torch.float64), "n": torch.arange(3)}
        write_pre04_tar(self.tmp / "old.tar", tensors)
        reference = torch.load(self.tmp / "old.tar", weights_only=False)
        code, document, _ = scan(self.tmp / "old.tar")
        self.assertEqual(code, 0, document["models"][0]["error"])
        model = document["models"][0]
        self.assertEqual(model["format"], "pytorch-tar")
        reported = {t["name"]: t for t in model["tensors"]}
        for name in ("w", "b"):
            self.assertTensorStats(reported[name], reference[name], name)
        self.assertSummary(model["summary"], reference)


class Hostile(ScanTestCase):
    def test_code_in_the_pickle_is_never_run(self):
        marker = self.tmp / "pwned"

        class Payload:
            def __reduce__(self):
                return (os.system, (f"touch {marker}",))

        torch.save({"weight": torch.ones(3) * 2, "payload": Payload()}, self.tmp / "evil.pt")
        code, document, _ = scan(self.tmp / "evil.pt")
        self.assertFalse(marker.exists(), "the payload ran")
        self.assertEqual(code, 0)
        model = document["models"][0]
        self.assertEqual([t["name"] for t in model["tensors"]], ["weight"])
        self.assertEqual(model["summary"]["abs_max"], 2.0)
        self.assertTrue(any("system" in w and "none was executed" in w for w in messages(model)), model["warnings"])

    def rewrite_zip(self, source, target, change):
        """Copies a torch zip entry by entry, letting `change(name, data)` return new bytes, None to drop, or
        (data, compress) to compress the entry."""
        with zipfile.ZipFile(source) as zin, zipfile.ZipFile(target, "w") as zout:
            for info in zin.infolist():
                result = change(info.filename, zin.read(info.filename))
                if result is None:
                    continue
                data, method = result if isinstance(result, tuple) else (result, zipfile.ZIP_STORED)
                zout.writestr(info.filename, data, compress_type=method)

    def test_a_checkpoint_rezipped_with_deflate_reads_as_torch_load_reads_it(self):
        # torch.save stores its entries; a checkpoint re-zipped with compression is still one torch.load reads
        # (its miniz reader inflates), every entry or some of them deflated.
        torch.manual_seed(11)
        state = {"w": torch.randn(33, 17) * 50, "b": torch.randn(9).to(torch.bfloat16), "h": torch.randn(4, 4).half()}
        state["view"] = state["w"][3:9, ::2]  # a strided view of a deflated storage it shares
        torch.save(state, self.tmp / "stored.pt")
        self.rewrite_zip(self.tmp / "stored.pt", self.tmp / "deflated.pt", lambda name, data: (data, zipfile.ZIP_DEFLATED))
        self.rewrite_zip(self.tmp / "stored.pt", self.tmp / "pickle-deflated.pt",
                         lambda name, data: (data, zipfile.ZIP_DEFLATED) if name.endswith(".pkl") else data)
        stored = scan(self.tmp / "stored.pt")[1]["models"][0]
        for name in ("deflated.pt", "pickle-deflated.pt"):
            with self.subTest(name):
                loaded = torch.load(self.tmp / name)
                self.assertTrue(all(torch.equal(loaded[key], value) for key, value in state.items()))
                code, document, stderr = scan(self.tmp / name)
                self.assertEqual(code, 0, stderr)
                model = document["models"][0]
                for key in ("tensors", "summary", "verdict", "warnings"):
                    self.assertEqual(model[key], stored[key], key)
                reported = {t["name"]: t for t in model["tensors"]}
                for key, tensor in state.items():
                    self.assertTensorStats(reported[key], tensor, key)
                self.assertEqual(model["safety"]["verdict"], "safe")

    def test_big_endian_storages_are_byte_swapped(self):
        torch.manual_seed(10)
        tensors = {"w": torch.randn(7, 3) * 40, "b": torch.randn(5)}
        torch.save(tensors, self.tmp / "little.pt")

        def to_big_endian(name, data):
            if name.endswith("/byteorder"):
                return b"big"
            if "/data/" in name:  # float32 storages: reverse each 4-byte element
                return b"".join(data[i:i + 4][::-1] for i in range(0, len(data), 4))
            return data

        self.rewrite_zip(self.tmp / "little.pt", self.tmp / "big.pt", to_big_endian)
        code, document, _ = scan(self.tmp / "big.pt")
        self.assertEqual(code, 0, document["models"][0]["error"])
        reported = {t["name"]: t for t in document["models"][0]["tensors"]}
        for name, tensor in tensors.items():
            self.assertTensorStats(reported[name], tensor, name)

    def test_damaged_archives_give_named_errors(self):
        torch.save({"w": torch.randn(16, 16)}, self.tmp / "good.pt")
        raw = (self.tmp / "good.pt").read_bytes()
        (self.tmp / "truncated.pt").write_bytes(raw[: len(raw) // 2])
        self.rewrite_zip(self.tmp / "good.pt", self.tmp / "compressed.pt",  # a method torch.load does not read either
                         lambda name, data: (data, zipfile.ZIP_BZIP2) if name.endswith("data/0") else data)
        self.rewrite_zip(self.tmp / "good.pt", self.tmp / "no-record.pt",
                         lambda name, data: None if name.endswith("data/0") else data)
        self.rewrite_zip(self.tmp / "good.pt", self.tmp / "short-storage.pt",
                         lambda name, data: data[:100] if name.endswith("data/0") else data)
        self.rewrite_zip(self.tmp / "good.pt", self.tmp / "bad-opcode.pt",
                         lambda name, data: data[:2] + b"\xff" + data[3:] if name.endswith("data.pkl") else data)
        legacy = io.BytesIO()
        torch.save({"w": torch.randn(64)}, legacy, _use_new_zipfile_serialization=False)
        (self.tmp / "legacy-truncated.pt").write_bytes(legacy.getvalue()[:-40])
        cases = {"truncated.pt": "invalid_zip", "compressed.pt": "compressed_entry", "no-record.pt": "missing_record",
                 "short-storage.pt": "storage_too_small", "bad-opcode.pt": "invalid_pickle",
                 "legacy-truncated.pt": "invalid_legacy", "good.pt": None}
        code, document, _ = scan(*(self.tmp / name for name in cases))
        self.assertEqual(code, 2)
        for (name, expected), model in zip(cases.items(), document["models"]):
            self.assertEqual(model["error"] and model["error"]["code"], expected, name)
            if expected:
                self.assertIn(name, model["error"]["message"])


if __name__ == "__main__":
    unittest.main()
