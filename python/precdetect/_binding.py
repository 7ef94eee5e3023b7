"""The C interface (libprecdetect_api.so, include/precdetect/c_api.h) through ctypes: one library for every CPython,
with no compiled extension and no libtorch. scan and diff run with the GIL released (ctypes.CDLL); check holds it
(ctypes.PyDLL) while it reads tensors in place, so that no Python thread frees one meanwhile."""

import ctypes
import json
import os
from pathlib import Path

from precdetect.errors import Error

PROGRAMS = Path(__file__).resolve().parent / "bin"
LIBRARY = PROGRAMS / "libprecdetect_api.so"


class LiveTensor(ctypes.Structure):
    """precdetect_live_tensor."""

    _fields_ = [("name", ctypes.c_char_p), ("dlpack", ctypes.c_void_p), ("versioned", ctypes.c_int32),
                ("dtype", ctypes.c_char_p), ("role", ctypes.c_char_p), ("storage_key", ctypes.c_uint64),
                ("unreadable", ctypes.c_char_p)]


CopyToHost = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_size_t, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint64)

_libraries = {}


def _library(kind):
    """The C interface loaded as `kind` (CDLL or PyDLL), with its functions' signatures; the helpers it starts or
    loads (the HDF5 helper, the CUDA plugin) are found beside it in an installed package, and the plugin runs with
    the torch this Python would import (located, not imported)."""
    if kind not in _libraries:
        if (PROGRAMS / "precdetect").exists():
            os.environ.setdefault("PRECDETECT_HELPERS", str(PROGRAMS))
        from precdetect._launcher import torch_folder

        folder = torch_folder()
        if folder:
            os.environ.setdefault("PRECDETECT_LIBTORCH", folder)
        library = kind(str(LIBRARY))
        strings = ctypes.POINTER(ctypes.c_char_p)
        for name, arguments in {"precdetect_scan": [strings, ctypes.c_size_t],
                                "precdetect_diff": [strings, ctypes.c_size_t],
                                "precdetect_check": [strings, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_char_p,
                                                     ctypes.POINTER(LiveTensor), ctypes.c_size_t, strings,
                                                     ctypes.c_size_t, ctypes.c_char_p, ctypes.c_char_p, CopyToHost],
                                "precdetect_html": [ctypes.c_char_p]}.items():
            function = getattr(library, name)
            function.argtypes, function.restype = arguments, ctypes.c_void_p  # freed by precdetect_free
        library.precdetect_free.argtypes, library.precdetect_free.restype = [ctypes.c_void_p], None
        _libraries[kind] = library
    return _libraries[kind]


def _strings(values):
    encoded = [os.fsencode(value) if isinstance(value, os.PathLike) else str(value).encode() for value in values]
    return (ctypes.c_char_p * max(len(encoded), 1))(*encoded), len(encoded)


def _answer(library, pointer):
    """The document of a call's answer; its error as precdetect.Error."""
    try:
        answer = json.loads(ctypes.string_at(pointer).decode())
    finally:
        library.precdetect_free(pointer)
    if "error" in answer:
        raise Error(answer["error"]["code"], answer["error"]["message"])
    return answer["document"]


def scan(arguments):
    library = _library(ctypes.CDLL)
    return _answer(library, library.precdetect_scan(*_strings(arguments)))


def diff(arguments):
    library = _library(ctypes.CDLL)
    return _answer(library, library.precdetect_diff(*_strings(arguments)))


def html(document):
    library = _library(ctypes.CDLL)
    return _answer(library, library.precdetect_html(json.dumps(document).encode()))


def check(arguments, name, kind, tensors, not_tensors, config, copy_to_host, activations):
    """`tensors`: LiveTensor structures whose DLPack capsules the caller keeps alive; `copy_to_host(index, offset,
    address, length)` copies a GPU tensor's bytes when the CUDA plugin cannot run; `activations` is JSON text
    (precdetect.probe's measurements, "[]" without)."""
    library = _library(ctypes.PyDLL)
    array = (LiveTensor * max(len(tensors), 1))(*tensors)
    callback = CopyToHost(copy_to_host)
    return _answer(library, library.precdetect_check(*_strings(arguments), name.encode(), kind.encode(), array,
                                                     len(tensors), *_strings(not_tensors), config.encode(),
                                                     activations.encode(), callback))
