"""The `precdetect` command: replaces this process with the program (same arguments, same exit status, same
standard streams), telling it where this Python's torch is.

The program links no libtorch. Only for a GPU does it load its CUDA plugin, with the libtorch of the torch package
named by PRECDETECT_LIBTORCH, which this launcher sets to the torch this Python would import (found without
importing it) unless the caller set it already. Without torch, or with a release the plugin does not fit, the CPU
path runs as ever; `--device cuda` then says why in one line (docs/errors.md).
"""

import importlib.util
import os
import sys
from pathlib import Path

PROGRAM = Path(__file__).resolve().parent / "bin" / "precdetect"


def torch_folder():
    """The folder of the torch package this Python would import, or None."""
    spec = importlib.util.find_spec("torch")
    locations = spec.submodule_search_locations if spec else None
    return locations[0] if locations else None


def main() -> None:
    environment = dict(os.environ)
    folder = torch_folder()
    if folder and not environment.get("PRECDETECT_LIBTORCH"):
        environment["PRECDETECT_LIBTORCH"] = folder
    sys.stdout.flush()
    os.execve(PROGRAM, ["precdetect", *sys.argv[1:]], environment)
