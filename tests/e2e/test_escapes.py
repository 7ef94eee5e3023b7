"""Safe to load beyond pickles (issue 58): links and paths out of the model, archive members that escape, custom
code, models not read to their end. Each harmful case is written by the real writer, and the test proves that the
real loader (or a plain open() through the link) is hurt by it, writing only a marker file in the temp folder and
reading only the canary file the test made; then that precdetect calls the model unsafe (or unverified), names the
link, member or code, and never opens, nor reports a number of, anything outside the model. No test reads a real
file outside its temp folder."""

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import unittest
import warnings
import zipfile
from pathlib import Path

import torch
from safetensors.torch import save_file

from helpers import ROOT, require, run, scan

CANARY_VALUE = 31337.0  # the canary's one value: it must never appear in precdetect's output


def safety(document):
    return document["models"][0]["safety"]


def kinds(document):
    return [item["kind"] for item in safety(document)["tampering"]]


class Escapes(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp())
        self.canary = self.tmp / "outside" / "canary.safetensors"
        self.canary.parent.mkdir()
        save_file({"secret": torch.full((4,), CANARY_VALUE)}, self.canary)
        self.model = self.tmp / "model"
        self.model.mkdir()
        save_file({"w": torch.full((8,), 0.5)}, self.model / "model.safetensors")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def assertNothingOfTheCanary(self, result_text):
        self.assertNotIn("31337", result_text)
        self.assertNotIn("3.134e+04", result_text)

    def test_a_linked_weight_file_is_never_opened(self):
        (self.model / "model.safetensors").unlink()
        os.symlink("../outside/canary.safetensors", self.model / "model.safetensors")
        # The harm: a loader that opens the folder's weights reads the file the folder's author chose.
        with open(self.model / "model.safetensors", "rb") as through_the_link:
            self.assertEqual(through_the_link.read(), self.canary.read_bytes())
        result = run("--json", self.model)
        self.assertEqual(result.returncode, 2)
        document = json.loads(result.stdout)
        model = document["models"][0]
        self.assertEqual(model["error"]["code"], "path_escape")
        self.assertEqual(safety(document)["verdict"], "unsafe")
        self.assertIn("path_escape", kinds(document))
        self.assertIn("../outside/canary.safetensors", json.dumps(safety(document)["tampering"]))
        self.assertNothingOfTheCanary(result.stdout + result.stderr)
        table = run("-v", self.model)
        self.assertIn("UNSAFE: path_escape", table.stdout)
        self.assertNothingOfTheCanary(table.stdout + table.stderr)
        # --verify hashes nothing through the link either: the canary's SHA-256 would tell of the file.
        manifest = self.tmp / "SHA256SUMS"
        manifest.write_text(f"{'0' * 64}  model/model.safetensors\n")
        verified = run("--json", "--verify", "--verify-manifest", manifest, self.model)
        self.assertEqual(verified.returncode, 1)
        self.assertIn("path_escape", verified.stdout)
        self.assertNotIn(hashlib.sha256(self.canary.read_bytes()).hexdigest(), verified.stdout + verified.stderr)

    def test_a_link_beside_the_weights_or_a_linked_folder_makes_the_model_unsafe(self):
        os.symlink("../outside/canary.safetensors", self.model / "tokenizer.json")
        os.symlink("../outside", self.model / "global_step1")
        code, document, _ = scan(self.model)
        self.assertEqual(code, 0)  # the weights themselves read well
        self.assertEqual(document["models"][0]["summary"]["abs_max"], 0.5)
        self.assertEqual(safety(document)["verdict"], "unsafe")
        links = [item["file"] for item in safety(document)["tampering"]]
        self.assertEqual(sorted(Path(link).name for link in links), ["global_step1", "tokenizer.json"])
        self.assertEqual(run("--fail-if-unsafe", self.model).returncode, 1)

    def test_each_link_out_is_one_finding_however_the_input_is_spelled(self):
        """The walk of the model's folder and the inventory of the input both meet a link out; named from the root
        and from the input (a relative path), it is one finding, not two (issue 66)."""
        os.symlink("../outside/canary.safetensors", self.model / "tokenizer.json")
        for spelled in (self.model, os.path.relpath(self.model), f"{self.tmp}/./model"):
            with self.subTest(input=str(spelled)):
                code, document, stderr = scan(spelled)
                self.assertEqual(code, 0, stderr)
                links = [item["file"] for item in safety(document)["tampering"]]
                self.assertEqual([Path(link).name for link in links], ["tokenizer.json"], links)

    def test_a_config_linked_out_of_the_folder_is_never_read(self):
        """A config.json transformers wrote, outside the model and linked in: transformers' loader follows the link
        and takes its dtype and name; precdetect never opens it (issue 66): nothing of it reaches the report (no
        config dtype, no documented precision by its name), and the link is the safety finding."""
        from transformers import AutoConfig, LlamaConfig
        config = LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
                             torch_dtype="bfloat16")
        config.save_pretrained(self.tmp / "outside")
        os.symlink("../outside/config.json", self.model / "config.json")
        self.assertEqual(AutoConfig.from_pretrained(self.model).model_type, "llama")  # the loader reads through it
        code, document, stderr = scan(self.model)
        self.assertEqual(code, 0, stderr)
        model = document["models"][0]
        self.assertIsNone(model["verdict"]["hints"]["config_dtype"])
        self.assertIsNone(model["verdict"]["documented"])
        self.assertEqual(safety(document)["verdict"], "unsafe")
        self.assertIn(str(self.model / "config.json"), [item["file"] for item in safety(document)["tampering"]])
        self.assertEqual(run("--fail-if-unsafe", self.model).returncode, 1)

    def test_a_hard_link_to_a_file_outside_is_never_read(self):
        """A hard link has no target to read: every name of the file is the file. One whose other name lies outside
        the model is a link out (core/hard_links.h): closed unread, as the weights and as a file beside them."""
        from safetensors.torch import load_file
        (self.model / "model.safetensors").unlink()
        os.link(self.canary, self.model / "model.safetensors")
        # The harm: safetensors' loader reads the canary's tensor through the folder's weight file.
        self.assertEqual(load_file(self.model / "model.safetensors")["secret"][0].item(), CANARY_VALUE)
        result = run("--json", self.model)
        self.assertEqual(result.returncode, 2, result.stderr)
        document = json.loads(result.stdout)
        self.assertEqual(document["models"][0]["error"]["code"], "path_escape")
        self.assertIn("is a hard link of 2 names, 1 of them beneath", document["models"][0]["error"]["message"])
        self.assertEqual(safety(document)["verdict"], "unsafe")
        self.assertNothingOfTheCanary(result.stdout + result.stderr)
        self.assertEqual(run("--fail-if-unsafe", self.model).returncode, 1)  # a failed gate outranks the unread model
        # Beside weights that read well: the model's numbers, and the link the finding.
        (self.model / "model.safetensors").unlink()
        save_file({"w": torch.full((8,), 0.5)}, self.model / "model.safetensors")
        os.link(self.canary, self.model / "tokenizer.json")
        code, document, stderr = scan(self.model)
        self.assertEqual(code, 0, stderr)
        self.assertEqual(safety(document)["verdict"], "unsafe")
        findings = [item for item in safety(document)["tampering"] if item["file"].endswith("tokenizer.json")]
        self.assertEqual([item["kind"] for item in findings], ["path_escape"])
        self.assertIn("is a hard link, 1 of its names outside; never read", findings[0]["detail"])
        entry = next(item for item in document["models"][0]["inventory"]["files"]
                     if item["file"].endswith("tokenizer.json"))
        self.assertEqual((entry["kind"], entry["disposition"], entry["verdict"]), ("file", "not_read", "unsafe"))
        self.assertEqual(run("--fail-if-unsafe", self.model).returncode, 1)
        self.assertNothingOfTheCanary(json.dumps(document))

    def test_a_hard_link_whose_names_all_lie_inside_is_one_file_of_the_model(self):
        os.link(self.model / "model.safetensors", self.model / "copy.safetensors.bak")
        (self.model / "sub").mkdir()
        os.link(self.model / "model.safetensors", self.model / "sub" / "model.safetensors")
        code, document, stderr = scan(self.model)
        self.assertEqual(code, 0, stderr)
        self.assertEqual(safety(document)["verdict"], "safe", safety(document))
        self.assertEqual(run("--fail-if-unsafe", self.model).returncode, 0)

    def test_a_model_split_out_of_a_folder_is_confined_to_that_folder(self):
        """A folder of independent files is split into one model per file, and a pipeline into its components: the
        user named the folder, not the file, so a file or component linked out of it (symbolically or by a hard
        link) is refused as it would be beside one model's weights, never read as if the user had typed it."""
        save_file({"v": torch.full((3,), 0.25)}, self.model / "other.safetensors")
        os.symlink("../outside/canary.safetensors", self.model / "linked.safetensors")
        os.link(self.canary, self.model / "hard.safetensors")
        code, document, stderr = scan(self.model)
        self.assertEqual(code, 2, stderr)
        models = {Path(model["path"]).name: model for model in document["models"]}
        self.assertEqual(sorted(models), ["hard.safetensors", "linked.safetensors", "model.safetensors",
                                          "other.safetensors"])
        for name in ("hard.safetensors", "linked.safetensors"):
            self.assertEqual(models[name]["error"]["code"], "path_escape", name)
            self.assertEqual(models[name]["safety"]["verdict"], "unsafe", name)
        self.assertEqual((models["model.safetensors"]["summary"]["abs_max"],
                          models["other.safetensors"]["summary"]["abs_max"]), (0.5, 0.25))
        self.assertNothingOfTheCanary(json.dumps(document) + stderr)
        self.assertEqual(run("--fail-if-unsafe", self.model).returncode, 1)
        # A pipeline whose unet/ is a link to a folder outside: its component is refused, its vae/ read.
        pipeline = self.tmp / "pipeline"
        (pipeline / "vae").mkdir(parents=True)
        save_file({"w": torch.full((4,), 0.5)}, pipeline / "vae" / "diffusion_pytorch_model.safetensors")
        (self.tmp / "outside-unet").mkdir()
        shutil.copy(self.canary, self.tmp / "outside-unet" / "diffusion_pytorch_model.safetensors")
        os.symlink("../outside-unet", pipeline / "unet")
        (pipeline / "model_index.json").write_text(json.dumps(
            {"_class_name": "StableDiffusionPipeline", "vae": ["diffusers", "AutoencoderKL"],
             "unet": ["diffusers", "UNet2DConditionModel"]}))
        code, document, stderr = scan(pipeline)
        self.assertEqual(code, 2, stderr)
        components = {Path(model["path"]).name: model for model in document["models"]}
        self.assertEqual(components["unet"]["error"]["code"], "path_escape")
        self.assertEqual(components["vae"]["summary"]["abs_max"], 0.5)
        self.assertNothingOfTheCanary(json.dumps(document) + stderr)

    def test_links_that_stay_inside_and_a_linked_model_folder_are_followed(self):
        os.symlink("model.safetensors", self.model / "alias.json")
        # Out of the folder and straight back in: it reaches the model's own file (issue 66's false alarm).
        os.symlink("../model/model.safetensors", self.model / "climbs_back.safetensors.json")
        os.symlink(self.model, self.tmp / "linked-model")
        for path in (self.model, self.tmp / "linked-model"):
            code, document, _ = scan(path)
            self.assertEqual(code, 0, path)
            self.assertEqual(safety(document)["verdict"], "safe", path)

    def test_a_hugging_face_cache_outside_the_default_place_links_into_its_blobs(self):
        # The cache's layout as huggingface_hub writes it (snapshots link into ../../blobs), made by hand: no
        # download is possible here.
        repository = self.tmp / "elsewhere" / "hub" / "models--org--name"
        blobs, snapshot = repository / "blobs", repository / "snapshots" / ("a" * 40)
        blobs.mkdir(parents=True)
        snapshot.mkdir(parents=True)
        shutil.copy(self.model / "model.safetensors", blobs / ("b" * 64))
        os.symlink("../../blobs/" + "b" * 64, snapshot / "model.safetensors")
        (blobs / ("c" * 40)).write_text(json.dumps({"model_type": "bert"}))
        os.symlink("../../blobs/" + "c" * 40, snapshot / "config.json")
        code, document, _ = scan(snapshot)
        self.assertEqual(code, 0)
        self.assertEqual(safety(document)["verdict"], "safe")
        self.assertEqual(document["models"][0]["summary"]["abs_max"], 0.5)

    def test_an_index_naming_a_file_outside_is_unsafe(self):
        (self.model / "model.safetensors.index.json").write_text(
            json.dumps({"weight_map": {"w": "../outside/canary.safetensors"}}))
        result = run("--json", self.model)
        self.assertEqual(result.returncode, 2)
        document = json.loads(result.stdout)
        self.assertEqual(document["models"][0]["error"]["code"], "path_escape")
        self.assertEqual(safety(document)["verdict"], "unsafe")
        self.assertNothingOfTheCanary(result.stdout)

    def test_an_onnx_location_out_of_the_folder_is_unsafe(self):
        from onnx import TensorProto, helper, numpy_helper
        import numpy as np
        raw = self.tmp / "outside" / "weights.bin"
        raw.write_bytes(np.full(4, CANARY_VALUE, np.float32).tobytes())
        weight = numpy_helper.from_array(np.ones(4, np.float32), "w")
        weight.data_location = TensorProto.EXTERNAL
        weight.ClearField("raw_data")
        for key, value in (("location", "../outside/weights.bin"), ("offset", "0"), ("length", "16")):
            weight.external_data.add(key=key, value=value)
        graph = helper.make_graph([], "g", [], [], initializer=[weight])
        (self.model / "model.safetensors").unlink()
        (self.model / "model.onnx").write_bytes(helper.make_model(graph).SerializeToString())
        # The harm: the location, joined to the model's folder as a loader joins it, reads the file outside.
        self.assertEqual((self.model / "../outside/weights.bin").read_bytes(), raw.read_bytes())
        result = run("--json", self.model / "model.onnx")
        document = json.loads(result.stdout)
        self.assertEqual(document["models"][0]["error"]["code"], "path_escape")
        self.assertEqual(safety(document)["verdict"], "unsafe")
        self.assertNothingOfTheCanary(result.stdout)

    def test_the_scanner_opens_nothing_outside_the_model(self):
        """strace: on the escaping cases, no descriptor precdetect opens resolves into the canary's folder (not even
        to list it), while it does open the model's files. Checked to fail: the same trace of `cat` through the
        link names the canary."""
        require(self, shutil.which("strace"), "strace")
        (self.model / "model.safetensors").unlink()
        os.symlink("../outside/canary.safetensors", self.model / "model.safetensors")
        os.symlink("../outside", self.model / "global_step1")
        os.symlink(self.canary, self.model / "config.json")
        (self.model / "model.safetensors.index.json").write_text(
            json.dumps({"weight_map": {"w": "../outside/canary.safetensors"}}))
        trace = self.tmp / "trace"
        for args in (["--json", self.model], ["--json", self.model / "model.safetensors.index.json"],
                     ["--safety-only", "--json", self.model]):
            # -y: each descriptor opened is shown with the file it resolved to, so an open through a link names the
            # link's target.
            subprocess.run(["strace", "-f", "-y", "-qq", "-e", "trace=open,openat,openat2", "-o", str(trace),
                            os.environ.get("PRECDETECT_BIN", "build/precdetect"), *map(str, args)],
                           capture_output=True, timeout=300, env=dict(os.environ, HF_HUB_CACHE=str(self.tmp / "hub")))
            opened = [line for line in trace.read_text().splitlines() if not re.search(r"= -1 E", line)]
            outside = [line for line in opened if str(self.tmp / "outside") in line]
            self.assertEqual(outside, [], args)
            self.assertTrue(any(str(self.model) in line for line in opened), args)  # it did open the model
        subprocess.run(["strace", "-y", "-qq", "-e", "trace=openat", "-o", str(trace), "cat",
                        str(self.model / "model.safetensors")], capture_output=True, timeout=60)
        self.assertIn(str(self.canary), trace.read_text())  # what the check above would have seen

    def test_a_model_that_cannot_be_read_to_its_end_is_never_safe(self):
        (self.model / "model.safetensors").write_bytes((self.model / "model.safetensors").read_bytes()[:-4])
        code, document, _ = scan(self.model)
        self.assertEqual(code, 2)
        self.assertEqual(safety(document)["verdict"], "unverified")
        self.assertTrue(any("not read to its end" in reason for reason in safety(document)["unverified"]))


class Archives(unittest.TestCase):
    """Tar and zip members that extraction writes outside its folder (PEP 706's data rules)."""

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp())

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def nemo(self, extra):
        """A .nemo archive as NeMo's SaveRestoreConnector lays it out (model_config.yaml, model_weights.ckpt: a
        torch.save zip), written by tarfile, with `extra` members (TarInfo, bytes) added."""
        weights = io.BytesIO()
        torch.save({"w": torch.full((4,), 0.25)}, weights)
        path = self.tmp / "model.nemo"
        with tarfile.open(path, "w") as archive:
            for name, data in (("./model_config.yaml", b"trainer:\n  precision: bf16\n"),
                               ("./model_weights.ckpt", weights.getvalue())):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
            for info, data in extra:
                archive.addfile(info, io.BytesIO(data) if data is not None else None)
        return path

    def extracted(self, archive, filter):
        """Extracts `archive` into a fresh folder under tmp; returns what it wrote outside that folder."""
        target = self.tmp / "extract" / "here"
        shutil.rmtree(self.tmp / "extract", ignore_errors=True)
        target.mkdir(parents=True)
        with tarfile.open(archive) as tar, warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            try:
                tar.extractall(target, **({"filter": filter} if filter else {}))
            except tarfile.FilterError:
                pass
        return sorted(p.relative_to(self.tmp / "extract").as_posix() for p in (self.tmp / "extract").rglob("*")
                      if target not in p.parents and p != target)

    def test_a_nemo_member_that_climbs_out_is_unsafe(self):
        info = tarfile.TarInfo("../marker")
        info.size = 6
        path = self.nemo([(info, b"marker")])
        self.assertEqual(self.extracted(path, None), ["marker"])  # the harm: written outside
        self.assertEqual(self.extracted(path, "data"), [])        # what filter='data' refuses
        code, document, _ = scan(path)
        self.assertEqual(code, 0)
        self.assertEqual(safety(document)["verdict"], "unsafe")
        self.assertEqual(kinds(document), ["archive_escape"])
        self.assertIn("../marker", safety(document)["tampering"][0]["detail"])

    def test_link_members_that_leave_are_unsafe_and_inside_ones_are_not(self):
        out = tarfile.TarInfo("escape")
        out.type, out.linkname = tarfile.SYMTYPE, ".."
        through = tarfile.TarInfo("escape/marker")  # written through the link: out of the folder
        through.size = 6
        inside = tarfile.TarInfo("alias")
        inside.type, inside.linkname = tarfile.SYMTYPE, "model_config.yaml"
        path = self.nemo([(out, None), (through, b"marker"), (inside, None)])
        self.assertEqual(self.extracted(path, None), ["marker"])  # the harm
        self.assertEqual(self.extracted(path, "data"), [])
        code, document, _ = scan(path)
        self.assertEqual(kinds(document), ["archive_escape"])
        self.assertIn("`escape`", safety(document)["tampering"][0]["detail"])

    def test_a_long_name_in_a_pax_header_is_read_as_extraction_reads_it(self):
        info = tarfile.TarInfo("../" + "x" * 120)  # over 100 bytes: tarfile writes it in a pax header
        info.size = 1
        path = self.nemo([(info, b"x")])
        code, document, _ = scan(path)
        self.assertEqual(kinds(document), ["archive_escape"])

    def test_a_zip_member_with_a_climbing_name_is_unsafe(self):
        path = self.tmp / "model.pt"
        torch.save({"w": torch.ones(2)}, path)
        with zipfile.ZipFile(path, "a") as archive:
            archive.writestr("../../evil.sh", "echo owned")
        code, document, _ = scan(path)
        self.assertEqual(safety(document)["verdict"], "unsafe")
        self.assertEqual(kinds(document), ["archive_escape"])

    def test_a_benign_nemo_archive_stays_safe(self):
        code, document, _ = scan(self.nemo([]))
        self.assertEqual(code, 0)
        self.assertEqual(safety(document)["verdict"], "safe")


class Evil:
    """Pickled, never unpickled: its reduce names posix.system, which loading it would call."""

    def __reduce__(self):
        return os.system, ("true",)


class SafetyOnly(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp())

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_judges_without_reading_a_tensor_value(self):
        good, evil = self.tmp / "good", self.tmp / "evil"
        good.mkdir(), evil.mkdir()
        save_file({"w": torch.full((8,), 0.5)}, good / "model.safetensors")
        torch.save({"w": torch.ones(4), "hook": Evil()}, evil / "pytorch_model.bin")
        code, document, _ = scan("--safety-only", good, evil)
        self.assertEqual(code, 0)  # no gate asked for
        for model in document["models"]:
            self.assertFalse(model["values_read"])
            self.assertIsNone(model["summary"])
            self.assertIsNone(model["verdict"])
            self.assertEqual(model["tensors"], [])
        self.assertEqual([m["safety"]["verdict"] for m in document["models"]], ["safe", "unsafe"])
        table = run("--safety-only", good, evil).stdout
        self.assertIn("safety only: safe", table)
        self.assertIn("safety only: UNSAFE pickle: posix.system", table)
        self.assertIn("2 models: safe 1, unsafe 1", table)
        self.assertEqual(run("--safety-only", "--fail-if-unsafe", good, evil).returncode, 1)
        self.assertEqual(run("--safety-only", "--fail-if-unsafe", good).returncode, 0)
        refused = run("--safety-only", "--expect", "fp16", good)
        self.assertEqual(refused.returncode, 3)  # a usage error (docs/using.md: exit codes)
        self.assertIn("--safety-only", refused.stderr)
        # Markdown shows no statistic it did not read (a 0 would read as "no overflow") and says the safety.
        markdown = run("--safety-only", "--format", "markdown", good, evil).stdout.splitlines()
        self.assertEqual(markdown[2].split(" | ")[1:8], ["-"] * 7)
        self.assertTrue(markdown[2].endswith("| safety only: safe |"), markdown[2])
        self.assertTrue(markdown[3].endswith("| safety only: UNSAFE pickle: posix.system |"), markdown[3])
        csv = run("--safety-only", "--format", "csv", good)  # one row per tensor's statistics: none were read
        self.assertEqual(csv.returncode, 3)
        self.assertIn("--format csv", csv.stderr)

    def test_a_model_damaged_past_its_header_is_still_judged_by_its_structure(self):
        model = self.tmp / "m"
        model.mkdir()
        save_file({"w": torch.ones(4)}, model / "model.safetensors")
        data = (model / "model.safetensors").read_bytes()
        (model / "model.safetensors").write_bytes(data[:-2])  # the header now promises more than the file holds
        code, document, _ = scan("--safety-only", model)
        self.assertEqual(code, 2)
        self.assertEqual(document["models"][0]["error"]["code"], "offset_past_end")
        self.assertEqual(document["models"][0]["safety"]["verdict"], "unverified")


MODELING = '''
import pathlib
from transformers import PretrainedConfig, PreTrainedModel
import torch

pathlib.Path(__file__).parent.joinpath("{marker}").write_text("ran")  # what trust_remote_code runs


class TinyConfig(PretrainedConfig):
    model_type = "tiny-remote"


class TinyModel(PreTrainedModel):
    config_class = TinyConfig

    def __init__(self, config):
        super().__init__(config)
        self.w = torch.nn.Linear(2, 2)
        self.post_init()
'''


class CustomCode(unittest.TestCase):
    """Code transformers runs with trust_remote_code=True, written by transformers' own save_pretrained."""

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp())

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def saved(self):
        source = self.tmp / "src"
        source.mkdir()
        (source / "modeling_tiny.py").write_text(textwrap.dedent(MODELING.format(marker="marker-at-import")))
        script = f"""
import sys
sys.path.insert(0, {str(source)!r})
import modeling_tiny
modeling_tiny.TinyConfig.register_for_auto_class()
modeling_tiny.TinyModel.register_for_auto_class("AutoModel")
modeling_tiny.TinyModel(modeling_tiny.TinyConfig()).save_pretrained({str(self.tmp / 'model')!r})
"""
        subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, timeout=300,
                       env=dict(os.environ, HF_HUB_OFFLINE="1"))
        return self.tmp / "model"

    def test_auto_map_names_the_code_and_classes_and_is_unverified(self):
        model = self.saved()
        marker = model / "marker-at-import"
        marker.unlink(missing_ok=True)
        # The harm: loading with trust_remote_code=True imports the model's own file.
        load = f"""
from transformers import AutoModel
AutoModel.from_pretrained({str(model)!r}, trust_remote_code=True)
"""
        subprocess.run([sys.executable, "-c", load], check=True, capture_output=True, timeout=300,
                       env=dict(os.environ, HF_HUB_OFFLINE="1", HF_MODULES_CACHE=str(self.tmp / "modules")))
        self.assertTrue(marker.exists() or any((self.tmp / "modules").rglob("marker-at-import")))
        for leftover in [marker, *(self.tmp / "modules").rglob("marker-at-import")]:
            leftover.unlink(missing_ok=True)
        code, document, _ = scan(model)
        self.assertEqual(code, 0)
        verdict = safety(document)
        self.assertEqual(verdict["verdict"], "unverified")
        code_found = {item["file"]: item for item in verdict["custom_code"]}
        self.assertEqual(set(code_found), {"modeling_tiny.py"})
        self.assertEqual(sorted(code_found["modeling_tiny.py"]["classes"]),
                         ["modeling_tiny.TinyConfig", "modeling_tiny.TinyModel"])
        self.assertEqual(code_found["modeling_tiny.py"]["named_by"],
                         "config.json auto_map.AutoConfig, auto_map.AutoModel")
        self.assertEqual(code_found["modeling_tiny.py"]["consent"], "asked")
        self.assertEqual(run("--fail-if-unsafe", model).returncode, 0)
        self.assertEqual(run("--fail-if-unsafe", "--strict-safety", model).returncode, 1)

    def test_a_python_file_beside_the_weights_is_named(self):
        model = self.tmp / "m"
        model.mkdir()
        save_file({"w": torch.ones(2)}, model / "model.safetensors")
        (model / "handler.py").write_text("print('hello')\n")
        code, document, _ = scan(model)
        self.assertEqual(safety(document)["custom_code"], [{"file": "handler.py", "classes": [], "named_by": None,
                                                       "repository": None, "consent": "asked", "why": None}])
        self.assertEqual(safety(document)["verdict"], "unverified")


if __name__ == "__main__":
    unittest.main()
