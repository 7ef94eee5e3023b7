"""Every ggml block type llama.cpp writes (issue 70), read from GGUF as ggml reads it. Each file is written by a
producer of the type: ggml's own C quantizer and GGUF writer (ggml_reference.py: what llama-quantize runs), with an
importance matrix for the i-quants, and gguf-py's quantizer and writer where gguf-py quantizes the type. Every value
precdetect dequantizes (tests/differential/ggml_values.cpp, the statistics kernel's decoder) equals what ggml's
to_float and gguf-py's dequantize give, bit for bit; a scan's statistics equal float64 references of those values,
and its numel and parameter count are values, never stored bytes."""

import json
import os
import subprocess
import unittest
from pathlib import Path

import numpy as np
import torch
from helpers import BINARY, ScanTestCase, reference_precision, scan, tensors_by_name, warning_codes, write_gguf

import gguf  # noqa: E402  (after helpers: the test venv's packages)
from gguf import GGMLQuantizationType as GgmlType
from ggml_reference import LIBRARY, Q2_0, Ggml

HARNESS = Path(os.environ.get("PRECDETECT_GGML_VALUES", Path(BINARY).parent / "tests" / "precdetect_ggml_values"))

# Every ggml type a GGUF file holds blocks of, with its name and llama.cpp's file type for a file mostly of it
# (llama.h's llama_ftype). Q8_1 and Q8_K are ggml's intermediate types for dot products, which no quantizer writes to
# a file and ggml has no to_float for: named below, not read.
BLOCK_TYPES = {
    "Q4_0": (GgmlType.Q4_0, 2), "Q4_1": (GgmlType.Q4_1, 3), "Q5_0": (GgmlType.Q5_0, 8), "Q5_1": (GgmlType.Q5_1, 9),
    "Q8_0": (GgmlType.Q8_0, 7), "Q2_K": (GgmlType.Q2_K, 10), "Q3_K": (GgmlType.Q3_K, 12),
    "Q4_K": (GgmlType.Q4_K, 15), "Q5_K": (GgmlType.Q5_K, 17), "Q6_K": (GgmlType.Q6_K, 18),
    "IQ2_XXS": (GgmlType.IQ2_XXS, 19), "IQ2_XS": (GgmlType.IQ2_XS, 20), "IQ3_XXS": (GgmlType.IQ3_XXS, 23),
    "IQ1_S": (GgmlType.IQ1_S, 24), "IQ4_NL": (GgmlType.IQ4_NL, 25), "IQ3_S": (GgmlType.IQ3_S, 26),
    "IQ2_S": (GgmlType.IQ2_S, 28), "IQ4_XS": (GgmlType.IQ4_XS, 30), "IQ1_M": (GgmlType.IQ1_M, 31),
    "TQ1_0": (GgmlType.TQ1_0, 36), "TQ2_0": (GgmlType.TQ2_0, 37), "MXFP4": (GgmlType.MXFP4, 38),
    "NVFP4": (GgmlType.NVFP4, 39), "Q1_0": (GgmlType.Q1_0, 40), "Q2_0": (Q2_0, 41),
}
# The types gguf-py (0.19.0) quantizes itself; it dequantizes all but Q1_0 and Q2_0.
GGUF_PY_QUANTIZES = {"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "TQ1_0", "TQ2_0", "MXFP4"}
GGUF_PY_DEQUANTIZES = set(BLOCK_TYPES) - {"Q1_0", "Q2_0"}

# Where each type keeps its fp16 scales, by byte offset in a block (ggml-common.h's block_* structs): random bytes
# there are set to a finite scale, so that blocks of random codes hold finite values. MXFP4's and NVFP4's 8-bit
# scales are finite whatever their bytes; IQ1_M's fp16 d is the top nibbles of its four scale words (bytes 48-55).
HALF_SCALES = {
    "Q4_0": (0,), "Q4_1": (0, 2), "Q5_0": (0,), "Q5_1": (0, 2), "Q8_0": (0,), "Q2_K": (80, 82), "Q3_K": (108,),
    "Q4_K": (0, 2), "Q5_K": (0, 2), "Q6_K": (208,), "IQ2_XXS": (0,), "IQ2_XS": (0,), "IQ3_XXS": (0,), "IQ1_S": (0,),
    "IQ4_NL": (0,), "IQ3_S": (0,), "IQ2_S": (0,), "IQ4_XS": (0,), "TQ1_0": (52,), "TQ2_0": (64,), "Q1_0": (0,),
    "Q2_0": (0,), "MXFP4": (), "NVFP4": (), "IQ1_M": (),
}
ROWS, COLUMNS = 8, 512  # a whole number of every type's blocks per row (32 to 256 values)


def weights(seed):
    """Trained-looking rows with a few outliers past fp16's range and below its subnormals, and a zero."""
    rng = np.random.default_rng(seed)
    values = (rng.standard_normal((ROWS, COLUMNS)) * 0.05).astype(np.float32)
    values[0, :4] = [300.0, 2e5, 7e-6, 0.0]
    return values


def importance(seed):
    """An importance matrix as llama-imatrix computes one: a mean of squared activations per column."""
    return (np.random.default_rng(seed).standard_normal((64, COLUMNS)) ** 2).mean(axis=0).astype(np.float32)


def random_blocks(ggml, name, rows, rng):
    """`rows` rows of random blocks of type `name` whose scales are finite (1e-3 to 2e-2): every code and grid row
    is drawn, which quantizers seldom reach."""
    qtype = BLOCK_TYPES[name][0]
    traits = ggml.traits(qtype)
    blocks = rng.integers(0, 256, (rows * COLUMNS // traits.blck_size, traits.type_size), dtype=np.uint8)
    for offset in HALF_SCALES[name]:
        scales = rng.uniform(1e-3, 2e-2, len(blocks)).astype(np.float16)
        blocks[:, offset:offset + 2] = scales.view(np.uint8).reshape(-1, 2)
    if name == "IQ1_M":  # d's four nibbles at the top of the four 16-bit scale words
        words = blocks[:, 48:56].copy().view(np.uint16)
        d = rng.uniform(1e-3, 2e-2, len(blocks)).astype(np.float16).view(np.uint16)
        for k in range(4):
            words[:, k] = (words[:, k] & 0x0FFF) | (((d >> (4 * k)) & 0xF) << 12)
        blocks[:, 48:56] = words.view(np.uint8)
    return blocks.reshape(rows, -1)


def dequantized_by_precdetect(path, folder):
    """{tensor name: (dtype name, numel, float32 values)} as precdetect's decoders give them."""
    folder.mkdir()
    lines = subprocess.run([HARNESS, path, folder], capture_output=True, text=True, check=True, timeout=300).stdout
    read = {}
    for line in lines.splitlines():
        entry = json.loads(line)
        read[entry["name"]] = (entry["dtype"], entry["numel"], np.fromfile(entry["values"], np.float32))
    return read


class GgmlTypes(ScanTestCase):
    @classmethod
    def setUpClass(cls):
        # Never skipped: setup.sh builds the reference library and build.sh the harness, so a missing one fails.
        if not LIBRARY.is_file():
            raise AssertionError(f"{LIBRARY} is missing: scripts/setup.sh --tests builds it")
        if not HARNESS.is_file():
            raise AssertionError(f"{HARNESS} is missing: scripts/build.sh --tests builds it")
        cls.ggml = Ggml()

    def producer_files(self):
        """{file: {tensor: (type name, blocks)}}: ggml's C quantizer and writer for every type, gguf-py's for the
        types it quantizes, and blocks of random codes (ggml's writer) so that every grid row and level is read."""
        rng = np.random.default_rng(3)
        files = {}
        c_tensors, random_tensors, py_tensors = {}, {}, {}
        for seed, (name, (qtype, _)) in enumerate(BLOCK_TYPES.items()):
            values = weights(seed)
            imatrix = importance(seed) if name.startswith("IQ") or self.ggml.requires_imatrix(qtype) else None
            c_tensors[f"{name}.c"] = (name, self.ggml.quantize(qtype, values, imatrix))
            random_tensors[f"{name}.random"] = (name, random_blocks(self.ggml, name, 64, rng))
            if name in GGUF_PY_QUANTIZES:
                py_tensors[f"{name}.py"] = (name, gguf.quants.quantize(values, qtype))
        for file, tensors in (("ggml-c.gguf", c_tensors), ("ggml-random.gguf", random_tensors)):
            self.ggml.write_gguf(self.tmp / file, {tensor: (BLOCK_TYPES[name][0], len(blocks), COLUMNS, blocks)
                                                   for tensor, (name, blocks) in tensors.items()}, file_type=15)
            files[self.tmp / file] = tensors
        write_gguf(self.tmp / "gguf-py.gguf", {tensor: (blocks, BLOCK_TYPES[name][0])
                                                  for tensor, (name, blocks) in py_tensors.items()}, file_type=7)
        files[self.tmp / "gguf-py.gguf"] = py_tensors
        return files

    def test_every_value_is_the_one_ggml_and_gguf_py_compute(self):
        for path, tensors in self.producer_files().items():
            read = dequantized_by_precdetect(path, self.tmp / f"{path.stem}-values")
            self.assertEqual(set(read), set(tensors), path.name)
            for tensor, (name, blocks) in tensors.items():
                dtype, numel, values = read[tensor]
                self.assertEqual((dtype, numel), (name, blocks.shape[0] * COLUMNS), tensor)
                references = {"ggml": self.ggml.dequantize(BLOCK_TYPES[name][0], blocks, numel)}
                if name in GGUF_PY_DEQUANTIZES:
                    references["gguf-py"] = gguf.quants.dequantize(blocks, BLOCK_TYPES[name][0]).reshape(-1)
                for producer, reference in references.items():
                    differ = np.flatnonzero(values.view(np.uint32) != reference.astype(np.float32).view(np.uint32))
                    self.assertEqual(differ.size, 0, f"{tensor} against {producer}: {differ.size} values differ, "
                                     f"first at {differ[:1]}: {values[differ[:1]]} vs {reference[differ[:1]]}")

    def test_a_scan_reads_every_type_as_values(self):
        files = self.producer_files()
        path = self.tmp / "ggml-c.gguf"
        code, document, _ = scan(path)
        self.assertEqual(code, 0)
        model = document["models"][0]
        tensors = tensors_by_name(model)
        for tensor, (name, blocks) in files[path].items():
            reference = torch.from_numpy(self.ggml.dequantize(BLOCK_TYPES[name][0], blocks, blocks.shape[0] * COLUMNS)
                                         .astype(np.float64)).reshape(ROWS, COLUMNS)
            self.assertEqual(tensors[tensor]["dtype"], name)
            self.assertEqual(tensors[tensor]["shape"], [ROWS, COLUMNS], tensor)
            self.assertTensorStats(tensors[tensor], reference, tensor)
            expected = reference_precision(reference)
            expected["bf16_exact"] = expected["fp16_exact"] = None  # says nothing of how a dequantized value is stored
            self.assertEqual(tensors[tensor]["precision"], expected, tensor)
        self.assertEqual(model["summary"]["parameters"], len(BLOCK_TYPES) * ROWS * COLUMNS)
        self.assertEqual(model["summary"]["bytes"], sum(blocks.nbytes for _, blocks in files[path].values()))
        self.assertNotIn("dtypes_not_analyzed", warning_codes(model))
        [warning] = [w for w in model["warnings"] if w["code"] == "dequantized"]
        self.assertIn(f"{len(BLOCK_TYPES)} tensor(s) stored block-quantized", warning["message"])

    def test_the_intermediate_types_are_named_with_their_values_counted(self):
        """Q8_K (and Q8_1): written by no quantizer and without a to_float in ggml, but a file may hold them; named
        in dtypes_not_analyzed, their numel the values their blocks hold."""
        blocks = np.random.default_rng(5).integers(0, 256, (4, 2 * gguf.GGML_QUANT_SIZES[GgmlType.Q8_K][1]), np.uint8)
        write_gguf(self.tmp / "q8k.gguf", {"q8k": (blocks, GgmlType.Q8_K)}, file_type=0)
        code, document, _ = scan(self.tmp / "q8k.gguf")
        self.assertEqual(code, 0)
        model = document["models"][0]
        [tensor] = model["tensors"]
        self.assertEqual((tensor["dtype"], tensor["numel"], tensor["analyzed"]), ("Q8_K", 4 * 2 * 256, False))
        self.assertEqual(model["summary"]["parameters"], 4 * 2 * 256)
        self.assertIn("q8k (Q8_K)", " ".join(w["message"] for w in model["warnings"]
                                              if w["code"] == "dtypes_not_analyzed"))

    def test_what_ggml_refuses_to_read_is_invalid_gguf(self):
        """A type ggml retired from files (Q4_0_4_4: its block size is 0 in ggml's traits) and rows that are not
        whole blocks (ggml's reader checks the innermost dimension, not the tensor): refused by name, as ggml does."""
        blocks = self.ggml.quantize(GgmlType.Q4_0, weights(0))
        self.ggml.write_gguf(self.tmp / "q4.gguf", {"w": (GgmlType.Q4_0, ROWS, COLUMNS, blocks)}, file_type=2)
        data = (self.tmp / "q4.gguf").read_bytes()
        # The one tensor's info: name (u64 length, bytes), n_dims u32, ne u64 x 2, type u32, offset u64.
        info = data.index(b"\x01\x00\x00\x00\x00\x00\x00\x00w") + 9
        cases = {
            "retired": (info + 4 + 16, (31).to_bytes(4, "little"), "type 31 (Q4_0_4_4) was retired from ggml"),
            # ne = (16, 256): as many values and blocks, but rows of 16, half a Q4_0 block
            "rows": (info + 4, (16).to_bytes(8, "little") + (256).to_bytes(8, "little"),
                     "rows of 16 elements are not whole Q4_0 blocks of 32"),
        }
        for case, (at, patch, needle) in cases.items():
            path = self.tmp / f"{case}.gguf"
            path.write_bytes(data[:at] + patch + data[at + len(patch):])
            code, document, _ = scan(path)
            self.assertEqual(code, 2, case)
            error = document["models"][0]["error"]
            self.assertEqual(error["code"], "invalid_gguf", case)
            self.assertIn(needle, error["message"], case)


if __name__ == "__main__":
    unittest.main()
