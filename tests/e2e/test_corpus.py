"""Real checkpoints from ../shared/corpus (skipped when it is absent, as in a user's clone)."""

import io
import pickle
import struct
import tarfile
import unittest

import torch
from safetensors.torch import load_file

from helpers import BATCHNORM_BUFFERS, CORPUS, ScanTestCase, messages, parameters_only, reference_precision, scan


WRAPPERS = ("state_dict", "model_state_dict", "model", "module", "net", "network")


def torch_reference(path):
    """What torch loads from `path`: a state dict, a checkpoint dict, or a (Script)Module."""
    try:
        return torch.load(path, map_location="cpu", weights_only=False)
    except RuntimeError:
        return torch.jit.load(path, map_location="cpu")


def find(obj, name):
    """The tensor a dotted precdetect name points at: through dict keys (which may contain dots, or be ints),
    list indexes and module attributes; a root wrapper key may have been stripped."""
    def walk(node, parts):
        if not parts:
            return node
        if isinstance(node, dict):
            for k in range(len(parts), 0, -1):
                key = ".".join(parts[:k])
                for candidate in (key, int(key)) if key.isdigit() else (key,):
                    if candidate in node and (found := walk(node[candidate], parts[k:])) is not None:
                        return found
            return None
        if isinstance(node, (list, tuple)):
            return walk(node[int(parts[0])], parts[1:]) if parts[0].isdigit() and int(parts[0]) < len(node) else None
        return walk(getattr(node, parts[0]), parts[1:]) if hasattr(node, parts[0]) else None

    parts = name.split(".")
    for wrapper in WRAPPERS:
        if isinstance(obj, dict) and wrapper in obj and (found := walk(obj[wrapper], parts)) is not None:
            return found
    found = walk(obj, parts)
    assert found is not None, name
    return found


@unittest.skipUnless(CORPUS.is_dir(), "../shared/corpus is not beside this checkout")
class Corpus(ScanTestCase):
    def safetensors_files(self):
        return sorted(CORPUS.glob("*/*.safetensors"))

    def test_every_real_safetensors_file_scans_with_exact_statistics_and_precision_counts(self):
        files = [f for f in self.safetensors_files() if f.stat().st_size > 16]
        self.assertGreaterEqual(len(files), 20)
        code, document, _ = scan(*files)
        self.assertEqual(code, 0)
        for path, model in zip(files, document["models"]):
            with self.subTest(path=path.relative_to(CORPUS)):
                tensors = load_file(path)
                self.assertIsNone(model["error"])
                self.assertSummary(model["summary"], parameters_only(tensors))
                reported = {t["name"]: t for t in model["tensors"]}
                self.assertEqual(set(reported), set(tensors))
                for name in tensors:
                    self.assertEqual(reported[name]["role"], "buffer" if name.endswith(BATCHNORM_BUFFERS) else "model")
                for name, tensor in tensors.items():
                    if tensor.is_floating_point():
                        self.assertTensorStats(reported[name], tensor, name)
                        self.assertEqual(reported[name]["precision"], reference_precision(tensor), name)

    def test_malformed_files_give_named_errors(self):
        cases = {
            "Hirvita6__LoRA-flower-diffusion__malformed/pytorch_lora_weights.safetensors": "header_too_small",
            "tracel-ai__burn__reader-fixtures/broken.pt": "unknown_format",
            "saltyduckegg__llama2xs.c__ckpt/model.bin": "unknown_format",
            "PANDASANG1231__llama_3.2-3B-huggingface-shard0__sharded": "missing_shard",
        }
        code, document, stderr = scan(*(CORPUS / c for c in cases))
        self.assertEqual(code, 2)
        for (case, expected), model in zip(cases.items(), document["models"]):
            self.assertEqual(model["error"]["code"], expected, case)
            self.assertIn(str(CORPUS / case.split("/")[0]), model["error"]["message"], case)
            self.assertIn(model["error"]["message"], stderr)

    def test_the_llama_shards_are_bf16_rmsnorm_weights(self):
        shards = sorted((CORPUS / "PANDASANG1231__llama_3.2-3B-huggingface-shard0__sharded").glob("*.safetensors"))
        code, document, _ = scan(*shards)
        self.assertEqual(code, 0)
        for model in document["models"]:
            self.assertEqual(model["summary"]["dtypes"], {"BF16": 1})
            self.assertEqual(model["summary"]["parameters"], 3072)

    def test_pytorch_files_match_torch_load(self):
        """Every tensor precdetect reports, found by its name in what torch itself loads. (The MNIST .pt and
        .safetensors hold different weights, whatever MANIFEST.md says: torch.load and safetensors disagree on
        them too, so each is checked against its own reference.)"""
        files = [p for p in sorted(CORPUS.glob("*/*")) if p.suffix in (".pt", ".pth", ".bin", ".jit")]
        files = [p for p in files if p.name not in ("broken.pt", "model.bin", "yolov5n.pt")]
        self.assertGreaterEqual(len(files), 15)
        code, document, _ = scan(*files)
        self.assertEqual(code, 0, [m["error"] for m in document["models"] if m["error"]])
        for path, model in zip(files, document["models"]):
            with self.subTest(path=path.relative_to(CORPUS)):
                reference = torch_reference(path)
                analyzed = [t for t in model["tensors"] if t["analyzed"]]
                self.assertTrue(analyzed or path.name == "rng_state.pth")
                for tensor in analyzed:
                    if model["format"] == "torchscript" and tensor["name"].startswith("constants."):
                        continue  # constants of the compiled code: torch exposes them only through the code
                    self.assertTensorStats(tensor, find(reference, tensor["name"]), tensor["name"])

    def test_the_pickled_yolov5_model_is_read_without_its_classes(self):
        code, document, _ = scan(CORPUS / "level0rd__PPE-Detector__yolov5n" / "yolov5n.pt")
        self.assertEqual(code, 0)
        model = document["models"][0]
        # MANIFEST.md: F16 299, F32 1, F64 1, I64 57. The parameters are F16 (model.parameters() of the pickled
        # module); its _buffers (BatchNorm statistics, the anchors) and plain attributes (grids) are buffers.
        self.assertEqual(model["summary"]["dtypes"], {"F16": 177})
        self.assertEqual(model["buffers"]["dtypes"], {"F16": 122, "F32": 1, "F64": 1, "I64": 57})
        roles = {t["name"]: t["role"] for t in model["tensors"]}
        self.assertEqual(roles["model.0.conv.weight"], "model")
        self.assertEqual(roles["model.0.bn.running_var"], "buffer")
        self.assertEqual(roles["model.24.anchor_grid.0"], "buffer")
        self.assertEqual(model["verdict"]["label"], "fp16|fp32")  # anchor_grid (373) and grid said bf16|fp32
        self.assertIn("model.0.conv.weight", {t["name"] for t in model["tensors"]})
        self.assertTrue(any("models.yolo.Model" in w for w in messages(model)))

    def test_the_tar_fixture_against_its_raw_storages(self):
        """burn's hand-made tar (torch itself cannot load it: no storage views, no tensors member, storage ids
        passed as bare tuples): expected values parsed here straight from its storages member."""
        path = CORPUS / "tracel-ai__burn__reader-fixtures" / "tar_multi_dtype.tar"
        dtypes = {"FloatStorage": torch.float32, "DoubleStorage": torch.float64, "LongStorage": torch.int64}
        storages = {}
        with tarfile.open(path) as tar:
            data = io.BytesIO(tar.extractfile("storages").read())
            for _ in range(pickle.load(data)):
                key, _location, storage_type = pickle.load(data)
                dtype = dtypes[storage_type.__name__]
                count = struct.unpack("<q", data.read(8))[0]
                storages[key] = torch.frombuffer(bytearray(data.read(count * dtype.itemsize)), dtype=dtype)
        code, document, _ = scan(path)
        self.assertEqual(code, 0)
        model = document["models"][0]
        self.assertEqual(model["format"], "pytorch-tar")
        reported = {t["name"]: t for t in model["tensors"]}
        self.assertTensorStats(reported["float_tensor"], storages["0"])
        self.assertTensorStats(reported["double_tensor"], storages["1"])
        self.assertEqual(model["summary"]["dtypes"], {"F32": 1, "F64": 1, "I64": 1})

    def test_the_whole_corpus_in_one_batch_never_crashes(self):
        folders = sorted(p for p in CORPUS.iterdir() if p.is_dir())
        code, document, _ = scan(*folders)
        self.assertEqual(code, 2)  # PyTorch-only folders and malformed files fail, by name
        # One model per folder, except the folders of independent checkpoints: one model per file there.
        several = {"huggingface__safetensors__samples": ["e.safetensors", "overall.safetensors"],
                   "saltyduckegg__llama2xs.c__ckpt": ["ckpt.pt", "model.bin"],
                   "tarekbzahid__nn_adder__scripted": ["checkpoint_1000.pth", "model_scripted.pt"],
                   "tracel-ai__burn__reader-fixtures": ["bfloat16.pt", "broken.pt", "checkpoint.pt", "float16.pt",
                                                        "legacy_shared_storage.pt", "legacy_with_offsets.pt",
                                                        "simple_legacy.pt"]}
        expected = []
        for folder in folders:
            expected += [str(folder / name) for name in several[folder.name]] if folder.name in several else [str(folder)]
        self.assertEqual([m["input"] for m in document["models"]], expected)
        for model in document["models"]:
            if model["error"]:
                # the folder's only file is 2 bytes / has 243 absent shards / holds a non-checkpoint .bin
                self.assertIn(model["error"]["code"], {"header_too_small", "missing_shard", "unknown_format"},
                              model["input"])
            else:
                self.assertGreater(model["summary"]["tensors"], 0, model["input"])
                self.assertIn(model["format"], {"safetensors", "pytorch-zip", "pytorch-legacy", "pytorch-tar",
                                                "torchscript"}, model["input"])


if __name__ == "__main__":
    unittest.main()
