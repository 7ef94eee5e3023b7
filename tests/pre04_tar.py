"""The tar layout torch.save wrote before 0.4, byte for byte, as torch's legacy_load reads it (torch itself no
longer writes it): shared by the end-to-end tests, the malformed corpus and the fuzz seeds."""

import io
import pickle
import struct
import tarfile

import torch


class TensorKey:
    """A tensor of the object graph, pickled as its key in the tensors member (a persistent id)."""

    def __init__(self, key):
        self.key = key


class KeyPickler(pickle.Pickler):
    def persistent_id(self, obj):
        return obj.key if isinstance(obj, TensorKey) else None


STORAGE_TYPES = {torch.float32: torch.FloatStorage, torch.float64: torch.DoubleStorage, torch.int64: torch.LongStorage}


def members(tensors):
    """The three members: storages (count; per storage (key, location, type), int64 count, bytes; then the storage
    views), tensors (count; per tensor (key, storage key, type), int32 rank, 4 pad bytes, sizes, strides, offset)
    and pickle (the object graph). Returns {name: bytes}."""
    storages, table, objects = io.BytesIO(), io.BytesIO(), {}
    pickle.dump(len(tensors), storages, protocol=2)
    pickle.dump(len(tensors), table, protocol=2)
    for i, (name, tensor) in enumerate(tensors.items()):
        key = str(i)
        pickle.dump((key, "cpu", STORAGE_TYPES[tensor.dtype]), storages, protocol=2)
        storages.write(struct.pack("<q", tensor.numel()) + tensor.contiguous().numpy().tobytes())
        pickle.dump((100 + i, key, None), table, protocol=2)  # tensor keys: ints, apart from the storage keys
        table.write(struct.pack("<ii", tensor.dim(), 0))
        table.write(struct.pack(f"<{tensor.dim()}q", *tensor.shape) + struct.pack(f"<{tensor.dim()}q", *tensor.stride()))
        table.write(struct.pack("<q", 0))
        objects[name] = TensorKey(100 + i)
    pickle.dump([], storages, protocol=2)
    graph = io.BytesIO()
    KeyPickler(graph, protocol=2).dump(objects)
    return {"storages": storages.getvalue(), "tensors": table.getvalue(), "pickle": graph.getvalue()}


def archive(parts):
    """A ustar archive of {member name: bytes}, in order."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for member, data in parts.items():
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def pre04_tar(tensors):
    return archive(members(tensors))
