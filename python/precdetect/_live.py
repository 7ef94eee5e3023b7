"""A model's arrays as the C interface reads them (precdetect.check): each one's DLPack capsule (DLPack 1.0's
versioned one where the producer speaks it, the legacy one otherwise), what torch alone can tell (a meta tensor, a
freed storage, tied weights, an fp8 dtype DLPack has no code for), and how a GPU array reaches the host when the
CUDA plugin cannot run. Nothing here imports a framework: a torch tensor is recognised only if torch is imported."""

import ctypes
import sys

from precdetect._binding import LiveTensor

_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype, _capsule_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype, _capsule_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]

# torch's fp8 dtypes, which it will not export through DLPack: they go as uint8 views with their dtype named.
FP8 = {"float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2"}
READABLE = {"float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool", *FP8}


def _torch():
    return sys.modules.get("torch")


def _dlpack(value):
    """(capsule, the DLPack tensor's address, whether it is versioned). The capsule is borrowed, not consumed: it
    stays named "dltensor", and its own destructor frees the tensor once the check is done with it."""
    try:
        capsule = value.__dlpack__(max_version=(1, 0))
    except TypeError:  # a producer that predates DLPack 1.0's keyword
        capsule = value.__dlpack__()
    name = _capsule_name(capsule)
    return capsule, _capsule_pointer(capsule, name), int(name == b"dltensor_versioned")


def _torch_unreadable(torch, tensor):
    """Why torch says `tensor` cannot be read where it is, or None."""
    if tensor.layout != torch.strided:
        return f"layout {tensor.layout}"
    if tensor.device.type not in ("cpu", "cuda"):
        return f"on {tensor.device}"
    if tensor.is_quantized:
        return f"quantized {tensor.dtype}"
    if str(tensor.dtype).removeprefix("torch.") not in READABLE:
        return f"dtype {tensor.dtype}"
    try:
        storage = tensor.untyped_storage()
    except (RuntimeError, NotImplementedError, TypeError):
        return "no storage of its own (a tensor subclass: check its local tensors)"
    if tensor.numel():
        last = tensor.storage_offset() + sum((size - 1) * stride for size, stride in zip(tensor.shape, tensor.stride()))
        needed = (last + 1) * tensor.element_size()
        if storage.nbytes() < needed or storage.data_ptr() == 0:  # freed, as FSDP frees a sharded parameter's
            return f"storage freed or smaller than the tensor: {storage.nbytes()} of {needed} bytes"
    return None


class LiveArray:
    """One array of the model, held (with its capsule) until the check is done; `structure` is what C reads."""

    def __init__(self, name, value, role):
        self.value, dtype, storage_key, unreadable = value, None, 0, None
        torch = _torch()
        if torch is not None and isinstance(value, torch.Tensor):
            self.value = value.detach()
            unreadable = _torch_unreadable(torch, self.value)
            if unreadable is None:
                storage_key = self.value.untyped_storage().data_ptr()
                dtype = FP8.get(str(self.value.dtype).removeprefix("torch."))
                if dtype:
                    self.value = self.value.view(torch.uint8)
        self.capsule, address, versioned = None, None, 0
        if unreadable is None:
            try:
                self.capsule, address, versioned = _dlpack(self.value)
            except (BufferError, TypeError, RuntimeError, ValueError) as error:
                unreadable = f"no DLPack export: {error}"
        self.structure = LiveTensor(name.encode(), address, versioned, dtype.encode() if dtype else None,
                                    role.encode(), storage_key, unreadable.encode() if unreadable else None)


def copier(arrays):
    """copy_to_host for the C interface: array `index`'s bytes from `offset` on into host memory at `address`."""
    flats = {}

    def flat_bytes(index):
        if index not in flats:
            value, torch = arrays[index].value, _torch()
            if torch is not None and isinstance(value, torch.Tensor):
                flats[index] = value.reshape(-1).view(torch.uint8)
            else:
                import numpy

                flats[index] = numpy.ascontiguousarray(numpy.asarray(value)).reshape(-1).view(numpy.uint8)
        return flats[index]

    def copy(index, offset, address, length):
        try:
            part = flat_bytes(index)[offset:offset + length]
            torch = _torch()
            if torch is not None and isinstance(part, torch.Tensor):
                destination = (ctypes.c_char * length).from_address(address)
                torch.frombuffer(destination, dtype=torch.uint8).copy_(part)
            else:
                ctypes.memmove(address, part.ctypes.data, length)
            return 0
        except Exception:  # the C side names the failure as a device error of the model
            return 1

    return copy
