"""precdetect: was this checkpoint pretrained in fp16, bf16 or fp32, and will it overflow in fp16?

    >>> import precdetect
    >>> [result] = precdetect.scan("t5-base")   # a folder, a file, or a hub id in the local cache
    >>> result.label, result.candidates, result.fp16_risk

The scanner is C++: the program in precdetect/bin that the `precdetect` command runs, and the C interface beside
it that this package calls through ctypes (precdetect._binding). Nothing here imports torch, and nothing links it
but the CUDA plugin, which the scanner loads only for a GPU.
"""

from importlib.metadata import PackageNotFoundError, version

from precdetect.api import check, diff, scan
from precdetect.probe import probe
from precdetect.errors import Error
from precdetect.result import DiffResult, ScanResult

try:
    __version__ = version("precdetect")
except PackageNotFoundError:  # imported from a source tree
    __version__ = None

__all__ = ["scan", "diff", "check", "probe", "Error", "ScanResult", "DiffResult"]
