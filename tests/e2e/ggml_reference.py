"""ggml's own C code through ctypes: its quantizer (ggml_quantize_chunk, what llama.cpp's llama-quantize calls for each
tensor), its dequantizer (type_traits' to_float, ggml-quants.c's dequantize_row_*) and its GGUF writer (gguf.cpp, what
llama-quantize writes with). libggml-base is built by scripts/setup.sh --tests into .venv/ggml from the ggml that
llama.cpp ships (requirements-ggml.txt says which), with no architecture flags, so that its dequantizers compute each
value with one rounding per operation, as gguf-py's numpy ones do."""

import ctypes
import sys
from ctypes import POINTER, c_bool, c_char_p, c_float, c_int, c_int64, c_size_t, c_void_p
from pathlib import Path

import numpy as np

LIBRARY = Path(sys.prefix) / "ggml" / "lib" / "libggml-base.so"

# ggml_type ids newer than the test venv's gguf-py (0.19.0) knows, from ggml.h.
Q2_0 = 42


class _TypeTraits(ctypes.Structure):  # struct ggml_type_traits (ggml.h)
    _fields_ = [("type_name", c_char_p), ("blck_size", c_int64), ("blck_size_interleave", c_int64),
                ("type_size", c_size_t), ("is_quantized", c_bool), ("to_float", c_void_p),
                ("from_float_ref", c_void_p)]


class _InitParams(ctypes.Structure):  # struct ggml_init_params (ggml.h), passed by value
    _fields_ = [("mem_size", c_size_t), ("mem_buffer", c_void_p), ("no_alloc", c_bool)]


_TO_FLOAT = ctypes.CFUNCTYPE(None, c_void_p, POINTER(c_float), c_int64)


class Ggml:
    def __init__(self, path=LIBRARY):
        lib = ctypes.CDLL(str(path))
        signatures = {
            "ggml_get_type_traits": (POINTER(_TypeTraits), [c_int]),
            "ggml_quantize_chunk": (c_size_t, [c_int, POINTER(c_float), c_void_p, c_int64, c_int64, c_int64,
                                               POINTER(c_float)]),
            "ggml_quantize_requires_imatrix": (c_bool, [c_int]),
            "ggml_row_size": (c_size_t, [c_int, c_int64]),
            "ggml_init": (c_void_p, [_InitParams]),
            "ggml_free": (None, [c_void_p]),
            "ggml_new_tensor": (c_void_p, [c_void_p, c_int, c_int, POINTER(c_int64)]),
            "ggml_set_name": (c_void_p, [c_void_p, c_char_p]),
            "ggml_get_data": (c_void_p, [c_void_p]),
            "ggml_nbytes": (c_size_t, [c_void_p]),
            "gguf_init_empty": (c_void_p, []),
            "gguf_free": (None, [c_void_p]),
            "gguf_set_val_str": (None, [c_void_p, c_char_p, c_char_p]),
            "gguf_set_val_u32": (None, [c_void_p, c_char_p, ctypes.c_uint32]),
            "gguf_add_tensor": (None, [c_void_p, c_void_p]),
            "gguf_write_to_file": (c_bool, [c_void_p, c_char_p, c_bool]),
        }
        for name, (restype, argtypes) in signatures.items():
            function = getattr(lib, name)
            function.restype, function.argtypes = restype, argtypes
        self.lib = lib

    def traits(self, qtype):
        return self.lib.ggml_get_type_traits(int(qtype)).contents

    def requires_imatrix(self, qtype):
        return self.lib.ggml_quantize_requires_imatrix(int(qtype))

    def quantize(self, qtype, values, imatrix=None):
        """The rows of the 2-D float32 `values` quantized as `qtype`, by ggml's C quantizer (with `imatrix`, one
        importance per column, where given): a (rows, row bytes) uint8 array."""
        values = np.ascontiguousarray(values, dtype=np.float32)
        rows, per_row = values.shape
        out = np.zeros((rows, self.lib.ggml_row_size(int(qtype), per_row)), np.uint8)
        weights = None
        if imatrix is not None:
            imatrix = np.ascontiguousarray(imatrix, dtype=np.float32)
            weights = imatrix.ctypes.data_as(POINTER(c_float))
        written = self.lib.ggml_quantize_chunk(int(qtype), values.ctypes.data_as(POINTER(c_float)),
                                               out.ctypes.data, 0, rows, per_row, weights)
        assert written == out.nbytes, (qtype, written, out.nbytes)
        return out

    def dequantize(self, qtype, blocks, numel):
        """`numel` values of the bytes `blocks` as ggml's to_float gives them (float32)."""
        blocks = np.ascontiguousarray(blocks, dtype=np.uint8)
        out = np.zeros(numel, np.float32)
        _TO_FLOAT(self.traits(qtype).to_float)(blocks.ctypes.data, out.ctypes.data_as(POINTER(c_float)), numel)
        return out

    def write_gguf(self, path, tensors, file_type):
        """A GGUF file written by ggml's gguf writer, as llama-quantize writes one: `tensors` maps each name to
        (qtype, rows, columns, bytes), the bytes as ggml stores that many rows of that type."""
        total = sum(blocks.nbytes for _, _, _, blocks in tensors.values())
        context = self.lib.ggml_init(_InitParams(total + 1024 * (len(tensors) + 1), None, False))
        writer = self.lib.gguf_init_empty()
        try:
            self.lib.gguf_set_val_str(writer, b"general.architecture", b"llama")
            self.lib.gguf_set_val_u32(writer, b"general.quantization_version", 2)
            self.lib.gguf_set_val_u32(writer, b"general.file_type", file_type)
            for name, (qtype, rows, columns, blocks) in tensors.items():
                shape = (c_int64 * 2)(columns, rows)  # ggml's ne: innermost first
                tensor = self.lib.ggml_new_tensor(context, int(qtype), 2, shape)
                self.lib.ggml_set_name(tensor, name.encode())
                assert self.lib.ggml_nbytes(tensor) == blocks.nbytes, name
                ctypes.memmove(self.lib.ggml_get_data(tensor), np.ascontiguousarray(blocks).ctypes.data, blocks.nbytes)
                self.lib.gguf_add_tensor(writer, tensor)
            assert self.lib.gguf_write_to_file(writer, str(path).encode(), False), path
        finally:
            self.lib.gguf_free(writer)
            self.lib.ggml_free(context)
