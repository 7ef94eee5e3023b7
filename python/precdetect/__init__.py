"""precdetect: was this checkpoint pretrained in fp16, bf16 or fp32, and will it overflow in fp16?

    >>> import precdetect
    >>> [result] = precdetect.scan("t5-base")   # a folder, a file, or a hub id in the local cache
    >>> result.label, result.candidates, result.fp16_risk

The scanner is C++ (precdetect._core, and the program in precdetect/bin that the `precdetect` command runs),
linked against the libtorch of the installed torch package. Nothing here imports torch until a scan is made.
"""

from importlib.metadata import PackageNotFoundError, version

from precdetect.api import check, diff, scan
from precdetect.errors import Error
from precdetect.result import DiffResult, ScanResult

try:
    __version__ = version("precdetect")
except PackageNotFoundError:  # imported from a source tree
    __version__ = None

__all__ = ["scan", "diff", "check", "Error", "ScanResult", "DiffResult"]
