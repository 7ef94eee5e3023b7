"""The weight formats beside safetensors and PyTorch (issue 24): GGUF, Flax msgpack, Keras/TF HDF5, NumPy
.npy/.npz. Every file is written by the format's own writer (gguf, flax.serialization, keras and h5py, numpy) and
every tensor's statistics are checked against float64 references computed from that writer's arrays. TensorFlow
itself is not installed (too large for the test venv): transformers' tf_model.h5 layout is written with h5py.
GGUF files converted from transformers models are written by llama.cpp's own converter (convert_hf_to_gguf.py)."""

import io
import json
import os
import struct
import subprocess
import sys
import unittest
import zipfile
from pathlib import Path

import numpy as np
import torch
from safetensors.numpy import save_file

from helpers import ScanTestCase, reference_precision, requires, run, scan, tensors_by_name, warning_codes, write_gguf

import gguf  # noqa: E402  (after helpers: the test venv's packages)
import h5py
import sentencepiece
import transformers
from gguf import GGMLQuantizationType as GgmlType
from safetensors.torch import load_file, save_file as save_torch_file
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

CONVERTER = Path(sys.prefix) / "convert-hf-to-gguf"  # scripts/setup.sh installs it there, apart from gguf

os.environ.setdefault("KERAS_BACKEND", "jax")
try:
    import keras
except ImportError:  # pragma: no cover - setup.sh installs keras
    keras = None

try:
    import flax.serialization as flax_serialization
    import jax.numpy as jnp
except ImportError:  # pragma: no cover - setup.sh installs flax; a user's venv may lack it
    flax_serialization = None


def weights(seed=0):
    """Weights with magnitudes in bf16's range beyond fp16's, as the method looks for."""
    rng = np.random.default_rng(seed)
    return {
        "token_embd.weight": (rng.standard_normal((32, 16)) * 3).astype(np.float32),
        "blk.0.attn_q.weight": (rng.standard_normal((16, 16)) * 0.05).astype(np.float32),
        "blk.0.ffn_up.weight": (rng.standard_normal((24, 16)) * 9e4).astype(np.float32),
        "output_norm.weight": np.ones(16, np.float32) + rng.standard_normal(16).astype(np.float32) * 1e-3,
    }


# The K-quants and the 32-value types, with a scale test of their own here (every ggml type: test_ggml_types.py).
QUANTIZED = (GgmlType.Q4_0, GgmlType.Q4_1, GgmlType.Q5_0, GgmlType.Q5_1, GgmlType.Q8_0, GgmlType.Q2_K, GgmlType.Q3_K,
             GgmlType.Q4_K, GgmlType.Q5_K, GgmlType.Q6_K)
# Where each K-quant block keeps its fp16 scales (d, and dmin for the types with minimums), from ggml's block_qN_K.
K_QUANT_SCALES = {GgmlType.Q2_K: (80, 82), GgmlType.Q3_K: (108,), GgmlType.Q4_K: (0, 2), GgmlType.Q5_K: (0, 2),
                  GgmlType.Q6_K: (208,)}


def random_blocks(qtype, rows, rng):
    """`rows` rows of two blocks of `qtype`: random bytes, whose fp16 scales are set finite (0.001 to 0.02)."""
    block_bytes = gguf.GGML_QUANT_SIZES[qtype][1]
    blocks = rng.integers(0, 256, (rows * 2, block_bytes), dtype=np.uint8)
    for offset in K_QUANT_SCALES[qtype]:
        scales = rng.uniform(1e-3, 2e-2, rows * 2).astype(np.float16)
        blocks[:, offset:offset + 2] = scales.view(np.uint8).reshape(-1, 2)
    return blocks.reshape(rows, 2 * block_bytes)


class ArraysTestCase(ScanTestCase):
    def assertArrays(self, model, arrays):
        """Every array is a tensor of its shape; the floating ones' statistics match float64 references."""
        tensors = tensors_by_name(model)
        self.assertEqual(set(tensors), set(arrays))
        for name, array in arrays.items():
            self.assertEqual(tensors[name]["shape"], list(array.shape), name)
            if array.dtype.kind == "f":
                native = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("="))
                self.assertTensorStats(tensors[name], torch.from_numpy(native), name)


class Gguf(ScanTestCase):
    def test_float_tensors_match_float64_references_and_quantized_ones_are_counted(self):
        rng = np.random.default_rng(1)
        f32 = weights()
        bf16_values = (rng.standard_normal((8, 256)) * 2e5).astype(np.float32)
        q8_values = rng.standard_normal((4, 64)).astype(np.float32)
        arrays = {name: (array, None) for name, array in f32.items()}
        arrays["f16"] = (f32["blk.0.attn_q.weight"].astype(np.float16), None)
        arrays["f64"] = (rng.standard_normal((3, 5)), None)
        arrays["bf16"] = (gguf.quants.quantize(bf16_values, GgmlType.BF16), GgmlType.BF16)
        arrays["q8"] = (gguf.quants.quantize(q8_values, GgmlType.Q8_0), GgmlType.Q8_0)
        q4k_bytes = gguf.GGML_QUANT_SIZES[GgmlType.Q4_K][1]
        arrays["q4k"] = (rng.integers(0, 255, (2, 2 * q4k_bytes), dtype=np.uint8), GgmlType.Q4_K)
        arrays["i32"] = (np.arange(12, dtype=np.int32).reshape(3, 4), None)
        path = self.tmp / "model.gguf"
        write_gguf(path, arrays, file_type=32)

        code, document, _ = scan(path)
        self.assertEqual(code, 0)
        model = document["models"][0]
        self.assertEqual(model["format"], "gguf")
        tensors = tensors_by_name(model)
        references = {name: array for name, (array, raw) in arrays.items() if raw is None and name != "i32"}
        references["bf16"] = gguf.quants.dequantize(arrays["bf16"][0], GgmlType.BF16)
        for name, array in references.items():
            self.assertEqual(tensors[name]["shape"], list(array.shape), name)  # as PyTorch writes it
            self.assertTensorStats(tensors[name], torch.from_numpy(np.ascontiguousarray(array)), name)
        self.assertEqual(tensors["bf16"]["dtype"], "BF16")
        self.assertEqual(tensors["f64"]["dtype"], "F64")
        # Quantized: counted with the bytes the file really holds (the gguf reader's), analyzed dequantized.
        reader = gguf.GGUFReader(path)
        real = {t.name: t for t in reader.tensors}
        for name, dtype in (("q8", "Q8_0"), ("q4k", "Q4_K")):
            self.assertEqual(tensors[name]["dtype"], dtype)
            self.assertTrue(tensors[name]["analyzed"])
            self.assertEqual(tensors[name]["numel"], int(real[name].n_elements))
            self.assertEqual(list(reversed(tensors[name]["shape"])), [int(d) for d in real[name].shape])
        self.assertEqual(tensors["q4k"]["numel"], 2 * 256 * 2)
        self.assertEqual(model["summary"]["bytes"], sum(int(t.n_bytes) for t in reader.tensors))
        self.assertIn("dequantized", warning_codes(model))
        metadata = model["metadata"]
        self.assertEqual(metadata["version"], 3)
        self.assertEqual(metadata["file_type"], "MOSTLY_BF16")
        self.assertEqual(metadata["key_values"]["general.architecture"], "llama")
        self.assertEqual(metadata["key_values"]["general.quantization_version"], 2)
        self.assertEqual(model["safety"]["verdict"], "safe")
        verbose = run("-v", path).stdout
        self.assertIn("gguf: version 3, architecture llama, file type MOSTLY_BF16, quantization version 2", verbose)

    def test_quantized_tensors_are_analyzed_as_gguf_py_dequantizes_them(self):
        """Every block type precdetect dequantizes, written by gguf-py's GGUFWriter: quantized by gguf-py's own
        quantizer where it has one (Q4_0 ... Q8_0), else blocks of random bytes with finite fp16 scales (gguf-py
        writes no K-quant). Statistics and cast counts equal those of gguf-py's dequantization, in float64."""
        rng = np.random.default_rng(7)
        weights_f32 = (rng.standard_normal((8, 512)) * 0.05).astype(np.float32)
        weights_f32[0, :4] = [300.0, 2e5, 7e-6, 0.0]  # past fp16's range, below its subnormals, zero
        arrays = {}
        for qtype in QUANTIZED:
            try:
                arrays[qtype.name] = (gguf.quants.quantize(weights_f32, qtype), qtype)
            except NotImplementedError:
                arrays[qtype.name] = (random_blocks(qtype, 8, rng), qtype)
        path = self.tmp / "quantized.gguf"
        write_gguf(path, arrays, file_type=15)
        code, document, _ = scan(path)
        self.assertEqual(code, 0)
        model = document["models"][0]
        tensors = tensors_by_name(model)
        for name, (blocks, qtype) in arrays.items():
            reference = torch.from_numpy(gguf.quants.dequantize(blocks, qtype).astype(np.float64))
            self.assertTensorStats(tensors[name], reference, name)
            expected = reference_precision(reference)
            expected["bf16_exact"] = expected["fp16_exact"] = None  # says nothing of how a dequantized value is stored
            self.assertEqual(tensors[name]["precision"], expected, name)
        [warning] = [w for w in model["warnings"] if w["code"] == "dequantized"]
        self.assertIn(f"{len(QUANTIZED)} tensor(s) stored block-quantized", warning["message"])
        self.assertIsNone(model["storage_cast"])
        # Read into memory rather than mapped (--io pread), the same numbers.
        code, pread, _ = scan("--io", "pread", path)
        self.assertEqual(pread["models"][0]["tensors"], model["tensors"])

    def test_long_metadata_arrays_are_summarized(self):
        writer = gguf.GGUFWriter(str(self.tmp / "tok.gguf"), "llama")
        writer.add_token_list([f"tok{i}" for i in range(1000)])
        writer.add_array("test.short", [1, 2, 3])
        writer.add_tensor("w", weights()["token_embd.weight"])
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        code, document, _ = scan(self.tmp / "tok.gguf")
        self.assertEqual(code, 0)
        values = document["models"][0]["metadata"]["key_values"]
        self.assertEqual(values["tokenizer.ggml.tokens"], {"array_of": "string", "length": 1000})
        self.assertEqual(values["test.short"], [1, 2, 3])

    def gguf_bytes(self):
        path = self.tmp / "base.gguf"
        write_gguf(path, {"w": (weights()["token_embd.weight"], None)})
        return bytearray(path.read_bytes())

    def assertGgufError(self, data, needle):
        path = self.tmp / "bad.gguf"
        path.write_bytes(bytes(data))
        code, document, _ = scan(path)
        self.assertEqual(code, 2)
        error = document["models"][0]["error"]
        self.assertEqual(error["code"], "invalid_gguf", error["message"])
        self.assertIn(str(path), error["message"])
        self.assertIn(needle, error["message"])

    def test_malformed_files_are_named_errors(self):
        data = self.gguf_bytes()
        self.assertGgufError(data[: len(data) - 100], "runs past the end")
        self.assertGgufError(data[:40], "truncated")
        version = bytearray(data)
        version[4:8] = struct.pack("<I", 7)
        self.assertGgufError(version, "version 7")
        counts = bytearray(data)
        counts[8:16] = struct.pack("<Q", 1 << 40)
        self.assertGgufError(counts, "more than")
        # The one tensor's info ends the header: name, n_dims, dims, type, offset (data is 32-aligned after it).
        name_at = data.index(b"\x01\x00\x00\x00\x00\x00\x00\x00w")
        info = name_at + 9
        bad_type = bytearray(data)
        bad_type[info + 4 + 16: info + 4 + 20] = struct.pack("<I", 99)
        self.assertGgufError(bad_type, "unknown type 99")
        misaligned = bytearray(data)
        misaligned[info + 24: info + 32] = struct.pack("<Q", 4)
        self.assertGgufError(misaligned, "not a multiple of the alignment")
        overflow = bytearray(data)
        overflow[info + 4: info + 20] = struct.pack("<QQ", 1 << 40, 1 << 40)
        self.assertGgufError(overflow, "overflows")

    def test_version_2_files_read_like_version_3(self):
        data = self.gguf_bytes()  # v2 and v3 share the layout; v3 only added big-endian files
        data[4:8] = struct.pack("<I", 2)
        (self.tmp / "v2.gguf").write_bytes(bytes(data))
        code, document, _ = scan(self.tmp / "v2.gguf")
        self.assertEqual(code, 0)
        self.assertEqual(document["models"][0]["metadata"]["version"], 2)
        self.assertTensorStats(document["models"][0]["tensors"][0], torch.from_numpy(weights()["token_embd.weight"]))

    def test_big_endian_files_are_refused_by_name(self):
        path = self.tmp / "be.gguf"
        write_gguf(path, {"w": (weights()["token_embd.weight"], None)}, endianess=gguf.GGUFEndian.BIG)
        code, document, _ = scan(path)
        self.assertEqual(code, 2)
        self.assertIn("big-endian", document["models"][0]["error"]["message"])


class Numpy(ArraysTestCase):
    def arrays(self):
        rng = np.random.default_rng(2)
        return {
            "embed": (rng.standard_normal((32, 8)) * 5e4).astype(np.float32),
            "half": rng.standard_normal((7, 3)).astype(np.float16),
            "wide": rng.standard_normal(11) * 1e-30,
            "big_endian": (rng.standard_normal((4, 4)) * 300).astype(">f4"),
            "fortran": np.asfortranarray((rng.standard_normal((5, 6)) * 7).astype(np.float32)),
            "counts": np.arange(10, dtype=np.int64),
        }

    def test_npz_stored_and_deflated_give_the_same_statistics(self):
        arrays = self.arrays()
        np.savez(self.tmp / "stored.npz", **arrays)
        np.savez_compressed(self.tmp / "deflated.npz", **arrays)
        with zipfile.ZipFile(self.tmp / "deflated.npz") as archive:  # the writer really deflated them
            self.assertTrue(all(i.compress_type == zipfile.ZIP_DEFLATED for i in archive.infolist()))
        code, document, _ = scan(self.tmp / "stored.npz", self.tmp / "deflated.npz")
        self.assertEqual(code, 0)
        stored, deflated = document["models"]
        self.assertEqual(stored["format"], "numpy")
        self.assertArrays(stored, arrays)
        self.assertArrays(deflated, arrays)
        self.assertEqual(stored["summary"], deflated["summary"])

    def test_npy_is_one_tensor_named_by_the_file(self):
        arrays = self.arrays()
        for name in ("embed", "big_endian", "fortran"):
            np.save(self.tmp / f"{name}.npy", arrays[name])
            code, document, _ = scan(self.tmp / f"{name}.npy")
            self.assertEqual(code, 0, name)
            self.assertArrays(document["models"][0], {name: arrays[name]})

    def test_object_and_string_arrays_are_listed_never_unpickled(self):
        np.savez(self.tmp / "mixed.npz", w=self.arrays()["embed"], names=np.array(["a", "b"]),
                 meta=np.array([{"k": 1}], dtype=object))
        code, document, _ = scan(self.tmp / "mixed.npz")
        self.assertEqual(code, 0)
        model = document["models"][0]
        self.assertEqual(list(tensors_by_name(model)), ["w"])
        warning = next(w for w in model["warnings"] if w["code"] == "dtypes_not_read")
        self.assertIn("meta (objects)", warning["message"])
        self.assertIn("names (<U1)", warning["message"])
        np.save(self.tmp / "objects.npy", np.array([{"k": 1}], dtype=object), allow_pickle=True)
        code, document, _ = scan(self.tmp / "objects.npy")
        self.assertEqual(code, 2)
        self.assertEqual(document["models"][0]["error"]["code"], "not_a_checkpoint")

    def test_a_deflated_array_over_the_safety_checks_limit_is_judged_by_its_header(self):
        # 2^29 + 4096 float16 values (1 GiB and 8 KiB): more than the safety check inflates whole. Its header says
        # numbers follow, so it is not inflated there (and not left unverified); the scan still reads all of it.
        numel = 2**29 + 4096
        chunk = np.zeros(2**24, np.float16)
        with zipfile.ZipFile(self.tmp / "big.npz", "w", zipfile.ZIP_DEFLATED) as archive:
            with archive.open("w.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array_header_2_0(
                    member, {"descr": "<f2", "fortran_order": False, "shape": (numel,)})
                for _ in range(numel // chunk.size):
                    member.write(chunk.tobytes())
                member.write(np.full(4096, -3.0, np.float16).tobytes())
        code, document, _ = scan(self.tmp / "big.npz")
        self.assertEqual(code, 0)
        model = document["models"][0]
        self.assertEqual(model["safety"]["verdict"], "safe")
        self.assertEqual(model["safety"]["unverified"], [])
        tensor = tensors_by_name(model)["w"]
        self.assertEqual((tensor["numel"], tensor["zeros"], tensor["abs_max"]), (numel, numel - 4096, 3.0))
        self.assertNorm(tensor["norm"], 3.0 * 64)

    def test_damaged_arrays_are_named_errors(self):
        arrays = self.arrays()
        np.save(self.tmp / "cut.npy", arrays["embed"])
        data = (self.tmp / "cut.npy").read_bytes()
        (self.tmp / "cut.npy").write_bytes(data[:-10])
        np.savez_compressed(self.tmp / "bad.npz", w=arrays["embed"])
        data = bytearray((self.tmp / "bad.npz").read_bytes())
        with zipfile.ZipFile(self.tmp / "bad.npz") as archive:
            info = archive.getinfo("w.npy")
        start = info.header_offset + 30 + len(info.filename) + len(info.extra)
        for i in range(start + info.compress_size // 2, start + info.compress_size // 2 + 16):
            data[i] ^= 0x5A  # garble the middle of the deflate stream
        (self.tmp / "bad.npz").write_bytes(bytes(data))
        code, document, _ = scan(self.tmp / "cut.npy", self.tmp / "bad.npz")
        self.assertEqual(code, 2)
        cut, bad = document["models"]
        self.assertEqual(cut["error"]["code"], "invalid_numpy")
        self.assertIn("truncated", cut["error"]["message"])
        self.assertEqual(bad["error"]["code"], "invalid_zip")  # the garbled stream inflates; its CRC tells
        self.assertIn("bad.npz", bad["error"]["message"])
        self.assertIn("CRC-32", bad["error"]["message"])


@requires(flax_serialization is not None, "flax")
class Flax(ScanTestCase):
    def tree(self):
        rng = np.random.default_rng(3)
        return {
            "shared": {"embedding": jnp.asarray(rng.standard_normal((32, 16)) * 2e5, dtype=jnp.bfloat16)},
            "encoder": {
                "block": {"0": {"layer": {"0": {"SelfAttention": {
                    "q": {"kernel": (rng.standard_normal((16, 16)) * 0.05).astype(np.float32)}}}}}},
                "final_layer_norm": {"scale": np.ones(16, np.float32) * 1.5},
            },
            "lm_head": {"bias": rng.standard_normal(32).astype(np.float16)},
        }

    @staticmethod
    def leaves(tree, prefix=""):
        for key, value in tree.items():
            path = f"{prefix}/{key}" if prefix else key
            if isinstance(value, dict):
                yield from Flax.leaves(value, path)
            else:
                yield path, value

    def assertTree(self, model, tree):
        tensors = tensors_by_name(model)
        leaves = dict(self.leaves(tree))
        self.assertEqual(set(tensors), set(leaves))
        for path, value in leaves.items():
            reference = torch.from_numpy(np.asarray(value, dtype=np.float64))
            self.assertEqual(tensors[path]["shape"], list(value.shape), path)
            self.assertTensorStats(tensors[path], reference, path)

    def test_arrays_match_float64_references_with_pytorch_names(self):
        tree = self.tree()
        (self.tmp / "flax_model.msgpack").write_bytes(flax_serialization.msgpack_serialize(tree))
        code, document, _ = scan(self.tmp)
        self.assertEqual(code, 0)
        model = document["models"][0]
        self.assertEqual(model["format"], "flax")
        self.assertTree(model, tree)
        tensors = tensors_by_name(model)
        self.assertEqual(tensors["shared/embedding"]["dtype"], "BF16")
        self.assertEqual(tensors["shared/embedding"]["torch_name"], "shared.weight")
        self.assertEqual(tensors["encoder/final_layer_norm/scale"]["torch_name"], "encoder.final_layer_norm.weight")
        self.assertEqual(tensors["encoder/block/0/layer/0/SelfAttention/q/kernel"]["torch_name"],
                         "encoder.block.0.layer.0.SelfAttention.q.weight")
        self.assertEqual(tensors["lm_head/bias"]["torch_name"], "lm_head.bias")
        self.assertEqual(tensors["shared/embedding"]["group"], "embedding")
        self.assertEqual(model["safety"]["verdict"], "safe")

    def test_chunked_arrays_are_joined(self):
        tree = self.tree()
        limit = flax_serialization.MAX_CHUNK_SIZE
        flax_serialization.MAX_CHUNK_SIZE = 256  # flax's own chunking, at a size a test can afford
        try:
            data = flax_serialization.msgpack_serialize(tree)
        finally:
            flax_serialization.MAX_CHUNK_SIZE = limit
        self.assertIn(b"__msgpack_chunked_array__", data)
        (self.tmp / "chunked.msgpack").write_bytes(data)
        code, document, _ = scan(self.tmp / "chunked.msgpack")
        self.assertEqual(code, 0)
        self.assertTree(document["models"][0], tree)

    def test_shards_with_an_index_are_one_model(self):
        # transformers 4's flax_shard_checkpoint layout (transformers 5 dropped Flax): flatten_dict(params, sep="/")
        # split into shards, each saved unflattened, the index mapping "/"-joined paths to shard files.
        tree = self.tree()
        leaves = dict(self.leaves(tree))
        names = sorted(leaves)
        folder = self.tmp / "sharded"
        folder.mkdir()
        weight_map = {}
        for i, part in enumerate((names[:2], names[2:])):
            shard = f"flax_model-{i + 1:05d}-of-00002.msgpack"
            nested = {}
            for name in part:
                *parents, last = name.split("/")
                node = nested
                for key in parents:
                    node = node.setdefault(key, {})
                node[last] = leaves[name]
                weight_map[name] = shard
            (folder / shard).write_bytes(flax_serialization.msgpack_serialize(nested))
        (folder / "flax_model.msgpack.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
        code, document, _ = scan(folder)
        self.assertEqual(code, 0)
        model = document["models"][0]
        self.assertEqual(len(model["files"]), 2)
        self.assertTree(model, tree)

    def assertMsgpackError(self, data, needle):
        path = self.tmp / "bad.msgpack"
        path.write_bytes(data)
        result = run("--json", path, check_json=True)
        self.assertEqual(result.returncode, 2)
        error = result.document["models"][0]["error"]
        self.assertEqual(error["code"], "invalid_msgpack", error["message"])
        self.assertIn(needle, error["message"])

    def test_malformed_files_are_named_errors(self):
        data = flax_serialization.msgpack_serialize(self.tree())
        self.assertMsgpackError(data[:-7], "truncated")
        self.assertMsgpackError(data + b"\x00", "bytes after the value")
        self.assertMsgpackError(b"\x81\xa1a" * 100_000 + b"\xc0", "nest more than")  # a recursion bomb
        self.assertMsgpackError(b"\xdf\xff\xff\xff\xff", "more than the")  # a map count past the end
        bad_size = flax_serialization.msgpack_serialize({"w": np.zeros((4, 4), np.float32)})
        bad_size = bad_size.replace(b"\x92\x04\x04", b"\x92\x04\x05")  # shape (4, 5) over 64 bytes
        self.assertMsgpackError(bad_size, "needs 80 bytes but it holds 64")


class Hdf5(ArraysTestCase):
    def arrays(self):
        rng = np.random.default_rng(5)
        return {
            "bert/embeddings/word_embeddings/weight:0": (rng.standard_normal((40, 8)) * 7e4).astype(np.float32),
            "bert/encoder/layer_._0/attention/self/query/kernel:0": rng.standard_normal((8, 8)).astype(np.float16),
            "bert/encoder/layer_._0/output/LayerNorm/gamma:0": rng.standard_normal(8),
            "big_endian/kernel:0": (rng.standard_normal((6, 3)) * 500).astype(">f4"),
            "steps": np.arange(5, dtype=np.int32),
        }

    def test_contiguous_and_chunked_compressed_datasets_match_references(self):
        arrays = self.arrays()
        with h5py.File(self.tmp / "contiguous.h5", "w") as f:
            for name, array in arrays.items():
                f.create_dataset(name, data=array)
        with h5py.File(self.tmp / "chunked.h5", "w") as f:
            for name, array in arrays.items():
                f.create_dataset(name, data=array, chunks=True, compression="gzip", shuffle=True)
        code, document, _ = scan(self.tmp / "contiguous.h5", self.tmp / "chunked.h5")
        self.assertEqual(code, 0)
        contiguous, chunked = document["models"]
        self.assertEqual(contiguous["format"], "hdf5")
        self.assertArrays(contiguous, arrays)
        self.assertArrays(chunked, arrays)
        self.assertEqual(contiguous["summary"], chunked["summary"])
        self.assertEqual(contiguous["safety"]["verdict"], "safe")

    def test_chunked_datasets_over_a_slab_arrive_whole_and_in_order(self):
        # The helper hands over a chunked dataset 8 MiB of whole chunk rows at a time: rows that do not divide
        # into chunks, chunks that do not divide into a slab, 1-D and 3-D, extendible. The diff against the contiguous copy
        # checks every value's place; the statistics check that none is lost or read twice.
        rng = np.random.default_rng(11)
        arrays = {"rows": (rng.standard_normal((1100, 2049)) * 3e3).astype(np.float32),
                  "flat": rng.standard_normal(2_300_001).astype(np.float32) * np.float32(1e-3),
                  "cube": rng.standard_normal((45, 67, 1001)).astype(np.float16),
                  "grown": rng.standard_normal((3, 5)).astype(np.float32)}  # a chunk longer than the dataset
        chunks = {"rows": (7, 300), "flat": (65_537,), "cube": (4, 16, 1001), "grown": (64, 5)}
        with h5py.File(self.tmp / "contiguous.h5", "w") as f:
            for name, array in arrays.items():
                f.create_dataset(name, data=array)
        with h5py.File(self.tmp / "chunked.h5", "w") as f:
            for name, array in arrays.items():
                f.create_dataset(name, data=array, chunks=chunks[name], compression="gzip", compression_opts=1,
                                 maxshape=(None, *array.shape[1:]))
        code, document, _ = scan(self.tmp / "chunked.h5")
        self.assertEqual(code, 0)
        self.assertArrays(document["models"][0], arrays)
        result = run("diff", "--json", "--fail-if-changed", self.tmp / "contiguous.h5", self.tmp / "chunked.h5",
                     check_json=True)
        self.assertEqual(result.returncode, 0, result.stdout)
        self.assertEqual(sorted(t["name"] for t in result.document["pairs"][0]["tensors"]), sorted(arrays))
        self.assertTrue(all(t["identical"] for t in result.document["pairs"][0]["tensors"]))

    def test_other_types_are_listed_and_external_storage_is_refused(self):
        with h5py.File(self.tmp / "mixed.h5", "w") as f:
            f.create_dataset("w", data=np.ones((2, 2), np.float32))
            f.create_dataset("names", data=np.array([b"a", b"b"]))
            f.create_dataset("flags", data=np.array([True, False]))
        code, document, _ = scan(self.tmp / "mixed.h5")
        self.assertEqual(code, 0)
        model = document["models"][0]
        self.assertEqual(list(tensors_by_name(model)), ["w"])
        warning = next(w for w in model["warnings"] if w["code"] == "dtypes_not_read")
        self.assertIn("names", warning["message"])
        self.assertIn("flags", warning["message"])
        (self.tmp / "outside.bin").write_bytes(np.ones(4, np.float32).tobytes())
        with h5py.File(self.tmp / "external.h5", "w") as f:
            f.create_dataset("w", shape=(4,), dtype=np.float32, external=[(str(self.tmp / "outside.bin"), 0, 16)])
        (self.tmp / "cut.h5").write_bytes((self.tmp / "mixed.h5").read_bytes()[:600])
        code, document, _ = scan(self.tmp / "external.h5", self.tmp / "cut.h5")
        self.assertEqual(code, 2)
        external, cut = document["models"]
        self.assertEqual(external["error"]["code"], "invalid_hdf5")
        self.assertIn("other files", external["error"]["message"])
        self.assertEqual(cut["error"]["code"], "invalid_hdf5")
        self.assertIn("cut.h5", cut["error"]["message"])

    @requires(keras is not None, "keras")
    def test_keras_weights_files_written_by_keras(self):
        model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16), keras.layers.LayerNormalization(),
                                  keras.layers.Dense(4)])
        model.layers[0].kernel.assign(np.random.default_rng(6).standard_normal((8, 16)).astype(np.float32) * 3e5)
        model.save_weights(self.tmp / "model.weights.h5")
        code, document, _ = scan(self.tmp / "model.weights.h5")
        self.assertEqual(code, 0)
        reported = document["models"][0]
        with h5py.File(self.tmp / "model.weights.h5") as f:
            datasets = {}
            f.visititems(lambda name, obj: datasets.update({name: obj[()]}) if isinstance(obj, h5py.Dataset) else None)
        self.assertEqual(len(datasets), 6)
        self.assertArrays(reported, datasets)
        self.assertNotEqual(reported["verdict"]["label"], "fp16")  # 3e5 does not fit fp16

    @requires(keras is not None, "keras")
    def test_a_keras_model_with_a_lambda_layer_is_unsafe(self):
        # Its marshalled code runs at load (tests/e2e/test_keras_safety.py shows it, and every other case).
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(4), keras.layers.Lambda(lambda x: x * 2)])
        model.save(self.tmp / "model.h5")
        code, document, _ = scan(self.tmp / "model.h5")
        self.assertEqual(code, 0)
        safety = document["models"][0]["safety"]
        self.assertEqual(safety["verdict"], "unsafe")
        self.assertEqual([t["kind"] for t in safety["tampering"]], ["serialized_function"])


def train_tokenizer(path):
    """A tiny unigram tokenizer trained by sentencepiece: the vocabulary llama.cpp's converter reads (tokenizer.model)."""
    text = [" ".join(f"{a}{b}{c}" for a in "abcdefgh" for c in "xyz") + f" n{i}" for b in "pqrstuv" for i in range(20)]
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(sentence_iterator=iter(text), model_writer=model, vocab_size=48,
                                             minloglevel=2)
    path.write_bytes(model.getvalue())


@requires((CONVERTER / "convert_hf_to_gguf.py").is_file(), "llama.cpp's converter")
class LlamaCppConversions(ScanTestCase):
    """A transformers model saved as safetensors, converted by llama.cpp's converter, and the two diffed: a
    lossless conversion is reported as such (issue 24), although llama.cpp renames every tensor, interleaves the
    rotary halves of llama's q and k rows, and keeps 1-D tensors (norms, biases) in F32."""

    def convert(self, config, dtype, outtype):
        folder = self.tmp / config.model_type
        torch.manual_seed(0)
        model = transformers.AutoModelForCausalLM.from_config(config).to(dtype)
        with torch.no_grad():  # every tensor its own values: norms initialized to ones would hide a swapped pair
            for parameter in model.parameters():
                parameter.normal_()
        model.save_pretrained(folder)
        train_tokenizer(folder / "tokenizer.model")
        gguf_path = folder / f"model-{outtype}.gguf"
        subprocess.run([sys.executable, CONVERTER / "convert_hf_to_gguf.py", folder, "--outtype", outtype,
                        "--outfile", gguf_path], env=dict(os.environ, PYTHONPATH=str(CONVERTER)), check=True,
                       capture_output=True)
        return folder / "model.safetensors", gguf_path

    def assertLosslessConversion(self, safetensors_path, gguf_path, computed_from_config=()):
        # What transformers itself loads from the GGUF equals the safetensors, value for value: the expectation.
        loaded = transformers.AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
        original = load_file(safetensors_path)
        for name, tensor in original.items():
            self.assertTrue(torch.equal(loaded.state_dict()[name].double(), tensor.double()), name)

        result = run("diff", "--json", "--fail-if-changed", safetensors_path, gguf_path, check_json=True)
        self.assertEqual(result.returncode, 0, result.stdout)
        (pair,) = result.document["pairs"]
        self.assertEqual(pair["outcome"], "lossless")
        self.assertEqual((pair["missing"], pair["extra"], pair["shape_mismatch"]), ([], [], []))
        self.assertEqual(pair["computed_from_config"], list(computed_from_config))
        self.assertEqual(sorted(t["name"] for t in pair["tensors"]), sorted(original))
        for tensor in pair["tensors"]:
            self.assertTrue(tensor["lossless"], tensor["name"])
            # Bit for bit wherever the dtype is kept: q and k only once their rows are deinterleaved.
            self.assertEqual(tensor["identical"], tensor["base_dtype"] == tensor["other_dtype"], tensor["name"])
        widened = {m["name"] for m in pair["dtype_mismatch"]}  # llama.cpp keeps 1-D tensors (norms, biases) in F32
        self.assertEqual(widened, {n for n, t in original.items() if t.dim() == 1})
        self.assertTrue(all(m["other"] == "F32" for m in pair["dtype_mismatch"]))
        return pair

    def test_a_llama_with_grouped_query_attention(self):
        config = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                                          num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=False)
        safetensors_path, gguf_path = self.convert(config, torch.float16, "f16")
        self.assertLosslessConversion(safetensors_path, gguf_path)
        lines = run("diff", safetensors_path, gguf_path, "--top", "30").stdout.splitlines()
        self.assertIn("21 tensors compared, lossless", lines[0])
        norm = next(line for line in lines if line.strip().startswith("model.norm.weight"))
        self.assertEqual(norm.split("|")[-1].strip(), "lossless", norm)  # widened to F32, every value kept

        code, document, _ = scan(gguf_path)
        self.assertEqual(code, 0)
        tensors = tensors_by_name(document["models"][0])
        self.assertEqual(tensors["blk.1.attn_k.weight"]["torch_name"], "model.layers.1.self_attn.k_proj.weight")
        self.assertEqual(tensors["blk.1.attn_k.weight"]["group"], "attention")
        self.assertEqual(tensors["output.weight"]["torch_name"], "lm_head.weight")
        original = load_file(safetensors_path)
        for tensor in tensors.values():  # the statistics do not depend on the row order
            self.assertTensorStats(tensor, original[tensor["torch_name"]], tensor["name"])

        # One value moved, and the same diff says so.
        original["model.layers.0.self_attn.q_proj.weight"][3, 5] += 0.5
        save_torch_file(original, self.tmp / "edited.safetensors")
        result = run("diff", "--json", "--fail-if-changed", self.tmp / "edited.safetensors", gguf_path,
                     check_json=True)
        self.assertEqual(result.returncode, 1)
        (pair,) = result.document["pairs"]
        self.assertEqual(pair["outcome"], "changed")
        changed = [t["name"] for t in pair["tensors"] if not t["lossless"]]
        self.assertEqual(changed, ["model.layers.0.self_attn.q_proj.weight"])

    def test_a_qwen2_in_bf16_with_attention_biases(self):
        config = transformers.Qwen2Config(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                                          num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=False)
        safetensors_path, gguf_path = self.convert(config, torch.bfloat16, "bf16")
        pair = self.assertLosslessConversion(safetensors_path, gguf_path)
        self.assertIn("model.layers.1.self_attn.k_proj.bias", [t["name"] for t in pair["tensors"]])

    def test_a_llama_3_with_the_rope_factors_the_converter_computes(self):
        rope = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
                "high_freq_factor": 4.0, "original_max_position_embeddings": 64}
        config = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                                          num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=False,
                                          rope_parameters=rope)
        safetensors_path, gguf_path = self.convert(config, torch.bfloat16, "bf16")
        # llama.cpp adds rope_freqs.weight, which no checkpoint holds: the conversion is still lossless.
        self.assertLosslessConversion(safetensors_path, gguf_path, computed_from_config=["rope_freqs.weight"])

        code, document, _ = scan(gguf_path)
        self.assertEqual(code, 0)
        model = document["models"][0]
        rope_freqs = tensors_by_name(model)["rope_freqs.weight"]
        self.assertEqual(rope_freqs["role"], "buffer")  # not a trained weight: kept out of the verdict
        self.assertEqual(model["summary"]["parameters"], sum(t.numel() for t in load_file(safetensors_path).values()))
        # The factors by which transformers divides the rotary frequencies for this config: 1 and 8.
        default, _ = LlamaRotaryEmbedding.compute_default_rope_parameters(config)
        llama3, _ = ROPE_INIT_FUNCTIONS["llama3"](config)
        self.assertTensorStats(rope_freqs, default.double() / llama3.double(), "rope_freqs.weight")

    def test_a_llama_without_head_counts_keeps_its_gguf_names(self):
        # q's rows cannot be put back in order without the head count: q and k stay unpaired, never misread.
        path = self.tmp / "no-heads.gguf"
        write_gguf(path, {"blk.0.attn_q.weight": (weights()["blk.0.attn_q.weight"], None),
                          "blk.0.ffn_up.weight": (weights()["blk.0.ffn_up.weight"], None)})
        code, document, _ = scan(path)
        self.assertEqual(code, 0)
        tensors = tensors_by_name(document["models"][0])
        self.assertNotIn("torch_name", tensors["blk.0.attn_q.weight"])
        self.assertEqual(tensors["blk.0.ffn_up.weight"]["torch_name"], "model.layers.0.mlp.up_proj.weight")


@requires(flax_serialization is not None, "flax")
class Folders(ScanTestCase):
    def test_one_model_in_three_formats_scans_alike_with_all_formats(self):
        arrays = weights()
        folder = self.tmp / "model"
        folder.mkdir()
        save_file(arrays, folder / "model.safetensors")
        tree = {}
        for name, array in arrays.items():  # flax's layout: a path per parameter
            *parents, last = name.split(".")
            node = tree
            for part in parents:
                node = node.setdefault(part, {})
            node["kernel" if last == "weight" else last] = array
        (folder / "flax_model.msgpack").write_bytes(flax_serialization.msgpack_serialize(tree))
        write_gguf(folder / "model.gguf", {name: (array, None) for name, array in arrays.items()})
        with h5py.File(folder / "tf_model.h5", "w") as f:  # transformers' layout: a group per layer, weights ":0"
            for name, array in arrays.items():
                f.create_dataset(name.replace(".", "/") + ":0", data=array)

        code, document, stderr = scan(folder)
        self.assertEqual(code, 0)
        model = document["models"][0]
        self.assertEqual(model["format"], "safetensors")
        other = next(w for w in model["warnings"] if w["code"] == "other_formats")
        self.assertIn("flax, tf, gguf", other["message"])

        code, document, _ = scan("--all-formats", folder)
        self.assertEqual(code, 0)
        by_format = {m["format"]: m for m in document["models"]}
        self.assertEqual(set(by_format), {"safetensors", "flax", "hdf5", "gguf"})
        def source_name(tensor, file_format):  # the names written above: GGUF's own, Flax's and HDF5's as paths
            if file_format == "gguf":
                return tensor["name"]
            return tensor.get("torch_name", tensor["name"].removesuffix(":0").replace("/", "."))

        for file_format, model in by_format.items():
            self.assertSummary(model["summary"], {n: torch.from_numpy(a) for n, a in arrays.items()})
            stats = {source_name(t, file_format): {k: t[k] for k in ("abs_min", "abs_max", "norm", "zeros")}
                     for t in model["tensors"]}
            self.assertEqual(stats, {t["name"]: {k: t[k] for k in ("abs_min", "abs_max", "norm", "zeros")}
                                     for t in by_format["safetensors"]["tensors"]})
            for key in ("label", "confidence", "candidates"):
                self.assertEqual(model["verdict"][key], by_format["safetensors"]["verdict"][key], key)

    def test_diff_across_formats_reports_a_lossless_conversion_as_such(self):
        rng = np.random.default_rng(8)
        torch_weights = {"encoder.dense.weight": rng.standard_normal((6, 4)).astype(np.float32),  # [out, in]
                         "encoder.attn.weight": rng.standard_normal((4, 4)).astype(np.float32),  # square
                         "encoder.conv.weight": rng.standard_normal((5, 3, 2, 2)).astype(np.float32),  # OIHW
                         "encoder.norm.weight": rng.standard_normal(6).astype(np.float32)}
        save_file(torch_weights, self.tmp / "model.safetensors")
        save_file({n: a.astype(np.float16) for n, a in torch_weights.items()}, self.tmp / "f16.safetensors")
        # transformers' convert_pytorch_state_dict_to_flax: Dense kernels [in, out], Conv kernels HWIO
        flax_tree = {"encoder": {"dense": {"kernel": torch_weights["encoder.dense.weight"].T.copy()},
                                 "attn": {"kernel": torch_weights["encoder.attn.weight"].T.copy()},
                                 "conv": {"kernel": torch_weights["encoder.conv.weight"].transpose(2, 3, 1, 0).copy()},
                                 "norm": {"scale": torch_weights["encoder.norm.weight"]}}}
        (self.tmp / "flax_model.msgpack").write_bytes(flax_serialization.msgpack_serialize(flax_tree))
        write_gguf(self.tmp / "f16.gguf", {n: (a.astype(np.float16), None) for n, a in torch_weights.items()})
        result = run("diff", "--json", "--fail-if-changed", self.tmp / "model.safetensors",
                     self.tmp / "flax_model.msgpack", check_json=True)
        self.assertEqual(result.returncode, 0, result.stdout)
        (pair,) = result.document["pairs"]
        self.assertEqual(sorted(t["name"] for t in pair["tensors"]), sorted(torch_weights))
        self.assertTrue(all(t["identical"] for t in pair["tensors"]))
        self.assertEqual(pair["outcome"], "identical")
        shapes = {t["name"]: t["shape"] for t in pair["tensors"]}
        self.assertEqual(shapes, {n: list(a.shape) for n, a in torch_weights.items()})  # as PyTorch holds them
        result = run("diff", "--json", "--fail-if-changed", self.tmp / "f16.safetensors", self.tmp / "f16.gguf",
                     check_json=True)
        self.assertEqual(result.returncode, 0, result.stdout)
        self.assertTrue(all(t["identical"] for t in result.document["pairs"][0]["tensors"]))
        result = run("diff", "--json", self.tmp / "model.safetensors", self.tmp / "f16.gguf", check_json=True)
        (pair,) = result.document["pairs"]
        self.assertEqual(len(pair["dtype_mismatch"]), len(torch_weights))  # F32 -> F16: a cast, listed
        self.assertEqual(pair["outcome"], "changed")  # random float32 values do not survive it

    def test_a_folder_of_numpy_arrays_is_a_model(self):
        folder = self.tmp / "arrays"
        folder.mkdir()
        np.savez(folder / "weights.npz", **weights())
        code, document, _ = scan(folder)
        self.assertEqual(code, 0)
        self.assertEqual(document["models"][0]["format"], "numpy")
        self.assertEqual(len(document["models"][0]["tensors"]), len(weights()))


if __name__ == "__main__":
    unittest.main()
