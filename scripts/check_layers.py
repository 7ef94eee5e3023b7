#!/usr/bin/env python3
"""The layers of precdetect, and the check that every `#include "precdetect/..."` in src/, include/ and tests/
keeps to them (ctest's `layers`; docs/architecture.md, "Layers").

A layer is a folder of src/ (and its mirror under include/precdetect/). Each names the layers its files may
include besides its own, as a crate's Cargo.toml names its dependencies (ruff's crates/*/Cargo.toml): what a layer
does not name it may not include, even where a layer it names does (report reads the report's data, never a
quantization scheme's). The table must be acyclic; --order prints the order it gives. An include the table does
not allow fails, unless EXCEPTIONS names it, with its reason and who removes it; an exception that no longer
matches an include fails too, so that the list only shrinks. Every header included must exist.

Usage: scripts/check_layers.py [--order]
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# layer: the layers it may include (besides its own). Below them all, core: the vocabulary and the checked bytes.
LAYERS = {
    "core": [],
    "net": ["core"],  # HTTP over libcurl, URLs, remote conventions, texts by URL, streamed hashing
    "kernel": ["core"],  # the statistics kernels: load, quantize, analyze, diff and cuda compute through them
    "discover": ["core", "net"],
    "load": ["core", "net", "kernel", "discover"],
    "quantize": ["core", "net", "kernel", "discover", "load"],  # open_model reads config.json beside the weights
    "analyze": ["core", "kernel", "load", "quantize"],
    "safety": ["core", "net", "discover", "load"],
    "classify": ["core", "kernel", "load", "analyze"],  # judges evidence: no I/O
    "diff": ["core", "kernel", "load", "analyze"],
    "report": ["core", "net", "kernel", "discover", "load", "analyze", "safety", "classify", "diff"],
    "app": ["core", "net", "kernel", "discover", "load", "quantize", "analyze", "safety", "classify", "diff",
            "report"],
    "cuda": ["core", "kernel", "load", "analyze"],  # the plugin: implements analyze/device_backend.h
    # Files at the top of src/ (and include/precdetect/c_api.h).
    "c_api": ["core", "analyze", "report", "app"],  # the Python package's C interface
    "main": ["core", "app"],
    "hdf5_helper": ["core", "net", "load"],  # precdetect-hdf5, the one program that links libhdf5
    # Tests: the fuzz targets and the pickle machine's harness link precdetect_formats alone.
    "fuzz": ["core", "net", "kernel", "discover", "load", "quantize", "safety"],
    "tests": ["core", "net", "kernel", "discover", "load", "quantize", "analyze", "safety", "classify", "diff",
              "report", "app", "cuda"],
}

# (file, header included): why it is allowed for now, and who removes it (issue 67's later steps).
EXCEPTIONS = {
    ("src/classify/model_identity.cpp", "net/url.h"):
        "config.json parsed a third time here; parsed once per model (scan)",
    ("src/classify/model_identity.cpp", "discover/hf_cache.h"):
        "the identity reads an HF cache path itself; discovery hands it on (scan)",
}

TOP_LEVEL = {"src/main.cpp": "main", "src/c_api.cpp": "c_api", "include/precdetect/c_api.h": "c_api",
             "src/hdf5_helper.cpp": "hdf5_helper"}
TEST_FOLDERS = {"unit": "tests", "bench": "tests", "fuzz": "fuzz", "differential": "fuzz"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"precdetect/([^"]+)"')


def layer_of_file(path: str):
    """The layer a file of ours is in; None for a file outside every layer (the check then fails)."""
    if path in TOP_LEVEL:
        return TOP_LEVEL[path]
    parts = path.split("/")
    if parts[0] == "src" and len(parts) > 2:
        return parts[1]
    if parts[:2] == ["include", "precdetect"] and len(parts) > 3:
        return parts[2]
    if parts[0] == "tests" and len(parts) > 2:
        return TEST_FOLDERS.get(parts[1])
    return None


def layer_of_header(header: str):
    if "/" not in header:
        return TOP_LEVEL.get(f"include/precdetect/{header}")
    return header.split("/")[0]


def levels(layers):
    """The layers from the bottom up, in levels: each level's layers include only layers of the levels before it.
    Raises ValueError on a cycle."""
    placed, result = set(), []
    while len(placed) < len(layers):
        ready = [name for name, below in layers.items() if name not in placed and set(below) <= placed]
        if not ready:
            raise ValueError("the layers include each other: " + ", ".join(sorted(set(layers) - placed)))
        placed.update(ready)
        result.append(ready)
    return result


def sources():
    for folder in ("src", "include", "tests"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in (".h", ".cpp") and path.is_file():
                yield path.relative_to(ROOT).as_posix()


def problems():
    unknown = {below for belows in LAYERS.values() for below in belows} - set(LAYERS)
    if unknown:
        yield f"scripts/check_layers.py: LAYERS names layers it does not define: {', '.join(sorted(unknown))}"
    try:
        levels(LAYERS)
    except ValueError as error:
        yield f"scripts/check_layers.py: {error}"
    used = set()
    for path in sources():
        layer = layer_of_file(path)
        if layer not in LAYERS:
            yield f"{path}: in no layer: give its folder a row in scripts/check_layers.py's LAYERS"
            continue
        for number, line in enumerate((ROOT / path).read_text(errors="replace").splitlines(), 1):
            match = INCLUDE.match(line)
            if not match:
                continue
            header = match.group(1)
            if not (ROOT / "include/precdetect" / header).is_file():
                yield f"{path}:{number}: includes precdetect/{header}, which does not exist"
                continue
            target = layer_of_header(header)
            if target == layer or target in LAYERS[layer]:
                continue
            if (path, header) in EXCEPTIONS:
                used.add((path, header))
                continue
            allowed = ", ".join(LAYERS[layer]) or "nothing but itself"
            yield (f"{path}:{number}: includes precdetect/{header}: {layer} may include {allowed} "
                   f"(scripts/check_layers.py, docs/architecture.md)")
    for path, header in sorted(set(EXCEPTIONS) - used):
        yield (f"scripts/check_layers.py: the exception for {path} including precdetect/{header} matches no "
               "include any more: remove it")


def main(argv):
    if argv[1:] == ["--order"]:
        print(" < ".join(level[0] if len(level) == 1 else "{" + ", ".join(level) + "}" for level in levels(LAYERS)))
        return 0
    if argv[1:]:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    found = list(problems())
    for problem in found:
        print(problem, file=sys.stderr)
    if found:
        return 1
    print(f"layers: {len(LAYERS)} layers, {len(EXCEPTIONS)} named exceptions, every include in order")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
