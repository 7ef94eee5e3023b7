"""The `precdetect` command: checks that the installed torch is the one the program was built against, then
replaces this process with the program (same arguments, same exit status, same standard streams).

The program finds libtorch through its RPATH (`$ORIGIN/../../torch/lib`, torch beside this package, as torch's own
torch/bin programs do). Where torch lives elsewhere (a venv with --system-site-packages, pip --target), the
library folder of the torch that Python sees is put on LD_LIBRARY_PATH as well.
"""

import importlib.metadata
import os
import re
import sys
from pathlib import Path

from precdetect._torch_build import TORCH_VERSION  # written by the build: the torch this program was linked with

PROGRAM = Path(__file__).resolve().parent / "bin" / "precdetect"
# What ends the launcher before the program runs; the program's own code for "could not run" (docs/errors.md).
EXIT_ENVIRONMENT = 3


def _series(version: str) -> str:
    """'2.11.0+cu130' -> '2.11': libtorch's C++ ABI holds within a minor release."""
    match = re.match(r"(\d+)\.(\d+)", version)
    return f"{match[1]}.{match[2]}" if match else version


def _fail(message: str) -> None:
    print(f"precdetect: {message}", file=sys.stderr)
    sys.exit(EXIT_ENVIRONMENT)


def torch_library_folder() -> Path:
    """The lib/ folder of the installed torch, after checking that its version is the one we were built against."""
    wanted = _series(TORCH_VERSION)
    fix = f"pip install 'torch=={wanted}.*', or rebuild precdetect against your torch (pip install --no-build-isolation)"
    try:
        torch = importlib.metadata.distribution("torch")
    except importlib.metadata.PackageNotFoundError:
        _fail(f"built against torch {TORCH_VERSION}, runs with torch {wanted}.*; this environment has no torch: {fix}")
    if _series(torch.version) != wanted:
        _fail(f"built against torch {TORCH_VERSION}, runs with torch {wanted}.*; this environment has torch "
              f"{torch.version}: {fix}")
    return Path(torch.locate_file("torch")) / "lib"


def main() -> None:
    torch_lib = torch_library_folder()
    environment = dict(os.environ)
    environment["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(torch_lib), os.environ.get("LD_LIBRARY_PATH")]))
    sys.stdout.flush()
    os.execve(PROGRAM, ["precdetect", *sys.argv[1:]], environment)
