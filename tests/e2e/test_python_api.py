"""precdetect.scan, precdetect.diff and precdetect.check (issue 38): the scanner in-process through the
precdetect._core extension answers exactly what the program's --json does, its HTML is the --report page, errors
carry their codes, and the GIL is free while files are read; check() on a model in memory gives the statistics and
verdict that scanning its saved checkpoint gives. The package is staged from python/ with the built extension."""

import ast
import gc
import os
import tempfile
import threading
import time
import unittest
import weakref
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # peft looks an adapter's base up on the Hub; this one lives nowhere
import torch
from safetensors.torch import save_file
from transformers import T5ForConditionalGeneration

from helpers import REPO, reference_tensor_stats, run, tensors_by_name
from live_models import DOCUMENTED_BF16, tiny_bert, tiny_t5
from staged_package import STAGE
import precdetect  # noqa: E402 (staged_package puts it first on sys.path)

EXAMPLES = [str(REPO / "examples" / "fp16-like"), str(REPO / "examples" / "bf16-like")]


class Scan(unittest.TestCase):
    def test_each_result_is_the_cli_documents_model(self):
        missing = str(STAGE / "missing.safetensors")
        results = precdetect.scan(*EXAMPLES, missing, jobs=1)
        cli = run("--json", *EXAMPLES, missing, check_json=True)
        self.assertEqual(cli.returncode, 2)
        self.assertEqual([r.to_dict() for r in results], cli.document["models"])
        fp16, bf16, failed = results
        model = cli.document["models"][1]
        self.assertEqual((bf16.label, bf16.candidates, bf16.confidence, bf16.fp16_risk),
                         ("bf16|fp32", ["bf16", "fp32"], model["verdict"]["confidence"], True))
        self.assertEqual(bf16.summary, model["summary"])
        self.assertEqual(bf16.safety, model["safety"])
        self.assertEqual((fp16.label, fp16.fp16_risk, fp16.error), ("fp16|fp32", False, None))
        self.assertEqual((failed.error["code"], failed.label, failed.candidates), ("not_found", "unknown", ["fp16", "bf16", "fp32"]))

    def test_gates_fill_gate_failures_as_the_cli_does(self):
        results = precdetect.scan(*EXAMPLES, fail_if_fp16_risk=True, max_abs=100)
        cli = run("--json", "--fail-if-fp16-risk", "--max-abs", "100", *EXAMPLES, check_json=True)
        self.assertEqual([r.to_dict() for r in results], cli.document["models"])
        self.assertEqual(len(results[1].to_dict()["gate_failures"]), 2)

    def test_repr_html_is_the_report_page_of_that_model(self):
        [result] = precdetect.scan(EXAMPLES[1])
        page = STAGE / "report.html"
        self.assertEqual(run("--report", page, EXAMPLES[1]).returncode, 0)
        self.assertEqual(result._repr_html_(), page.read_text())

    def test_an_adapter_says_so_and_answers_for_its_base(self):
        from peft import LoraConfig, get_peft_model
        from transformers import LlamaConfig, LlamaForCausalLM

        config = LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
                             num_key_value_heads=4, vocab_size=64)
        config._name_or_path = "EleutherAI/pythia-1b"  # the base peft records in adapter_config.json
        folder = STAGE / "adapter"
        get_peft_model(LlamaForCausalLM(config), LoraConfig(r=2, target_modules=["q_proj"])).save_pretrained(folder)
        [result] = precdetect.scan(str(folder))
        self.assertEqual((result.adapter["format"], result.adapter["base_model"]), ("peft", "EleutherAI/pythia-1b"))
        self.assertEqual(result.label, "bf16")  # the base's documented precision
        self.assertEqual(repr(result), f"<ScanResult {folder}: bf16 (0.9) adapter (peft) of EleutherAI/pythia-1b "
                                       "fp16-risk>")
        self.assertIsNone(precdetect.scan(EXAMPLES[0])[0].adapter)

    def test_to_dict_is_a_copy(self):
        [result] = precdetect.scan(EXAMPLES[0])
        result.to_dict()["verdict"]["label"] = "changed"
        self.assertEqual(result.label, "fp16|fp32")


class Remote(unittest.TestCase):
    """A URL is an input of precdetect.scan as of the program (issue 60): the same model, read by byte ranges."""

    def test_a_remote_model_is_the_cli_documents_model(self):
        import json
        import signal
        import subprocess
        import sys

        from test_remote import write_single

        root = Path(tempfile.mkdtemp(dir=STAGE))
        write_single(root / "files" / "single")
        server = subprocess.Popen([sys.executable, str(Path(__file__).parent / "remote_server.py"), str(root)],
                                  stdout=subprocess.PIPE, text=True)
        offline = os.environ.pop("HF_HUB_OFFLINE", None)  # this module's default; a URL needs the network
        try:
            url = f"http://127.0.0.1:{json.loads(server.stdout.readline())['port']}/files/single/model.safetensors"
            (result,) = precdetect.scan(url)
            cli = run("--json", url, check_json=True)
            self.assertEqual(cli.returncode, 0, cli.stderr)
            self.assertIsNone(result.error)
            self.assertEqual(result.to_dict(), cli.document["models"][0])
        finally:
            if offline is not None:
                os.environ["HF_HUB_OFFLINE"] = offline
            os.kill(server.pid, signal.SIGTERM)
            server.wait()


class Errors(unittest.TestCase):
    def assert_error(self, code, *inputs, **options):
        with self.assertRaises(precdetect.Error) as raised:
            precdetect.scan(*inputs, **options)
        self.assertEqual(raised.exception.code, code)
        return str(raised.exception)

    def test_options_the_command_line_refuses_are_usage_errors_naming_the_flag(self):
        self.assertEqual(self.assert_error("usage", EXAMPLES[0], device="tpu"),
                         "--device: must be cpu, cuda, cuda:N or auto, not `tpu`")
        self.assertIn("--include", self.assert_error("usage", EXAMPLES[0], include="("))

    def test_a_run_that_cannot_be_made_raises_its_error_code(self):
        rules = STAGE / "rules.json"
        rules.write_text("{not json")
        self.assertIn(str(rules), self.assert_error("invalid_rules", EXAMPLES[0], rules=rules))

    def test_unknown_options_are_type_errors(self):
        with self.assertRaisesRegex(TypeError, "unexpected keyword argument 'json'"):
            precdetect.scan(EXAMPLES[0], json=True)


class Diff(unittest.TestCase):
    def test_each_result_is_the_cli_documents_pair(self):
        pairs = precdetect.diff(EXAMPLES[0], EXAMPLES[0], EXAMPLES[1], atol=1e-6)
        cli = run("diff", "--json", "--atol", "1e-6", EXAMPLES[0], EXAMPLES[0], EXAMPLES[1], check_json=True)
        self.assertEqual([p.to_dict() for p in pairs], cli.document["pairs"])
        self.assertEqual(pairs[0].outcome, "identical")


class Gil(unittest.TestCase):
    def test_other_threads_run_while_a_model_is_read(self):
        path = STAGE / "large.safetensors"
        save_file({f"w{i}": torch.randn(2048, 2048) for i in range(16)}, path)  # 256 MiB of f32
        thread = threading.Thread(target=precdetect.scan, args=(path,) * 8, kwargs={"jobs": 1})
        samples = [time.monotonic()]  # before start(): the new thread may take the GIL at once
        thread.start()
        while thread.is_alive():
            samples.append(time.monotonic())
        took = samples[-1] - samples[0]
        gaps = max(b - a for a, b in zip(samples, samples[1:]))
        self.assertGreater(took, 0.1)  # long enough for a held GIL to show
        self.assertLess(gaps, took / 2, f"the main thread stood still {gaps:.3f} s of the scan's {took:.3f} s")


STATS = ("numel", "abs_min", "abs_max", "norm", "zeros", "nans", "infs")
SUMMARY = ("abs_min", "abs_max", "norm_min", "norm_max", "abs_max_tensor", "norm_max_tensor", "tensors",
           "parameters", "bytes", "dtypes", "nans", "infs")


class ModelAssertions(unittest.TestCase):
    """Comparisons of a check's document with a scan's."""

    def assert_close(self, ours, theirs, what):
        if isinstance(theirs, float):
            self.assertAlmostEqual(ours, theirs, delta=1e-12 * max(1.0, abs(theirs)), msg=what)
        else:
            self.assertEqual(ours, theirs, what)

    def assert_same_model(self, checked, scanned):
        """Every tensor the scan reports has the same statistics in the check; the parameters' summary and the
        verdict are the same."""
        checked_tensors = tensors_by_name(checked)
        for name, tensor in tensors_by_name(scanned).items():
            for key in (*STATS, "role", "precision"):
                self.assert_close(checked_tensors[name].get(key), tensor.get(key), f"{name}: {key}")
        for key in SUMMARY:
            self.assert_close(checked["summary"][key], scanned["summary"][key], f"summary: {key}")
        for key in ("label", "candidates", "confidence", "fp16_risk", "decided_by"):
            self.assertEqual(checked["verdict"][key], scanned["verdict"][key], key)
        for ours, theirs in zip(checked["verdict"]["fp16_risk_reasons"], scanned["verdict"]["fp16_risk_reasons"],
                                strict=True):
            for key in theirs:
                self.assert_close(ours[key], theirs[key], f"fp16 risk reason: {key}")


class Check(ModelAssertions):
    def test_a_module_checks_as_its_saved_safetensors_scan(self):
        for label, model in (("bf16|fp32", tiny_t5(scale=300)), ("fp16|fp32", tiny_bert())):
            with self.subTest(model=type(model).__name__):
                folder = STAGE / type(model).__name__
                model.save_pretrained(folder)  # transformers' own writer: model.safetensors and config.json
                [scanned] = precdetect.scan(folder)
                checked = precdetect.check(model)
                self.assertEqual((checked.label, checked.path), (label, type(model).__name__))
                self.assertEqual(checked.to_dict()["format"], "module")
                self.assert_same_model(checked.to_dict(), scanned.to_dict())
                reported = tensors_by_name(checked.to_dict())
                for name, parameter in model.named_parameters():  # and torch's float64 numbers, independently
                    for key, value in reference_tensor_stats(parameter).items():
                        self.assert_close(reported[name][key], value, f"{name}: {key}")

    def test_the_config_names_the_model_to_the_registry(self):
        result = precdetect.check(tiny_t5(name_or_path=DOCUMENTED_BF16))
        documented = result.verdict["documented"]
        self.assertEqual((documented["matched_by"], documented["matched"]), ("name_or_path", DOCUMENTED_BF16))
        self.assertEqual((result.path, result.label, result.fp16_risk), (DOCUMENTED_BF16, "bf16", True))
        self.assertIn("documented", [r["kind"] for r in result.verdict["fp16_risk_reasons"]])
        self.assertIsNone(precdetect.check(tiny_t5()).verdict["documented"])  # no name: no entry

    def test_a_model_loaded_by_its_legacy_hub_id_reaches_the_registry(self):
        # from_pretrained("t5-small") from a hub cache (offline): the config says `_name_or_path: "t5-small"`
        with tempfile.TemporaryDirectory() as hub:
            snapshot = Path(hub) / "models--t5-small" / "snapshots" / ("0" * 40)
            tiny_t5().save_pretrained(snapshot)
            (snapshot.parents[1] / "refs").mkdir()
            (snapshot.parents[1] / "refs" / "main").write_text("0" * 40)
            model = T5ForConditionalGeneration.from_pretrained("t5-small", cache_dir=hub, local_files_only=True)
        self.assertEqual(model.config._name_or_path, "t5-small")
        documented = precdetect.check(model).verdict["documented"]
        self.assertEqual((documented["id"], documented["matched_by"], documented["label"]),
                         ("t5-small", "legacy_id", "bf16"))

    def test_buffers_are_what_the_module_says_and_a_state_dicts_are_placed_by_name(self):
        module = torch.nn.Sequential(torch.nn.Conv2d(2, 4, 3), torch.nn.BatchNorm2d(4))
        module.register_buffer("scale_table", torch.full((8,), 3000.0))  # a buffer no rule's name matches
        module.train()
        for _ in range(3):  # running statistics of inputs in the thousands: a variance fp16 cannot hold
            module(torch.randn(8, 2, 6, 6) * 5000)
        checked = precdetect.check(module).to_dict()
        roles = {t["name"]: t["role"] for t in checked["tensors"]}
        self.assertEqual(roles, {"0.weight": "model", "0.bias": "model", "1.weight": "model", "1.bias": "model",
                                 "1.running_mean": "buffer", "1.running_var": "buffer",
                                 "1.num_batches_tracked": "buffer", "scale_table": "buffer"})
        parameters = dict(module.named_parameters())
        self.assertEqual(checked["summary"]["tensors"], 4)
        self.assertEqual(checked["summary"]["abs_max"],
                         max(reference_tensor_stats(p)["abs_max"] for p in parameters.values()))
        self.assertEqual(checked["buffers"]["tensors"], 4)
        overflow = [r for r in checked["verdict"]["fp16_risk_reasons"] if r["kind"] == "overflow"]
        self.assertEqual([(r["tensor"], r["role"]) for r in overflow], [("1.running_var", "buffer")])
        self.assertEqual(overflow[0]["value"], reference_tensor_stats(module[1].running_var)["abs_max"])
        state_dict = precdetect.check(module.state_dict()).to_dict()  # names only: the rules' buffer list
        self.assertEqual(state_dict["format"], "state_dict")
        self.assertEqual({t["name"]: t["role"] for t in state_dict["tensors"]}, dict(roles, scale_table="model"))

    def test_a_strided_view_and_a_tied_weight(self):
        weight = torch.randn(64, 32, dtype=torch.float64)
        result = precdetect.check({"transposed": weight.t(), "tied": weight, "tied_again": weight}).to_dict()
        tensors = tensors_by_name(result)
        for key, value in reference_tensor_stats(weight).items():
            self.assert_close(tensors["transposed"][key], value, key)
        self.assertEqual((tensors["tied_again"]["shares_storage_with"], result["summary"]["tensors"]),
                         ("transposed", 2))  # the second name of one view is reported, counted once

    def test_what_cannot_be_read_in_place_is_skipped_by_name(self):
        freed = torch.randn(100, 100)
        freed.untyped_storage().resize_(0)  # as FSDP frees a sharded parameter's storage
        result = precdetect.check({
            "weight": torch.randn(4, 4), "meta": torch.empty(3, device="meta"), "sparse": torch.eye(3).to_sparse(),
            "quantized": torch.quantize_per_tensor(torch.randn(3), 0.1, 0, torch.qint8),
            "complex": torch.zeros(2, dtype=torch.complex64), "freed": freed, "step": 5})
        [warning] = [w for w in result.to_dict()["warnings"] if w["code"] == "live_tensors_skipped"]
        for text in ("step (not a tensor: int)", "meta (on meta)", "sparse (layout torch.sparse_coo)",
                     "quantized (quantized torch.qint8)", "complex (dtype torch.complex64)",
                     "freed (storage freed or smaller than the tensor: 0 of 40000 bytes)"):
            self.assertIn(text, warning["message"])
        self.assertEqual((result.error, result.summary["tensors"]), (None, 1))

    def test_a_model_with_nothing_readable_is_a_result_with_an_error(self):
        with torch.device("meta"):
            model = torch.nn.Linear(4, 4)
        result = precdetect.check(model)
        self.assertEqual((result.error["code"], result.label), ("no_tensors", "unknown"))
        self.assertIn("weight (on meta)", result.error["message"])
        self.assertEqual(precdetect.check({"step": 5}).error["code"], "no_tensors")
        with self.assertRaisesRegex(TypeError, "nn.Module or a state dict, not int"):
            precdetect.check(5)

    def test_options_and_gates(self):
        result = precdetect.check(tiny_t5(scale=300), fail_if_fp16_risk=True, include=r"^shared\.")
        self.assertEqual([t["name"] for t in result.to_dict()["tensors"]], ["shared.weight"])
        self.assertEqual(len(result.to_dict()["gate_failures"]), 1)
        model = tiny_bert()
        with torch.no_grad():
            model.bert.embeddings.word_embeddings.weight[3, 1] = float("nan")
        self.assertEqual(precdetect.check(model, fail_if_nonfinite=True).to_dict()["gate_failures"],
                         ["1 tensor(s) hold NaN or Inf: bert.embeddings.word_embeddings.weight (1 NaN, 0 Inf) "
                          "(--fail-if-nonfinite)"])
        with self.assertRaisesRegex(TypeError, "unexpected keyword argument 'device'"):
            precdetect.check(tiny_bert(), device="cuda")  # tensors are read where they are

    def test_the_result_holds_no_reference_to_the_tensors(self):
        model = tiny_bert()
        watched = weakref.ref(model.bert.embeddings.word_embeddings.weight)
        result = precdetect.check(model)
        del model
        gc.collect()
        self.assertIsNone(watched())
        self.assertIn("BertForMaskedLM", result._repr_html_())

    def test_a_tensor_resized_by_another_thread_waits_for_the_check(self):
        tensors = {f"w{i}": torch.randn(2048, 2048) for i in range(16)}  # 256 MiB: a check of some length
        expected = max(float(t.abs().max()) for t in tensors.values())
        started = threading.Event()

        def free_all():  # as FSDP frees a parameter's storage; with the GIL held by the check, it runs after it
            started.wait()
            time.sleep(0.01)
            for tensor in tensors.values():
                tensor.untyped_storage().resize_(0)

        thread = threading.Thread(target=free_all)
        thread.start()
        started.set()
        result = precdetect.check(tensors)
        thread.join()
        self.assertEqual(tensors["w0"].untyped_storage().nbytes(), 0)
        self.assertEqual((result.summary["abs_max"], result.summary["tensors"]), (expected, 16))

    @unittest.skipUnless(torch.cuda.is_available(), "no CUDA device")
    def test_cuda_tensors_are_read_on_their_gpu(self):
        model = tiny_t5(scale=300)
        on_cpu = precdetect.check(model).to_dict()
        on_gpu = precdetect.check(model.cuda()).to_dict()
        self.assert_same_model(on_gpu, on_cpu)


class Dlpack(ModelAssertions):
    """check() reads every array through `__dlpack__` (include/precdetect/load/dlpack.h): torch's versioned and
    legacy capsules, NumPy and JAX arrays, fp8 as a uint8 view, and a GPU array copied to the host in chunks where
    the CUDA plugin cannot run. Each is held to the scan of the same values saved by safetensors."""

    def scanned(self, arrays):
        """The scan of `arrays` (name -> NumPy array) saved by safetensors' NumPy writer."""
        from safetensors.numpy import save_file as save_numpy

        folder = Path(tempfile.mkdtemp(dir=STAGE))
        save_numpy(arrays, folder / "model.safetensors")
        [scanned] = precdetect.scan(folder / "model.safetensors")
        return scanned.to_dict()

    def test_versioned_and_legacy_capsules_read_alike(self):
        from precdetect import _live

        weight = torch.randn(64, 48) * 300

        class LegacyOnly:  # a producer that predates DLPack 1.0: no max_version keyword, a "dltensor" capsule
            def __dlpack__(self, stream=None):
                return weight.__dlpack__()

        self.assertEqual(_live._dlpack(weight)[2], 1)
        self.assertEqual(_live._dlpack(LegacyOnly())[2], 0)
        versioned = precdetect.check({"w": weight}).to_dict()
        legacy = precdetect.check({"w": LegacyOnly()}).to_dict()
        self.assert_same_model(legacy, versioned)
        self.assert_same_model(versioned, self.scanned({"w": weight.numpy()}))

    def test_numpy_and_jax_arrays_are_read_in_place(self):
        import jax.numpy as jnp
        import numpy

        generator = numpy.random.default_rng(7)
        arrays = {"embed": (generator.standard_normal((256, 64)) * 500).astype(numpy.float32),
                  "norm": generator.standard_normal(64).astype(numpy.float16),
                  "step": numpy.arange(3, dtype=numpy.int32)}  # JAX keeps 32-bit integers by default
        scanned = self.scanned(arrays)
        self.assert_same_model(precdetect.check(arrays).to_dict(), scanned)
        on_jax = precdetect.check({name: jnp.asarray(value) for name, value in arrays.items()}).to_dict()
        self.assert_same_model(on_jax, scanned)
        nested = precdetect.check({"params": {"embed": jnp.asarray(arrays["embed"])}}).to_dict()  # a Flax tree
        self.assertEqual([t["name"] for t in nested["tensors"]], ["params.embed"])
        self.assertEqual(nested["summary"]["abs_max"], scanned["tensors"][0]["abs_max"])
        transposed = precdetect.check({"embed_t": arrays["embed"].T}).to_dict()  # a strided view, gathered
        for key, value in reference_tensor_stats(torch.from_numpy(arrays["embed"])).items():
            self.assert_close(tensors_by_name(transposed)["embed_t"][key], value, key)

    def test_modules_of_each_dtype_check_as_their_saved_file(self):
        for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.float8_e4m3fn, torch.float8_e5m2):
            with self.subTest(dtype=dtype):
                torch.manual_seed(5)
                module = torch.nn.Sequential(torch.nn.Linear(48, 32), torch.nn.LayerNorm(32))
                with torch.no_grad():
                    module[0].weight.mul_(40)
                module = module.to(dtype)
                folder = Path(tempfile.mkdtemp(dir=STAGE))
                save_file(module.state_dict(), folder / "model.safetensors")
                [scanned] = precdetect.scan(folder / "model.safetensors")
                self.assert_same_model(precdetect.check(module).to_dict(), scanned.to_dict())

    def test_fp8_goes_as_a_uint8_view_with_its_dtype_named(self):
        weight = (torch.randn(32, 32) * 100).to(torch.float8_e4m3fn)
        folder = Path(tempfile.mkdtemp(dir=STAGE))
        save_file({"w": weight}, folder / "model.safetensors")
        [scanned] = precdetect.scan(folder / "model.safetensors")
        checked = precdetect.check({"w": weight}).to_dict()
        self.assertEqual(tensors_by_name(checked)["w"]["dtype"], "F8_E4M3")
        self.assert_same_model(checked, scanned.to_dict())

    @unittest.skipIf(torch.cuda.is_available(), "a GPU is present: the plugin reads the array where it is")
    def test_a_gpu_array_without_the_plugin_is_copied_in_chunks_and_the_result_says_so(self):
        import numpy

        values = (numpy.random.default_rng(3).standard_normal(20_000_003) * 70).astype(numpy.float32)  # 2 chunks
        result = precdetect.check({"w": FakeGpuArray(values)}).to_dict()
        [copied] = [w for w in result["warnings"] if w["code"] == "live_tensors_copied"]
        self.assertIn("copied to the host in chunks of at most 64 MiB", copied["message"])
        self.assertIn(": w", copied["message"])
        for key, value in reference_tensor_stats(torch.from_numpy(values)).items():
            self.assert_close(tensors_by_name(result)["w"][key], value, key)


class FakeGpuArray:
    """An array whose DLPack tensor says it lives on CUDA device 0 while its bytes are host memory: on a machine
    where the CUDA plugin cannot run, check() must copy it through `__array__` (the chunked path)."""

    def __init__(self, values):
        import ctypes

        self.values = values
        self.shape = (ctypes.c_int64 * 1)(values.size)
        # DLManagedTensor: data, device (type 2 = kDLCUDA, id 0), ndim, dtype (float, 32 bits, 1 lane), shape,
        # strides, byte_offset, manager_ctx, deleter
        self.managed = (ctypes.c_uint8 * 72)()
        ctypes.memmove(ctypes.addressof(self.managed), ctypes.byref(ctypes.c_void_p(values.ctypes.data)), 8)
        ctypes.memmove(ctypes.addressof(self.managed) + 8, bytes([2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 32, 1, 0]),
                       16)
        ctypes.memmove(ctypes.addressof(self.managed) + 24, ctypes.byref(ctypes.c_void_p(ctypes.addressof(self.shape))),
                       8)

    def __dlpack__(self, stream=None):
        import ctypes

        new_capsule = ctypes.pythonapi.PyCapsule_New
        new_capsule.restype, new_capsule.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new_capsule(ctypes.addressof(self.managed), b"dltensor", None)

    def __array__(self, dtype=None, copy=None):
        return self.values


class Layout(unittest.TestCase):
    def test_the_package_has_no_import_cycle(self):
        """Module-level imports between precdetect's own modules form no cycle (imports inside functions are
        deferred on purpose and left out)."""
        package = REPO / "python" / "precdetect"
        sources = {".".join(("precdetect", *path.relative_to(package).with_suffix("").parts)).removesuffix(".__init__"):
                   path for path in package.rglob("*.py")}
        graph = {}
        for module, path in sources.items():
            imported = set()
            for node in ast.parse(path.read_text()).body:  # top level only
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("precdetect"):
                    # `from precdetect import _binding` imports the submodule; `from precdetect.api import scan` the module
                    imported |= {f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in sources
                                 else node.module for alias in node.names}
                elif isinstance(node, ast.Import):
                    imported |= {alias.name for alias in node.names if alias.name in sources}
            graph[module] = imported - {module}
        self.assertGreaterEqual(len(graph), 8)
        visiting, done = set(), set()

        def visit(module, path):
            self.assertNotIn(module, visiting, f"import cycle: {' -> '.join(path + [module])}")
            if module in done:
                return
            visiting.add(module)
            for imported in sorted(graph[module]):
                visit(imported, path + [module])
            visiting.discard(module)
            done.add(module)

        for module in sorted(graph):
            visit(module, [])


if __name__ == "__main__":
    unittest.main()
