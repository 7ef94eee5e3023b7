"""torch.distributed.checkpoint folders (issue 50): `.metadata` plus `*.distcp`, written by torch's own dcp.save, in
one process without a process group and by two gloo ranks on the CPU that each save their shards of DTensors
(Shard(0), Shard(1), Replicate over a CPU DeviceMesh). Every tensor's statistics are checked against float64
references computed from what torch's own DCP loader reads back into a state dict (as dcp_to_torch_save reads it)."""

import pickle
import socket
import subprocess
import sys
import unittest
import warnings

import torch
from torch.distributed.checkpoint import FileSystemReader
from torch.distributed.checkpoint import save as dcp_save
from torch.distributed.checkpoint._nested_dict import flatten_state_dict
from torch.distributed.checkpoint.default_planner import _EmptyStateDictLoadPlanner
from torch.distributed.checkpoint.state_dict_loader import _load_state_dict

from helpers import ScanTestCase, run, scan, tensors_by_name, warning_codes

# Two ranks, each saving its shards: `w` by rows, `v` by columns, `odd`'s 7 rows as 4 + 3, `b` replicated (DCP
# saves it once), and Adam-like state sharded as its parameter is.
RANKS = r"""
import os, sys, torch, torch.distributed as dist, torch.multiprocessing as mp
import torch.distributed.checkpoint as dcp
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import distribute_tensor, Replicate, Shard

def run(rank, world, out, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    mesh = init_device_mesh("cpu", (world,))
    g = torch.Generator().manual_seed(1)
    w, v, odd = torch.randn(6, 4, generator=g) * 300, torch.randn(5, 3, generator=g), torch.randn(7, 5, generator=g)
    b = (torch.randn(4, generator=g) * 1e-3).to(torch.bfloat16)
    model = {"layers.0.w": distribute_tensor(w, mesh, [Shard(0)]), "layers.0.v": distribute_tensor(v, mesh, [Shard(1)]),
             "odd": distribute_tensor(odd, mesh, [Shard(0)]), "norm.b": distribute_tensor(b, mesh, [Replicate()])}
    optim = {"state": {"layers.0.w": {"exp_avg": distribute_tensor(w * 1e-4, mesh, [Shard(0)])}}}
    dcp.save({"app": {"model": model, "optim": optim}}, checkpoint_id=out)
    dist.destroy_process_group()

if __name__ == "__main__":
    mp.spawn(run, args=(2, sys.argv[1], sys.argv[2]), nprocs=2)
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def saved_by_one_process(folder):
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
                  "ema": model[2].weight.detach().to(torch.float16)}, checkpoint_id=folder)


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
        script = self.tmp / "ranks.py"  # torch.multiprocessing's spawn imports the script's functions from a file
        script.write_text(RANKS)
        subprocess.run([sys.executable, script, folder, free_port()], check=True, capture_output=True, timeout=300)

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
        status, document, stderr = scan(folder)
        self.assertEqual(status, 2, stderr)
        error = document["models"][0]["error"]
        self.assertEqual(error["code"], code, error)
        self.assertIn(detail, error["message"])


if __name__ == "__main__":
    unittest.main()
