"""ONNX models (issue 50): files written by the real producers, torch.onnx.export (its TorchScript exporter, which
optimum-onnx calls, and its default dynamo exporter through onnxscript) and the onnx package's own helpers, every
tensor checked against float64 references computed from onnx.numpy_helper.to_array of the same file; external data
read through the model; Constant nodes, other tensor attributes and the dynamo exporter's folded constants named in
fp16 cast safety; sparse initializers and a Constant's sparse_value read as their dense tensors (zeros counted, never
materialized); diff against the safetensors the model was exported from, by the names each exporter keeps."""

import contextlib
import io
import json
import unittest
import warnings

import numpy as np
import torch

from helpers import ScanTestCase, run, scan, tensors_by_name, warning_codes

import onnx  # noqa: E402  (after helpers: the test venv's packages)
from onnx import TensorProto, external_data_helper, helper, numpy_helper
from safetensors.torch import save_file


class Block(torch.nn.Module):
    """A small block whose forward masks with float32's lowest value, as attention masks do: the exporter writes it
    as a Constant node."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.norm = torch.nn.LayerNorm(8)
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        hidden = self.norm(torch.relu(self.fc1(x)))
        mask = torch.where(hidden > 0, 0.0, torch.finfo(torch.float32).min)
        return self.fc2(hidden + mask)


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class Attention(torch.nn.Module):
    """Embedding, Linear and LayerNorm with a causal mask of float32's lowest value, as attention layers build it."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(10, 8)
        self.fc1 = torch.nn.Linear(8, 8)
        self.norm = torch.nn.LayerNorm(8)
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, ids):
        hidden = self.norm(torch.relu(self.fc1(self.emb(ids))))
        causal = torch.triu(torch.ones(ids.shape[-1], ids.shape[-1], dtype=torch.bool), 1)
        scores = (hidden @ hidden.transpose(-1, -2)).masked_fill(causal, torch.finfo(torch.float32).min)
        return self.fc2(torch.softmax(scores, -1) @ hidden)


def export_dynamo(module, path, optimize=True):
    """torch.onnx.export's default exporter (dynamo=True, through onnxscript), which prints its steps."""
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module.eval(), (torch.tensor([[1, 2, 3, 4]]),), str(path), dynamo=True, optimize=optimize)


def export(module, path):
    """torch.onnx.export's TorchScript exporter (dynamo=False): initializers named as the state dict names them."""
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its deprecation notice
        torch.onnx.export(module.eval(), (torch.randn(2, 4),), str(path), dynamo=False)


# A Constant's value in the attribute's own fields, as onnx's Constant operator makes it
# (onnx/reference/ops/op_constant.py).
CONSTANT_FIELDS = {"value_float": np.float32, "value_floats": np.float32, "value_int": np.int64, "value_ints": np.int64}


def attribute_arrays(node):
    """The tensors a node's attributes hold as numpy arrays, by the name precdetect gives them: a Constant's by its
    output, another operator's `<node>/<attribute>`, a sparse value scattered into its dense array. Strings are not
    read."""
    label = node.name or node.output[0]
    for attribute in node.attribute:
        value = helper.get_attribute_value(attribute)
        name = node.output[0] if node.op_type == "Constant" else f"{label}/{attribute.name}"
        if attribute.type == onnx.AttributeProto.TENSOR:
            yield name, numpy_helper.to_array(value)
        elif attribute.type == onnx.AttributeProto.SPARSE_TENSOR:
            yield name, scattered(value)
        elif node.op_type == "Constant" and attribute.name in CONSTANT_FIELDS:
            yield name, np.array(value, CONSTANT_FIELDS[attribute.name])


def scattered(sparse):
    """A SparseTensorProto as the dense array it stands for: zeros, its values placed at its indices (positions or
    coordinates), with numpy."""
    values = numpy_helper.to_array(sparse.values)
    indices = numpy_helper.to_array(sparse.indices)
    dense = np.zeros(tuple(sparse.dims), values.dtype)
    if indices.ndim == 1:
        dense.reshape(-1)[indices] = values
    else:
        dense[tuple(indices.T)] = values
    return dense


def onnx_tensors(path):
    """Every initializer and node attribute's tensor of the model at `path` as numpy arrays (external data loaded),
    by the name precdetect gives it."""
    model = onnx.load(str(path))
    arrays = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    arrays.update({s.values.name: scattered(s) for s in model.graph.sparse_initializer})
    for node in model.graph.node:
        arrays.update(attribute_arrays(node))
    return arrays


class Onnx(ScanTestCase):
    def assertTensors(self, model, arrays):
        """Every array is a tensor of its shape; the floating ones' statistics match float64 references."""
        tensors = tensors_by_name(model)
        self.assertEqual(set(tensors), set(arrays))
        for name, array in arrays.items():
            self.assertEqual(tensors[name]["shape"], list(array.shape), name)
            if array.dtype.kind == "f" or array.dtype.name in ("bfloat16", "float8_e4m3fn"):  # ml_dtypes' kinds
                self.assertTensorStats(tensors[name], torch.from_numpy(array.astype(np.float64)), name)

    def test_torch_export_matches_references_and_names_the_mask_that_overflows_fp16(self):
        folder = self.tmp / "exported"
        folder.mkdir()
        export(Block(), folder / "model.onnx")
        code, document, _ = scan(folder)
        self.assertEqual(code, 0)
        (model,) = document["models"]
        self.assertEqual(model["format"], "onnx")
        arrays = onnx_tensors(folder / "model.onnx")
        self.assertEqual({n for n in arrays if not n.startswith("/")},
                         {"fc1.weight", "fc1.bias", "norm.weight", "norm.bias", "fc2.weight", "fc2.bias"})
        self.assertTensors(model, arrays)
        tensors = tensors_by_name(model)
        (mask,) = [n for n, a in arrays.items() if a.size == 1 and a.item() == np.finfo(np.float32).min]
        self.assertEqual(tensors[mask]["role"], "buffer")  # the exporter's constant, out of the verdict
        self.assertEqual(tensors["fc1.weight"]["role"], "model")
        self.assertTrue(model["verdict"]["fp16_risk"])
        self.assertEqual(model["verdict"]["fp16_risk_reasons"],
                         [{"kind": "overflow", "tensor": mask, "role": "buffer",
                           "value": float(np.finfo(np.float32).max), "values": 1}])
        table = run(folder)
        self.assertIn(f"overflow in 1 tensor (buffer {mask} 3.403e+38)", table.stdout)

    def test_typed_fields_and_external_data_match_references(self):
        rng = np.random.default_rng(3)
        values = {"f32": (rng.standard_normal((6, 5)) * 3).astype(np.float32),
                  "f16": (rng.standard_normal((4, 4)) * 2e3).astype(np.float16),
                  "f64": rng.standard_normal((3, 2)) * 1e-5,
                  "bf16": (rng.standard_normal(9) * 1e5).astype(np.float32),
                  "i64": np.arange(6, dtype=np.int64).reshape(2, 3),
                  "f8": np.array([1.0, -448.0, 0.015625, 2.0**-9], np.float32)}
        kinds = {"f32": TensorProto.FLOAT, "f16": TensorProto.FLOAT16, "f64": TensorProto.DOUBLE,
                 "bf16": TensorProto.BFLOAT16, "i64": TensorProto.INT64, "f8": TensorProto.FLOAT8E4M3FN}
        # raw=False: float_data, int32_data (fp16, bf16 and float8 as bit patterns), double_data, int64_data
        initializers = [helper.make_tensor(n, kinds[n], a.shape, a.flatten().tolist()) for n, a in values.items()]
        node = helper.make_node("Identity", ["f32"], ["y"])
        graph = helper.make_graph([node], "g", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6, 5])],
                                  initializer=initializers)
        typed = helper.make_model(graph)
        self.assertFalse(any(t.raw_data for t in typed.graph.initializer))
        onnx.save_model(typed, str(self.tmp / "typed.onnx"))
        code, document, _ = scan(self.tmp / "typed.onnx")
        self.assertEqual(code, 0)
        references = onnx_tensors(self.tmp / "typed.onnx")
        self.assertTensors(document["models"][0], references)
        self.assertEqual(tensors_by_name(document["models"][0])["bf16"]["dtype"], "BF16")
        self.assertEqual(tensors_by_name(document["models"][0])["i64"]["dtype"], "I64")
        self.assertEqual(tensors_by_name(document["models"][0])["f8"]["dtype"], "F8_E4M3")

        # onnx moves raw_data alone to external files: the same values, as raw_data
        raw = [numpy_helper.from_array(a, n) for n, a in values.items() if n not in ("bf16", "f8")]
        graph = helper.make_graph([node], "g", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6, 5])],
                                  initializer=raw)
        folder = self.tmp / "external"
        folder.mkdir()
        onnx.save_model(helper.make_model(graph), str(folder / "model.onnx"), save_as_external_data=True,
                        all_tensors_to_one_file=True, location="model.onnx_data", size_threshold=0)
        stored = onnx.load(str(folder / "model.onnx"), load_external_data=False)
        self.assertTrue(all(t.data_location == TensorProto.EXTERNAL for t in stored.graph.initializer))
        code, document, _ = scan(folder)
        self.assertEqual(code, 0)
        (model,) = document["models"]  # model.onnx_data is read through the model, never a model of its own
        self.assertEqual(model["files"], [str(folder / "model.onnx")])
        self.assertTensors(model, onnx_tensors(folder / "model.onnx"))
        for _ in range(2):  # stored in the results cache, then found there
            code, document, _ = scan("--cache", self.tmp / "cache.sqlite", folder)
            self.assertEqual(code, 0)
            self.assertTensors(document["models"][0], onnx_tensors(folder / "model.onnx"))

    def test_constant_attributes_and_tensor_attributes_match_references(self):
        """A Constant's value_float(s) and value_int(s) are tensors named by its output (a value_float of float32's
        lowest value named in fp16 risk as a `value` tensor is), ConstantOfShape's `value` is `<node>/value`, a
        sparse_value its dense tensor; strings are named as not read."""
        low = float(np.finfo(np.float32).min)
        sparse = helper.make_sparse_tensor(numpy_helper.from_array(np.array([2.0, -1e5], np.float32), "v"),
                                           numpy_helper.from_array(np.array([1, 3], np.int64), "i"), [4])
        fill = numpy_helper.from_array(np.array([0.5], np.float32))
        nodes = [helper.make_node("Constant", [], ["mask_min"], value_float=low),
                 helper.make_node("Constant", [], ["scales"], value_floats=[1.5, -2.25, 3e-3]),
                 helper.make_node("Constant", [], ["axis"], value_int=-1),
                 helper.make_node("Constant", [], ["shape"], value_ints=[-3, 0, 5]),
                 helper.make_node("Constant", [], ["label"], value_strings=["a", "b"]),
                 helper.make_node("Constant", [], ["sparse"], sparse_value=sparse),
                 helper.make_node("ConstantOfShape", ["shape"], ["filled"], name="fill", value=fill)]
        weight = numpy_helper.from_array(np.linspace(-1, 2, 6, dtype=np.float32).reshape(2, 3), "w")
        graph = helper.make_graph(nodes, "g", [], [helper.make_tensor_value_info("filled", TensorProto.FLOAT, None)],
                                  initializer=[weight])
        onnx.save_model(helper.make_model(graph), str(self.tmp / "attributes.onnx"))
        code, document, _ = scan(self.tmp / "attributes.onnx")
        self.assertEqual(code, 0)
        (model,) = document["models"]
        arrays = onnx_tensors(self.tmp / "attributes.onnx")
        self.assertEqual(set(arrays), {"w", "mask_min", "scales", "axis", "shape", "fill/value", "sparse"})
        self.assertTensors(model, arrays)
        tensors = tensors_by_name(model)
        self.assertEqual({n: (t["dtype"], t["role"]) for n, t in tensors.items() if n != "w"},
                         {"mask_min": ("F32", "buffer"), "scales": ("F32", "buffer"), "axis": ("I64", "buffer"),
                          "shape": ("I64", "buffer"), "fill/value": ("F32", "buffer"), "sparse": ("F32", "buffer")})
        self.assertEqual(model["verdict"]["fp16_risk_reasons"],  # the sparse value's -1e5 too: a dense tensor's
                         [{"kind": "overflow", "tensor": "mask_min", "role": "buffer", "value": -low, "values": 1},
                          {"kind": "overflow", "tensor": "sparse", "role": "buffer", "value": 1e5, "values": 1}])
        (not_read,) = [w["message"] for w in model["warnings"] if w["code"] == "dtypes_not_read"]
        self.assertIn("1 tensor(s)", not_read)
        self.assertIn("label (STRING)", not_read)

    def test_weights_held_in_constant_nodes_are_weights_by_how_the_graph_uses_them(self):
        """Issue 59: exporters that keep every trained weight in a Constant node (Paddle2ONNX, spox) gave the verdict
        `unknown`. A Constant an operator takes as its weight (MatMul's, Gemm's, an embedding's Gather, a
        normalization's scale and bias, a bias added to a MatMul's product) is a weight; a Constant anything else
        reads (a mask's lowest value, a shape) stays the exporter's buffer."""
        rng = np.random.default_rng(0)
        arrays = {"table": rng.normal(size=(16, 8)).astype(np.float32) * 0.02,
                  "w1": rng.normal(size=(8, 8)).astype(np.float32) * 0.1, "bias": np.full(8, 0.5, np.float32),
                  "gamma": np.ones(8, np.float32), "beta": np.zeros(8, np.float32),
                  "w2": rng.normal(size=(8, 4)).astype(np.float32) * 0.1, "c2": np.full(4, 0.25, np.float32),
                  "lowest": np.array(np.finfo(np.float32).min, np.float32)}
        nodes = [helper.make_node("Constant", [], [name], value=numpy_helper.from_array(array, name))
                 for name, array in arrays.items()]
        nodes += [helper.make_node("Gather", ["table", "ids"], ["embedded"]),
                  helper.make_node("MatMul", ["embedded", "w1"], ["projected"]),
                  helper.make_node("Add", ["projected", "bias"], ["shifted"]),
                  helper.make_node("LayerNormalization", ["shifted", "gamma", "beta"], ["normed"]),
                  helper.make_node("Max", ["normed", "lowest"], ["clipped"]),
                  helper.make_node("Gemm", ["clipped", "w2", "c2"], ["out"])]
        graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("ids", TensorProto.INT64, [2])],
                                  [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)])
        onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
                        str(self.tmp / "constants.onnx"))
        code, document, stderr = scan(self.tmp / "constants.onnx")
        self.assertEqual(code, 0, stderr)
        (model,) = document["models"]
        self.assertTensors(model, onnx_tensors(self.tmp / "constants.onnx"))
        roles = {name: tensor["role"] for name, tensor in tensors_by_name(model).items()}
        self.assertEqual(roles, {"table": "model", "w1": "model", "gamma": "model", "beta": "model", "w2": "model",
                                 "c2": "model", "bias": "model", "lowest": "buffer"})
        self.assertNotEqual(model["verdict"]["label"], "unknown")
        self.assertEqual(model["summary"]["parameters"], sum(arrays[n].size for n, r in roles.items() if r == "model"))

    def assertDenseStats(self, reported, dense, msg):
        """Counts exact; abs min, abs max and L2 norm to 1e-9 relative of float64 references over the dense array."""
        values = np.abs(dense.astype(np.float64)).reshape(-1)
        self.assertEqual(reported["numel"], values.size, msg)
        self.assertEqual(reported["zeros"], int(np.count_nonzero(values == 0)), msg)
        for key, expected in (("abs_min", values.min()), ("abs_max", values.max()),
                              ("norm", np.sqrt(np.sum(values * values)))):
            self.assertLessEqual(abs(reported[key] - expected), 1e-9 * abs(expected), f"{msg}: {key}")

    def sparse_model(self):
        """A graph of sparse initializers (float32 by positions, float16 by coordinates, one whose every value is
        non-zero) and a Constant whose sparse_value holds float32 values."""
        rng = np.random.default_rng(5)
        linear = helper.make_sparse_tensor(
            numpy_helper.from_array((rng.standard_normal(3) * 40).astype(np.float32), "linear"),
            numpy_helper.from_array(np.array([1, 7, 19], np.int64), "linear_indices"), [4, 5])
        coordinates = helper.make_sparse_tensor(
            numpy_helper.from_array(np.array([3e3, -2.5e-3, 0.75], np.float16), "coordinates"),
            numpy_helper.from_array(np.array([[0, 1, 2], [1, 0, 0], [1, 2, 3]], np.int64), "coordinate_indices"),
            [2, 3, 4])
        full = helper.make_sparse_tensor(numpy_helper.from_array(np.array([1.5, -2.0, 0.25, 8.0], np.float32), "full"),
                                         numpy_helper.from_array(np.arange(4, dtype=np.int64), "full_indices"), [2, 2])
        constant = helper.make_sparse_tensor(
            numpy_helper.from_array(np.array([0.5, -7.0], np.float32), "ignored"),
            numpy_helper.from_array(np.array([2, 5], np.int64), "constant_indices"), [6])
        nodes = [helper.make_node("Constant", [], ["from_constant"], sparse_value=constant)]
        graph = helper.make_graph(nodes, "g", [], [helper.make_tensor_value_info("from_constant", TensorProto.FLOAT,
                                                                                 [6])],
                                  sparse_initializer=[linear, coordinates, full])
        return helper.make_model(graph)

    def test_sparse_tensors_are_their_dense_tensors(self):
        """Issue 50: a sparse initializer is the tensor it stands for, named as its values are (a Constant's
        sparse_value by the node's output), its zeros counted in its statistics; with its values in the model and
        in external data alike."""
        model = self.sparse_model()
        onnx.checker.check_model(model)
        onnx.save_model(model, str(self.tmp / "sparse.onnx"))
        arrays = onnx_tensors(self.tmp / "sparse.onnx")
        self.assertEqual(set(arrays), {"linear", "coordinates", "full", "from_constant"})
        self.assertEqual(np.count_nonzero(arrays["full"]), arrays["full"].size)  # no implicit zero
        # save_as_external_data moves the dense tensors alone: a sparse tensor's values and indices are moved by
        # onnx's own set_external_data, their bytes written where it says they are.
        folder = self.tmp / "external"
        folder.mkdir()
        data = bytearray()
        for sparse in model.graph.sparse_initializer:
            for stored in (sparse.values, sparse.indices):
                external_data_helper.set_external_data(stored, "model.onnx_data", offset=len(data),
                                                       length=len(stored.raw_data))
                data += stored.raw_data
                stored.ClearField("raw_data")
                stored.data_location = TensorProto.EXTERNAL
        (folder / "model.onnx_data").write_bytes(bytes(data))
        onnx.save_model(model, str(folder / "model.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                        location="dense.onnx_data", size_threshold=0)
        for path in (self.tmp / "sparse.onnx", folder / "model.onnx"):
            code, document, _ = scan(path)
            self.assertEqual(code, 0, path)
            (reported,) = document["models"]
            tensors = tensors_by_name(reported)
            self.assertEqual(set(tensors), set(arrays))
            for name, dense in arrays.items():
                self.assertEqual(tensors[name]["shape"], list(dense.shape), name)
                self.assertEqual(tensors[name]["dtype"], "F16" if dense.dtype == np.float16 else "F32", name)
                self.assertDenseStats(tensors[name], dense, f"{path.name}: {name}")
            self.assertEqual(tensors["from_constant"]["role"], "buffer")
            self.assertEqual(tensors["linear"]["role"], "model")
            self.assertNotIn("dtypes_not_read", warning_codes(reported))

    def test_a_sparse_tensor_of_2_to_the_60_elements_is_never_materialized(self):
        values = np.array([3.0, -0.5], np.float32)
        sparse = helper.make_sparse_tensor(numpy_helper.from_array(values, "huge"),
                                           numpy_helper.from_array(np.array([5, (1 << 60) - 1], np.int64), "i"),
                                           [1 << 30, 1 << 30])
        graph = helper.make_graph([], "g", [], [], sparse_initializer=[sparse])
        onnx.save_model(helper.make_model(graph), str(self.tmp / "huge.onnx"))
        code, document, _ = scan(self.tmp / "huge.onnx")
        self.assertEqual(code, 0)
        (tensor,) = document["models"][0]["tensors"]
        self.assertEqual((tensor["shape"], tensor["numel"], tensor["zeros"]), ([1 << 30, 1 << 30], 1 << 60,
                                                                             (1 << 60) - 2))
        self.assertEqual((tensor["abs_min"], tensor["abs_max"]), (0.0, 3.0))
        self.assertLessEqual(abs(tensor["norm"] - np.sqrt(9.25)), 1e-9 * np.sqrt(9.25))

    def test_diff_names_a_sparse_tensor_not_compared(self):
        """A sparse tensor against a dense one is listed in `not_compared`: never called identical or lossless."""
        dense = np.array([[0.0, 1.5], [0.0, -2.0]], np.float32)
        sparse = helper.make_sparse_tensor(numpy_helper.from_array(np.array([1.5, -2.0], np.float32), "w"),
                                           numpy_helper.from_array(np.array([1, 3], np.int64), "i"), [2, 2])
        onnx.save_model(helper.make_model(helper.make_graph([], "g", [], [], sparse_initializer=[sparse])),
                        str(self.tmp / "sparse.onnx"))
        save_file({"w": torch.from_numpy(dense)}, str(self.tmp / "dense.safetensors"))
        result = run("diff", "--json", self.tmp / "dense.safetensors", self.tmp / "sparse.onnx", check_json=True)
        (pair,) = result.document["pairs"]
        self.assertEqual(pair["not_compared"], ["w"])
        self.assertEqual((pair["outcome"], pair["tensors"], pair["shape_mismatch"]), ("changed", [], []))

    def test_diff_against_the_safetensors_it_was_exported_from(self):
        for module, constants in ((Mlp(), False), (Block(), True)):
            torch.manual_seed(1)
            module = type(module)()
            save_file(module.state_dict(), self.tmp / "model.safetensors")
            export(module, self.tmp / "model.onnx")
            result = run("diff", "--json", self.tmp / "model.safetensors", self.tmp / "model.onnx", check_json=True)
            (pair,) = result.document["pairs"]
            self.assertEqual(sorted(t["name"] for t in pair["tensors"]), sorted(module.state_dict()))
            self.assertTrue(all(t["identical"] for t in pair["tensors"]))
            self.assertEqual((pair["missing"], pair["extra"]), ([], []))
            if not constants:
                self.assertEqual(pair["outcome"], "identical")
                self.assertEqual(result.returncode, 0)
                continue
            # The exporter's Constant nodes are no weights of the module: listed apart, the weights all kept.
            self.assertEqual(len(pair["computed_from_config"]), 3)
            self.assertEqual(pair["outcome"], "lossless")

    def test_dynamo_export_matches_references_and_pairs_every_weight(self):
        """The default exporter keeps the names of the parameters it stores as they are; its optimizer folds each
        Linear's weight into a transposed `val_N` for its MatMul and the mask's -3.4e38 into another, recording what
        each was folded from: the mask is the exporter's (a buffer, named in fp16 risk), a folded weight is paired
        with its weight, transposed back. With optimize=False every weight keeps its name, the constants are Constant
        nodes (a value_float among them)."""
        torch.manual_seed(2)
        module = Attention()
        save_file(module.state_dict(), self.tmp / "model.safetensors")
        export_dynamo(module, self.tmp / "model.onnx")
        export_dynamo(module, self.tmp / "kept.onnx", optimize=False)
        kept = onnx.load(str(self.tmp / "kept.onnx"))
        self.assertIn("value_float", {a.name for n in kept.graph.node for a in n.attribute})
        low = np.finfo(np.float32).min
        weights = module.state_dict()
        for name, folded in (("model.onnx", {"fc1.weight", "fc2.weight"}), ("kept.onnx", set())):
            code, document, _ = scan(self.tmp / name)
            self.assertEqual(code, 0, name)
            (model,) = document["models"]
            arrays = onnx_tensors(self.tmp / name)
            self.assertEqual(set(weights) & set(arrays), set(weights) - folded, name)
            self.assertTensors(model, arrays)
            transposed = {t["torch_name"]: t for t in model["tensors"] if "torch_name" in t}
            self.assertEqual(set(transposed), folded, name)
            for weight, tensor in transposed.items():
                self.assertTrue(np.array_equal(arrays[tensor["name"]], weights[weight].numpy().T), weight)
                self.assertEqual(tensor["role"], "model", weight)
            (mask,) = [n for n, a in arrays.items() if a.size == 1 and a.dtype == np.float32 and a.item() == low]
            self.assertEqual(model["verdict"]["fp16_risk_reasons"],
                             [{"kind": "overflow", "tensor": mask, "role": "buffer", "value": -float(low),
                               "values": 1}])
            # The verdict reads the module's weights alone, folded or not: one summary for both files.
            self.assertEqual((model["summary"]["abs_max"], model["summary"]["parameters"]),
                             (float(max(t.abs().max() for t in weights.values())),
                              sum(t.numel() for t in weights.values())), name)
            result = run("diff", "--json", self.tmp / "model.safetensors", self.tmp / name, check_json=True)
            (pair,) = result.document["pairs"]
            self.assertEqual(sorted(t["name"] for t in pair["tensors"]), sorted(weights), name)
            self.assertTrue(all(t["identical"] for t in pair["tensors"]), name)
            self.assertEqual((pair["missing"], pair["extra"], pair["shape_mismatch"]), ([], [], []), name)
            self.assertIn(mask, pair["computed_from_config"])
            self.assertEqual(pair["outcome"], "lossless", name)

    def test_tiny_bert_from_both_exporters_against_its_save_pretrained(self):
        """A tiny random BERT (every parameter drawn apart: both exporters store identical tensors once) written by
        save_pretrained, then exported by the default exporter (external data) and as optimum-onnx's export_pytorch
        calls the TorchScript one (optimum itself needs transformers < 4.58): the names each keeps pair with the
        safetensors; each folds the Linear weights into transposed initializers (`val_N`, `onnx::MatMul_N`), which
        stay weights and, where the default exporter recorded their weight, are paired with it; the default
        exporter's -3.4e38 mask is its buffer, named in fp16 risk."""
        from transformers import BertConfig, BertModel

        torch.manual_seed(3)
        bert = BertModel(BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                    intermediate_size=64, max_position_embeddings=16)).eval()
        with torch.no_grad():
            for parameter in bert.parameters():
                parameter.normal_(0, 0.5)
        with contextlib.redirect_stderr(io.StringIO()):  # its progress bar
            bert.save_pretrained(self.tmp / "bert")
        forward = bert.forward  # optimum's ModelPatcher: inputs by name, the hidden states out
        bert.forward = lambda input_ids, attention_mask: forward(input_ids=input_ids,
                                                                 attention_mask=attention_mask).last_hidden_state
        inputs = (torch.tensor([[1, 5, 7, 9]]), torch.ones(1, 4, dtype=torch.int64))
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(bert, inputs, str(self.tmp / "bert" / "dynamo.onnx"), dynamo=True)
            axes = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"}}
            torch.onnx.export(bert, inputs, str(self.tmp / "bert" / "optimum.onnx"), dynamo=False, opset_version=18,
                              input_names=list(axes), output_names=["last_hidden_state"], dynamic_axes=axes,
                              do_constant_folding=True)
        self.assertTrue((self.tmp / "bert" / "dynamo.onnx.data").exists())
        weights = {n: t.numpy() for n, t in bert.state_dict().items()}
        # The Linear weights the encoder uses (the pooler's are not: both exporters drop them).
        linear = {n for n in weights if n.endswith("weight") and weights[n].ndim == 2 and n.startswith("encoder.")}
        for name, recorded in (("dynamo.onnx", True), ("optimum.onnx", False)):
            path = self.tmp / "bert" / name
            code, document, _ = scan(path)
            self.assertEqual(code, 0, name)
            (model,) = document["models"]
            arrays = onnx_tensors(path)
            self.assertTensors(model, arrays)
            tensors = tensors_by_name(model)
            risks = model["verdict"]["fp16_risk_reasons"]
            self.assertTrue(all(r["kind"] == "overflow" and r["role"] == "buffer" for r in risks), risks)
            for weight in linear:
                (folded,) = [n for n, a in arrays.items() if np.array_equal(a, weights[weight].T)]
                self.assertEqual(tensors[folded]["role"], "model", f"{name}: {folded}")
                self.assertEqual(tensors[folded].get("torch_name"), weight if recorded else None, f"{name}: {folded}")
            result = run("diff", "--json", self.tmp / "bert" / "model.safetensors", path, check_json=True)
            (pair,) = result.document["pairs"]
            # The default exporter's embeddings gathered at constant positions (`embedding_1`) are not paired.
            paired = set(weights) & set(arrays) | (linear if recorded else set())
            self.assertEqual({t["name"] for t in pair["tensors"]}, paired, name)
            self.assertTrue(all(t["identical"] for t in pair["tensors"]), name)
            self.assertEqual(set(pair["missing"]), set(weights) - paired, name)
            self.assertEqual(pair["shape_mismatch"], [], name)
        low = float(np.finfo(np.float32).min)
        dynamo = onnx_tensors(self.tmp / "bert" / "dynamo.onnx")
        (mask,) = [n for n, a in dynamo.items() if a.size == 1 and a.item() == low]
        code, document, _ = scan(self.tmp / "bert" / "dynamo.onnx")
        self.assertEqual(document["models"][0]["verdict"]["fp16_risk_reasons"],
                         [{"kind": "overflow", "tensor": mask, "role": "buffer", "value": -low, "values": 1}])

    def test_a_folder_with_its_safetensors_prefers_them_and_all_formats_scans_both(self):
        module = Mlp()
        save_file(module.state_dict(), self.tmp / "model.safetensors")
        export(module, self.tmp / "model.onnx")
        code, document, _ = scan(self.tmp)
        self.assertEqual(code, 0)
        (model,) = document["models"]
        self.assertEqual(model["format"], "safetensors")
        self.assertIn("other_formats", warning_codes(model))
        code, document, _ = scan("--all-formats", self.tmp)
        self.assertEqual(code, 0)
        self.assertEqual(sorted(m["format"] for m in document["models"]), ["onnx", "safetensors"])
        summaries = [m["summary"] for m in document["models"]]
        self.assertEqual(summaries[0], summaries[1])  # one set of weights, the same statistics in both formats

    def test_damaged_models_are_named_errors(self):
        export(Mlp(), self.tmp / "good.onnx")
        data = (self.tmp / "good.onnx").read_bytes()
        (self.tmp / "cut.onnx").write_bytes(data[:len(data) // 2])
        weight = numpy_helper.from_array(np.ones(4, np.float32), "w")
        weight.data_location = TensorProto.EXTERNAL
        weight.ClearField("raw_data")
        for key, value in (("location", "../../etc/passwd"), ("offset", "0"), ("length", "16")):
            weight.external_data.add(key=key, value=value)
        graph = helper.make_graph([], "g", [], [], initializer=[weight])
        (self.tmp / "escape.onnx").write_bytes(helper.make_model(graph).SerializeToString())
        for name, needle, error_code in (
                ("cut.onnx", "invalid ONNX at offset", "invalid_onnx"),
                ("escape.onnx", "external data location `../../etc/passwd` is not a path inside", "path_escape")):
            code, document, stderr = scan(self.tmp / name)
            self.assertEqual(code, 2, name)
            error = document["models"][0]["error"]
            self.assertEqual(error["code"], error_code, name)
            self.assertIn(str(self.tmp / name), error["message"])
            self.assertIn(needle, error["message"])


if __name__ == "__main__":
    unittest.main()
