"""torchao's quantized tensors (issue 59), read as torchao 0.18.0 dequantizes them, on files torchao and transformers
write on this CPU: a two-block Llama of hidden size 128 quantized by transformers' TorchAoConfig and saved in
safetensors (torchao's flatten_tensor_state_dict: `X._weight_qdata`, `X._weight_scale`, `X._weight_zero_point` and
a description of each subclass in the header's metadata), and the same model's state_dict pickled by torch.save
(the subclasses themselves, read without running them). Each weight is reported as `X.weight` with the logical
weight's numel, its abs min, abs max and norm against torchao's own `dequantize()` in float64 (1e-6 relative), its
parts role `scale`, and the summary is the model's weights' alone.

Produced on this CPU: Int8WeightOnlyConfig (per row, per tensor, groups of 32), Int8DynamicActivationInt8WeightConfig,
Float8WeightOnlyConfig (per row, per tensor) and IntxWeightOnlyConfig (int4 codes one to an int8 in groups of 32
with bfloat16 scales; asymmetric int8 per row with float32 scales), on bfloat16, float16 and float32 models. Int4WeightOnlyConfig cannot be produced here: its
default packing needs the mslk kernels, tile_packed_to_4d a CUDA device and plain_int32 an XPU/NPU; an Int4Tensor
built from its parts and flattened by torchao's own flatten_tensor_state_dict stands for it, counted as unread."""

import json
import unittest

import torch

from helpers import (DTYPE_NAMES, ScanTestCase, reference_summary, reference_tensor_stats, scan, small_llama,
                     tensors_by_name, warning_codes)


def quantized_llama(folder, config, dtype=torch.bfloat16):
    """small_llama in `dtype` quantized by transformers' TorchAoConfig(`config`), saved in safetensors to `folder`;
    returns the quantized state_dict."""
    from transformers import AutoModelForCausalLM, TorchAoConfig

    plain = folder.parent / "plain"
    if not plain.exists():
        small_llama().save_pretrained(plain)
    model = AutoModelForCausalLM.from_pretrained(plain, quantization_config=TorchAoConfig(config), device_map="cpu",
                                                 dtype=dtype)
    model.save_pretrained(folder)
    return model.state_dict()


def dequantized(state):
    """Each tensor of `state` as the model computes with it: torchao's dequantize() for a subclass."""
    return {name: tensor.dequantize() if hasattr(tensor, "qdata") else tensor for name, tensor in state.items()}


def configs():
    """The configs this CPU quantizes with, by label: each with the model's dtype, what dequantize returns."""
    from torchao.quantization import (Float8WeightOnlyConfig, Int8DynamicActivationInt8WeightConfig,
                                      Int8WeightOnlyConfig, IntxWeightOnlyConfig, MappingType, PerAxis, PerGroup,
                                      PerTensor)

    return {"int8": (Int8WeightOnlyConfig(), torch.bfloat16),
            "int8-tensor": (Int8WeightOnlyConfig(granularity=PerTensor()), torch.bfloat16),
            "int8-groups": (Int8WeightOnlyConfig(granularity=PerGroup(32)), torch.float32),
            "int8-dynamic": (Int8DynamicActivationInt8WeightConfig(), torch.bfloat16),
            "float8": (Float8WeightOnlyConfig(), torch.bfloat16),
            "float8-tensor": (Float8WeightOnlyConfig(granularity=PerTensor()), torch.float16),
            "intx": (IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(32)), torch.bfloat16),
            "intx-asymmetric": (IntxWeightOnlyConfig(weight_dtype=torch.int8, granularity=PerAxis(0),
                                                     mapping_type=MappingType.ASYMMETRIC, scale_dtype=torch.float32),
                                torch.float16)}


class TorchaoRead(ScanTestCase):
    def check_model(self, target, state, subclass, dtype):
        """`target` scanned: each subclass weight of `state` (of class `subclass`, dequantized to `dtype`) against
        its dequantize()."""
        code, document, stderr = scan(target)
        self.assertEqual(code, 0, stderr)
        model = document["models"][0]
        reported = tensors_by_name(model)
        self.assertNotIn("quantized_not_read", warning_codes(model))
        self.assertFalse([name for name in reported if name.startswith("(unreached)")])
        weights = {name: tensor for name, tensor in state.items() if type(tensor).__name__ == subclass}
        self.assertEqual(len(weights), 14)
        for name, tensor in weights.items():
            with self.subTest(weight=name):
                reference = tensor.dequantize()
                expected = reference_tensor_stats(reference.double())
                self.assertTrue(reported[name]["analyzed"])
                self.assertEqual(reported[name]["role"], "model")
                self.assertEqual(reported[name]["numel"], reference.numel())
                self.assertEqual(reported[name]["scaled_by"]["result_dtype"], DTYPE_NAMES[dtype])
                self.assertEqual(reference.dtype, dtype)
                for key in ("abs_min", "abs_max", "norm"):
                    self.assertAlmostEqual(reported[name][key], expected[key], delta=abs(expected[key]) * 1e-6,
                                           msg=key)
                module, leaf = name.rsplit(".", 1)
                for part in ("scale", "zero_point"):
                    if f"{module}._{leaf}_{part}" in reported:
                        self.assertEqual(reported[f"{module}._{leaf}_{part}"]["role"], "scale")
        # The verdict's summary is the weights' alone, the quantized ones as dequantized: no scale enters it.
        expected = reference_summary(dequantized(state))
        for key in ("abs_min", "abs_max"):
            self.assertAlmostEqual(model["summary"][key], expected[key], delta=abs(expected[key]) * 1e-6, msg=key)
        return model

    def test_safetensors_as_torchao_dequantizes(self):
        for label, (config, dtype) in configs().items():
            with self.subTest(config=label):
                folder = self.tmp / label
                state = quantized_llama(folder, config, dtype)
                subclass = type(state["model.layers.0.mlp.down_proj.weight"]).__name__
                self.check_model(folder, state, subclass, dtype)

    def test_pickled_subclasses_named_and_read_without_running_them(self):
        for label, (config, dtype) in configs().items():
            with self.subTest(config=label):
                folder = self.tmp / label
                state = quantized_llama(folder, config, dtype)
                subclass = type(state["model.layers.0.mlp.down_proj.weight"]).__name__
                pickled = self.tmp / f"{label}-pickled"
                pickled.mkdir()
                torch.save(state, pickled / "pytorch_model.bin")
                model = self.check_model(pickled / "pytorch_model.bin", state, subclass, dtype)
                # torch.load(weights_only=True) accepts the subclass only where torchao, once imported, registers it
                # with add_safe_globals: an unpickler imports and constructs it; precdetect never does.
                imports = {f'{item["module"]}.{item["name"]}': item for item in model["safety"]["imports"]}
                judged = imports[f"torchao.quantization.{subclass}"]
                self.assertEqual(judged["class"], "unknown")
                self.assertTrue(judged["called"])


class Wrapped(torch.Tensor):
    """A tensor subclass of no quantizer's, holding its values in an attribute as torchao's do."""

    @staticmethod
    def __new__(cls, inner):
        return torch.Tensor._make_wrapper_subclass(cls, inner.shape, dtype=inner.dtype)

    def __init__(self, inner):
        self.inner = inner

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        raise NotImplementedError(func)


class OtherSubclasses(ScanTestCase):
    def test_another_librarys_subclass_is_named_by_its_attributes(self):
        torch.save({"l.weight": Wrapped(torch.full((2, 3), 3.0))}, self.tmp / "wrapped.pt")
        code, document, stderr = scan(self.tmp / "wrapped.pt")
        self.assertEqual(code, 0, stderr)
        model = document["models"][0]
        self.assertEqual([tensor["name"] for tensor in model["tensors"]], ["l.weight.inner"])
        self.assertEqual(model["summary"]["abs_max"], 3.0)


class TorchaoUnreadAndMalformed(ScanTestCase):
    def rewrite(self, folder, change):
        """`folder`'s safetensors written again with `change(tensors, metadata)` applied."""
        from safetensors import safe_open
        from safetensors.torch import save_file

        path = folder / "model.safetensors"
        with safe_open(path, "pt") as file:
            metadata = file.metadata()
            tensors = {name: file.get_tensor(name) for name in file.keys()}
        change(tensors, metadata)
        save_file(tensors, path, metadata=metadata)

    def test_int4_tensor_is_counted_with_its_class(self):
        from torchao.prototype.safetensors.safetensors_support import flatten_tensor_state_dict
        from torchao.quantization import Int4Tensor
        from safetensors.torch import save_file

        torch.manual_seed(0)
        out, columns, group = 32, 64, 32
        weight = Int4Tensor(torch.randint(0, 256, (out, columns // 2), dtype=torch.uint8),
                            torch.rand(columns // group, out, dtype=torch.bfloat16),
                            torch.rand(columns // group, out, dtype=torch.bfloat16), [1, group], (out, columns))
        tensors, metadata = flatten_tensor_state_dict({"layer.weight": weight,
                                                       "layer.bias": torch.randn(out, dtype=torch.bfloat16)})
        folder = self.tmp / "int4"
        folder.mkdir()
        save_file(tensors, folder / "model.safetensors", metadata=metadata)
        code, document, stderr = scan(folder)
        self.assertEqual(code, 0, stderr)
        model = document["models"][0]
        reported = tensors_by_name(model)
        self.assertIn("quantized_not_read", warning_codes(model))
        message = next(w["message"] for w in model["warnings"] if w["code"] == "quantized_not_read")
        self.assertIn("layer._weight_qdata (torchao Int4Tensor)", message)
        self.assertFalse(reported["layer._weight_qdata"]["analyzed"])
        for part in ("scale", "zero_point"):
            self.assertEqual(reported[f"layer._weight_{part}"]["role"], "scale")
        self.assertEqual(model["summary"]["abs_max"],
                         reference_summary({"b": tensors["layer.bias"]})["abs_max"])

    def test_safetensors_without_torchao_metadata_are_counted_by_the_config(self):
        from torchao.quantization import Int8WeightOnlyConfig

        folder = self.tmp / "bare"
        state = quantized_llama(folder, Int8WeightOnlyConfig())
        self.rewrite(folder, lambda tensors, metadata: [metadata.pop(key) for key in list(metadata) if key != "format"])
        code, document, stderr = scan(folder)
        self.assertEqual(code, 0, stderr)
        model = document["models"][0]
        reported = tensors_by_name(model)
        message = next(w["message"] for w in model["warnings"] if w["code"] == "quantized_not_read")
        quantized = [name for name, tensor in state.items() if hasattr(tensor, "qdata")]
        self.assertEqual(len(quantized), 14)
        for name in quantized:
            module, leaf = name.rsplit(".", 1)
            self.assertIn(f"{module}._{leaf}_qdata (torchao Int8WeightOnlyConfig)", message)
            self.assertEqual(reported[f"{module}._{leaf}_scale"]["role"], "scale")
        plain = {name: tensor for name, tensor in state.items() if name not in quantized}
        self.assertEqual(model["summary"]["abs_max"], reference_summary(plain)["abs_max"])

    def test_parts_that_fit_no_blocking_are_named_errors(self):
        from torchao.quantization import Int8WeightOnlyConfig

        name = "model.layers.0.mlp.down_proj"

        def short_scale(tensors, metadata):
            tensors[f"{name}._weight_scale"] = tensors[f"{name}._weight_scale"][:-1].clone()

        def odd_block(tensors, metadata):
            description = json.loads(metadata[f"{name}.weight"])
            description["_data"]["block_size"] = [1, 100]
            metadata[f"{name}.weight"] = json.dumps(description)

        for label, change in (("scale", short_scale), ("block", odd_block)):
            with self.subTest(case=label):
                folder = self.tmp / label
                quantized_llama(folder, Int8WeightOnlyConfig())
                self.rewrite(folder, change)
                code, document, stderr = scan(folder)
                self.assertEqual(code, 2, stderr)
                self.assertIn("size_mismatch", json.dumps(document))
                self.assertIn(f"torchao tensor `{name}.weight`", json.dumps(document))

    def test_pickled_storage_that_lies_is_a_named_error(self):
        import zipfile

        from torchao.quantization import Int8WeightOnlyConfig

        state = quantized_llama(self.tmp / "int8", Int8WeightOnlyConfig())
        saved, short = self.tmp / "saved.bin", self.tmp / "short.bin"
        torch.save(state, saved)
        codes = state["model.layers.0.mlp.down_proj.weight"].qdata  # 32 KiB: the MLP codes alone
        with zipfile.ZipFile(saved) as source, zipfile.ZipFile(short, "w") as target:
            for info in source.infolist():  # every storage of the codes' size holds half its bytes
                data = source.read(info)
                target.writestr(info, data[: len(data) // 2] if len(data) == codes.numel() else data)
        code, document, stderr = scan(short)
        self.assertEqual(code, 2, stderr)
        self.assertIn("storage_too_small", json.dumps(document))
        self.assertIn("._weight_qdata` reads up to element", stderr)


if __name__ == "__main__":
    unittest.main()
