"""Model layouts: sharded checkpoints with an index, and Hugging Face cache ids resolved offline."""

import json
import os
import unittest

import torch
from safetensors.torch import save_file

from helpers import ScanTestCase, messages, scan

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def sample_model():
    torch.manual_seed(4)
    return {f"layers.{i}.weight": (torch.randn(16, 16) * (i + 1)).bfloat16() for i in range(5)} | {
        "embed.weight": torch.randn(32, 16).bfloat16() * 150}


def save_sharded(tensors, folder, shards=3, index_name="model.safetensors.index.json"):
    """Writes `tensors` over `shards` files with an HF-style index, as transformers names them."""
    folder.mkdir(parents=True, exist_ok=True)
    names = sorted(tensors)
    weight_map = {}
    for i in range(shards):
        shard = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        part = {n: tensors[n] for n in names[i::shards]}
        save_file(part, folder / shard, metadata={"format": "pt"})
        weight_map |= {n: shard for n in part}
    total = sum(t.numel() * t.element_size() for t in tensors.values())
    (folder / index_name).write_text(json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}))
    return weight_map


class Sharded(ScanTestCase):
    def test_sharded_model_scans_like_the_single_file(self):
        tensors = sample_model()
        save_sharded(tensors, self.tmp / "sharded")
        save_file(tensors, self.tmp / "single.safetensors")
        code, document, _ = scan(self.tmp / "sharded", self.tmp / "sharded" / "model.safetensors.index.json",
                                 self.tmp / "single.safetensors")
        self.assertEqual(code, 0)
        folder, index, single = document["models"]
        self.assertEqual(len(folder["files"]), 3)
        self.assertSummary(folder["summary"], tensors)
        for key in ("summary", "verdict"):
            self.assertEqual(folder[key], single[key], key)
            self.assertEqual(folder[key], index[key], key)

    def test_a_tensor_missing_from_its_shard_is_named(self):
        weight_map = save_sharded(sample_model(), self.tmp / "m")
        index = json.loads((self.tmp / "m" / "model.safetensors.index.json").read_text())
        index["weight_map"]["ghost.weight"] = next(iter(weight_map.values()))
        (self.tmp / "m" / "model.safetensors.index.json").write_text(json.dumps(index))
        code, document, stderr = scan(self.tmp / "m")
        self.assertEqual(code, 2)
        error = document["models"][0]["error"]
        self.assertEqual(error["code"], "missing_tensor")
        self.assertIn("ghost.weight", error["message"])
        self.assertIn(str(self.tmp / "m"), stderr)

    def test_a_missing_shard_is_named(self):
        save_sharded(sample_model(), self.tmp / "m")
        os.remove(self.tmp / "m" / "model-00002-of-00003.safetensors")
        code, document, _ = scan(self.tmp / "m")
        self.assertEqual(code, 2)
        self.assertEqual(document["models"][0]["error"]["code"], "missing_shard")
        self.assertIn("model-00002-of-00003.safetensors", document["models"][0]["error"]["message"])

    def test_tensors_outside_the_index_are_scanned_with_a_warning(self):
        tensors = sample_model()
        save_sharded(tensors, self.tmp / "m", shards=1)
        index_path = self.tmp / "m" / "model.safetensors.index.json"
        index = json.loads(index_path.read_text())
        del index["weight_map"]["layers.0.weight"]
        index_path.write_text(json.dumps(index))
        code, document, _ = scan(self.tmp / "m")
        self.assertEqual(code, 0)
        self.assertSummary(document["models"][0]["summary"], tensors)
        self.assertTrue(any("not listed in the index" in w for w in messages(document["models"][0])))


class HfCache(ScanTestCase):
    def make_cache(self, root, repo="acme/tiny-bf16", commit=COMMIT, tag=None):
        """The hub cache layout: blobs/ hold the files, snapshots/<commit>/ relative symlinks, refs/ commits."""
        tensors = sample_model()
        repo_dir = root / ("models--" + repo.replace("/", "--"))
        (repo_dir / "blobs").mkdir(parents=True, exist_ok=True)
        snapshot = repo_dir / "snapshots" / commit
        snapshot.mkdir(parents=True)
        save_file(tensors, repo_dir / "blobs" / f"sha256-{commit[:8]}")
        (snapshot / "model.safetensors").symlink_to(f"../../blobs/sha256-{commit[:8]}")
        (repo_dir / "refs").mkdir(exist_ok=True)
        (repo_dir / "refs" / (tag or "main")).write_text(commit)
        return tensors

    def test_hub_id_resolves_through_refs_and_symlinks(self):
        tensors = self.make_cache(self.tmp / "hub")
        code, document, _ = scan("acme/tiny-bf16", env={"HF_HUB_CACHE": str(self.tmp / "hub")})
        self.assertEqual(code, 0)
        model = document["models"][0]
        self.assertEqual(model["input"], "acme/tiny-bf16")
        self.assertTrue(model["path"].endswith(f"snapshots/{COMMIT}"))
        self.assertSummary(model["summary"], tensors)

    def test_revisions_by_tag_and_by_commit(self):
        other = "f" * 40
        self.make_cache(self.tmp / "hub")
        self.make_cache(self.tmp / "hub", commit=other, tag="v2")
        env = {"HF_HUB_CACHE": str(self.tmp / "hub")}
        for id_ in ("acme/tiny-bf16@v2", f"acme/tiny-bf16@{other}"):
            code, document, _ = scan(id_, env=env)
            self.assertEqual(code, 0, id_)
            self.assertTrue(document["models"][0]["path"].endswith(other), id_)

    def test_hf_home_is_the_fallback_and_a_miss_is_named(self):
        tensors = self.make_cache(self.tmp / "home" / "hub")
        env = {"HF_HOME": str(self.tmp / "home"), "HF_HUB_CACHE": "", "HUGGINGFACE_HUB_CACHE": ""}
        code, document, _ = scan("acme/tiny-bf16", env=env)
        self.assertEqual(code, 0)
        self.assertSummary(document["models"][0]["summary"], tensors)
        code, document, _ = scan("acme/absent", env=env)
        self.assertEqual(code, 2)
        self.assertEqual(document["models"][0]["error"]["code"], "hf_cache_miss")
        self.assertIn("scan it from the Hub as `hf://acme/absent`", document["models"][0]["error"]["message"])


if __name__ == "__main__":
    unittest.main()
