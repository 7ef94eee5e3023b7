"""precdetect.scan and precdetect.diff: the scanner in-process (the C++ library through precdetect._core), with
the command line's options as keyword arguments: `device="cuda"`, `include=r"layers\\.0\\."`, `jobs=2`,
`all_formats=True`, `fail_if_fp16_risk=True` (a gate fills each result's "gate_failures")."""

import json

from precdetect.result import DiffResult, ScanResult

# The options each function takes: the command line's, less those that choose what is printed or written.
SCAN_OPTIONS = {"device", "include", "exclude", "rules", "registry", "cache", "no_cache", "jobs", "recursive",
                "all_formats", "hf_cache", "all_revisions", "shard", "io", "expect", "fail_on", "fail_if_fp16_risk",
                "max_abs", "max_norm", "fail_if_unsafe", "strict_safety"}
DIFF_OPTIONS = {"device", "include", "exclude", "rtol", "atol", "eta", "bitwise", "io"}


def _extension():
    """precdetect._core, after torch: libtorch loaded from the torch package itself, which _core then shares."""
    import torch  # noqa: F401

    from precdetect import _core

    return _core


def _arguments(options: dict, allowed: set, function: str) -> list:
    """Keyword arguments as command-line flags: name -> --name; True -> the flag alone; False, None -> absent."""
    arguments = []
    for name, value in options.items():
        if name not in allowed:
            raise TypeError(f"{function}() got an unexpected keyword argument '{name}' (its options: "
                            f"{', '.join(sorted(allowed))})")
        flag = "--" + name.replace("_", "-")
        if value is True:
            arguments.append(flag)
        elif value is not None and value is not False:
            arguments += [flag, str(value)]
    return arguments


def scan(*inputs, **options) -> list:
    """Scans model folders, checkpoint files, index files or cached hub ids; one ScanResult per model, in order.
    A model that cannot be read is a result with `error`; a run that cannot be made raises precdetect.Error."""
    document = json.loads(_extension().scan([*_arguments(options, SCAN_OPTIONS, "scan"), "--", *map(str, inputs)]))
    return [ScanResult(model, document) for model in document["models"]]


def diff(base, *others, **options) -> list:
    """Compares BASE with each OTHER checkpoint, tensor by tensor; one DiffResult per pair, in order."""
    arguments = [*_arguments(options, DIFF_OPTIONS, "diff"), "--", str(base), *map(str, others)]
    return [DiffResult(pair) for pair in json.loads(_extension().diff(arguments))["pairs"]]
