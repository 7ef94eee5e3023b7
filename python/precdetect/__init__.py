"""precdetect: was this checkpoint pretrained in fp16, bf16 or fp32, and will it overflow in fp16?

The scanner is a C++ program inside this package (precdetect/bin), linked against the libtorch of the installed
torch package; the `precdetect` command and `python -m precdetect` run it (precdetect._launcher).
"""

from importlib.metadata import version as _version

__version__ = _version("precdetect")
