"""`precdetect diff` against a float64 reference that follows seed 004's definitions (utils_bf16_sparsity.py)."""

import math
import unittest

import torch
from safetensors.torch import load_file, save_file

from helpers import CORPUS, ScanTestCase, run, scan

ETA = 1e-3


def bf16_changed(w, w_hat, eta=ETA):
    """Seed 004's bf16_approximately_equal, negated: both cast to bf16; equal when relatively within eta or both
    below 1e-10."""
    w16, h16 = w.float().bfloat16().double(), w_hat.float().bfloat16().double()
    equal = (h16 - w16).abs() <= eta * torch.maximum(w16.abs(), h16.abs())
    equal |= (w16.abs() < 1e-10) & (h16.abs() < 1e-10)
    return int((~equal).sum())


def nearest_rank(values, p):
    ordered = torch.sort(values.reshape(-1)).values
    return float(ordered[max(1, math.ceil(p / 100 * ordered.numel())) - 1])


def reference(pairs):
    """Totals over (base, other) tensor pairs, in float64."""
    a = torch.cat([x.double().reshape(-1) for x, _ in pairs])
    b = torch.cat([y.double().reshape(-1) for _, y in pairs])
    update = (b - a).abs()
    nonzero = a != 0
    relative = update[nonzero] / a[nonzero].abs()
    changed = sum(bf16_changed(x, y) for x, y in pairs)
    return {
        "numel": a.numel(), "changed": changed, "sparsity": 1 - changed / a.numel(),
        "max_abs_diff": float(update.max()), "mean_abs_diff": float(update.mean()),
        "rel_frobenius_change": float((b - a).norm() / a.norm()),
        "cosine": float((a * b).sum() / (a.norm() * b.norm())),
        "allclose": bool(torch.allclose(b, a, rtol=1e-5, atol=1e-8)),
        "rel_update_below_2^-8": float((relative < 2**-8).double().mean()),
        "rel_update_below_2^-7": float((relative < 2**-7).double().mean()),
        "abs_p50": nearest_rank(update, 50), "rel_p90": nearest_rank(relative, 90),
    }


def model(seed):
    g = torch.Generator().manual_seed(seed)
    tensors = {"model.embed_tokens.weight": torch.randn(64, 16, generator=g)}
    for layer in range(2):
        p = f"model.layers.{layer}."
        tensors[p + "self_attn.q_proj.weight"] = torch.randn(16, 16, generator=g) * 0.1
        tensors[p + "mlp.up_proj.weight"] = torch.randn(32, 16, generator=g) * 0.1
        tensors[p + "input_layernorm.weight"] = torch.ones(16) + 0.01 * torch.randn(16, generator=g)
    return tensors


def updated(tensors, seed):
    """Half the values moved by 2^-12 relative (invisible in bf16), a fifth by 2^-4 (visible), the rest kept."""
    g = torch.Generator().manual_seed(seed)
    out = {}
    for name, t in tensors.items():
        draw = torch.rand(t.shape, generator=g)
        scale = torch.where(draw < 0.5, 2**-12, torch.where(draw < 0.7, 2**-4, 0.0))
        out[name] = t * (1 + scale)
    return out


class Diff(ScanTestCase):
    def diff(self, *args, expect=0):
        result = run("diff", "--json", *args, check_json=True)
        self.assertEqual(result.returncode, expect, result.stderr)
        return result.document["pairs"]

    def assertStats(self, reported, expected, where):
        for key in ("numel", "changed", "allclose"):
            self.assertEqual(reported[key], expected[key], f"{where}: {key}")
        for key in ("sparsity", "max_abs_diff", "mean_abs_diff", "rel_frobenius_change", "cosine",
                    "rel_update_below_2^-8", "rel_update_below_2^-7"):
            self.assertAlmostEqual(reported[key], expected[key], delta=1e-9 * max(1, abs(expected[key])),
                                   msg=f"{where}: {key}")
        # percentiles come from exponent bins: the reported value is the upper edge 2^e of the bin [2^(e-1), 2^e)
        for key, value in (("abs_update_percentiles", expected["abs_p50"]), ("rel_update_percentiles", None)):
            edge = reported[key]["50" if value is not None else "90"]
            truth = value if value is not None else expected["rel_p90"]
            self.assertTrue(edge / 2 <= truth < edge or (truth == 0 and edge == 0), f"{where}: {key} {edge} {truth}")

    def test_updates_below_and_above_the_bf16_ulp(self):
        base, other = model(1), updated(model(1), 2)
        save_file(base, self.tmp / "base.safetensors")
        save_file(other, self.tmp / "other.safetensors")
        (pair,) = self.diff(self.tmp / "base.safetensors", self.tmp / "other.safetensors")
        self.assertTrue(pair["changed"])
        self.assertStats(pair["overall"], reference([(base[n], other[n]) for n in base]), "overall")
        for name in base:
            tensor = next(t for t in pair["tensors"] if t["name"] == name)
            self.assertStats(tensor, reference([(base[name], other[name])]), name)
        layer0 = [n for n in base if ".layers.0." in n]
        self.assertEqual([(l["stack"], l["index"]) for l in pair["layers"]], [("model.layers", 0), ("model.layers", 1)])
        self.assertStats(pair["layers"][0], reference([(base[n], other[n]) for n in layer0]), "layer 0")
        attention = [n for n in base if "self_attn" in n]
        self.assertStats(pair["groups"]["attention"], reference([(base[n], other[n]) for n in attention]), "attention")
        self.assertEqual(set(pair["groups"]), {"embedding", "attention", "mlp", "norm"})
        # scan and diff put every tensor in the same group (one tensor_groups for both)
        _, scanned, _ = scan(self.tmp / "base.safetensors")
        self.assertEqual({t["name"]: t["group"] for t in pair["tensors"]},
                         {t["name"]: t["group"] for t in scanned["models"][0]["tensors"]})
        # about 20% of values moved visibly: sparsity near 80%, and 2^-12 updates sit below 2^-8
        self.assertGreater(pair["overall"]["sparsity"], 0.7)
        self.assertLess(pair["overall"]["sparsity"], 0.9)

    def test_bitwise_mode_agrees_with_eta_below_the_bf16_spacing(self):
        base, other = model(3), updated(model(3), 4)
        save_file(base, self.tmp / "a.safetensors")
        save_file(other, self.tmp / "b.safetensors")
        (eta,) = self.diff(self.tmp / "a.safetensors", self.tmp / "b.safetensors")
        (bitwise,) = self.diff(self.tmp / "a.safetensors", self.tmp / "b.safetensors", "--bitwise")
        self.assertEqual(eta["overall"]["changed"], bitwise["overall"]["changed"])
        (loose,) = self.diff(self.tmp / "a.safetensors", self.tmp / "b.safetensors", "--eta", "0.1")
        self.assertEqual(loose["overall"]["changed"], sum(bf16_changed(base[n], other[n], 0.1) for n in base))

    def test_a_resaved_copy_is_identical_and_a_conversion_is_listed(self):
        base = model(5)
        save_file(base, self.tmp / "base.safetensors")
        torch.save(base, self.tmp / "copy.pt")
        save_file({n: t.bfloat16() for n, t in base.items()}, self.tmp / "bf16.safetensors")
        pairs = self.diff(self.tmp / "base.safetensors", self.tmp / "copy.pt", "--fail-if-changed")
        self.assertFalse(pairs[0]["changed"])
        self.assertTrue(all(t["identical"] for t in pairs[0]["tensors"]))
        pairs = self.diff(self.tmp / "base.safetensors", self.tmp / "bf16.safetensors", "--fail-if-changed", expect=1)
        self.assertEqual(len(pairs[0]["dtype_mismatch"]), len(base))
        self.assertEqual(pairs[0]["overall"]["changed"], 0)  # bf16 casts of the same values: nothing moved in bf16
        self.assertEqual(pairs[0]["outcome"], "changed")  # but float32's low bits are gone
        # bf16 back to float32: every value kept, in a wider dtype
        save_file({n: t.bfloat16().float() for n, t in base.items()}, self.tmp / "widened.safetensors")
        pairs = self.diff(self.tmp / "bf16.safetensors", self.tmp / "widened.safetensors", "--fail-if-changed")
        self.assertEqual(pairs[0]["outcome"], "lossless")
        self.assertTrue(pairs[0]["changed"])
        self.assertEqual(len(pairs[0]["dtype_mismatch"]), len(base))
        self.assertTrue(all(t["lossless"] and not t["identical"] for t in pairs[0]["tensors"]))

    def test_missing_extra_and_reshaped_tensors_are_listed(self):
        base = model(6)
        other = dict(base)
        del other["model.layers.1.mlp.up_proj.weight"]
        other["model.layers.2.mlp.up_proj.weight"] = torch.zeros(4)
        other["model.embed_tokens.weight"] = base["model.embed_tokens.weight"].reshape(16, 64).clone()
        save_file(base, self.tmp / "a.safetensors")
        save_file(other, self.tmp / "b.safetensors")
        (pair,) = self.diff(self.tmp / "a.safetensors", self.tmp / "b.safetensors")
        self.assertEqual(pair["missing"], ["model.layers.1.mlp.up_proj.weight"])
        self.assertEqual(pair["extra"], ["model.layers.2.mlp.up_proj.weight"])
        self.assertEqual(pair["shape_mismatch"], [{"name": "model.embed_tokens.weight", "base": "[64, 16]",
                                                   "other": "[16, 64]"}])
        self.assertTrue(pair["changed"])

    def test_a_trajectory_and_a_broken_checkpoint(self):
        steps = [model(7)]
        for seed in (8, 9):
            steps.append(updated(steps[-1], seed))
        for i, tensors in enumerate(steps):
            save_file(tensors, self.tmp / f"step{i}.safetensors")
        (self.tmp / "broken.safetensors").write_bytes(b"\x01")
        pairs = self.diff(self.tmp / "step0.safetensors", self.tmp / "step1.safetensors",
                          self.tmp / "broken.safetensors", self.tmp / "step2.safetensors", expect=2)
        self.assertEqual([p["other"].split("/")[-1] for p in pairs],
                         ["step1.safetensors", "broken.safetensors", "step2.safetensors"])
        self.assertEqual(pairs[1]["error"]["code"], "header_too_small")
        for field in ("changed", "outcome", "overall"):  # nothing compared: no outcome, never "identical"
            self.assertIsNone(pairs[1][field], field)
        expected = reference([(steps[0][n], steps[2][n]) for n in steps[0]])
        self.assertStats(pairs[2]["overall"], expected, "step 2")

    def test_an_unreadable_base_fails_every_pair(self):
        save_file(model(12), self.tmp / "ok.safetensors")
        (self.tmp / "base.safetensors").write_bytes(b"\x00" * 4)
        pairs = self.diff(self.tmp / "base.safetensors", self.tmp / "ok.safetensors", self.tmp / "ok.safetensors",
                          expect=2)
        self.assertEqual([p["error"]["code"] for p in pairs], ["header_too_small"] * 2)
        self.assertTrue(all(str(self.tmp / "base.safetensors") in p["error"]["message"] for p in pairs))

    def test_usage_errors(self):
        save_file(model(11), self.tmp / "a.safetensors")
        for args in (["diff"], ["diff", self.tmp / "a.safetensors"], ["diff", "--eta", "-1", self.tmp / "a.safetensors",
                                                                       self.tmp / "a.safetensors"]):
            result = run(*args)
            self.assertEqual(result.returncode, 3, args)
            self.assertEqual(result.stdout, "", args)

    def test_the_table_ranks_the_most_changed_tensors_first(self):
        base = model(10)
        other = dict(base, **{"model.layers.0.mlp.up_proj.weight": base["model.layers.0.mlp.up_proj.weight"] * 3})
        save_file(base, self.tmp / "a.safetensors")
        save_file(other, self.tmp / "b.safetensors")
        lines = run("diff", self.tmp / "a.safetensors", self.tmp / "b.safetensors", "--top", "2").stdout.splitlines()
        self.assertIn("changed", lines[0])
        self.assertTrue(lines[2].strip().startswith("model.layers.0.mlp.up_proj.weight"))
        self.assertEqual(len(lines), 4)

    @unittest.skipUnless(CORPUS.is_dir(), "../shared/corpus is not beside this checkout")
    def test_the_mnist_pair_of_the_corpus(self):
        folder = CORPUS / "tracel-ai__burn__mnist"
        a = torch.load(folder / "mnist.pt", map_location="cpu", weights_only=True)
        b = load_file(folder / "mnist.safetensors")
        (pair,) = self.diff(folder / "mnist.pt", folder / "mnist.safetensors")
        floats = [n for n in a if a[n].is_floating_point()]
        self.assertStats(pair["overall"], reference([(a[n], b[n]) for n in floats]), "mnist")


if __name__ == "__main__":
    unittest.main()
