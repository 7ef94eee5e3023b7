#!/usr/bin/env python3
"""Writes the malformed-input corpus: one broken model per case, each with the error precdetect must name.

  .venv/bin/python tests/malformed_corpus.py DEST     # DEST/<case> for every case, and DEST/expected.json

Every safetensors validation rule, zip and ZIP64 damage, pickle damage (unknown opcodes, stack underflow, memo
misuse, nesting bombs, huge lengths), legacy torch.save damage, ONNX damage (protobuf, shapes, external data outside
its folder or its file), Keras `.keras` archives (without weights, truncated, weights compressed or no HDF5),
overflowing shapes, absurd tensor counts, shard indexes that point outside their folder,
symlink loops, FIFOs, folders without weights, and torch.distributed.checkpoint folders whose .metadata and .distcp
files disagree (or, saved without collectives, whose ranks' metadata do, or whose HuggingFace writer's rank files
do). tests/e2e/test_malformed.py scans each case (named error, path, exit 2, valid JSON) and all of them in one
batch.
"""

import io
import json
import os
import pickle
import struct
import sys
import warnings
import zipfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pre04_tar import archive, members  # noqa: E402


def safetensors(header, data=b"", length=None):
    """A safetensors file: the 8-byte header length (or `length`), the header (bytes, or JSON of a dict), data."""
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(text) if length is None else length) + text + data


def f32(name="w", shape=(4,), begin=0):
    end = begin + 4 * (shape[0] if shape else 1)
    return {name: {"dtype": "F32", "shape": list(shape), "data_offsets": [begin, end]}}


SAFETENSORS = {  # case: (file bytes, expected error code)
    "st-empty-file": (b"", "header_too_small"),
    "st-shorter-than-its-length": (b"\x05\x00\x00", "header_too_small"),
    "st-length-past-the-end": (safetensors(f32(), bytes(16), length=4096), "invalid_header_length"),
    "st-length-2-to-the-63": (safetensors(f32(), bytes(16), length=1 << 63), "header_too_large"),
    "st-header-over-100-mb": (struct.pack("<Q", 200_000_000) + b"{" + b" " * 64, "header_too_large"),
    "st-header-not-utf8": (safetensors(b'{"w\xff\xfe": 1}'), "invalid_utf8"),
    "st-header-not-json": (safetensors(b"{not json"), "invalid_json"),
    "st-header-is-an-array": (safetensors(b"[1, 2, 3]"), "invalid_header"),
    "st-entry-without-dtype": (safetensors({"w": {"shape": [1], "data_offsets": [0, 4]}}, bytes(4)), "invalid_header"),
    "st-unknown-dtype": (safetensors({"w": {"dtype": "F7", "shape": [1], "data_offsets": [0, 4]}}, bytes(4)),
                         "unknown_dtype"),
    "st-duplicate-key": (safetensors(b'{"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, '
                                     b'"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}', bytes(4)),
                         "duplicate_key"),
    "st-offsets-reversed": (safetensors({"w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}}, bytes(4)),
                            "invalid_offset"),
    "st-offsets-past-the-end": (safetensors(f32(shape=(1024,))), "offset_past_end"),
    "st-gap-between-tensors": (safetensors({**f32("a"), **f32("b", begin=20)}, bytes(36)), "invalid_offset"),
    "st-overlapping-tensors": (safetensors({**f32("a"), **f32("b", begin=8)}, bytes(24)), "invalid_offset"),
    "st-shape-product-overflows": (safetensors({"w": {"dtype": "F32", "shape": [1 << 32, 1 << 32, 1 << 32],
                                                      "data_offsets": [0, 4]}}, bytes(4)), "validation_overflow"),
    "st-size-mismatch": (safetensors({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 16]}}, bytes(16)),
                         "size_mismatch"),
    "st-negative-dimension": (safetensors({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, bytes(4)),
                              "invalid_header"),
    "st-fractional-offset": (safetensors({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4.5]}}, bytes(8)),
                             "invalid_header"),
    "st-metadata-not-strings": (safetensors({"__metadata__": {"a": 1}, **f32()}, bytes(16)), "invalid_header"),
    "st-nesting-bomb": (safetensors(b'{"__metadata__": {"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}"),
                        "invalid_header"),
    "st-a-million-tensors": (safetensors({f"t{i}": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}
                                          for i in range(1_000_000)}), "invalid_header"),
    "st-truncated-data": (safetensors(f32(shape=(256,)), bytes(1000)), "offset_past_end"),
}


def torch_zip(entries=None, compression=zipfile.ZIP_STORED, drop=(), data_pkl=None):
    """torch.save's zip of {'w': ones(64)}, rewritten with zipfile: entries replaced, dropped or compressed."""
    saved = io.BytesIO()
    torch.save({"w": torch.ones(64)}, saved)
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(saved.getvalue())) as original, zipfile.ZipFile(out, "w", compression) as copy:
        for info in original.infolist():
            name = info.filename.split("/", 1)[1]
            if name in drop:
                continue
            content = original.read(info)
            if name == "data.pkl" and data_pkl is not None:
                content = data_pkl
            copy.writestr(info.filename, (entries or {}).get(name, content))
    return out.getvalue()


def deflated_torch_zip(member, damage):
    """torch_zip() with every entry deflated (torch.load inflates them), then `damage(data, header_at, name_length)`
    applied to the central directory record of `member`."""
    data = bytearray(torch_zip(compression=zipfile.ZIP_DEFLATED))
    at = data.index(b"PK\x01\x02")
    while not bytes(data[at + 46:at + 46 + int.from_bytes(data[at + 28:at + 30], "little")]).endswith(member.encode()):
        at = data.index(b"PK\x01\x02", at + 4)
    return damage(data, at)


def with_uncompressed_size(size):
    def damage(data, at):
        data[at + 24:at + 28] = size.to_bytes(4, "little")
        return bytes(data)
    return damage


def with_garbled_stream(data, at):
    local = int.from_bytes(data[at + 42:at + 46], "little")
    start = local + 30 + int.from_bytes(data[local + 26:local + 28], "little") + int.from_bytes(data[local + 28:local + 30], "little")
    data[start:start + 4] = b"\xff\xff\xff\xff"
    return bytes(data)


def eocd_offset(data):
    return data.rindex(b"PK\x05\x06")


def with_central_directory_at(data, offset):
    """The end-of-central-directory record pointing its directory at `offset`."""
    at = eocd_offset(data) + 16
    return data[:at] + struct.pack("<I", offset) + data[at + 4:]


def with_entry_count(data, count):
    at = eocd_offset(data) + 8
    return data[:at] + struct.pack("<HH", count, count) + data[at + 4:]


def with_zip64_locator(data, target):
    """A ZIP64 end-of-directory locator before the EOCD, pointing at `target`; the EOCD asks for ZIP64."""
    at = eocd_offset(data)
    locator = b"PK\x06\x07" + struct.pack("<IQI", 0, target, 1)
    eocd = bytearray(data[at:])
    eocd[16:20] = b"\xff\xff\xff\xff"
    return data[:at] + locator + bytes(eocd)


def torch_zip_pickle():
    with zipfile.ZipFile(io.BytesIO(torch_zip())) as archive:
        return archive.read(next(n for n in archive.namelist() if n.endswith("data.pkl")))


def pickled(*opcodes):
    return b"\x80\x02" + b"".join(opcodes)


ZIP_AND_PICKLE = {
    "zip-without-end-record": (torch_zip()[:-22], "invalid_zip"),
    "zip-directory-past-the-end": (with_central_directory_at(torch_zip(), 1 << 30), "invalid_zip"),
    "zip-65535-entries-claimed": (with_entry_count(torch_zip(), 65535), "invalid_zip"),
    "zip64-locator-past-the-end": (with_zip64_locator(torch_zip(), 1 << 40), "invalid_zip"),
    "zip-bzip2-pickle": (torch_zip(compression=zipfile.ZIP_BZIP2), "compressed_entry"),
    "zip-deflated-storage-size-lies": (deflated_torch_zip("data/0", with_uncompressed_size(1 << 20)), "invalid_zip"),
    "zip-deflated-pickle-garbled": (deflated_torch_zip("data.pkl", with_garbled_stream), "invalid_zip"),
    "zip-without-data-pkl": (torch_zip(drop=("data.pkl",)), "missing_record"),
    "zip-storage-record-missing": (torch_zip(drop=("data/0",)), "missing_record"),
    "zip-storage-too-small": (torch_zip(entries={"data/0": bytes(8)}), "storage_too_small"),
    "pickle-unknown-opcode": (torch_zip(data_pkl=pickled(b"\xff.")), "invalid_pickle"),
    "pickle-stack-underflow": (torch_zip(data_pkl=pickled(b"R.")), "invalid_pickle"),
    "pickle-memo-get-of-nothing": (torch_zip(data_pkl=pickled(b"}h\x05.")), "invalid_pickle"),
    "pickle-memo-index-2-to-the-32": (torch_zip(data_pkl=pickled(b"}q\x00j\xff\xff\xff\xff.")), "invalid_pickle"),
    "pickle-nesting-bomb": (torch_zip(data_pkl=pickled(b"(" * 200_000, b"t" * 200_000, b".")), "invalid_pickle"),
    "pickle-list-nesting-bomb": (torch_zip(data_pkl=pickled(b"]" * 200_000, b"a" * 199_999, b".")),
                                 "invalid_pickle"),
    "pickle-binbytes-2-gb": (torch_zip(data_pkl=b"\x80\x03B\xff\xff\xff\x7f."), "invalid_pickle"),
    "pickle-binbytes8-2-to-the-62": (torch_zip(data_pkl=b"\x80\x04\x8e" + struct.pack("<Q", 1 << 62) + b"."),
                                     "invalid_pickle"),
    "pickle-long4-2-gb": (torch_zip(data_pkl=pickled(b"\x8b\xff\xff\xff\x7f.")), "invalid_pickle"),
    "pickle-without-stop": (torch_zip(data_pkl=pickled(b"}")), "invalid_pickle"),
    "pickle-truncated": (torch_zip(data_pkl=torch_zip_pickle()[:40]), "invalid_pickle"),
}


def legacy(tensors=None):
    saved = io.BytesIO()
    torch.save(tensors or {"w": torch.ones(64)}, saved, _use_new_zipfile_serialization=False)
    return saved.getvalue()


LEGACY = {
    # the first 15 bytes: the pickled magic number; then protocol version 999 where 1001 belongs
    "legacy-unknown-protocol-version": (legacy()[:15] + pickled(b"M\xe7\x03."), "invalid_legacy"),
    "legacy-garbage-after-magic": (legacy()[:15] + b"\xff" * 64, "invalid_pickle"),
    "legacy-truncated-storage": (legacy()[:-100], "invalid_legacy"),
    "legacy-truncated-header": (legacy()[:200], "invalid_pickle"),  # its header is a pickle: named with offset
    "bin-that-is-text": (b"this is not a checkpoint\n" * 10, "unknown_format"),
    "bin-empty": (b"", "unknown_format"),
}


def tar_parts(**changes):
    """The members of a good pre-0.4 tar with some replaced (None: left out)."""
    parts = members({"w": torch.ones(4), "v": torch.arange(3, dtype=torch.float64)})
    parts.update(changes)
    return {name: data for name, data in parts.items() if data is not None}


def tar_with_size_field(text):
    """A good tar whose first member header declares `text` as its octal size (checksum left stale: not read)."""
    data = bytearray(archive(tar_parts()))
    first = 512 if data[156:157] == b"x" else 0  # PAX_FORMAT may lead with an extended header
    data[first + 124:first + 136] = text.ljust(12, b"\0")
    return bytes(data)


def tar_with_pickled(member, value, tail=b""):
    return archive(tar_parts(**{member: pickle.dumps(value, protocol=2) + tail}))


TAR = {  # the pre-0.4 torch.save tar layout (tests/pre04_tar.py)
    "tar-without-pickle-member": (archive(tar_parts(pickle=None)), "invalid_legacy"),
    "tar-without-storages-member": (archive(tar_parts(storages=None)), "invalid_legacy"),
    "tar-member-past-the-end": (archive(tar_parts())[:560], "invalid_legacy"),  # cut inside the first member
    "tar-unreadable-member-size": (tar_with_size_field(b"zz"), "invalid_legacy"),
    "tar-huge-member-size": (tar_with_size_field(b"77777777777"), "invalid_legacy"),
    "tar-storage-count-not-int": (tar_with_pickled("storages", "two"), "invalid_legacy"),
    "tar-storage-bytes-truncated": (tar_with_pickled("storages", 1, pickle.dumps(("0", "cpu", torch.FloatStorage),
                                                                                 protocol=2) + struct.pack("<q", 1 << 20)),
                                    "invalid_legacy"),
    "tar-unknown-storage-type": (tar_with_pickled("storages", 1, pickle.dumps(("0", "cpu", torch.QInt8Storage),
                                                                              protocol=2) + struct.pack("<q", 1)),
                                 "invalid_legacy"),
    "tar-tensor-count-not-int": (tar_with_pickled("tensors", [1]), "invalid_legacy"),
    "tar-pickle-garbage": (archive(tar_parts(pickle=b"\xff" * 32)), "invalid_pickle"),
}


def varint(value):
    out = b""
    while value >= 0x80:
        out += bytes([value & 0x7F | 0x80])
        value >>= 7
    return out + bytes([value])


def proto(number, payload):
    """A protobuf field: a varint (int) or length-delimited (bytes) value."""
    if isinstance(payload, int):
        return varint(number << 3) + varint(payload)
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def onnx_model(*initializers):
    """An ONNX ModelProto (ir_version 8) whose graph holds these TensorProto encodings as initializers."""
    return proto(1, 8) + proto(7, b"".join(proto(5, t) for t in initializers))


def onnx_tensor(name=b"w", data_type=1, dims=(4,), data=None, external=None):
    """A TensorProto: float32 `w` of shape [4] in raw_data unless told otherwise; `external`: its key/values."""
    fields = proto(1, b"".join(varint(d) for d in dims)) + proto(2, data_type) + proto(8, name)
    if external is not None:
        entries = b"".join(proto(13, proto(1, k.encode()) + proto(2, v.encode())) for k, v in external.items())
        return fields + entries + proto(14, 1)
    return fields + proto(9, bytes(16) if data is None else data)


def onnx_constant(output, attribute, *values):
    """An ONNX ModelProto whose graph holds one Constant node with output `output` (b"": none) whose attribute
    `attribute` holds these fields (encoded protobuf fields of AttributeProto)."""
    node = proto(4, b"Constant") + proto(5, proto(1, attribute) + b"".join(values))
    if output:
        node = proto(2, output) + node
    return proto(1, 8) + proto(7, proto(1, node))


def fixed32_float(number, value):
    """A protobuf float field (wire type 5)."""
    return varint(number << 3 | 5) + struct.pack("<f", value)


def onnx_sparse(indices=(1, 3), index_dims=None, dims=(4,), values=(1.0, 2.0)):
    """An ONNX ModelProto whose graph holds one sparse initializer `s`: float32 `values`, int64 `indices` in raw_data
    (of shape `index_dims`, else [len(indices)]), dense shape `dims`."""
    values_tensor = onnx_tensor(b"s", dims=(len(values),), data=struct.pack(f"<{len(values)}f", *values))
    shape = index_dims if index_dims is not None else (len(indices),)
    indices_tensor = (proto(1, b"".join(varint(d) for d in shape)) + proto(2, 7) +
                      proto(9, struct.pack(f"<{len(indices)}q", *indices)))
    sparse = proto(1, values_tensor) + proto(2, indices_tensor) + proto(3, b"".join(varint(d) for d in dims))
    return proto(1, 8) + proto(7, proto(15, sparse))


ONNX = {
    "onnx-truncated": (onnx_model(onnx_tensor())[:-6], "invalid_onnx"),
    "onnx-varint-of-11-bytes": (proto(1, 8) + varint(7 << 3 | 2) + b"\xff" * 11, "invalid_onnx"),
    "onnx-raw-data-shorter-than-its-shape": (onnx_model(onnx_tensor(data=bytes(12))), "invalid_onnx"),
    "onnx-unknown-data-type": (onnx_model(onnx_tensor(data_type=99)), "invalid_onnx"),
    "onnx-dimensions-overflow": (onnx_model(onnx_tensor(dims=(1 << 62, 1 << 62))), "invalid_onnx"),
    "onnx-initializer-without-a-name": (onnx_model(onnx_tensor(name=b"")), "invalid_onnx"),
    # A Constant's value in the attribute's own fields: one float where a scalar is, floats of their wire type, an
    # output to name it by.
    "onnx-constant-value-float-given-twice": (
        onnx_constant(b"c", b"value_float", fixed32_float(2, 1.0), fixed32_float(2, 2.0)), "invalid_onnx"),
    "onnx-constant-value-floats-as-varints": (onnx_constant(b"c", b"value_floats", proto(7, 3)), "invalid_onnx"),
    "onnx-constant-value-float-without-an-output": (onnx_constant(b"", b"value_float", fixed32_float(2, 1.0)),
                                                    "invalid_onnx"),
    # Sparse initializers break onnx's checker's rules (onnx/checker.cc check_sparse_tensor): an index outside the
    # tensor, indices not strictly increasing (a duplicate would count a value twice), indices and values that do
    # not pair up, a dense shape whose element count overflows, or is over the 2^60 a model's sparse tensors may
    # stand for together.
    "onnx-sparse-index-out-of-range": (onnx_sparse(indices=(1, 4)), "invalid_onnx"),
    "onnx-sparse-indices-unsorted": (onnx_sparse(indices=(3, 1)), "invalid_onnx"),
    "onnx-sparse-indices-duplicate": (onnx_sparse(indices=(2, 2)), "invalid_onnx"),
    "onnx-sparse-indices-fewer-than-values": (onnx_sparse(indices=(1,)), "invalid_onnx"),
    "onnx-sparse-indices-shorter-than-their-shape": (onnx_sparse(indices=(1,), index_dims=(2,)), "invalid_onnx"),
    "onnx-sparse-dims-overflow": (onnx_sparse(dims=(1 << 62, 1 << 62)), "invalid_onnx"),
    "onnx-sparse-over-2-to-the-60-elements": (onnx_sparse(dims=(1 << 31, 1 << 30)), "invalid_onnx"),
}


def keras_archive(weights=b"\x89HDF\r\n\x1a\n" + bytes(56), compression=zipfile.ZIP_STORED, cut=None,
                  members=("metadata.json", "config.json", "model.weights.h5")):
    """A Keras 3 `.keras` archive laid out as keras.saving writes it (members stored, in this order), its
    model.weights.h5 `weights` (`compression` applied), its first `cut` bytes when given."""
    config = {"module": "keras", "class_name": "Sequential", "config": {"name": "sequential", "layers": []}}
    data = {"metadata.json": json.dumps({"keras_version": "3.15.1"}).encode(),
            "config.json": json.dumps(config).encode(), "model.weights.h5": weights}
    saved = io.BytesIO()
    with zipfile.ZipFile(saved, "w") as archive:
        for name in members:
            archive.writestr(name, data[name], compress_type=compression if name == "model.weights.h5" else None)
    return saved.getvalue()[:cut]


KERAS = {  # case: (file bytes, expected error code)
    "keras-without-weights": (keras_archive(members=("metadata.json", "config.json")), "no_weights"),
    "keras-truncated": (keras_archive(cut=150), "invalid_zip"),
    "keras-weights-deflated": (keras_archive(compression=zipfile.ZIP_DEFLATED), "compressed_entry"),
    "keras-weights-not-hdf5": (keras_archive(weights=b"not an HDF5 file" * 4), "invalid_hdf5"),
}


def write_folders(dest):
    """Cases that are folders; returns {case: expected code}."""
    expected = {}

    def folder(name, code, files=None):
        path = dest / name
        path.mkdir()
        for file, content in (files or {}).items():
            (path / file).write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode())
        expected[name] = code
        return path

    good = safetensors(f32(), bytes(16))
    folder("folder-empty", "no_weights")
    folder("folder-config-only", "no_weights", {"config.json": {"torch_dtype": "bfloat16"}})
    folder("folder-readme-and-text", "no_weights", {"README.md": b"# model\n", "notes.txt": b"weights elsewhere\n"})
    index = "model.safetensors.index.json"
    folder("index-escapes-the-folder", "path_escape",
           {index: {"weight_map": {"w": "../../etc/passwd"}}, "model-00001.safetensors": good})
    folder("index-absolute-path", "path_escape", {index: {"weight_map": {"w": "/etc/passwd"}}})
    folder("index-missing-shard", "missing_shard", {index: {"weight_map": {"w": "model-00002.safetensors"}},
                                                    "model-00001.safetensors": good})
    folder("index-not-json", "invalid_index", {index: b"{weight_map: ", "model-00001.safetensors": good})
    folder("index-without-weight-map", "invalid_index", {index: {"metadata": {}}, "model-00001.safetensors": good})
    folder("index-tensor-not-in-shard", "missing_tensor",
           {index: {"weight_map": {"w": "model-00001.safetensors", "v": "model-00001.safetensors"}},
            "model-00001.safetensors": good})
    loop = folder("symlink-loop", "io_error")
    os.symlink("other.safetensors", loop / "model.safetensors")
    os.symlink("model.safetensors", loop / "other.safetensors")
    dangling = folder("symlink-dangling", "no_weights")
    os.symlink("gone.safetensors", dangling / "model.safetensors")
    fifo = folder("fifo-weights", "no_weights")  # a folder's weights are its regular files
    os.mkfifo(fifo / "model.safetensors")
    folder("index-larger-than-64-mib", "io_error",
           {index: b'{"weight_map": {}}' + b" " * (64 << 20), "model-00001.safetensors": good})
    fp8 = {"w.weight": {"dtype": "F8_E4M3", "shape": [200, 300], "data_offsets": [0, 60000]},
           "w.weight_scale_inv": {"dtype": "F32", "shape": [3, 3], "data_offsets": [60000, 60036]}}
    folder("fp8-scale-fits-no-block", "size_mismatch",
           {"config.json": {"quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}},
            "model.safetensors": safetensors(fp8, bytes(60036))})
    fp8["w.weight_scale_inv"] = {"dtype": "F32", "shape": [7], "data_offsets": [60000, 60028]}
    folder("fp8-scale-per-channel-too-few", "size_mismatch", {"model.safetensors": safetensors(fp8, bytes(60028))})
    mlx = {"w.weight": {"dtype": "U32", "shape": [4, 8], "data_offsets": [0, 128]},
           "w.scales": {"dtype": "F16", "shape": [4, 3], "data_offsets": [128, 152]},
           "w.biases": {"dtype": "F16", "shape": [4, 3], "data_offsets": [152, 176]}}
    folder("mlx-scales-do-not-fit", "size_mismatch", {"config.json": {"quantization": {"group_size": 64, "bits": 4}},
                                                      "model.safetensors": safetensors(mlx, bytes(176))})
    # GPTQ's zero points packed for 48 outputs beside codes for 64 (4 bits, groups of 64 over 128 inputs).
    gptq = {"l.qweight": {"dtype": "I32", "shape": [16, 64], "data_offsets": [0, 4096]},
            "l.qzeros": {"dtype": "I32", "shape": [2, 6], "data_offsets": [4096, 4144]},
            "l.scales": {"dtype": "F16", "shape": [2, 64], "data_offsets": [4144, 4400]},
            "l.g_idx": {"dtype": "I32", "shape": [128], "data_offsets": [4400, 4912]}}
    gptq_config = {"quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 64}}
    folder("gptq-zeros-do-not-fit", "size_mismatch",
           {"config.json": gptq_config, "model.safetensors": safetensors(gptq, bytes(4912))})
    # A g_idx naming group 7 of 2.
    gptq.update({"l.qzeros": {"dtype": "I32", "shape": [2, 8], "data_offsets": [4096, 4160]},
                 "l.scales": {"dtype": "F16", "shape": [2, 64], "data_offsets": [4160, 4416]},
                 "l.g_idx": {"dtype": "I32", "shape": [128], "data_offsets": [4416, 4928]}})
    g_idx = bytes(4416) + (7).to_bytes(4, "little") + bytes(508)
    folder("gptq-group-index-out-of-range", "size_mismatch",
           {"config.json": gptq_config, "model.safetensors": safetensors(gptq, g_idx)})
    # GPTQ 8-bit codes of 32768 inputs in groups of one, act-order scattering them: a row's tables of every group
    # (32768 x 256 values) would take GBs for a file of about a MB.
    inputs = 32768
    scattered = {"l.qweight": {"dtype": "I32", "shape": [inputs // 4, 8], "data_offsets": [0, inputs * 8]},
                 "l.qzeros": {"dtype": "I32", "shape": [inputs, 2], "data_offsets": [inputs * 8, inputs * 16]},
                 "l.scales": {"dtype": "F16", "shape": [inputs, 8], "data_offsets": [inputs * 16, inputs * 32]},
                 "l.g_idx": {"dtype": "I32", "shape": [inputs], "data_offsets": [inputs * 32, inputs * 36]}}
    g_idx = b"".join(((i * 7919) % inputs).to_bytes(4, "little") for i in range(inputs))
    folder("gptq-groups-too-scattered", "size_mismatch",
           {"config.json": {"quantization_config": {"quant_method": "gptq", "bits": 8, "group_size": 1,
                                                    "desc_act": True}},
            "model.safetensors": safetensors(scattered, bytes(inputs * 32) + g_idx)})
    # bitsandbytes' 4-bit weight of 16 values in blocks of 64 (one block) beside three absmax values.
    state = json.dumps({"quant_type": "nf4", "blocksize": 64, "dtype": "bfloat16", "shape": [4, 4]}).encode()
    bnb = {"l.weight": {"dtype": "U8", "shape": [8, 1], "data_offsets": [0, 8]},
           "l.weight.absmax": {"dtype": "F32", "shape": [3], "data_offsets": [8, 20]},
           "l.weight.quant_map": {"dtype": "F32", "shape": [16], "data_offsets": [20, 84]},
           "l.weight.quant_state.bitsandbytes__nf4": {"dtype": "U8", "shape": [len(state)],
                                                       "data_offsets": [84, 84 + len(state)]}}
    folder("bnb-absmax-does-not-fit", "size_mismatch", {"model.safetensors": safetensors(bnb, bytes(84) + state)})
    # optimum-quanto: 4-bit codes of 5 rows packed into 3 byte rows beside scales and shifts for 7 rows (which would
    # pack into 4 at 4 bits, 2 at 2); int8 codes of 4 rows beside 3 scales.
    quanto = {"l.weight._data._data": {"dtype": "U8", "shape": [3, 128], "data_offsets": [0, 384]},
              "l.weight._scale": {"dtype": "F16", "shape": [7, 1], "data_offsets": [384, 398]},
              "l.weight._shift": {"dtype": "F16", "shape": [7, 1], "data_offsets": [398, 412]}}
    folder("quanto-scales-fit-no-packing", "size_mismatch", {"model.safetensors": safetensors(quanto, bytes(412))})
    quanto = {"l.weight._data": {"dtype": "I8", "shape": [4, 8], "data_offsets": [0, 32]},
              "l.weight._scale": {"dtype": "BF16", "shape": [3, 1], "data_offsets": [32, 38]}}
    folder("quanto-int8-scales-per-row-too-few", "size_mismatch",
           {"model.safetensors": safetensors(quanto, bytes(38)),
            "quantization_map.json": {"l": {"weights": "qint8", "activations": "none"}}})
    # Issue 59's schemes. compressed-tensors' nvfp4: 16 bytes of codes per row (32 values) beside e4m3 scales for
    # 3 groups (32 values fit 2 of 16, and 3 fit no whole bytes).
    ct_config = {"quantization_config": {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized"}}
    packed = {"l.weight_packed": {"dtype": "U8", "shape": [2, 16], "data_offsets": [0, 32]},
              "l.weight_scale": {"dtype": "F8_E4M3", "shape": [2, 3], "data_offsets": [32, 38]},
              "l.weight_global_scale": {"dtype": "F32", "shape": [1], "data_offsets": [38, 42]}}
    folder("nvfp4-scales-fit-no-groups", "size_mismatch",
           {"config.json": ct_config, "model.safetensors": safetensors(packed, bytes(42))})
    # int-quantized: int8 codes of 4 rows beside scales for 3.
    ct_config = {"quantization_config": {"quant_method": "compressed-tensors", "format": "int-quantized"}}
    int8 = {"l.weight": {"dtype": "I8", "shape": [4, 8], "data_offsets": [0, 32]},
            "l.weight_scale": {"dtype": "F32", "shape": [3, 1], "data_offsets": [32, 44]}}
    folder("int-quantized-scales-per-row-too-few", "size_mismatch",
           {"config.json": ct_config, "model.safetensors": safetensors(int8, bytes(44))})
    # gpt-oss's MXFP4: blocks of 16 bytes for 2 groups per row beside scales for 3.
    mxfp4 = {"e.gate_up_proj_blocks": {"dtype": "U8", "shape": [4, 2, 16], "data_offsets": [0, 128]},
             "e.gate_up_proj_scales": {"dtype": "U8", "shape": [4, 3], "data_offsets": [128, 140]}}
    folder("mxfp4-scales-fit-no-blocks", "size_mismatch",
           {"config.json": {"quantization_config": {"quant_method": "mxfp4"}},
            "model.safetensors": safetensors(mxfp4, bytes(140))})
    # MLX's mxfp4: 64 codes a row (8 words) beside scales for 3 groups of 32.
    mlx = {"w.weight": {"dtype": "U32", "shape": [4, 8], "data_offsets": [0, 128]},
           "w.scales": {"dtype": "U8", "shape": [4, 3], "data_offsets": [128, 140]}}
    folder("mlx-mxfp4-scales-do-not-fit", "size_mismatch",
           {"config.json": {"quantization": {"group_size": 32, "bits": 4, "mode": "mxfp4"}},
            "model.safetensors": safetensors(mlx, bytes(140))})
    external = {"location": "model.onnx_data", "offset": "0", "length": "16"}
    for name, code, changes in (("onnx-external-escapes-the-folder", "path_escape", {"location": "../../etc/passwd"}),
                                ("onnx-external-absolute-path", "path_escape", {"location": "/etc/passwd"}),
                                ("onnx-external-past-its-file", "invalid_onnx", {"offset": "8"}),
                                ("onnx-external-file-missing", "not_found", {"location": "gone.onnx_data"})):
        folder(name, code, {"model.onnx": onnx_model(onnx_tensor(external={**external, **changes})),
                            "model.onnx_data": bytes(16)})
    os.mkfifo(dest / "fifo-given-directly.safetensors")
    expected["fifo-given-directly.safetensors"] = "io_error"
    return expected


def dcp_folder(path, damage):
    """A torch.distributed.checkpoint folder as dcp.save writes it in one process with two writer threads (`w` and
    `step` in __0_0.distcp, `b` in __0_1.distcp), then `damage(path, metadata, ...)` (metadata: the unpickled
    Metadata, written back as .metadata when damage returns it)."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.metadata import ChunkStorageMetadata, MetadataIndex
    with warnings.catch_warnings():  # "assuming the intent is to save in a single process"
        warnings.simplefilter("ignore")
        dcp.save({"w": torch.ones(4, 4), "b": torch.zeros(4), "step": 3},
                 storage_writer=dcp.FileSystemWriter(path, thread_count=2))
    with open(path / ".metadata", "rb") as file:
        metadata = pickle.load(file)
    if damage(path, metadata, ChunkStorageMetadata, MetadataIndex) is not None:
        with open(path / ".metadata", "wb") as file:
            pickle.dump(metadata, file)


def dcp_overlap(path, metadata, chunk_type, index_type):
    """A second chunk of `w` over its last three rows, stored where the first is."""
    metadata.state_dict_metadata["w"].chunks.append(chunk_type(torch.Size([1, 0]), torch.Size([3, 4])))
    metadata.storage_data[index_type("w", [1, 0])] = metadata.storage_data[index_type("w", [0, 0])]
    return metadata


def dcp_gap(path, metadata, chunk_type, index_type):
    metadata.state_dict_metadata["w"].size = torch.Size([8, 4])  # the one chunk covers half
    return metadata


def dcp_rank_folder(path, damage):
    """A DCP folder as dcp.save(..., use_collectives=False) writes it in one process (`__0.metadata` and
    `__0_0.distcp`: `w`, `b`, `step`), then `damage(path, metadata, ...)` (metadata: rank 0's, unpickled), which
    writes another rank's metadata."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.metadata import ChunkStorageMetadata, MetadataIndex
    with warnings.catch_warnings():  # "assuming the intent is to save in a single process"
        warnings.simplefilter("ignore")
        dcp.save({"w": torch.ones(4, 4), "b": torch.zeros(4), "step": 3}, checkpoint_id=path, use_collectives=False)
    with open(path / "__0.metadata", "rb") as file:
        damage(path, pickle.load(file), ChunkStorageMetadata, MetadataIndex)


def dcp_rank_writes(path, name, metadata):
    with open(path / name, "wb") as file:
        pickle.dump(metadata, file)


def dcp_ranks_overlap(path, metadata, chunk_type, index_type):
    """Rank 1 claims the last two rows of `w`, which rank 0 wrote whole: an overlap, not a replica."""
    metadata.state_dict_metadata["w"].chunks = [chunk_type(torch.Size([2, 0]), torch.Size([2, 4]))]
    metadata.storage_data[index_type("w", [2, 0])] = metadata.storage_data.pop(index_type("w", [0, 0]))
    dcp_rank_writes(path, "__1.metadata", metadata)


def dcp_ranks_disagree_on_a_shape(path, metadata, chunk_type, index_type):
    metadata.state_dict_metadata["b"].size = torch.Size([8])
    dcp_rank_writes(path, "__1.metadata", metadata)


DCP_RANKS = {  # case: (damage, expected error code)
    "dcp-ranks-chunks-overlap": (dcp_ranks_overlap, "invalid_dcp"),
    "dcp-ranks-disagree-on-a-shape": (dcp_ranks_disagree_on_a_shape, "invalid_dcp"),
    "dcp-rank-metadata-missing": (lambda path, metadata, *_: dcp_rank_writes(path, "__2.metadata", metadata),
                                  "missing_shard"),
}

# A zstd frame of 1 MiB of zeros, without its content size (as a stream writes it): 47 bytes.
ZSTD_MEBIBYTE = bytes.fromhex("28b52ffd00505400001000000100fbff39c00202001000020010000200100002"
                              "001000020010000200100003001000")


def dcp_zstd_bomb(path, metadata, chunk_type, index_type):
    """`b` (4 float32s) stored as a zstd frame, as DCP's zstd extension writes entries, that inflates to 1 MiB."""
    info = metadata.storage_data[index_type("b", [0])]
    with open(path / info.relative_path, "ab") as file:
        info.offset, info.length = file.tell(), len(ZSTD_MEBIBYTE)
        file.write(ZSTD_MEBIBYTE)
    info.transform_descriptors = ["stream.zstd/1"]
    return metadata


def dcp_unknown_transform(path, metadata, chunk_type, index_type):
    metadata.storage_data[index_type("b", [0])].transform_descriptors = ["stream.brotli/1"]
    return metadata


def dcp_hf_ranks(path, *offsets):
    """DCP's HuggingFaceStorageWriter(save_distributed=True) files, one per rank: `w`'s 2x4 slice at each offset."""
    from safetensors.torch import save_file
    path.mkdir()
    for rank, offset in enumerate(offsets, start=1):
        info = {"w": {"saved_offsets": offset}} if offset is not None else {}
        save_file({"w": torch.ones(2, 4)}, path / f"shard-{rank:05d}-model-00001-of-00001.safetensors",
                  metadata={"DCP_SHARDING_INFO": json.dumps(info)})


DCP_HF = {  # case: (saved_offsets per rank, expected error code)
    "dcp-hf-rank-slices-overlap": (([0, 0], [1, 0]), "invalid_dcp"),
    "dcp-hf-rank-file-missing": (([2, 0],), "invalid_dcp"),
    "dcp-hf-slice-without-saved-offsets": (([0, 0], None), "invalid_dcp"),
}

DCP = {  # case: (damage, expected error code)
    "dcp-chunk-past-its-file": (lambda path, *_: (path / "__0_0.distcp").write_bytes(
        (path / "__0_0.distcp").read_bytes()[:2000]) and None, "offset_past_end"),
    "dcp-missing-distcp": (lambda path, *_: (path / "__0_1.distcp").unlink(), "missing_shard"),
    "dcp-metadata-truncated": (lambda path, *_: (path / ".metadata").write_bytes(
        (path / ".metadata").read_bytes()[:300]) and None, "invalid_pickle"),
    "dcp-chunks-overlap": (dcp_overlap, "invalid_dcp"),
    "dcp-chunks-leave-a-gap": (dcp_gap, "invalid_dcp"),
    "dcp-distcp-without-metadata": (lambda path, *_: (path / ".metadata").unlink(), "invalid_dcp"),
    "dcp-zstd-frame-inflates-past-its-chunk": (dcp_zstd_bomb, "compressed_entry"),
    "dcp-unknown-stream-transform": (dcp_unknown_transform, "compressed_entry"),
}


def build(dest):
    """Writes every case under `dest` (created); returns {case: expected error code}, also in expected.json."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    expected = {}
    for cases, suffix in ((SAFETENSORS, ".safetensors"), (ZIP_AND_PICKLE, ".pt"), (LEGACY, ".bin"), (TAR, ".tar.pt"),
                           (ONNX, ".onnx"), (KERAS, ".keras")):
        for name, (content, code) in cases.items():
            (dest / (name + suffix)).write_bytes(content)
            expected[name + suffix] = code
    expected.update(write_folders(dest))
    for name, (damage, code) in DCP.items():
        dcp_folder(dest / name, damage)
        expected[name] = code
    for name, (damage, code) in DCP_RANKS.items():
        dcp_rank_folder(dest / name, damage)
        expected[name] = code
    for name, (offsets, code) in DCP_HF.items():
        dcp_hf_ranks(dest / name, *offsets)
        expected[name] = code
    (dest / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    return expected


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    print(f"{len(build(sys.argv[1]))} cases in {sys.argv[1]}")
