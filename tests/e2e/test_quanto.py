"""optimum-quanto's quantized safetensors (issue 50), each file written by optimum-quanto 0.2.7 itself on this CPU and
each reference its own dequantize(), statistics then taken in float64:

- quantize(model, weights=...) + freeze + safetensors' save_file(model.state_dict()), with quantization_map(model)
  saved as quantization_map.json (quanto's README): qint8, qint4, qint2 and qfloat8 (e4m3fn) at float32, float16 and
  bfloat16 (qint4 in bfloat16 takes quanto's TinyGemm layout on a CPU, which it packs back when saving), qfloat8_e5m2
  at float16; Linear layers grouped (256 inputs: groups of 128), per row (96 inputs), of one output row (one scale
  per value, or for 8 bits one for the tensor) and two Conv2d (per row; groups of 96);
- QuantizedModelForCausalLM.quantize + save_pretrained (model.safetensors beside quanto_qmap.json) of a small Llama;
- a zero point (an integer shift: quanto's optimizer with zeropoint=True, quantize_weight, save_to_state_dict);
- a module quantizing only its activations beside qint8 ones: its float weight read as stored;
- the same state dict written by torch.save (pytorch_model.bin), read as the safetensors file is.

The reference reads the file back with quanto's own loaders (Weight{QBits,QBytes}Tensor.load_from_state_dict). Its
packed codes are unpacked by quanto's torch kernel of quanto::unpack (its default, which its C++ extension mirrors):
on a CPU, the dispatcher would otherwise compile that extension at first use, a minute on this machine."""

import json
import unittest

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from helpers import ScanTestCase, reference_summary, requires, scan, small_llama, tensors_by_name

try:
    import optimum.quanto as quanto
except ImportError:  # the test suite's reference writer (requirements-tests.txt)
    quanto = None


def quantized_modules(model):
    """{name: module} of `model`'s frozen quanto modules."""
    return {name: module for name, module in model.named_modules()
            if isinstance(module, quanto.QModuleMixin) and module.weight_qtype is not None}


def reference(stored, name, module):
    """Module `name`'s weight as quanto reads it from the file `stored` (a safe_open) and dequantizes it."""
    from optimum.quanto.tensor.weights import WeightQBitsTensor, WeightQBytesTensor

    prefix = f"{name}.weight."
    state = {key: stored.get_tensor(key) for key in stored.keys() if key.startswith(prefix)}
    qtype, size, stride = module.weight_qtype, module.weight.size(), module.weight.stride()
    if qtype.bits == 8:
        weight = WeightQBytesTensor.load_from_state_dict(state, prefix, qtype, 0, size, stride, None, [])
        return weight.dequantize()
    weight = WeightQBitsTensor.load_from_state_dict(state, prefix, qtype, 0, module.weight_group_size, size, stride,
                                                    [])
    # quanto's own torch kernel of quanto::unpack (registered as its default), rather than the CPU one
    torch_kernel = torch._C.DispatchKeySet(torch._C.DispatchKey.CompositeExplicitAutograd)
    unpacked = torch.ops.quanto.unpack.default.redispatch(torch_kernel, weight._data._data, qtype.bits)
    weight._data = unpacked[: weight._data.shape[0]]  # as PackedTensor.unpack cuts it
    return weight.dequantize()


def layers(dtype):
    """Linear layers grouped (256 inputs), per row (96), of one output row (128 inputs: one 8-bit scale for the
    tensor, one 2- or 4-bit scale per value), a Conv2d per row (72 inputs) and one in groups of 96 (576); seeded."""
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(256, 96), torch.nn.Linear(96, 5), torch.nn.Linear(128, 1),
                               torch.nn.Conv2d(8, 6, 3), torch.nn.Conv2d(64, 32, 3)).to(dtype)


def save_state_dict(folder, model, with_map=True):
    """What quanto's README writes: model.safetensors and quantization_map.json."""
    folder.mkdir()
    save_file({key: value.contiguous() for key, value in model.state_dict().items()}, folder / "model.safetensors")
    if with_map:
        (folder / "quantization_map.json").write_text(json.dumps(quanto.quantization_map(model)))


@requires(quanto is not None, "optimum-quanto")
class Quanto(ScanTestCase):
    def check(self, folder, model_report, modules):
        """Each quantized module's weight, reported under its own name, against quanto's dequantize(); returns
        the references by weight name."""
        reported = tensors_by_name(model_report)
        references = {}
        with safe_open(folder / "model.safetensors", "pt") as stored:
            for name, module in modules.items():
                weight = f"{name}.weight"
                references[weight] = reference(stored, name, module)
                bits = module.weight_qtype.bits
                link = reported[weight]["scaled_by"]
                self.assertEqual(link["qtype"], module.weight_qtype.name, weight)
                self.assertEqual(link["bits"], bits, weight)
                self.assertEqual(link["tensor"], f"{weight}._scale")
                self.assertEqual(link["codes"], f"{weight}._data" + ("" if bits == 8 else "._data"))
                self.assertEqual(link["shifts"], None if bits == 8 else f"{weight}._shift")
                self.assertEqual(reported[weight]["role"], "model")
                for part in ("weight._scale", "input_scale", "output_scale") + (() if bits == 8 else ("weight._shift",)):
                    self.assertEqual(reported[f"{name}.{part}"]["role"], "scale", part)
                self.assertTensorStats(reported[weight], references[weight], weight)
        return references

    def test_each_qtype_saved_with_its_map_is_analyzed_as_quanto_dequantizes_it(self):
        qtypes = quanto.qtypes
        cases = [(qtype, dtype) for qtype in ("qint8", "qint4", "qint2", "qfloat8_e4m3fn")
                 for dtype in (torch.float32, torch.float16, torch.bfloat16)]
        cases.append(("qfloat8_e5m2", torch.float16))
        folders, models = [], []
        for qtype, dtype in cases:
            model = layers(dtype)
            quanto.quantize(model, weights=qtypes[qtype])
            quanto.freeze(model)
            folders.append(self.tmp / f"{qtype}-{str(dtype)[len('torch.'):]}")
            save_state_dict(folders[-1], model)
            models.append(model)
        code, document, stderr = scan(*folders)
        self.assertEqual(code, 0, stderr)
        for (qtype, dtype), folder, model, report in zip(cases, folders, models, document["models"]):
            with self.subTest(qtype=qtype, dtype=dtype):
                self.assertEqual(len(self.check(folder, report, quantized_modules(model))), 5)

    def test_save_pretrained_of_a_llama_with_its_qmap(self):
        model = small_llama().to(torch.bfloat16)
        quantized = quanto.QuantizedModelForCausalLM.quantize(model, weights=quanto.qint4, exclude="lm_head")
        folder = self.tmp / "llama-qint4"
        quantized.save_pretrained(folder)
        self.assertTrue((folder / "quanto_qmap.json").is_file())
        code, document, stderr = scan(folder)
        self.assertEqual(code, 0, stderr)
        report = document["models"][0]
        references = self.check(folder, report, quantized_modules(model))
        self.assertEqual(len(references), 14)  # 7 linear layers per block, 2 blocks
        # The verdict's ranges are those of the dequantized weights beside the model's float ones.
        with safe_open(folder / "model.safetensors", "pt") as stored:
            floats = {key: stored.get_tensor(key) for key in stored.keys()
                      if key.endswith("weight") and stored.get_tensor(key).is_floating_point()}
        expected = reference_summary({**floats, **references})
        for key in ("abs_min", "abs_max"):
            self.assertMagnitude(report["summary"][key], expected[key], key)
        for key in ("norm_min", "norm_max"):
            self.assertNorm(report["summary"][key], expected[key], key)
        self.assertEqual(report["verdict"]["label"], "fp16|fp32")
        self.assertFalse(report["verdict"]["fp16_risk"])

    def test_the_same_state_dict_through_torch_save(self):
        model = layers(torch.bfloat16)
        quanto.quantize(model, weights=quanto.qint4)
        quanto.freeze(model)
        folder = self.tmp / "torch-save"
        save_state_dict(folder, model)
        torch.save(model.state_dict(), folder / "pytorch_model.bin")
        (folder / "model.safetensors").rename(self.tmp / "model.safetensors")
        code, document, stderr = scan(folder)
        self.assertEqual(code, 0, stderr)
        self.assertEqual(document["models"][0]["format"], "pytorch-zip")
        (self.tmp / "model.safetensors").rename(folder / "model.safetensors")  # the reference's reading
        self.check(folder, document["models"][0], quantized_modules(model))

    def test_a_module_quantizing_only_its_activations_keeps_its_float_weight(self):
        model = layers(torch.bfloat16)
        quanto.quantize(model, weights=quanto.qint8, exclude="1")
        quanto.quantize(model, activations=quanto.qint8, include="1")
        quanto.freeze(model)
        folder = self.tmp / "activations-only"
        save_state_dict(folder, model)
        self.assertEqual(json.loads((folder / "quantization_map.json").read_text())["1"]["weights"], "none")
        code, document, stderr = scan(folder)
        self.assertEqual(code, 0, stderr)
        reported = tensors_by_name(document["models"][0])
        self.assertNotIn("scaled_by", reported["1.weight"])
        self.assertTensorStats(reported["1.weight"], model[1].weight, "1.weight")
        self.assertEqual(reported["1.input_scale"]["role"], "scale")
        self.check(folder, document["models"][0], quantized_modules(model))

    def test_nan_and_zero_scales_are_named(self):
        # compressed-tensors #832: NaN scales saved. One qint8 scale set to NaN, one qint4 scale to 0, after freeze.
        model = layers(torch.float16)
        quanto.quantize(model, weights=quanto.qint8, include="0")
        quanto.quantize(model, weights=quanto.qint4, include="1")
        quanto.freeze(model)
        model[0].weight._scale[3] = float("nan")
        model[1].weight._scale[2] = 0.0
        folder = self.tmp / "bad-scales"
        save_state_dict(folder, model)
        code, document, stderr = scan(folder)
        self.assertEqual(code, 0, stderr)
        warnings = {w["code"]: w["message"] for w in document["models"][0]["warnings"]}
        self.assertTrue(warnings["scales_nonfinite"].endswith(": 0.weight._scale"), warnings)
        self.assertTrue(warnings["scales_zero"].endswith(": 1.weight._scale"), warnings)
        reported = tensors_by_name(document["models"][0])
        self.assertEqual(reported["0.weight"]["nans"], 256)  # the row whose scale is NaN
        self.check(folder, document["models"][0], quantized_modules(model))

    def test_an_integer_shift_is_a_zero_point(self):
        from optimum.quanto.tensor.optimizers import MaxOptimizer
        from optimum.quanto.tensor.weights import quantize_weight

        torch.manual_seed(1)
        model = torch.nn.Sequential(torch.nn.Linear(256, 48)).to(torch.float16)
        scale, shift = MaxOptimizer()(model[0].weight.data, qtype=quanto.qint4, axis=0, group_size=128,
                                      zeropoint=True)
        self.assertEqual(shift.dtype, torch.uint8)
        state = {}
        quantize_weight(model[0].weight.data, quanto.qint4, axis=0, scale=scale, shift=shift, group_size=128,
                        optimized=False).save_to_state_dict(state, "0.weight.", False)
        folder = self.tmp / "zero-point"
        folder.mkdir()
        save_file(state, folder / "model.safetensors")
        (folder / "quantization_map.json").write_text(json.dumps({"0": {"weights": "qint4", "activations": "none"}}))
        code, document, stderr = scan(folder)
        self.assertEqual(code, 0, stderr)
        reported = tensors_by_name(document["models"][0])
        module = quanto.nn.QLinear.from_module(model[0], weights=quanto.qint4)  # the group size quanto reads by
        with safe_open(folder / "model.safetensors", "pt") as stored:
            self.assertTensorStats(reported["0.weight"], reference(stored, "0", module), "0.weight")

    def test_a_cached_weight_is_read_again_when_its_shift_in_another_shard_changes(self):
        """The cache's key of a linked weight holds every part it is read with: a qint4 weight whose `_shift` sits in
        another shard of the model (as sharded saves place tensors) is read again once that shard changes, however
        unchanged the weight's own shard is (the shift was no input of its key before: a stale result)."""
        model = torch.nn.Sequential(torch.nn.Linear(256, 96))
        torch.manual_seed(0)
        quanto.quantize(model, weights=quanto.qtypes["qint4"])
        quanto.freeze(model)
        state = {key: value.contiguous() for key, value in model.state_dict().items()}
        folder = self.tmp / "sharded"
        folder.mkdir()
        (folder / "quantization_map.json").write_text(json.dumps(quanto.quantization_map(model)))
        shift = "0.weight._shift"
        first = {key: value for key, value in state.items() if key != shift}
        save_file(first, folder / "model-00001-of-00002.safetensors")
        weight_map = {key: "model-00001-of-00002.safetensors" for key in first}
        weight_map[shift] = "model-00002-of-00002.safetensors"
        (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
        cache = self.tmp / "stats.sqlite"
        norms = []
        for shifted in (state[shift], state[shift] + 0.25):  # the second shard rewritten, the first left as it was
            save_file({shift: shifted.contiguous()}, folder / "model-00002-of-00002.safetensors")
            code, cached, stderr = scan("--cache", cache, folder)
            self.assertEqual(code, 0, stderr)
            code, fresh, stderr = scan("--no-cache", folder)
            self.assertEqual(code, 0, stderr)
            weight = tensors_by_name(cached["models"][0])["0.weight"]
            self.assertEqual(weight, tensors_by_name(fresh["models"][0])["0.weight"])
            norms.append(weight["norm"])
        self.assertNotEqual(norms[0], norms[1])  # the shift is read: its change is the weight's

    def test_without_a_map_the_packed_rows_decide_or_the_codes_are_counted(self):
        model = layers(torch.float16)
        quanto.quantize(model, weights=quanto.qint2)
        quanto.freeze(model)
        folder = self.tmp / "qint2-no-map"
        save_state_dict(folder, model, with_map=False)
        code, document, stderr = scan(folder)
        self.assertEqual(code, 0, stderr)
        modules = quantized_modules(model)
        # One row of codes packs into one byte row at 2 bits and at 4: which one, only the map could say.
        del modules["2"]
        self.check(folder, document["models"][0], modules)
        reported = tensors_by_name(document["models"][0])
        self.assertNotIn("scaled_by", reported["2.weight._data._data"])
        self.assertFalse(reported["2.weight._data._data"]["analyzed"])
        self.assertEqual(reported["2.weight._scale"]["role"], "scale")


if __name__ == "__main__":
    unittest.main()
