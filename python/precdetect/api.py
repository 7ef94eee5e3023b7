"""precdetect.scan, precdetect.diff and precdetect.check: the scanner in-process (the C++ library through its C
interface, precdetect._binding), with the command line's options as keyword arguments: `device="cuda"`, `include=r"layers\\.0\\."`,
`jobs=2`, `all_formats=True`, `fail_if_fp16_risk=True` (a gate fills each result's "gate_failures")."""

import json
import sys
from collections.abc import Mapping

from precdetect import _binding, _live
from precdetect.result import DiffResult, ScanResult

# The options each function takes: the command line's, less those that choose what is printed or written.
SCAN_OPTIONS = {"device", "include", "exclude", "rules", "registry", "cache", "no_cache", "jobs", "recursive",
                "all_formats", "hf_cache", "all_revisions", "shard", "io", "expect", "fail_on", "fail_if_fp16_risk",
                "max_abs", "max_norm", "fail_if_nonfinite", "fail_if_unsafe", "strict_safety", "verify",
                "verify_manifest", "gpu"}
DIFF_OPTIONS = {"device", "include", "exclude", "rtol", "atol", "eta", "bitwise", "io"}
# check() reads tensors where they are: no device, files, cache or reading options.
CHECK_OPTIONS = {"include", "exclude", "rules", "registry", "expect", "fail_on", "fail_if_fp16_risk", "max_abs",
                 "max_norm", "fail_if_nonfinite", "gpu"}


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
    document = _binding.scan([*_arguments(options, SCAN_OPTIONS, "scan"), "--", *map(str, inputs)])
    return [ScanResult(model, document) for model in document["models"]]


def diff(base, *others, **options) -> list:
    """Compares BASE with each OTHER checkpoint, tensor by tensor; one DiffResult per pair, in order."""
    arguments = [*_arguments(options, DIFF_OPTIONS, "diff"), "--", str(base), *map(str, others)]
    return [DiffResult(pair) for pair in _binding.diff(arguments)["pairs"]]


def check(model, *, activations=(), **options) -> ScanResult:
    """Checks a model in memory: a torch nn.Module (its parameters and buffers, as the module tells them apart) or a
    mapping of names to arrays (a state dict; NumPy, JAX or any array with `__dlpack__`; nested mappings such as a
    Flax `params` tree give dotted names), placed by the rules' buffer names as a file's are. Arrays are read where they live through DLPack, with no copy of a contiguous one:
    on the host by precdetect's kernel, on their GPU by the CUDA plugin (or, where it cannot run with this torch,
    copied to the host in chunks, which the result's warnings say). An HF model's config (its `_name_or_path`,
    architecture and sizes) identifies it to the registry of documented precisions. Returns one ScanResult, which
    holds no reference to the model's arrays. `activations` is what precdetect.probe measured (its callers pass it)."""
    torch = sys.modules.get("torch")  # a torch model means torch is imported already: never import it here
    if torch is not None and isinstance(model, torch.nn.Module):
        entries = [(name, tensor, "model") for name, tensor in model.named_parameters()]
        entries += [(name, tensor, "buffer") for name, tensor in model.named_buffers()]
        not_tensors, kind = [], "module"
    elif isinstance(model, Mapping):
        flat = _flattened(model)
        entries = [(name, value, "") for name, value in flat if _is_array(value)]
        not_tensors = [f"{name} (not a tensor: {type(value).__name__})" for name, value in flat if not _is_array(value)]
        kind = "state_dict"
    else:
        raise TypeError(f"check() takes an nn.Module or a state dict, not {type(model).__name__}")
    name, config = _identity(model)
    live = [_live.LiveArray(entry_name, value, role) for entry_name, value, role in entries]
    document = _binding.check(_arguments(options, CHECK_OPTIONS, "check"), name, kind,
                              [array.structure for array in live], not_tensors, config, _live.copier(live),
                              json.dumps(list(activations)))
    return ScanResult(document["models"][0], document)


def _is_array(value) -> bool:
    return hasattr(value, "__dlpack__")


def _flattened(mapping: Mapping, prefix: str = "") -> list:
    """(name, value) of a mapping, nested mappings (a Flax `params` tree) joined into dotted names."""
    flat = []
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        flat += _flattened(value, name + ".") if isinstance(value, Mapping) else [(name, value)]
    return flat


def _identity(model) -> tuple:
    """How reports name the model, and its config as JSON text ("null" without one): an HF model's config.to_dict()
    with the `_name_or_path` it was loaded from."""
    config = getattr(model, "config", None)
    name_or_path = getattr(config, "_name_or_path", None) or getattr(model, "name_or_path", None)
    try:
        fields = config.to_dict() if hasattr(config, "to_dict") else None
    except Exception:  # a config that cannot describe itself identifies nothing; the weights are still checked
        fields = None
    if isinstance(fields, dict) and name_or_path:
        fields["_name_or_path"] = str(name_or_path)
    name = str(name_or_path) if name_or_path else ("state dict" if isinstance(model, Mapping) else type(model).__name__)
    return name, json.dumps(fields if isinstance(fields, dict) else None, default=str)
