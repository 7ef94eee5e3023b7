"""Remote GGUF, ONNX, NumPy and Flax files (issue 60), written by their own producers (gguf-py's GGUFWriter, onnx's
helper, numpy.save and savez, flax.serialization) and served over 127.0.0.1 by remote_server.py, which counts the bytes and answers
it sends per file. Their structure is read by range, as a safetensors header is: --headers-only and --safety-only
move about a header's bytes, in a few requests where it is megabytes long (a tokenizer's vocabulary); the full
scan streams the tensors and equals the local scan, paths aside, for files over the 256 MiB a remote file may
hold in memory at once too, and for an ONNX model whose external data lies beside it; a damaged file is the error
it is locally."""

import shutil
import tempfile
import unittest
from pathlib import Path

import flax.serialization as flax_serialization
import gguf
import jax.numpy as jnp
import numpy as np
import onnx
from onnx import TensorProto, helper

from helpers import scan
from test_remote import ServedTestCase, model_without_places

FIRST_READ = 64 << 10  # a remote file's first request (remote_source.cpp)
# Over kMaxRemoteView (256 MiB): a file the reader once had to hold whole, refused remotely.
LARGE_ELEMENTS = 140 << 20  # fp16: 280 MiB


def write_gguf(path, tensors, vocab=0):
    """A llama GGUF with `tensors` (name -> array) and, when `vocab`, a GPT-2 style tokenizer of that many tokens
    and merges: the megabytes of header a real model's vocabulary takes."""
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_file_type(1)
    if vocab:
        tokens = [f"tok{i}_{'x' * (i % 13)}" for i in range(vocab)]
        writer.add_tokenizer_model("gpt2")
        writer.add_token_list(tokens)
        writer.add_token_types([1] * vocab)
        writer.add_token_scores([float(-i) for i in range(vocab)])
        writer.add_token_merges([f"{tokens[i]} {tokens[i + 1]}" for i in range(vocab - 1)])
    for name, array in tensors.items():
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def gguf_data_start(path):
    """Where the GGUF's tensor data starts, as gguf-py's reader finds it: the end of its header."""
    return gguf.GGUFReader(str(path)).data_offset


def write_onnx(path, initializers):
    """A MatMul chain over `initializers` (name -> 2-D float array), each stored in raw_data inside the model."""
    names = list(initializers)
    nodes, previous = [], "x"
    for i, name in enumerate(names):
        nodes.append(helper.make_node("MatMul", [previous, name], [f"y{i}"], name=f"matmul{i}"))
        previous = f"y{i}"
    tensors = [helper.make_tensor(name, helper.np_dtype_to_tensor_dtype(array.dtype), array.shape,
                                  array.tobytes(), raw=True) for name, array in initializers.items()]
    first = initializers[names[0]]
    graph = helper.make_graph(nodes, "chain",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, first.shape[0]])],
                              [helper.make_tensor_value_info(previous, TensorProto.FLOAT, None)], tensors)
    onnx.save(helper.make_model(graph), str(path))


def write_flax(path, tree, chunk_size=None):
    """`tree` saved by flax.serialization.to_bytes, arrays over `chunk_size` bytes split in chunks as flax splits
    those over its MAX_CHUNK_SIZE (1 GiB): flax's own chunking, at a size a test can afford."""
    limit = flax_serialization.MAX_CHUNK_SIZE
    flax_serialization.MAX_CHUNK_SIZE = chunk_size or limit
    try:
        path.write_bytes(flax_serialization.to_bytes(tree))
    finally:
        flax_serialization.MAX_CHUNK_SIZE = limit


def flax_tree():
    """Four layers of float32 kernels and bfloat16 biases, a 4 MiB float16 embedding (chunked at 1 MiB), and a step
    counter that is no array."""
    layers = {str(i): {"dense": {"kernel": normal((256, 512), np.float32, i),
                                 "bias": normal(512, jnp.bfloat16, 20 + i)}} for i in range(4)}
    return {"params": {"embed": {"embedding": normal((2048, 1024), np.float16, 9)}, "layers": layers}, "step": 7}


def normal(shape, dtype, seed, scale=0.02):
    return (np.random.default_rng(seed).standard_normal(shape, dtype=np.float32) * scale).astype(dtype)


class RemoteFormatsTest(ServedTestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="precdetect-remote-formats-"))
        files = cls.files = cls.tmp / "files"
        files.mkdir()
        weights = {f"blk.{i}.ffn_up.weight": normal((1024, 2048), np.float32, i) for i in range(4)}
        write_gguf(files / "model.gguf", {"token_embd.weight": normal((512, 256), np.float16, 9), **weights},
                   vocab=50000)
        write_onnx(files / "model.onnx", {f"w{i}": normal((1024, 1024), np.float32, i) for i in range(4)})
        np.save(files / "weights.npy", normal((2048, 1024), np.float16, 5))
        arrays = {"a": normal((1024, 1024), np.float32, 6), "b": normal((512, 512), np.float16, 7)}
        np.savez(files / "stored.npz", **arrays)
        np.savez_compressed(files / "deflated.npz", **arrays)
        for folder in ("external", "external-missing"):
            (files / folder).mkdir()
            onnx.save_model(onnx.load(str(files / "model.onnx")), str(files / folder / "model.onnx"),
                            save_as_external_data=True, location="model.onnx_data", size_threshold=0)
        (files / "external-missing" / "model.onnx_data").unlink()
        data = (files / "model.gguf").read_bytes()
        start = gguf_data_start(files / "model.gguf")
        (files / "cut-in-data.gguf").write_bytes(data[:start + 1000])
        (files / "cut-in-vocab.gguf").write_bytes(data[:start // 2])
        write_flax(files / "flax_model.msgpack", flax_tree(), chunk_size=1 << 20)
        data = (files / "flax_model.msgpack").read_bytes()
        (files / "cut-in-array.msgpack").write_bytes(data[:len(data) // 2])
        (files / "cut-at-end.msgpack").write_bytes(data[:-7])
        cls.base = cls.serve() + "/files"

    def scan_both(self, name, *flags):
        """(remote model record, local model record, bytes and answers the remote scan moved), paths aside."""
        self.reset()
        code, remote, stderr = scan(*flags, f"{self.base}/{name}")
        moved = self.stats()
        _, local, _ = scan(*flags, self.files / name)
        there = model_without_places(remote["models"][0], [self.base])
        here = model_without_places(local["models"][0], [str(self.files)])
        return there, here, moved["bytes"].get(f"/files/{name}", 0), moved["answers"].get(f"/files/{name}", 0)

    def assert_same(self, name, *flags):
        there, here, moved, answers = self.scan_both(name, *flags)
        self.assertIsNone(here["error"], here["error"])
        self.assertEqual(there, here)
        return moved, answers

    def test_headers_only_moves_the_gguf_header_in_a_few_requests(self):
        """A 50,000-token vocabulary (about 2 MB of header before 33 MB of tensors) is walked in a few requests
        that double as they go, never a tensor's bytes beyond the last one's read-ahead."""
        path = self.files / "model.gguf"
        header = gguf_data_start(path)
        self.assertGreater(header, 1 << 20)
        for tier in ("--headers-only", "--safety-only"):
            with self.subTest(tier=tier):
                moved, answers = self.assert_same("model.gguf", tier)
                self.assertGreaterEqual(moved, header)
                # Each fetch of a walk twice the one before: the last one reads at most as far past the header
                # as the header is long.
                self.assertLessEqual(moved, 2 * header + FIRST_READ)
                self.assertLess(moved, path.stat().st_size // 8)
                self.assertLessEqual(answers, 12)

    def test_headers_only_of_an_onnx_model_never_fetches_its_raw_data(self):
        """The protobuf walk reads each initializer's fields around its raw_data, a block or two apiece."""
        path = self.files / "model.onnx"
        for tier in ("--headers-only", "--safety-only"):
            with self.subTest(tier=tier):
                moved, _ = self.assert_same("model.onnx", tier)
                self.assertLess(moved, FIRST_READ + 4 * (16 << 10), moved)
                self.assertLess(moved, path.stat().st_size // 64)

    def test_headers_only_of_numpy_files_reads_their_headers(self):
        for name in ("weights.npy", "stored.npz"):
            with self.subTest(name=name):
                moved, _ = self.assert_same(name, "--headers-only")
                size = (self.files / name).stat().st_size
                self.assertLess(moved, size // 8, moved)

    def test_headers_only_of_a_flax_checkpoint_reads_around_its_arrays(self):
        """The msgpack tree is walked by range: each array's key, extension header and [shape, dtype] a block or two
        apiece, the bytes between them (the arrays') never fetched; the chunked embedding is four arrays."""
        path = self.files / "flax_model.msgpack"
        data = path.read_bytes()
        self.assertEqual(data.count(b"__msgpack_chunked_array__"), 1)
        extensions = 4 * 2 + 4  # the layers' kernels and biases, the embedding's chunks
        for tier in ("--headers-only", "--safety-only"):
            with self.subTest(tier=tier):
                moved, _ = self.assert_same("flax_model.msgpack", tier)
                self.assertLessEqual(moved, FIRST_READ + extensions * 2 * (4 << 10))
                self.assertLess(moved, path.stat().st_size // 8)

    def test_full_scans_equal_the_local_ones(self):
        # Each byte once, but for the first read's (and a zip's tail, read for its directory); a deflated member's
        # compressed bytes are held whole to be inflated, once for its values and once more by the safety check,
        # which runs after they were released.
        extra = {"stored.npz": 2 * FIRST_READ, "deflated.npz": (self.files / "deflated.npz").stat().st_size}
        for name in ("model.gguf", "model.onnx", "weights.npy", "stored.npz", "deflated.npz", "flax_model.msgpack"):
            with self.subTest(name=name):
                moved, _ = self.assert_same(name)
                size = (self.files / name).stat().st_size
                self.assertLessEqual(moved, size + extra.get(name, FIRST_READ))

    def test_an_onnx_models_external_data_is_read_by_range_beside_it(self):
        """The model's external data file is the URL beside it, as it is the file beside it locally; a missing one
        is the same not_found."""
        moved, _ = self.assert_same("external/model.onnx")
        self.assertLess(moved, 2 * FIRST_READ)
        data = (self.files / "external" / "model.onnx_data").stat().st_size
        self.assertLessEqual(self.stats()["bytes"]["/files/external/model.onnx_data"], data + FIRST_READ)
        there, here, _, _ = self.scan_both("external-missing/model.onnx")
        self.assertEqual(here["error"]["code"], "not_found", here["error"])
        self.assertEqual(there["error"], here["error"])

    def test_a_damaged_file_is_the_error_it_is_locally(self):
        for name, code in (("cut-in-data.gguf", "invalid_gguf"), ("cut-in-vocab.gguf", "invalid_gguf"),
                           ("cut-in-array.msgpack", "invalid_msgpack"), ("cut-at-end.msgpack", "invalid_msgpack")):
            with self.subTest(name=name):
                there, here, _, _ = self.scan_both(name)
                self.assertEqual(here["error"]["code"], code, here["error"])
                self.assertEqual(there["error"], here["error"])

    def test_files_over_256_mib_scan_as_locally(self):
        """One fp16 tensor of 280 MiB in a GGUF, an .npy, an ONNX model's raw_data and a Flax checkpoint: read by
        range remotely, never held whole, each scan the local one."""
        values = normal(LARGE_ELEMENTS, np.float16, 11, scale=0.05)
        folder = self.files / "large"
        folder.mkdir()
        try:
            write_gguf(folder / "large.gguf", {"token_embd.weight": values.reshape(-1, 4096)})
            np.save(folder / "large.npy", values.reshape(-1, 4096))
            write_onnx(folder / "large.onnx", {"w": values.reshape(-1, 4096)})
            write_flax(folder / "large.msgpack", {"w": {"kernel": values.reshape(-1, 4096)}})
            for name in ("large.gguf", "large.npy", "large.onnx", "large.msgpack"):
                with self.subTest(name=name):
                    self.assertGreater((folder / name).stat().st_size, 256 << 20)
                    moved, _ = self.assert_same(f"large/{name}")
                    self.assertLessEqual(moved, (folder / name).stat().st_size + FIRST_READ)
        finally:
            shutil.rmtree(folder)


if __name__ == "__main__":
    unittest.main()
