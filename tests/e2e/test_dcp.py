"""torch.distributed.checkpoint folders (issue 50): `.metadata` plus `*.distcp`, written by torch's own dcp.save, in
one process without a process group and by two gloo ranks on the CPU that each save their shards of DTensors
(Shard(0), Shard(1), Replicate over a CPU DeviceMesh). Every tensor's statistics are checked against float64
references computed from what torch's own DCP loader reads back into a state dict (as dcp_to_torch_save reads it)."""

import json
import os
import pickle
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest
import warnings
from pathlib import Path

import torch
from torch.distributed.checkpoint import FileSystemReader, FileSystemWriter, HuggingFaceStorageWriter
from torch.distributed.checkpoint import load as dcp_load
from torch.distributed.checkpoint import save as dcp_save
from torch.distributed.checkpoint._nested_dict import flatten_state_dict
from torch.distributed.checkpoint.api import CheckpointException
from torch.distributed.checkpoint.default_planner import _EmptyStateDictLoadPlanner
from torch.distributed.checkpoint.filesystem import SerializationFormat
from torch.distributed.checkpoint.state_dict_loader import _load_state_dict

from helpers import ScanTestCase, run, scan, tensors_by_name, warning_codes

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import malicious_corpus  # noqa: E402

# Two ranks, each saving its shards: `w` by rows, `v` by columns, `odd`'s 7 rows as 4 + 3, `b` replicated (DCP
# saves it once), and Adam-like state sharded as its parameter is.
RANKS = r"""
import os, sys, torch, torch.distributed as dist, torch.multiprocessing as mp
import torch.distributed.checkpoint as dcp
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import distribute_tensor, Replicate, Shard

def run(rank, world, out, port, collectives):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    mesh = init_device_mesh("cpu", (world,))
    g = torch.Generator().manual_seed(1)
    w, v, odd = torch.randn(6, 4, generator=g) * 300, torch.randn(5, 3, generator=g), torch.randn(7, 5, generator=g)
    b = (torch.randn(4, generator=g) * 1e-3).to(torch.bfloat16)
    model = {"layers.0.w": distribute_tensor(w, mesh, [Shard(0)]), "layers.0.v": distribute_tensor(v, mesh, [Shard(1)]),
             "odd": distribute_tensor(odd, mesh, [Shard(0)]), "norm.b": distribute_tensor(b, mesh, [Replicate()])}
    optim = {"state": {"layers.0.w": {"exp_avg": distribute_tensor(w * 1e-4, mesh, [Shard(0)])}}}
    dcp.save({"app": {"model": model, "optim": optim}}, checkpoint_id=out, use_collectives=collectives)
    if not collectives:  # and the same through DCP's zstd extension, with collectives, in the same process group
        from torch.distributed.checkpoint._extension import ZStandard
        dcp.save({"app": {"model": model, "optim": optim}},
                 storage_writer=dcp.FileSystemWriter(out + "-zstd", _extensions=[ZStandard()]))
        # and the model through DCP's HuggingFace writer, each rank its own safetensors file, unconsolidated
        dcp.save(model, storage_writer=dcp.HuggingFaceStorageWriter(out + "-hf", save_distributed=True))
    if rank == 0:  # the whole tensors, beside the folder, for the tests' references
        torch.save({"app.model.layers.0.w": w, "app.model.layers.0.v": v, "app.model.odd": odd, "app.model.norm.b": b,
                    "app.optim.state.layers.0.w.exp_avg": w * 1e-4}, out + ".pt")
    dist.destroy_process_group()

if __name__ == "__main__":
    mp.spawn(run, args=(2, sys.argv[1], sys.argv[2], sys.argv[3] == "collectives"), nprocs=2)
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def save_by_two_ranks(tmp, folder, collectives=True):
    """RANKS run by two gloo processes; returns the whole tensors they saved shards of, by FQN."""
    script = tmp / "ranks.py"  # torch.multiprocessing's spawn imports the script's functions from a file
    script.write_text(RANKS)
    mode = "collectives" if collectives else "rank-local"
    subprocess.run([sys.executable, script, folder, free_port(), mode], check=True, capture_output=True, timeout=300)
    return torch.load(f"{folder}.pt")


def saved_by_one_process(folder, **options):
    """dcp.save of a small model's and its Adam optimizer's state dicts in one process, with no process group."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.LayerNorm(16), torch.nn.Linear(16, 4))
    with torch.no_grad():
        model[0].weight.mul_(500)  # beyond fp16's squares, as bf16-trained weights are
    optimizer = torch.optim.Adam(model.parameters())
    model(torch.randn(3, 8)).sum().backward()
    optimizer.step()
    with warnings.catch_warnings():  # "assuming the intent is to save in a single process"
        warnings.simplefilter("ignore")
        dcp_save({"model": model.state_dict(), "optim": optimizer.state_dict(), "step": 7,
                  "ema": model[2].weight.detach().to(torch.float16)}, checkpoint_id=folder, **options)


def loaded_by_torch(folder):
    """{fqn: tensor} as torch's DCP loader reads the folder back (dcp_to_torch_save's way: no model needed)."""
    state = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _load_state_dict(state, storage_reader=FileSystemReader(folder), planner=_EmptyStateDictLoadPlanner(),
                         no_dist=True)
    flat, _ = flatten_state_dict(state)
    return {name: value for name, value in flat.items() if torch.is_tensor(value)}


class DcpTest(ScanTestCase):
    def save_by_two_ranks(self, folder):
        return save_by_two_ranks(self.tmp, folder)

    def assertMatchesTorch(self, model, folder):
        """Every tensor torch loads, and no other, reported under its FQN with its whole shape and statistics."""
        expected = loaded_by_torch(folder)
        reported = tensors_by_name(model)
        self.assertEqual(set(reported), set(expected))
        for name, tensor in expected.items():
            self.assertEqual(reported[name]["shape"], list(tensor.shape), name)
            self.assertEqual(reported[name]["numel"], tensor.numel(), name)
            self.assertTensorStats(reported[name], tensor, name)
        return expected, reported

    def test_one_process_save_matches_torchs_own_load(self):
        folder = self.tmp / "step-100"
        saved_by_one_process(folder)
        code, document, stderr = scan(folder)
        self.assertEqual(code, 0, stderr)
        model = document["models"][0]
        self.assertEqual(model["format"], "dcp")
        expected, reported = self.assertMatchesTorch(model, folder)
        self.assertIn("model.0.weight", reported)  # FQNs as dcp.save wrote them
        for name, tensor in reported.items():
            self.assertEqual(tensor["role"], "optimizer" if name.startswith("optim.") else "model", name)
        self.assertEqual(reported["ema"]["dtype"], "F16")
        self.assertIn("optimizer_state", warning_codes(model))
        parameters = {n: t for n, t in expected.items() if not n.startswith("optim.")}
        self.assertSummary(model["summary"], parameters)
        self.assertEqual(model["safety"]["verdict"], "safe")

    def test_shards_of_two_ranks_are_joined_into_whole_tensors(self):
        folder = self.tmp / "ranks"
        self.save_by_two_ranks(folder)
        self.assertEqual(sorted(p.name for p in folder.iterdir()), [".metadata", "__0_0.distcp", "__1_0.distcp"])
        with open(folder / ".metadata", "rb") as file:
            chunks = {fqn: len(meta.chunks) for fqn, meta in pickle.load(file).state_dict_metadata.items()}
        self.assertEqual(chunks["app.model.layers.0.v"], 2)  # really split, by columns
        code, document, stderr = scan(folder)
        self.assertEqual(code, 0, stderr)
        model = document["models"][0]
        _, reported = self.assertMatchesTorch(model, folder)
        self.assertEqual(reported["app.model.odd"]["shape"], [7, 5])
        self.assertEqual(reported["app.model.norm.b"]["dtype"], "BF16")
        self.assertEqual(reported["app.optim.state.layers.0.w.exp_avg"]["role"], "optimizer")
        self.assertEqual(reported["app.model.layers.0.w"]["role"], "model")
        self.assertNotIn("model_parallel_joined", warning_codes(model))
        self.assertEqual(model["safety"]["verdict"], "safe")
        diff = run("diff", folder, folder)
        self.assertEqual(diff.returncode, 2, diff.stderr)
        self.assertIn("is stored in chunks", diff.stderr)

    def test_one_process_folder_diffs_against_itself_and_reads_with_pread(self):
        folder = self.tmp / "one"
        saved_by_one_process(folder)
        diff = run("diff", "--json", folder, folder, check_json=True)
        self.assertEqual(diff.returncode, 0, diff.stderr)
        mapped, pread = scan(folder), scan("--io", "pread", folder)
        self.assertEqual(pread[0], 0, pread[2])
        self.assertEqual(mapped[1]["models"][0]["tensors"], pread[1]["models"][0]["tensors"])

    def test_a_dtype_precdetect_cannot_read_is_named_once_per_tensor(self):
        folder = self.tmp / "complex"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dcp_save({"w": torch.full((3,), 2.5), "z": torch.ones(2, 2, dtype=torch.complex128)}, checkpoint_id=folder)
        code, document, stderr = scan(folder)
        self.assertEqual(code, 0, stderr)
        model = document["models"][0]
        self.assertEqual(list(tensors_by_name(model)), ["w"])
        unread = [w for w in model["warnings"] if w["code"] == "dtypes_not_read"]
        self.assertEqual(len(unread), 1, model["warnings"])
        self.assertIn("z (ComplexDoubleStorage)", unread[0]["message"])

    def test_the_safetensors_serialization_is_named_as_torch_cannot_load_it_either(self):
        folder = self.tmp / "safetensors-serialization"
        writer = FileSystemWriter(folder, serialization_format=SerializationFormat.SAFETENSORS)
        dcp_save({"w": torch.arange(12.0).reshape(3, 4)}, storage_writer=writer)
        with self.assertRaisesRegex(CheckpointException, "Weights only load failed"):  # handed to torch.load
            dcp_load({"w": torch.zeros(3, 4)}, storage_reader=FileSystemReader(folder))
        code, document, _ = scan(folder)
        self.assertEqual(code, 2)
        error = document["models"][0]["error"]
        self.assertEqual(error["code"], "invalid_dcp")
        self.assertIn("a safetensors file, as DCP's SAFETENSORS serialization writes it: not read", error["message"])

    def test_damaged_folders_are_named_errors(self):
        folder = self.tmp / "ranks"
        self.save_by_two_ranks(folder)
        metadata = (folder / ".metadata").read_bytes()
        data = (folder / "__1_0.distcp").read_bytes()
        (folder / "__1_0.distcp").write_bytes(data[: len(data) // 2])
        self.assertScanError(folder, "offset_past_end", "__1_0.distcp")
        (folder / "__1_0.distcp").unlink()
        self.assertScanError(folder, "missing_shard", "the data file `__1_0.distcp` it names is missing")
        (folder / "__1_0.distcp").write_bytes(data)
        (folder / ".metadata").write_bytes(metadata[: len(metadata) - 40])
        self.assertScanError(folder, "invalid_pickle", ".metadata")

    def assertScanError(self, folder, code, detail):
        assert_scan_error(self, folder, code, detail)


def require_zstandard():
    """DCP's zstd extension needs the zstandard package (requirements-tests.txt): a named failure without it."""
    from torch.distributed.checkpoint._extension import ZStandard
    if not ZStandard.is_available():
        raise RuntimeError("zstandard is missing: scripts/setup.sh --tests installs requirements-tests.txt")


def assert_scan_error(test, folder, code, detail):
    status, document, stderr = scan(folder)
    test.assertEqual(status, 2, stderr)
    error = document["models"][0]["error"]
    test.assertEqual(error["code"], code, error)
    test.assertIn(detail, error["message"])


class RankLocalTest(ScanTestCase):
    """dcp.save(..., use_collectives=False): every rank writes its own `__<rank>.metadata` naming only its own
    chunks, and dcp.load on rank r reads `__r.metadata` alone (one process: `__0.metadata`, rank 0's part).
    precdetect joins every rank's metadata into the whole checkpoint. Written once: by two gloo ranks (which also
    save the same shards with collectives through DCP's zstd extension, and the model through DCP's HuggingFace
    writer, each rank its own safetensors file), and by one process without a process group."""

    @classmethod
    def setUpClass(cls):
        require_zstandard()  # the ranks' zstd save
        cls._written = tempfile.TemporaryDirectory(prefix="precdetect-e2e-")
        root = Path(cls._written.name)
        cls.ranks = root / "ranks"
        cls.whole = save_by_two_ranks(root, cls.ranks, collectives=False)
        cls.one = root / "one"
        saved_by_one_process(cls.one, use_collectives=False)

    @classmethod
    def tearDownClass(cls):
        cls._written.cleanup()

    def test_the_ranks_metadata_are_joined_into_whole_tensors(self):
        self.assertEqual(sorted(p.name for p in self.ranks.iterdir()),
                         ["__0.metadata", "__0_0.distcp", "__1.metadata", "__1_0.distcp"])
        for rank in (0, 1):  # each rank's metadata indexes its own half of `v`, and `b` (replicated) whole
            with open(self.ranks / f"__{rank}.metadata", "rb") as file:
                metadata = pickle.load(file).state_dict_metadata
            self.assertEqual([c.sizes for c in metadata["app.model.layers.0.v"].chunks], [torch.Size([5, 2 - rank])])
            self.assertEqual(len(metadata["app.model.norm.b"].chunks), 1)
        code, document, stderr = scan(self.ranks)
        self.assertEqual(code, 0, stderr)
        model = document["models"][0]
        self.assertEqual(model["format"], "dcp")
        reported = tensors_by_name(model)
        self.assertEqual(set(reported), set(self.whole))
        for name, tensor in self.whole.items():  # every element of every rank, once
            self.assertEqual(reported[name]["shape"], list(tensor.shape), name)
            self.assertEqual(reported[name]["numel"], tensor.numel(), name)
            self.assertTensorStats(reported[name], tensor, name)
        self.assertEqual(reported["app.model.norm.b"]["dtype"], "BF16")
        self.assertEqual(reported["app.optim.state.layers.0.w.exp_avg"]["role"], "optimizer")
        self.assertEqual(model["safety"]["verdict"], "safe")

    def test_zstd_chunks_of_two_ranks_are_inflated_and_joined(self):
        zstd = Path(f"{self.ranks}-zstd")
        with open(zstd / ".metadata", "rb") as file:
            metadata = pickle.load(file)
        self.assertEqual(len(metadata.state_dict_metadata["app.model.layers.0.v"].chunks), 2)
        self.assertEqual({tuple(i.transform_descriptors) for i in metadata.storage_data.values()}, {("stream.zstd/1",)})
        code, document, stderr = scan(zstd)
        self.assertEqual(code, 0, stderr)
        reported = tensors_by_name(document["models"][0])
        self.assertEqual(set(reported), set(self.whole))
        for name, tensor in self.whole.items():
            self.assertEqual(reported[name]["numel"], tensor.numel(), name)
            self.assertTensorStats(reported[name], tensor, name)

    def test_huggingface_writers_rank_files_are_joined(self):
        folder = Path(f"{self.ranks}-hf")
        self.assertEqual(sorted(p.name for p in folder.iterdir()), [f"shard-0000{rank}-model-00001-of-00001.safetensors"
                                                                     for rank in (1, 2)])
        code, document, stderr = scan(folder)
        self.assertEqual(code, 0, stderr)
        self.assertEqual(len(document["models"]), 1)  # the ranks' files are one model
        model = document["models"][0]
        self.assertEqual(model["format"], "safetensors")
        reported = tensors_by_name(model)
        expected = {n[len("app.model."):]: t for n, t in self.whole.items() if n.startswith("app.model.")}
        self.assertEqual(set(reported), set(expected))
        for name, tensor in expected.items():
            self.assertEqual(reported[name]["shape"], list(tensor.shape), name)
            self.assertEqual(reported[name]["numel"], tensor.numel(), name)
            self.assertTensorStats(reported[name], tensor, name)
        one_rank = scan(folder / "shard-00002-model-00001-of-00001.safetensors")  # its chunks alone leave gaps
        self.assertEqual(one_rank[0], 2, one_rank[2])
        self.assertEqual(one_rank[1]["models"][0]["error"]["code"], "invalid_dcp")

    def test_one_process_without_collectives_matches_torchs_own_load(self):
        self.assertEqual(sorted(p.name for p in self.one.iterdir()), ["__0.metadata", "__0_0.distcp"])
        code, document, stderr = scan(self.one)
        self.assertEqual(code, 0, stderr)
        model = document["models"][0]
        self.assertEqual(model["format"], "dcp")
        expected = loaded_by_torch(self.one)  # dcp.load falls back to `__0.metadata` when `.metadata` is not there
        reported = tensors_by_name(model)
        self.assertEqual(set(reported), set(expected))
        for name, tensor in expected.items():
            self.assertEqual(reported[name]["numel"], tensor.numel(), name)
            self.assertTensorStats(reported[name], tensor, name)

    def test_every_ranks_metadata_is_judged(self):
        folder = self.tmp / "ranks"
        shutil.copytree(self.ranks, folder)
        with open(folder / "__1.metadata", "rb") as file:
            metadata = pickle.load(file)
        metadata.planner_data = {"x": malicious_corpus.Reduce(os.system, "true")}
        with open(folder / "__1.metadata", "wb") as file:
            pickle.dump(metadata, file)
        code, document, stderr = scan(folder)
        safety = document["models"][0]["safety"]
        self.assertEqual(safety["verdict"], "unsafe", safety)
        self.assertIn("system", json.dumps(safety))

    def test_damaged_rank_local_folders_are_named_errors(self):
        folder = self.tmp / "ranks"
        shutil.copytree(self.ranks, folder)
        rank1 = (folder / "__1.metadata").read_bytes()
        (folder / "__1.metadata").unlink()  # rank 0's chunks alone leave gaps
        assert_scan_error(self, folder, "invalid_dcp", "a gap")
        (folder / "__2.metadata").write_bytes(rank1)
        assert_scan_error(self, folder, "missing_shard", "the rank-local metadata `__1.metadata` is missing")
        (folder / "__2.metadata").unlink()
        (folder / "__1.metadata").write_bytes(rank1)
        (folder / "__0.metadata").unlink()
        assert_scan_error(self, folder, "invalid_dcp", "without the .metadata")


class HuggingFaceWriterTest(ScanTestCase):
    """DCP's HuggingFaceStorageWriter writes no DCP metadata: safetensors files, and a model.safetensors.index.json
    that maps each FQN to its file, read as any sharded safetensors model. Written once in one process: by rank 0's
    writer with two files, and by the distributed writer with consolidation (whole tensors beside a `sharded`
    folder of the ranks' own files)."""

    @classmethod
    def setUpClass(cls):
        cls._written = tempfile.TemporaryDirectory(prefix="precdetect-e2e-")
        root = Path(cls._written.name)
        generator = torch.Generator().manual_seed(2)
        cls.state = {"layers.0.w": torch.randn(6, 4, generator=generator) * 300,
                     "layers.0.b": (torch.randn(4, generator=generator) * 1e-3).to(torch.bfloat16),
                     "norm.w": torch.randn(5, generator=generator).to(torch.float16)}
        cls.two_files, cls.consolidated = root / "two-files", root / "consolidated"
        with warnings.catch_warnings():  # "assuming the intent is to save in a single process"
            warnings.simplefilter("ignore")
            mapping = {"layers.0.w": 1, "layers.0.b": 2, "norm.w": 2}
            dcp_save(dict(cls.state), storage_writer=HuggingFaceStorageWriter(str(cls.two_files), mapping))
            dcp_save(dict(cls.state), storage_writer=HuggingFaceStorageWriter(
                str(cls.consolidated), save_distributed=True, enable_consolidation=True))

    @classmethod
    def tearDownClass(cls):
        cls._written.cleanup()

    def assertReadsTheSavedTensors(self, folder):
        code, document, stderr = scan(folder)
        self.assertEqual(code, 0, stderr)
        model = document["models"][0]
        self.assertEqual(model["format"], "safetensors")
        reported = tensors_by_name(model)
        self.assertEqual(set(reported), set(self.state))
        for name, tensor in self.state.items():
            self.assertEqual(reported[name]["shape"], list(tensor.shape), name)
            self.assertEqual(reported[name]["numel"], tensor.numel(), name)
            self.assertTensorStats(reported[name], tensor, name)
        self.assertEqual(reported["layers.0.b"]["dtype"], "BF16")
        self.assertSummary(model["summary"], self.state)

    def test_rank_zeros_writer_is_a_sharded_safetensors_model(self):
        self.assertEqual(sorted(p.name for p in self.two_files.iterdir()),
                         ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                          "model.safetensors.index.json"])
        self.assertReadsTheSavedTensors(self.two_files)

    def test_consolidated_writer_is_read_through_its_index(self):
        self.assertEqual(sorted(p.name for p in self.consolidated.iterdir()),
                         ["model-00001-of-00001.safetensors", "model.safetensors.index.json", "sharded"])
        self.assertReadsTheSavedTensors(self.consolidated)


class ZstdTest(ScanTestCase):
    """DCP's zstd stream transform (FileSystemWriter(_extensions=[ZStandard()])): every entry of the `.distcp`
    files is a zstd frame of its torch.save archive, `stream.zstd/1` in its storage's transform_descriptors.
    precdetect inflates each within what its chunk may hold. Written once, in one process."""

    @classmethod
    def setUpClass(cls):
        require_zstandard()
        from torch.distributed.checkpoint._extension import ZStandard
        cls._written = tempfile.TemporaryDirectory(prefix="precdetect-e2e-")
        cls.folder = Path(cls._written.name) / "zstd"
        generator = torch.Generator().manual_seed(3)
        cls.state = {"model.w": torch.randn(6, 4, generator=generator) * 300,
                     "model.b": (torch.randn(4, generator=generator) * 1e-3).to(torch.bfloat16)}
        with warnings.catch_warnings():  # "assuming the intent is to save in a single process"
            warnings.simplefilter("ignore")
            dcp_save({**cls.state, "step": 7}, storage_writer=FileSystemWriter(cls.folder, _extensions=[ZStandard()]))

    @classmethod
    def tearDownClass(cls):
        cls._written.cleanup()

    def test_zstd_entries_are_inflated_and_read(self):
        with open(self.folder / ".metadata", "rb") as file:
            storage = pickle.load(file).storage_data
        self.assertEqual({tuple(info.transform_descriptors) for info in storage.values()}, {("stream.zstd/1",)})
        code, document, stderr = scan(self.folder)
        self.assertEqual(code, 0, stderr)
        model = document["models"][0]
        self.assertEqual(model["format"], "dcp")
        reported = tensors_by_name(model)
        self.assertEqual(set(reported), set(self.state))
        for name, tensor in self.state.items():
            self.assertEqual(reported[name]["numel"], tensor.numel(), name)
            self.assertTensorStats(reported[name], tensor, name)
        self.assertEqual(model["safety"]["verdict"], "safe")
        torch_loaded = loaded_by_torch(self.folder)  # torch's own loader inflates them alike
        self.assertTrue(all(torch.equal(torch_loaded[name], self.state[name]) for name in self.state))

    def test_a_frame_that_inflates_past_its_chunk_is_named(self):
        import zstandard
        folder = self.tmp / "zstd"
        shutil.copytree(self.folder, folder)
        with open(folder / ".metadata", "rb") as file:
            metadata = pickle.load(file)
        bomb = zstandard.ZstdCompressor().compress(bytes(200_000))  # more than 4 elements' archive may hold
        info = next(i for k, i in metadata.storage_data.items() if k.fqn == "model.b")
        with open(folder / info.relative_path, "ab") as file:
            info.offset, info.length = file.tell(), len(bomb)
            file.write(bomb)
        with open(folder / ".metadata", "wb") as file:
            pickle.dump(metadata, file)
        assert_scan_error(self, folder, "compressed_entry", "decompresses past the 65600 bytes its entry may hold")


if __name__ == "__main__":
    unittest.main()
