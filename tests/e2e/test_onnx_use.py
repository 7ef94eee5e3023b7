"""ONNX weights by use, non-finite constants and QDQ models (issue 59): files written by the real exporters and
quantizers on this CPU (spox, jax2onnx, torch.onnx's TorchScript exporter, onnxruntime's quantize_static and
quantize_dynamic), each weight's statistics against the framework's own weights or onnxruntime's own
dequantization in float64, and the verdict against the safetensors of the same weights."""

import contextlib
import logging
import io
import unittest
import warnings

import numpy as np
import torch

from helpers import ScanTestCase, scan, tensors_by_name, warning_codes

import onnx  # noqa: E402  (after helpers: the test venv's packages)
import onnxruntime
from onnx import TensorProto, helper, numpy_helper
from safetensors.numpy import save_file


def reference(array):
    return torch.from_numpy(np.asarray(array).astype(np.float64))


def dequantized_by_onnxruntime(codes, scale, zero_point=None, axis=1, block_size=0):
    """onnxruntime's own DequantizeLinear of the arrays: a one-node model run on its CPU provider."""
    inputs = [numpy_helper.from_array(codes, "codes"), numpy_helper.from_array(scale, "scale")]
    if zero_point is not None:
        inputs.append(numpy_helper.from_array(zero_point, "zero_point"))
    attributes = {"axis": axis} | ({"block_size": block_size} if block_size else {})
    node = helper.make_node("DequantizeLinear", [i.name for i in inputs], ["out"], **attributes)
    graph = helper.make_graph([node], "dq", [], [helper.make_tensor_value_info("out", scale_type(scale), None)],
                              initializer=inputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21 if block_size else 19)])
    model.ir_version = 10
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {})[0]


def scale_type(scale):
    return helper.np_dtype_to_tensor_dtype(scale.dtype)


def numpy_dequantized(codes, scale, zero_point=None, axis=1, block_size=0):
    """onnxruntime's formula in numpy: (int32(code) - int32(zero point)) in float32, times the float32 scale,
    rounded to the scale's dtype, the scale broadcast along `axis` (repeated per block)."""
    scale32 = scale.astype(np.float32)
    zero = np.zeros(scale.shape, np.int32) if zero_point is None else zero_point.astype(np.int32)
    if scale.size > 1 or block_size:
        axis = axis % codes.ndim
        if block_size:
            scale32 = np.repeat(scale32, block_size, axis)[tuple(slice(0, n) for n in codes.shape)]
            zero = np.repeat(zero, block_size, axis)[tuple(slice(0, n) for n in codes.shape)]
        else:
            shape = [1] * codes.ndim
            shape[axis] = -1
            scale32, zero = scale32.reshape(shape), zero.reshape(shape)
    return ((codes.astype(np.int32) - zero).astype(np.float32) * scale32).astype(scale.dtype)


class OnnxUse(ScanTestCase):
    def scan_model(self, path):
        code, document, stderr = scan(path)
        self.assertEqual(code, 0, stderr)
        (model,) = document["models"]
        return model

    def assertSameVerdictAs(self, model, weights):
        """The ONNX model's verdict and parameter summary are those of the safetensors of `weights` (the
        framework's own arrays)."""
        save_file({name: np.ascontiguousarray(array) for name, array in weights.items()},
                  str(self.tmp / "weights.safetensors"))
        twin = self.scan_model(self.tmp / "weights.safetensors")
        self.assertEqual(model["verdict"]["label"], twin["verdict"]["label"])
        self.assertEqual(model["verdict"]["fp16_risk"], twin["verdict"]["fp16_risk"])
        for key in ("parameters", "tensors", "abs_max", "abs_min", "norm_max", "norm_min"):
            self.assertEqual(model["summary"][key], twin["summary"][key], key)

    def test_spox_keeps_every_weight_in_constant_nodes(self):
        """spox writes every array a graph holds as a Constant node: its MatMul weight, the bias added to it, the
        LayerNormalization's scale and bias are weights; the Reshape's shape is the graph's."""
        import spox.opset.ai.onnx.v17 as op
        from spox import Tensor, argument, build

        rng = np.random.default_rng(1)
        weights = {"w": rng.normal(size=(4, 8)).astype(np.float32), "b": rng.normal(size=8).astype(np.float32),
                   "gamma": (1 + 0.1 * rng.normal(size=8)).astype(np.float32),
                   "beta": (0.01 * rng.normal(size=8)).astype(np.float32)}
        x = argument(Tensor(np.float32, ("N", 4)))
        hidden = op.add(op.matmul(x, op.constant(value=weights["w"])), op.constant(value=weights["b"]))
        normed = op.layer_normalization(hidden, op.constant(value=weights["gamma"]),
                                        op.constant(value=weights["beta"]))[0]
        out = op.reshape(normed, op.constant(value=np.array([-1, 8], np.int64)))
        onnx.save(build({"x": x}, {"y": out}), str(self.tmp / "spox.onnx"))
        graph = onnx.load(str(self.tmp / "spox.onnx")).graph
        self.assertEqual(len(graph.initializer), 0)
        constants = [node.output[0] for node in graph.node if node.op_type == "Constant"]
        model = self.scan_model(self.tmp / "spox.onnx")
        tensors = tensors_by_name(model)
        for name, array in zip(constants, weights.values()):  # in the order spox built them
            self.assertEqual(tensors[name]["role"], "model", name)
            self.assertTensorStats(tensors[name], reference(array), name)
        self.assertEqual(tensors[constants[4]]["role"], "buffer")
        self.assertSameVerdictAs(model, weights)

    def test_jax2onnx_writes_an_inf_mask_as_an_initializer(self):
        """jax2onnx stores the weights a function closes over and its masks' -inf as initializers: the weights
        are read by MatMul and by the Add of its output; the -inf (and the 0 beside it) by a Where, the graph's."""
        from jax2onnx import to_onnx
        import jax
        import jax.numpy as jnp

        rng = np.random.default_rng(2)
        weights = {"w": rng.normal(size=(4, 8)).astype(np.float32), "b": rng.normal(size=8).astype(np.float32)}
        w, b = jnp.asarray(weights["w"]), jnp.asarray(weights["b"])

        def attend(x):
            hidden = jnp.tanh(x @ w + b)
            mask = jnp.where(jnp.tril(jnp.ones((3, 3), bool)), 0.0, -jnp.inf)
            return jax.nn.softmax(hidden @ hidden.transpose(0, 2, 1) + mask, axis=-1)

        with contextlib.redirect_stdout(io.StringIO()):
            onnx.save(to_onnx(attend, [("B", 3, 4)]), str(self.tmp / "jax.onnx"))
        initializers = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(self.tmp / "jax.onnx")).graph.initializer}
        (inf,) = [n for n, a in initializers.items() if a.dtype.kind == "f" and np.isinf(a).any()]
        model = self.scan_model(self.tmp / "jax.onnx")
        tensors = tensors_by_name(model)
        self.assertEqual(tensors[inf]["role"], "buffer")
        self.assertEqual(tensors[inf]["infs"], 1)
        found = {}
        for name, array in initializers.items():
            for key, weight in weights.items():
                if array.size == weight.size and np.array_equal(array.reshape(weight.shape), weight):
                    found[key] = name
        self.assertEqual(set(found), set(weights))
        roles = {name: tensors[name]["role"] for name in initializers}
        self.assertEqual({n for n, r in roles.items() if r == "model"}, set(found.values()))
        self.assertFalse(model["verdict"]["fp16_risk"])
        self.assertSameVerdictAs(model, weights)

    def test_torchscript_exporter_keeps_a_registered_inf_mask_as_an_initializer(self):
        """torch.onnx.export (dynamo=False) writes a module's -inf mask buffer as an initializer that an Add reads:
        a buffer, by its use and by its Inf alike, never the weight that decided `bf16|fp32` with fp16 risk."""

        class Masked(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(4, 4)
                self.register_buffer("mask", torch.full((3, 3), float("-inf")).triu(1))

            def forward(self, x):
                hidden = self.fc(x)
                return torch.softmax(hidden @ hidden.transpose(-1, -2) + self.mask, -1)

        torch.manual_seed(3)
        module = Masked().eval()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(module, (torch.randn(2, 3, 4),), str(self.tmp / "masked.onnx"), dynamo=False)
        model = self.scan_model(self.tmp / "masked.onnx")
        tensors = tensors_by_name(model)
        self.assertEqual(tensors["mask"]["role"], "buffer")
        self.assertEqual(tensors["fc.bias"]["role"], "model")
        self.assertFalse(model["verdict"]["fp16_risk"])
        weights = {name: p.detach().numpy() for name, p in module.named_parameters()}
        (weight,) = [n for n, t in tensors.items() if t["role"] == "model" and t["shape"] == [4, 4]]
        self.assertTensorStats(tensors[weight], reference(weights["fc.weight"]), weight)
        self.assertSameVerdictAs(model, weights)

    def test_uses_decide_initializers_and_constants_through_subgraphs(self):
        """Initializers are weights by use too: through a Transpose and a Cast to a MatMul in an If's branch (a name
        the branch reads from the graph around it), a Gather's table, a decomposed normalization's scale and shift;
        position ids, a shape and an Add's operand after no weight are the graph's; one nothing reads is as stored."""
        rng = np.random.default_rng(4)
        arrays = {"w": rng.normal(size=(8, 6)).astype(np.float32), "table": rng.normal(size=(10, 6)).astype(np.float16),
                  "scale": rng.normal(size=6).astype(np.float32), "shift": rng.normal(size=6).astype(np.float32),
                  "offset": np.full(6, 3.0, np.float32), "positions": np.arange(3, dtype=np.int64),
                  "shape": np.array([-1, 6], np.int64), "unused": np.ones(2, np.float32)}
        branch = lambda name: helper.make_graph(  # noqa: E731
            [helper.make_node("Transpose", ["w"], [f"{name}_t"]),
             helper.make_node("Cast", [f"{name}_t"], [f"{name}_c"], to=TensorProto.FLOAT),
             helper.make_node("MatMul", ["x", f"{name}_c"], [f"{name}_out"])], name, [],
            [helper.make_tensor_value_info(f"{name}_out", TensorProto.FLOAT, None)])
        nodes = [helper.make_node("If", ["flag"], ["projected"], then_branch=branch("then"),
                                  else_branch=branch("else")),
                 helper.make_node("Gather", ["table", "positions"], ["embedded16"]),
                 helper.make_node("Cast", ["embedded16"], ["embedded"], to=TensorProto.FLOAT),
                 helper.make_node("Add", ["projected", "embedded"], ["summed"]),
                 helper.make_node("ReduceMean", ["summed"], ["mean"], axes=[-1]),
                 helper.make_node("Sub", ["summed", "mean"], ["centered"]),
                 helper.make_node("Mul", ["centered", "centered"], ["squared"]),
                 helper.make_node("ReduceMean", ["squared"], ["variance"], axes=[-1]),
                 helper.make_node("Sqrt", ["variance"], ["std"]),
                 helper.make_node("Div", ["centered", "std"], ["normalized"]),
                 helper.make_node("Mul", ["normalized", "scale"], ["scaled"]),
                 helper.make_node("Add", ["scaled", "shift"], ["shifted"]),
                 helper.make_node("Add", ["shifted", "offset"], ["moved"]),
                 helper.make_node("Reshape", ["moved", "shape"], ["out"])]
        graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("flag", TensorProto.BOOL, []),
                                               helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 6])],
                                  [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
                                  initializer=[numpy_helper.from_array(a, n) for n, a in arrays.items()])
        model_proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        onnx.save(model_proto, str(self.tmp / "uses.onnx"))
        tensors = tensors_by_name(self.scan_model(self.tmp / "uses.onnx"))
        self.assertEqual({n: t["role"] for n, t in tensors.items()},
                         {"w": "model", "table": "model", "scale": "model", "shift": "model", "offset": "buffer",
                          "positions": "buffer", "shape": "buffer", "unused": "model"})
        for name in ("w", "table", "scale", "shift", "offset"):
            self.assertTensorStats(tensors[name], reference(arrays[name]), name)

    def test_nonfinite_constants_are_never_weights(self):
        """A NaN or an Inf anywhere makes a stored value the exporter's, even at a weight input."""
        values = np.array([[1.0, np.nan], [np.inf, 2.0]], np.float32)
        nodes = [helper.make_node("MatMul", ["x", "odd"], ["y"]), helper.make_node("MatMul", ["y", "w"], ["z"])]
        graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
                                  [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
                                  initializer=[numpy_helper.from_array(values, "odd"),
                                               numpy_helper.from_array(np.eye(2, dtype=np.float32), "w")])
        onnx.save(helper.make_model(graph), str(self.tmp / "nonfinite.onnx"))
        model = self.scan_model(self.tmp / "nonfinite.onnx")
        tensors = tensors_by_name(model)
        self.assertEqual((tensors["odd"]["role"], tensors["w"]["role"]), ("buffer", "model"))
        self.assertEqual((tensors["odd"]["nans"], tensors["odd"]["infs"]), (1, 1))
        self.assertIn("non_finite", warning_codes(model))


class ConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.fc = torch.nn.Linear(8 * 6 * 6, 5)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).flatten(1))


class Calibration:
    """Four seeded inputs: onnxruntime's CalibrationDataReader interface."""

    def __init__(self):
        self.inputs = iter([{"x": np.random.default_rng(i).normal(size=(1, 3, 8, 8)).astype(np.float32)}
                            for i in range(4)])

    def get_next(self):
        return next(self.inputs, None)


class Qdq(ScanTestCase):
    def setUp(self):
        super().setUp()
        logging.getLogger().setLevel(logging.ERROR)  # the quantizer's advice to pre-process, through the root logger
        torch.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(ConvNet().eval(), (torch.randn(1, 3, 8, 8),), str(self.tmp / "float.onnx"),
                              dynamo=False, input_names=["x"])

    def quantize(self, name, **settings):
        from onnxruntime.quantization import quantize_static
        with contextlib.redirect_stderr(io.StringIO()):  # its advice to pre-process
            quantize_static(str(self.tmp / "float.onnx"), str(self.tmp / name), Calibration(), **settings)
        return self.tmp / name

    def assertDequantized(self, path, expected_weights):
        """Every stored weight a node dequantizes is reported by its codes' name with the statistics of
        onnxruntime's own DequantizeLinear of it (numpy's formula agreeing exactly), its scales and zero points in
        role `scale`."""
        proto = onnx.load(str(path))
        arrays = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
        code, document, stderr = scan(path)
        self.assertEqual(code, 0, stderr)
        (model,) = document["models"]
        tensors = tensors_by_name(model)
        linked = {n: t for n, t in tensors.items() if t.get("scaled_by")}
        self.assertEqual(set(linked), expected_weights)
        for name, tensor in linked.items():
            link = tensor["scaled_by"]
            zero_point = arrays[link["zero_points"]] if link["zero_points"] else None
            codes, scale = arrays[name], arrays[link["tensor"]]
            by_ort = dequantized_by_onnxruntime(codes, scale, zero_point, link["axis"], link["block_size"])
            np.testing.assert_array_equal(by_ort, numpy_dequantized(codes, scale, zero_point, link["axis"],
                                                                    link["block_size"]))
            self.assertTensorStats(tensor, reference(by_ort), name)
            self.assertEqual(tensor["shape"], list(codes.shape))
            for part in filter(None, (link["tensor"], link["zero_points"])):
                self.assertEqual(tensors[part]["role"], "scale", part)
        return model

    def test_quantize_static_qdq_per_channel_int8(self):
        from onnxruntime.quantization import QuantFormat, QuantType
        path = self.quantize("qdq.onnx", quant_format=QuantFormat.QDQ, per_channel=True,
                             weight_type=QuantType.QInt8)
        model = self.assertDequantized(path, {"conv.weight_quantized", "fc.weight_quantized", "conv.bias_quantized",
                                              "fc.bias_quantized"})
        tensors = tensors_by_name(model)
        self.assertEqual(tensors["conv.weight_quantized"]["scaled_by"]["axis"], 0)
        self.assertEqual(tensors["conv.weight_quantized"]["role"], "model")
        self.assertNotEqual(model["verdict"]["label"], "unknown")

    def test_quantize_static_qdq_of_matmul_weights_along_their_last_axis(self):
        """A Linear on a 3-D input is exported as MatMul by its transposed weight, [in, out], plus an Add of its bias:
        quantize_static scales the weight per output column (axis 1), and quantizes the MatMul's product again
        (QuantizeLinear, DequantizeLinear) before the bias is added, which is still the Linear's bias."""
        from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

        class Inputs:
            def __init__(self):
                self.inputs = iter([{"x": np.random.default_rng(7).normal(size=(1, 2, 64)).astype(np.float32)}])

            def get_next(self):
                return next(self.inputs, None)

        torch.manual_seed(7)
        module = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.LayerNorm(32)).eval()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(module, (torch.randn(1, 2, 64),), str(self.tmp / "linear.onnx"), dynamo=False,
                              input_names=["x"])
        with contextlib.redirect_stderr(io.StringIO()):
            quantize_static(str(self.tmp / "linear.onnx"), str(self.tmp / "linear_qdq.onnx"), Inputs(),
                            quant_format=QuantFormat.QDQ, per_channel=True, weight_type=QuantType.QInt8)
        proto = onnx.load(str(self.tmp / "linear_qdq.onnx"))
        (matmul_weight,) = [t.name for t in proto.graph.initializer if list(t.dims) == [64, 32]]
        model = self.assertDequantized(self.tmp / "linear_qdq.onnx",
                                       {matmul_weight, "0.bias_quantized", "1.weight_quantized", "1.bias_quantized"})
        tensors = tensors_by_name(model)
        self.assertEqual(tensors[matmul_weight]["scaled_by"]["axis"], 1)
        for name in (matmul_weight, "0.bias_quantized", "1.weight_quantized", "1.bias_quantized"):
            self.assertEqual(tensors[name]["role"], "model", name)

    def test_quantize_static_qdq_per_tensor_uint8_and_qoperator(self):
        from onnxruntime.quantization import QuantFormat, QuantType
        for name, quant_format in (("qdq_u8.onnx", QuantFormat.QDQ), ("qop.onnx", QuantFormat.QOperator)):
            with self.subTest(name):
                path = self.quantize(name, quant_format=quant_format, per_channel=False,
                                     activation_type=QuantType.QUInt8, weight_type=QuantType.QUInt8)
                expected = {"conv.weight_quantized", "fc.weight_quantized"}
                if quant_format == QuantFormat.QDQ:
                    expected |= {"conv.bias_quantized", "fc.bias_quantized"}
                self.assertDequantized(path, expected)

    def test_quantize_dynamic_weights_are_counted_not_read(self):
        from onnxruntime.quantization import QuantType, quantize_dynamic
        with contextlib.redirect_stderr(io.StringIO()):
            quantize_dynamic(str(self.tmp / "float.onnx"), str(self.tmp / "dynamic.onnx"), weight_type=QuantType.QUInt8)
        code, document, stderr = scan(self.tmp / "dynamic.onnx")
        self.assertEqual(code, 0, stderr)
        (model,) = document["models"]
        tensors = tensors_by_name(model)
        self.assertFalse(tensors["conv.weight_quantized"]["analyzed"])
        (unread,) = [w for w in model["warnings"] if w["code"] == "quantized_not_read"]
        self.assertIn("conv.weight_quantized (onnxruntime ConvInteger weights", unread["message"])

    def qdq_model(self, codes, scale, zero_point=None, axis=1, block_size=0, opset=21):
        inputs = [numpy_helper.from_array(codes, "w"), numpy_helper.from_array(scale, "w_scale")]
        if zero_point is not None:
            inputs.append(numpy_helper.from_array(zero_point, "w_zero_point"))
        attributes = {"axis": axis} | ({"block_size": block_size} if block_size else {})
        nodes = [helper.make_node("DequantizeLinear", [i.name for i in inputs], ["w_float"], **attributes),
                 helper.make_node("MatMul", ["x", "w_float"], ["y"])]
        graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", scale_type(scale), None)],
                                  [helper.make_tensor_value_info("y", scale_type(scale), None)], initializer=inputs)
        path = self.tmp / f"dq{len(list(self.tmp.iterdir()))}.onnx"
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), str(path))
        return path

    def test_float16_scales_blocks_and_negative_axes_as_onnxruntime_computes(self):
        rng = np.random.default_rng(6)
        codes = rng.integers(-128, 128, size=(6, 10), dtype=np.int8)
        cases = {"fp16 per axis": (codes, (rng.random(10) * 3e-3).astype(np.float16),
                                   rng.integers(-5, 5, 10).astype(np.int8), -1, 0),
                 "float32 per tensor without a zero point": (codes, np.array(0.37, np.float32), None, 1, 0),
                 "blocks of 4 along axis 1": (codes, (rng.random((6, 3)) * 0.1).astype(np.float32),
                                              rng.integers(-3, 3, (6, 3)).astype(np.int8), 1, 4),
                 "uint8 per axis 0": (codes.view(np.uint8), rng.random(6).astype(np.float32),
                                      rng.integers(0, 255, 6).astype(np.uint8), 0, 0)}
        for name, (q, scale, zero, axis, block) in cases.items():
            with self.subTest(name):
                self.assertDequantized(self.qdq_model(q, scale, zero, axis, block), {"w"})

    def test_malformed_dequantizations_are_named_errors(self):
        codes = np.arange(12, dtype=np.int8).reshape(3, 4)
        for name, (scale, zero, axis), needle in (
                ("no axis fits", (np.ones(5, np.float32), None, 1), "is neither one value nor one per slice"),
                ("zero point of another dtype", (np.ones(4, np.float32), np.zeros(4, np.uint8), 1),
                 "zero point `w_zero_point` is U8, its codes I8"),
                ("axis out of range", (np.ones(4, np.float32), None, 2), "axis 2 is out of range"),
                ("blocks that do not fit", (np.ones((3, 3), np.float32), None, 1), "is not one per block of 2")):
            with self.subTest(name):
                path = self.qdq_model(codes, scale, zero, axis, 2 if name.startswith("blocks") else 0)
                code, document, _ = scan(path)
                self.assertEqual(code, 2)
                error = document["models"][0]["error"]
                self.assertEqual(error["code"], "invalid_onnx")
                self.assertIn(needle, error["message"])
                self.assertIn(str(path), error["message"])


if __name__ == "__main__":
    unittest.main()
