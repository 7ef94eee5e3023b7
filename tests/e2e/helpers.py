"""Shared helpers for the end-to-end tests: run the built binary, compute float64 references with torch."""

import functools
import json
import math
import os
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
BINARY = os.environ.get("PRECDETECT_BIN", str(REPO / "build" / "precdetect"))
CORPUS = REPO.parent / "shared" / "corpus"
ROOT = os.geteuid() == 0

# safetensors dtype names of the torch dtypes we write
DTYPE_NAMES = {
    torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.float8_e4m3fn: "F8_E4M3", torch.float8_e5m2: "F8_E5M2", torch.int64: "I64", torch.int32: "I32",
    torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL", torch.uint16: "U16",
    torch.uint32: "U32", torch.uint64: "U64",
}
FLOAT_DTYPES = {torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2}


def run(*args, env=None, check_json=False, stdin=b"", launcher=(), cwd=None, timeout=300):
    """Runs precdetect (through `launcher`, a command prefix, when given); returns the CompletedProcess with stdout
    decoded strictly as UTF-8 (it must be valid) and stderr leniently (it may quote a path that is not UTF-8). A run
    longer than `timeout` seconds fails the test (subprocess.TimeoutExpired) instead of holding it."""
    full_env = dict(os.environ, **(env or {}))
    result = subprocess.run([*launcher, BINARY, *map(str, args)], capture_output=True, env=full_env, timeout=timeout,
                            input=stdin, cwd=cwd)
    result.stdout = result.stdout.decode("utf-8")
    result.stderr = result.stderr.decode("utf-8", errors="replace")
    if check_json:
        result.document = json.loads(result.stdout)
    return result


def scan(*args, env=None, launcher=(), timeout=300):
    """Runs `precdetect --json ARGS`; returns (exit code, parsed document, stderr)."""
    result = run("--json", *args, env=env, check_json=True, launcher=launcher, timeout=timeout)
    return result.returncode, result.document, result.stderr


def write_gguf(path, arrays, arch="llama", file_type=0, endianess=None):
    """A GGUF file written by gguf-py's GGUFWriter: `arrays` maps each name to (array, raw ggml type or None)."""
    import gguf
    writer = gguf.GGUFWriter(str(path), arch, endianess=endianess or gguf.GGUFEndian.LITTLE)
    writer.add_file_type(file_type)
    writer.add_quantization_version(2)
    for name, (array, raw_dtype) in arrays.items():
        writer.add_tensor(name, array, raw_dtype=raw_dtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def hub_snapshot(hub, repo, commit):
    """The hub cache's folder for `repo` at `commit` (models--org--name/snapshots/<commit>/, created, refs/main
    naming it), for the caller to fill with config.json and weights."""
    repo_dir = Path(hub) / ("models--" + repo.replace("/", "--"))
    snapshot = repo_dir / "snapshots" / commit
    snapshot.mkdir(parents=True, exist_ok=True)
    (repo_dir / "refs").mkdir(exist_ok=True)
    (repo_dir / "refs" / "main").write_text(commit)
    return snapshot


def messages(model):
    """The messages of a model's warnings (each is {"code", "message"})."""
    return [w["message"] for w in model["warnings"]]


def tensors_by_name(model):
    """A model's reported tensors, by name."""
    return {t["name"]: t for t in model["tensors"]}


def warning_codes(model):
    return [w["code"] for w in model["warnings"]]


def as_json_number(value):
    """How precdetect writes a magnitude: a number, or the string "inf"."""
    return "inf" if math.isinf(value) else value


def reference_tensor_stats(tensor):
    """The statistics as precdetect defines them, computed by torch in float64 (NaN ignored)."""
    values = tensor.detach().to(torch.float64).reshape(-1).abs()
    nan = torch.isnan(values)
    kept = values[~nan]
    stats = {
        "numel": values.numel(),
        "zeros": int((values == 0).sum()),
        "nans": int(nan.sum()),
        "infs": int(torch.isinf(values).sum()),
        "norm": math.sqrt(float((kept * kept).sum())) if kept.numel() else 0.0,
        "abs_min": float(kept.min()) if kept.numel() else None,
        "abs_max": float(kept.max()) if kept.numel() else None,
    }
    return stats


# BatchNorm's buffers: the names any state dict with BatchNorm holds (docs/method.md lists the whole set).
BATCHNORM_BUFFERS = ("running_mean", "running_var", "num_batches_tracked")


def parameters_only(tensors):
    """The tensors of a {name: tensor} state dict that are not BatchNorm buffers: what the verdict sees."""
    return {n: t for n, t in tensors.items() if not n.endswith(BATCHNORM_BUFFERS)}


def reference_summary(tensors):
    """Seed 000's model summary over the floating tensors of a {name: tensor} dict."""
    float_stats = [reference_tensor_stats(t) for t in tensors.values() if t.dtype in FLOAT_DTYPES]
    valued = [s for s in float_stats if s["abs_min"] is not None]
    norms = [s["norm"] for s in float_stats if s["norm"] > 0]
    census = {}
    for t in tensors.values():
        census[DTYPE_NAMES[t.dtype]] = census.get(DTYPE_NAMES[t.dtype], 0) + 1
    return {
        "abs_min": min(s["abs_min"] for s in valued) if valued else None,
        "abs_max": max(s["abs_max"] for s in valued) if valued else None,
        "norm_min": min(norms) if norms else None,
        "norm_max": max(norms) if norms else None,
        "tensors": len(tensors),
        "parameters": sum(t.numel() for t in tensors.values()),
        "bytes": sum(t.numel() * t.element_size() for t in tensors.values()),
        "dtypes": census,
    }


# Each narrow format: (largest finite value, exponent of the smallest normal, of the smallest subnormal).
FORMATS = {"fp16": (65504.0, -14, -24), "fp8_e4m3": (448.0, -6, -9), "fp8_e5m2": (57344.0, -14, -16)}


def reference_precision(tensor):
    """The precision block as docs/json-schema.md defines it, computed in float64 by torch."""
    wide = tensor.dtype in (torch.float32, torch.float64)
    values = tensor.detach().to(torch.float64).reshape(-1)
    magnitudes = values.abs()
    finite = torch.isfinite(magnitudes)
    nonzero_finite = magnitudes[finite & (magnitudes != 0)]
    counts = {"above_1e2": int((magnitudes[finite] > 100).sum()),
              "square_overflow": int((magnitudes[finite] >= 256).sum())}
    for name, (largest, min_normal, min_subnormal) in FORMATS.items():
        counts[name] = {"overflow": int((magnitudes[finite] > largest).sum()),
                        "underflow": int((nonzero_finite < 2.0**min_subnormal).sum()),
                        "subnormal": int(((nonzero_finite >= 2.0**min_subnormal)
                                          & (nonzero_finite < 2.0**min_normal)).sum())}
    kept = values[~torch.isnan(values)]
    for name, narrow in (("bf16_exact", torch.bfloat16), ("fp16_exact", torch.float16)):
        exact = int((kept.to(narrow).to(torch.float64) == kept).sum())
        counts[name] = exact / kept.numel() if wide and kept.numel() else None
    mantissas, exponents = torch.frexp(nonzero_finite)  # x = m * 2^e, m in [0.5, 1): floor(log2 x) = e - 1
    bins, sizes = torch.unique((exponents - 1).clamp(-127, 128), return_counts=True)
    counts["exponents"] = [[int(e), int(n)] for e, n in zip(bins, sizes)]
    return counts


# Under ctest (tests/CMakeLists.txt sets it) a test that needs a tool or package scripts/setup.sh --tests installs
# fails where it is missing, instead of skipping: a setup that drifts must never turn a check (the confinement
# trace, a real producer's files) into a green skip. Run by hand, outside ctest, such a test skips.
STRICT_SKIPS = os.environ.get("PRECDETECT_STRICT_SKIPS") == "1"


def missing_message(what):
    return f"{what} is not installed (scripts/setup.sh --tests installs it)"


def requires(present, what):
    """Decorates a test method or class that needs `what`: it runs where `present` is true; elsewhere it skips, or
    under ctest (STRICT_SKIPS) fails naming what is missing."""
    if present:
        return lambda test: test
    if not STRICT_SKIPS:
        return unittest.skip(missing_message(what))

    def failing(test):
        if isinstance(test, type):
            def set_up_class(cls):
                raise AssertionError(missing_message(what))
            test.setUpClass = classmethod(set_up_class)
            return test

        @functools.wraps(test)
        def fails(self, *args, **kwargs):
            self.fail(missing_message(what))
        return fails
    return failing


def require(case, present, what):
    """Inside a running test: goes on where `present` is true; else skips it, or under ctest fails it (requires)."""
    if present:
        return
    if STRICT_SKIPS:
        case.fail(missing_message(what))
    case.skipTest(missing_message(what))


def namespace_available():
    """Whether in_private_mounts can run: as root, with util-linux's unshare."""
    return ROOT and shutil.which("unshare") and subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "true"], capture_output=True).returncode == 0


def in_private_mounts(script, *args):
    """Runs the shell `script` (with `args` as $1...) in a mount namespace of its own, as root: what it mounts
    (a tmpfs over /dev, say) is seen by it alone."""
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-euc", script, "sh", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


class ScanTestCase(unittest.TestCase):
    """A test case with a scratch folder and comparisons against the float64 references."""

    def setUp(self):
        self._scratch = tempfile.TemporaryDirectory(prefix="precdetect-e2e-")
        self.tmp = Path(self._scratch.name)

    def tearDown(self):
        self._scratch.cleanup()

    def assertMagnitude(self, actual, expected, msg=None):
        """Exact: magnitudes are stored values, which float64 and JSON both carry exactly."""
        self.assertEqual(actual, None if expected is None else as_json_number(expected), msg)

    def assertNorm(self, actual, expected, msg=None):
        if expected is None or math.isinf(expected):
            self.assertEqual(actual, None if expected is None else "inf", msg)
        else:
            self.assertAlmostEqual(actual, expected, delta=1e-9 * abs(expected), msg=msg)

    def assertTensorStats(self, reported, tensor, msg=None):
        expected = reference_tensor_stats(tensor)
        self.assertTrue(reported["analyzed"], msg)
        for key in ("numel", "zeros", "nans", "infs"):
            self.assertEqual(reported[key], expected[key], f"{msg}: {key}")
        self.assertMagnitude(reported["abs_min"], expected["abs_min"], f"{msg}: abs_min")
        self.assertMagnitude(reported["abs_max"], expected["abs_max"], f"{msg}: abs_max")
        self.assertNorm(reported["norm"], expected["norm"], f"{msg}: norm")

    def assertSummary(self, reported, tensors):
        expected = reference_summary(tensors)
        for key in ("abs_min", "abs_max"):
            self.assertMagnitude(reported[key], expected[key], key)
        for key in ("norm_min", "norm_max"):
            self.assertNorm(reported[key], expected[key], key)
        for key in ("tensors", "parameters", "bytes", "dtypes"):
            self.assertEqual(reported[key], expected[key], key)


def small_llama(hidden=128, intermediate=256):
    """A two-layer transformers Llama of random (seeded) weights: seven Linear layers per block."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=hidden, intermediate_size=intermediate,
                                        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4))


def compressed_checkpoint(folder, scheme, hidden=128, intermediate=256, dtype=torch.float32):
    """A small Llama (seeded, in `dtype`, whose scales take it) quantized by compressed-tensors `scheme` (or a dict of
    config groups' schemes) with its own calculate_qparams per group (a channel is one group), compressed by
    ModelCompressor and written by save_pretrained to `folder`; returns the config's quantization format
    ("float-quantized", "pack-quantized", ...)."""
    from compressed_tensors.compressors import ModelCompressor
    from compressed_tensors.quantization import QuantizationConfig, apply_quantization_config
    from compressed_tensors.quantization.utils import calculate_qparams, generate_gparam

    model = small_llama(hidden, intermediate).to(dtype)
    groups = scheme if isinstance(scheme, dict) else {"group_0": scheme}
    apply_quantization_config(model, QuantizationConfig(config_groups=groups, ignore=["lm_head"]))
    for module in model.modules():
        if getattr(module, "quantization_scheme", None) is None:
            continue
        weight = module.weight.data
        global_scale = None
        if hasattr(module, "weight_global_scale"):  # nvfp4: the tensor's global scale first, as its observers do
            global_scale = generate_gparam(weight.amin().clamp(max=0).reshape(1), weight.amax().clamp(min=0).reshape(1))
            module.weight_global_scale.data.copy_(global_scale.reshape(module.weight_global_scale.shape))
        grouped = weight.reshape(weight.shape[0], module.weight_scale.shape[1], -1)
        scale, zero_point = calculate_qparams(grouped.amin(-1).clamp(max=0), grouped.amax(-1).clamp(min=0),
                                              module.quantization_scheme.weights, global_scale=global_scale)
        module.weight_scale.data.copy_(scale.reshape(module.weight_scale.shape))
        if hasattr(module, "weight_zero_point"):
            module.weight_zero_point.data.copy_(zero_point.reshape(module.weight_zero_point.shape))
    compressor = ModelCompressor.from_pretrained_model(model)
    compressor.compress_model(model)
    model.save_pretrained(folder)
    compressor.update_config(folder)
    return json.loads((Path(folder) / "config.json").read_text())["quantization_config"]["format"]


# The quantized checkpoints' modules (test_compressed_tensors, test_microscaling, test_bitsandbytes, test_gptq,
# test_awq): a quantized weight's statistics against its library's dequantized tensor.


def float_tensors(folder):
    """The tensors of `folder`'s safetensors file, by name."""
    from safetensors.torch import load_file

    return load_file(folder / "model.safetensors")


def scanned(case, folder):
    """The JSON model of `folder`'s scan, which must succeed, and its tensors by name."""
    code, document, stderr = scan(folder)
    case.assertEqual(code, 0, stderr)
    model = document["models"][0]
    return model, tensors_by_name(model)


def check_dequantized(case, reported, name, reference):
    """`name`'s statistics against `reference` (the library's dequantized tensor) in float64."""
    expected = reference_tensor_stats(reference.double())
    case.assertTrue(reported[name]["analyzed"], name)
    case.assertEqual(reported[name]["numel"], reference.numel(), name)
    for key in ("abs_min", "abs_max", "norm"):
        case.assertAlmostEqual(reported[name][key], expected[key], delta=abs(expected[key]) * 1e-6, msg=(name, key))


def check_stats(case, reported, name, reference):
    """`name`'s numel, abs min, abs max and zeros equal to `reference`'s (the dequantized tensor) and its norm to 1e-9:
    the integer codes' values, which the scan computes as their kernels do."""
    expected = reference_tensor_stats(reference)
    case.assertEqual(reported[name]["numel"], reference.numel(), name)
    for key in ("abs_min", "abs_max", "zeros"):
        case.assertEqual(reported[name][key], expected[key], (name, key))
    case.assertAlmostEqual(reported[name]["norm"], expected["norm"], delta=expected["norm"] * 1e-9)
