#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora into tests/fuzz/seeds/<target>/: small valid inputs of each kind, so the
fuzzer starts from the formats' real structure (docs/fuzzing.md). Run again after changing it; the seeds are
committed."""

import argparse
import io
import json
import pickle
import sys
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pre04_tar import pre04_tar  # noqa: E402

SEEDS = Path(__file__).resolve().parent / "seeds"


def write(target, name, data):
    (SEEDS / target).mkdir(parents=True, exist_ok=True)
    (SEEDS / target / name).write_bytes(data)


def torch_zip(obj):
    saved = io.BytesIO()
    torch.save(obj, saved)
    return saved.getvalue()


def pickle_safety_seeds():
    """The first byte picks the name the target gives the rest: even, model.pkl; odd, array.npy."""
    import malicious_corpus  # noqa: E402 (tests/ is on the path above)
    cases = malicious_corpus.malicious_cases()
    for case in ("stack-global-memo", "inst-opcode", "appended-after-stop", "build-on-function", "dotted-name"):
        write("pickle_safety", case, b"\x00" + cases[case][1])
    write("pickle_safety", "plain-dict", b"\x00" + pickle.dumps({"lr": 0.1, "steps": [1, 2]}, protocol=2))
    write("pickle_safety", "npy-numeric", b"\x01" + malicious_corpus.npy_bytes(np.ones((2, 3), np.float32)))
    write("pickle_safety", "npy-objects", b"\x01" + malicious_corpus.npy_bytes(np.array([{"a": 1}, None], dtype=object)))


def new_format_seeds():
    """GGUF, Flax msgpack, HDF5 and .npz seeds, written by gguf, flax, h5py and numpy (issue 24)."""
    import tempfile
    import gguf
    import flax.serialization
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "seed.gguf"
        writer = gguf.GGUFWriter(str(path), "llama")
        writer.add_file_type(1)
        writer.add_array("test.nested", [[1, 2], [3]])
        writer.add_tensor("w", np.arange(6, dtype=np.float32).reshape(2, 3))
        writer.add_tensor("h", np.ones(4, np.float16))
        writer.add_tensor("q", gguf.quants.quantize(np.ones((1, 32), np.float32), gguf.GGMLQuantizationType.Q8_0),
                          raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        write("gguf", "three-tensors", path.read_bytes())
    tree = {"encoder": {"kernel": np.arange(6, dtype=np.float32).reshape(2, 3), "scale": np.ones(3, np.float16)},
            "step": 3}
    write("flax_msgpack", "tree", flax.serialization.msgpack_serialize(tree))
    limit = flax.serialization.MAX_CHUNK_SIZE
    flax.serialization.MAX_CHUNK_SIZE = 8
    write("flax_msgpack", "chunked", flax.serialization.msgpack_serialize({"w": np.arange(6, dtype=np.float32)}))
    flax.serialization.MAX_CHUNK_SIZE = limit
    import h5py
    with tempfile.TemporaryDirectory() as folder:
        for name, options in (("contiguous", {}), ("chunked", {"chunks": True, "compression": "gzip"})):
            path = Path(folder) / f"{name}.h5"
            with h5py.File(path, "w") as f:
                f.create_dataset("layer/kernel:0", data=np.arange(6, dtype=np.float32).reshape(2, 3), **options)
                f.create_dataset("layer/bias:0", data=np.ones(3, ">f2"), **options)
                f.create_dataset("names", data=np.array([b"a"]))
            write("hdf5", name, path.read_bytes())
    for name, save_npz in (("stored", np.savez), ("deflated", np.savez_compressed)):
        saved = io.BytesIO()
        save_npz(saved, w=np.arange(6, dtype=np.float32).reshape(2, 3), b=np.ones(3, ">f2"),
                 f=np.asfortranarray(np.ones((2, 2))))
        write("numpy_arrays", name, saved.getvalue())


def dcp_seeds():
    """DCP .metadata pickles dcp.save writes: a model and Adam's state in one process with two writer threads
    (objects in it), the same Metadata with `w` in two column chunks, as two tensor-parallel ranks write it, and a
    rank's own `__0.metadata` (use_collectives=False) that lists half of `w`."""
    import tempfile
    import warnings
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.metadata import ChunkStorageMetadata, MetadataIndex
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.Adam(model.parameters())
    model(torch.ones(1, 3)).sum().backward()
    optimizer.step()
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "assuming the intent is to save in a single process"
        dcp.save({"model": model.state_dict(), "optim": optimizer.state_dict(), "step": 3},
                 storage_writer=dcp.FileSystemWriter(folder, thread_count=2))
        data = (Path(folder) / ".metadata").read_bytes()
    write("dcp_metadata", "model-and-adam", data)
    metadata = pickle.loads(data)
    weight = metadata.state_dict_metadata["model.weight"]
    weight.chunks = [ChunkStorageMetadata(torch.Size([0, 0]), torch.Size([2, 2])),
                     ChunkStorageMetadata(torch.Size([0, 2]), torch.Size([2, 1]))]
    stored = metadata.storage_data.pop(MetadataIndex("model.weight", [0, 0]))
    metadata.storage_data[MetadataIndex("model.weight", [0, 0])] = stored
    metadata.storage_data[MetadataIndex("model.weight", [0, 2])] = stored
    write("dcp_metadata", "column-chunks", pickle.dumps(metadata))
    # Rank 0's __0.metadata of a folder saved without collectives, listing only its own half of `model.weight`.
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dcp.save({"model": model.state_dict(), "step": 3}, checkpoint_id=folder, use_collectives=False)
        metadata = pickle.loads((Path(folder) / "__0.metadata").read_bytes())
    metadata.state_dict_metadata["model.weight"].chunks = [ChunkStorageMetadata(torch.Size([0, 0]), torch.Size([1, 3]))]
    write("dcp_metadata", "rank-local-half", pickle.dumps(metadata))


def zstd_seeds():
    """zstd frames as DCP's zstd stream transform writes `.distcp` entries: a tensor's torch.save archive (dcp.save
    through FileSystemWriter(_extensions=[ZStandard()]), which needs the zstandard package), and 1 MiB of zeros."""
    import tempfile
    import warnings
    import zstandard
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint._extension import ZStandard
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "assuming the intent is to save in a single process"
        dcp.save({"w": torch.arange(12.0).reshape(3, 4)},
                 storage_writer=dcp.FileSystemWriter(folder, _extensions=[ZStandard()]))
        write("zstd_frame", "dcp-archive", (Path(folder) / "__0_0.distcp").read_bytes())
    write("zstd_frame", "zeros", zstandard.ZstdCompressor(write_content_size=False).compress(bytes(1 << 20)))


def onnx_seeds():
    """ONNX seeds (issue 50): torch.onnx.export's model (raw_data initializers, Constant nodes), onnx.helper's typed
    fields (float_data, fp16 and bf16 in int32_data, int64_data, double_data), an If node's subgraphs, a sparse
    initializer, and a tensor whose data is external."""
    import warnings
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(3, 2)

        def forward(self, x):
            return self.fc(x) + torch.where(x.sum() > 0, 0.0, torch.finfo(torch.float32).min)

    exported = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Block().eval(), (torch.ones(1, 3),), exported, dynamo=False)
    write("onnx", "torch-export", exported.getvalue())
    typed = [helper.make_tensor("f32", TensorProto.FLOAT, [2, 2], [1.0, -2.0, 3.5, 0.0]),
             helper.make_tensor("f16", TensorProto.FLOAT16, [3], [1.0, -65504.0, 6e-8]),
             helper.make_tensor("bf16", TensorProto.BFLOAT16, [2], [1e30, -1.5]),
             helper.make_tensor("i64", TensorProto.INT64, [2], [5, -3]),
             helper.make_tensor("f64", TensorProto.DOUBLE, [1], [2.5])]
    branch = helper.make_graph([helper.make_node("Identity", ["c"], ["z"])], "then", [],
                               [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1])],
                               initializer=[numpy_helper.from_array(np.ones(1, np.float32), "c")])
    if_node = helper.make_node("If", ["cond"], ["y"], then_branch=branch, else_branch=branch)
    sparse = helper.make_sparse_tensor(numpy_helper.from_array(np.ones(2, np.float32), "s"),
                                       numpy_helper.from_array(np.array([0, 3], np.int64), "s_indices"), [4])
    external = numpy_helper.from_array(np.ones(4, np.float32), "ext")
    external.ClearField("raw_data")
    external.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "model.onnx_data"), ("offset", "0"), ("length", "16")):
        external.external_data.add(key=key, value=value)
    graph = helper.make_graph([if_node], "g", [helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])], initializer=typed,
                              sparse_initializer=[sparse])
    write("onnx", "typed-subgraph-sparse", helper.make_model(graph).SerializeToString())
    graph.initializer.append(external)
    write("onnx", "external", helper.make_model(graph).SerializeToString())
    onnx_attribute_seeds()
    onnx_sparse_seeds()
    onnx_quantized_seeds()


def onnx_quantized_seeds():
    """ONNX seeds of issue 59: a QDQ graph (DequantizeLinear per axis with zero points, per tensor, in blocks of
    opset 21) beside a QOperator QLinearMatMul, and a subgraph whose MatMul reads a weight of the graph around it
    through a Transpose, with a -inf mask read by an Add."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    arrays = {"w": np.arange(-6, 6, dtype=np.int8).reshape(3, 4), "w_scale": np.array([0.5, 0.25, 2.0, 1.0], np.float16),
              "w_zero": np.array([0, 1, -1, 2], np.int8), "t": np.arange(8, dtype=np.uint8).reshape(2, 4),
              "t_scale": np.array(0.125, np.float32), "b": np.arange(8, dtype=np.int8).reshape(2, 4),
              "b_scale": np.ones((2, 2), np.float32), "q": np.arange(6, dtype=np.uint8).reshape(3, 2),
              "q_scale": np.array([0.5, 0.25], np.float32), "q_zero": np.array([1, 2], np.uint8),
              "a_scale": np.array(1.0, np.float32), "a_zero": np.array(0, np.uint8)}
    nodes = [helper.make_node("DequantizeLinear", ["w", "w_scale", "w_zero"], ["wf"], axis=1),
             helper.make_node("DequantizeLinear", ["t", "t_scale"], ["tf"]),
             helper.make_node("DequantizeLinear", ["b", "b_scale"], ["bf"], axis=1, block_size=2),
             helper.make_node("QLinearMatMul", ["x", "a_scale", "a_zero", "q", "q_scale", "q_zero", "a_scale",
                                                "a_zero"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 3])],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("wf", "tf", "bf")],
                              initializer=[numpy_helper.from_array(a, n) for n, a in arrays.items()])
    write("onnx", "qdq-qoperator", helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
          .SerializeToString())
    body = helper.make_graph([helper.make_node("Transpose", ["outer"], ["t"]),
                              helper.make_node("MatMul", ["x", "t"], ["m"]),
                              helper.make_node("Add", ["m", "mask"], ["z"])], "then", [],
                             [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)])
    graph = helper.make_graph([helper.make_node("If", ["cond"], ["y"], then_branch=body, else_branch=body)], "g",
                              [helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
                               helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=[numpy_helper.from_array(np.eye(2, dtype=np.float32), "outer"),
                                           numpy_helper.from_array(np.array([0, -np.inf], np.float32), "mask")])
    write("onnx", "subgraph-uses", helper.make_model(graph).SerializeToString())


def onnx_sparse_seeds():
    """An ONNX seed of sparse tensors as precdetect reads them: float16 values placed by [NNZ, rank] coordinates,
    float32 values by positions in raw_data, and a Constant's sparse_value."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    coordinates = helper.make_sparse_tensor(
        numpy_helper.from_array(np.array([3e3, -2.5e-3], np.float16), "coordinates"),
        numpy_helper.from_array(np.array([[0, 1], [1, 2]], np.int64), "coordinate_indices"), [2, 3])
    positions = helper.make_sparse_tensor(numpy_helper.from_array(np.array([1.5, -4.0], np.float32), "positions"),
                                          numpy_helper.from_array(np.array([2, 9], np.int64), "indices"), [10])
    value = helper.make_sparse_tensor(numpy_helper.from_array(np.array([0.5], np.float32), "v"),
                                      numpy_helper.from_array(np.array([1], np.int64), "i"), [3])
    graph = helper.make_graph([helper.make_node("Constant", [], ["c"], sparse_value=value)], "g", [],
                              [helper.make_tensor_value_info("c", TensorProto.FLOAT, [3])],
                              sparse_initializer=[coordinates, positions])
    model = helper.make_model(graph)
    onnx.checker.check_model(model)
    write("onnx", "sparse-coordinates", model.SerializeToString())


def onnx_attribute_seeds():
    """ONNX seeds for the tensors nodes' attributes hold: a Constant's value_float(s), value_int(s), value_strings and
    sparse_value, ConstantOfShape's `value`; and torch.onnx.export's default exporter's file, whose value_info and
    graph metadata record where its initializers came from."""
    import contextlib
    import warnings
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    sparse = helper.make_sparse_tensor(numpy_helper.from_array(np.array([2.0, -1e5], np.float32), "v"),
                                       numpy_helper.from_array(np.array([1, 3], np.int64), "i"), [4])
    nodes = [helper.make_node("Constant", [], ["low"], value_float=float(np.finfo(np.float32).min)),
             helper.make_node("Constant", [], ["scales"], value_floats=[1.5, -2.25]),
             helper.make_node("Constant", [], ["axis"], value_int=-1),
             helper.make_node("Constant", [], ["shape"], value_ints=[2, 3]),
             helper.make_node("Constant", [], ["label"], value_strings=["a"]),
             helper.make_node("Constant", [], ["sparse"], sparse_value=sparse),
             helper.make_node("ConstantOfShape", ["shape"], ["filled"], name="fill",
                              value=numpy_helper.from_array(np.array([0.5], np.float32)))]
    graph = helper.make_graph(nodes, "g", [], [helper.make_tensor_value_info("filled", TensorProto.FLOAT, [2, 3])])
    write("onnx", "constant-attributes", helper.make_model(graph).SerializeToString())
    # Issue 59: weights held in Constant nodes, read as weights by the operators that take them.
    weights = {"table": np.ones((4, 2), np.float32), "w": np.ones((2, 2), np.float32), "g": np.ones(2, np.float32)}
    nodes = [helper.make_node("Constant", [], [name], value=numpy_helper.from_array(value, name))
             for name, value in weights.items()]
    nodes += [helper.make_node("Gather", ["table", "ids"], ["e"]), helper.make_node("MatMul", ["e", "w"], ["m"]),
              helper.make_node("LayerNormalization", ["m", "g"], ["out"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)])
    write("onnx", "constant-weights", helper.make_model(graph).SerializeToString())

    class Masked(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(3, 2)

        def forward(self, x):
            return self.fc(x).masked_fill(x[..., :2] > 0, torch.finfo(torch.float32).min)

    torch.manual_seed(0)
    exported = io.BytesIO()
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(Masked().eval(), (torch.ones(1, 4, 3),), dynamo=True)
    model = program.model_proto
    for node in model.graph.node:  # stack traces and scopes, which the reader skips
        del node.metadata_props[:]
    onnx.save_model(model, exported)
    write("onnx", "dynamo-export", exported.getvalue())


def quanto_seed():
    """optimum-quanto's flattened weights: 4-bit codes packed in bytes with scales and shifts, int8 codes with a scale
    per row, and a module's activation scales."""
    write("safetensors_header", "quanto",
          save({"l.weight._data._data": torch.zeros(3, 128, dtype=torch.uint8),
                "l.weight._scale": torch.ones(5, 1, dtype=torch.float16),
                "l.weight._shift": torch.zeros(5, 1, dtype=torch.float16),
                "l.input_scale": torch.ones(()), "l.output_scale": torch.ones(()),
                "b.weight._data": torch.zeros(4, 8, dtype=torch.int8), "b.weight._scale": torch.ones(4, 1)}))


def torchao_seeds():
    """torchao's subclasses as its flatten_tensor_state_dict writes them (Int8Tensor per row, Float8Tensor, an
    Int4Tensor counted unread), and the same state pickled by torch.save (the subclasses' state, never run)."""
    from torchao.prototype.safetensors.safetensors_support import flatten_tensor_state_dict
    from torchao.quantization import Float8WeightOnlyConfig, Int4Tensor, Int8WeightOnlyConfig, quantize_

    state = {}
    for name, config in (("i", Int8WeightOnlyConfig()), ("f", Float8WeightOnlyConfig())):
        layer = torch.nn.Linear(8, 4, bias=False, dtype=torch.bfloat16)
        quantize_(layer, config)
        state[f"{name}.weight"] = layer.weight.data
    write("pickle_machine", "torchao-subclasses", torch_zip_pickle(state))
    state["q.weight"] = Int4Tensor(torch.zeros(4, 16, dtype=torch.uint8), torch.ones(1, 4, dtype=torch.bfloat16),
                                   torch.zeros(1, 4, dtype=torch.bfloat16), [1, 32], (4, 32))
    tensors, metadata = flatten_tensor_state_dict(state)
    write("safetensors_header", "torchao-subclasses", save(tensors, metadata=metadata))


def chat_template_seeds():
    """Real chat templates (tests/chat_templates: llama.cpp's tool-use and reasoning ones, ChatML), the payloads
    tests/e2e/test_templates.py renders, and the grammar's corners (raw, whitespace control, escapes, slices)."""
    corpus = SEEDS.parent.parent / "chat_templates"
    for name in ("llama.cpp/NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", "llama.cpp/Qwen-Qwen3-0.6B.jinja",
                 "llama.cpp/meetkai-functionary-medium-v3.2.jinja", "chujiezheng/chatml.jinja"):
        write("chat_template", Path(name).stem, (corpus / name).read_bytes())
    write("chat_template", "payloads", (
        "{% set b = cycler.__init__.__globals__.__builtins__ %}{{ b.open(marker).read() }}"
        "{% set ns = namespace(i='__in' ~ 'it__') %}{{ cycler[ns.i]|attr('__glo' ~ 'bals__') }}"
        "{% macro m(k) %}{{ x[k] }}{% endmacro %}{{ m('_' * 2 ~ 'class__') }}{{ '{0.__class__}'.format(x) }}"
        "{% set l = [] %}{% do l.append(bos_token) %}{{ x[l[0]]|map(attribute='a.__dict__') }}").encode())
    write("chat_template", "corners", (
        "{%- raw -%}{{ x }}{%+ endraw %}{# c #}{{- '\\x5f\\N{LOW LINE}\\u00e9' 'b' -}}{{ x[1:-1:2] }}"
        "{% for a, b in d|dictsort if a recursive %}{{ loop(b) }}{% else %}{% break %}{% endfor %}"
        "{% call(y) m(1, *a, k=2, **kw) %}{{ caller(y) }}{% endcall %}{{ 0x_ff + 1_0.5e-3 // 2 ** -x }}"
        "{{ {'a': (1,), 'b': [none, True]} is mapping }}{% set x | upper %}t{% endset %}").encode())


def main():
    small = {"w": torch.arange(6, dtype=torch.float32).reshape(2, 3), "b": torch.ones(3, dtype=torch.bfloat16)}
    write("safetensors_header", "two-tensors", save(small, metadata={"format": "pt"}))
    write("safetensors_header", "dcp-rank-slice", save({"w": torch.ones(2, 4)}, metadata={
        "DCP_SHARDING_INFO": json.dumps({"w": {"saved_offsets": [0, 0]}})}))  # DCP's HuggingFace writer, one rank
    write("safetensors_header", "empty", save({}))
    write("safetensors_header", "fp8-block-scales",
          save({"w.weight": torch.zeros(200, 300).to(torch.float8_e4m3fn), "w.weight_scale_inv": torch.ones(2, 3),
                "model.diffusion_model.x": torch.zeros(2), "first_stage_model.y": torch.zeros(2)}))
    write("safetensors_header", "mlx-affine",
          save({"w.weight": torch.zeros(4, 8, dtype=torch.uint32), "w.scales": torch.ones(4, 1, dtype=torch.float16),
                "w.biases": torch.zeros(4, 1, dtype=torch.float16)}))
    write("safetensors_header", "packed-integers",
          save({"g.qweight": torch.zeros(12, 64, dtype=torch.int32), "g.qzeros": torch.zeros(1, 6, dtype=torch.int32),
                "g.scales": torch.ones(1, 64, dtype=torch.float16), "g.g_idx": torch.zeros(128, dtype=torch.int32),
                "c.weight_packed": torch.zeros(8, 16, dtype=torch.int32),
                "c.weight_scale": torch.ones(8, 1, dtype=torch.bfloat16),
                "c.weight_zero_point": torch.zeros(1, 1, dtype=torch.int32),
                "c.weight_shape": torch.tensor([8, 128])}))
    quanto_seed()
    torchao_seeds()
    write("safetensors_header", "microscaling-and-compressed",  # issue 59's schemes, each read with its config
          save({"n.weight_packed": torch.zeros(2, 16, dtype=torch.uint8),
                "n.weight_scale": torch.ones(2, 2).to(torch.float8_e4m3fn), "n.weight_global_scale": torch.ones(1),
                "i.weight": torch.zeros(4, 8, dtype=torch.int8), "i.weight_scale": torch.ones(4, 1),
                "i.weight_zero_point": torch.zeros(4, 1, dtype=torch.int8),
                "e.gate_up_proj_blocks": torch.zeros(4, 2, 16, dtype=torch.uint8),
                "e.gate_up_proj_scales": torch.full((4, 2), 127, dtype=torch.uint8),
                "m.weight": torch.zeros(4, 8, dtype=torch.uint32), "m.scales": torch.full((4, 2), 127, dtype=torch.uint8),
                "b.weight": torch.zeros(8, 1, dtype=torch.bfloat16), "b.weight.absmax": torch.ones(1),
                "b.weight.quant_map": torch.zeros(16),
                "b.weight.quant_state.bitsandbytes__nf4": torch.zeros(4, dtype=torch.uint8)}))
    write("shard_index", "index", json.dumps({"metadata": {"total_size": 40},
                                              "weight_map": {"w": "model-00001.safetensors",
                                                             "b": "model-00002.safetensors"}}).encode())
    state = {"model": small, "epoch": 3, "optimizer": {"state": {0: {"step": torch.tensor(1.0)}}}}
    zipped = torch_zip(state)
    write("zip_directory", "state-dict", zipped)
    write("pickle_machine", "state-dict", torch_zip_pickle(state))
    write("pickle_machine", "views", torch_zip_pickle({"a": torch.ones(8)[2:6], "t": torch.ones(2, 4).t()}))
    # The training records' shapes (docs/method.md): a run's Namespace, a DeepSpeed config, a GradScaler's state.
    records = {"args": argparse.Namespace(fp16=False, bf16=True, params_dtype=torch.bfloat16, amp=True),
               "ds_config": {"bf16": {"enabled": True}, "fp16": {"enabled": "auto"}},
               "cfg": {"common": {"fp16": True, "memory_efficient_fp16": False}},
               "scaler": torch.amp.GradScaler("cpu").state_dict(), "hyper_parameters": {"precision": "16-mixed"},
               "last_optimizer_state": {"loss_scale": 128.0}, "model": small}
    write("pickle_machine", "records", torch_zip_pickle(records))
    legacy = io.BytesIO()
    torch.save(small, legacy, _use_new_zipfile_serialization=False)
    write("torch_legacy", "state-dict", legacy.getvalue())
    write("torch_tar", "state-dict", pre04_tar({"w": torch.arange(6, dtype=torch.float32).reshape(2, 3),
                                                "steps": torch.tensor([3, 4], dtype=torch.int64)}))
    write("torch_tar", "nemo", nemo_archive(small, "precision: bf16-mixed\n"))
    pickle_safety_seeds()
    new_format_seeds()
    dcp_seeds()
    zstd_seeds()
    onnx_seeds()
    chat_template_seeds()
    keras_config_seeds()
    print(f"seeds in {SEEDS}")


def keras_config_seeds():
    """Keras model configs written by keras: a .keras archive's config.json (a functional model, compiled; a
    Sequential one with a Lambda) and the same Lambda model's .h5 model_config (issue 58)."""
    import os
    import tempfile
    os.environ.setdefault("KERAS_BACKEND", "jax")
    import h5py
    import keras
    inputs = keras.Input((8,))
    hidden = keras.layers.LayerNormalization()(keras.layers.Dense(16, activation="relu")(inputs))
    functional = keras.Model(inputs, keras.layers.Dense(4, activation=keras.activations.gelu)(hidden))
    functional.compile(optimizer="adam", loss="mse", metrics=["mae"])
    double = eval(compile("lambda x: x * 2", "model.py", "eval"))  # its code names model.py, not this folder
    with_lambda = keras.Sequential([keras.Input((4,)), keras.layers.Dense(4), keras.layers.Lambda(double)])
    with tempfile.TemporaryDirectory() as folder:
        for name, model in (("functional", functional), ("lambda", with_lambda)):
            model.save(Path(folder) / f"{name}.keras")
            with zipfile.ZipFile(Path(folder) / f"{name}.keras") as archive:
                write("keras_config", f"{name}-config-json", archive.read("config.json"))
        with_lambda.save(Path(folder) / "lambda.h5")
        with h5py.File(Path(folder) / "lambda.h5") as f:
            write("keras_config", "lambda-h5-model-config", f.attrs["model_config"].encode())


def nemo_archive(weights, model_config):
    """A .nemo as NeMo writes it: an uncompressed tar of model_config.yaml and model_weights.ckpt."""
    saved = io.BytesIO()
    with tarfile.open(fileobj=saved, mode="w:") as archive:
        for name, data in [("./model_config.yaml", model_config.encode()), ("./model_weights.ckpt", torch_zip(weights))]:
            member = tarfile.TarInfo(name)
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))
    return saved.getvalue()


def torch_zip_pickle(obj):
    with zipfile.ZipFile(io.BytesIO(torch_zip(obj))) as archive:
        return archive.read(next(n for n in archive.namelist() if n.endswith("data.pkl")))


if __name__ == "__main__":
    main()
