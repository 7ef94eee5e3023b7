"""Code the loaders import from a model's folder beyond transformers' auto_map (issue 66, docs/security.md "Code the
loaders import"). Each harmful model is written by the library's own save, the test proves what the real loader does
with it (imports the code, which writes only a marker in the temp folder, or refuses without the user's consent) at
the version setup pins and, where an older release imported it without asking, at that release
(requirements-old-loaders.txt, installed in .venv/old-loaders); then that precdetect names the file, the key and the
class, and its verdict and --fail-if-unsafe exit code match. Each benign twin, written the same way, stays safe."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

from helpers import REPO, scan, run

OLD_LOADERS = REPO / ".venv" / "old-loaders"  # scripts/setup.sh --tests installs requirements-old-loaders.txt there

# A sentence-transformers module of the model's own: importing it writes the marker the test names.
CUSTOM_MODULE = '''
import os
import pathlib

from sentence_transformers.models import Module

pathlib.Path(os.environ["CODE_PLACES_MARKER"]).write_text("ran")  # what loading the model runs


class Scale(Module):
    config_keys = ["factor"]

    def __init__(self, factor: float = 2.0):
        super().__init__()
        self.factor = factor

    def forward(self, features, **kwargs):
        return features

    def save(self, output_path, *args, safe_serialization=True, **kwargs):
        self.save_config(output_path)
'''

# A tiny BERT (transformers' save_pretrained, a WordPiece vocabulary of its own) wrapped by sentence-transformers'
# Transformer and Pooling modules, with the custom module after them when asked: SentenceTransformer.save writes
# modules.json naming each module's class.
SAVE_SENTENCE_TRANSFORMER = '''
import sys
from pathlib import Path
from transformers import BertConfig, BertModel, BertTokenizerFast
from sentence_transformers import SentenceTransformer
from sentence_transformers.models import Pooling, Transformer

tmp, custom = Path(sys.argv[1]), sys.argv[2] == "custom"
bert = tmp / "bert"
bert.mkdir(exist_ok=True)
(bert / "vocab.txt").write_text("\\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world"]))
BertTokenizerFast(str(bert / "vocab.txt")).save_pretrained(bert)
BertModel(BertConfig(vocab_size=7, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=16)).save_pretrained(bert)
modules = [Transformer(str(bert)), Pooling(8)]
if custom:
    sys.path.insert(0, str(tmp / "src"))
    from custom_st import Scale
    modules.append(Scale())
SentenceTransformer(modules=modules).save(str(tmp / "model"))
'''

LOAD_SENTENCE_TRANSFORMER = '''
import sys
from sentence_transformers import SentenceTransformer
try:
    SentenceTransformer(sys.argv[1], local_files_only=True)
    print("loaded")
except ValueError as e:
    print("refused:", e)
'''


def python(script, *args, env=None, cwd=None):
    return subprocess.run([sys.executable, "-c", script, *map(str, args)], capture_output=True, text=True,
                          timeout=600, cwd=cwd, env=dict(os.environ, HF_HUB_OFFLINE="1", **(env or {})))


def safety(document):
    return document["models"][0]["safety"]


class SentenceTransformersModules(unittest.TestCase):
    """modules.json's `type` naming a module class in the model's own files: sentence-transformers 6 asks for
    trust_remote_code, 5.x imported it from a local folder without asking (unsafe)."""

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp())
        self.marker = self.tmp / "marker-at-import"

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def saved(self, custom, old_release=False):
        (self.tmp / "src").mkdir()
        (self.tmp / "src" / "custom_st.py").write_text(textwrap.dedent(CUSTOM_MODULE))
        env = {"CODE_PLACES_MARKER": str(self.tmp / "marker-at-save")}
        if old_release:
            env["PYTHONPATH"] = str(OLD_LOADERS)
        written = python(SAVE_SENTENCE_TRANSFORMER, self.tmp, "custom" if custom else "stock", env=env)
        self.assertEqual(written.returncode, 0, written.stderr[-3000:])
        model = self.tmp / "model"
        if custom:  # the module's code is one of the model's files, as on the Hub
            shutil.copy(self.tmp / "src" / "custom_st.py", model / "custom_st.py")
        return model

    def load(self, model, old_release=False):
        env = {"CODE_PLACES_MARKER": str(self.marker), "HF_MODULES_CACHE": str(self.tmp / "modules")}
        if old_release:
            env["PYTHONPATH"] = str(OLD_LOADERS)
        # cwd: the temp folder, so that the module is found only in the model's folder, never on sys.path
        return python(LOAD_SENTENCE_TRANSFORMER, model, env=env, cwd=self.tmp)

    def test_a_custom_module_in_the_folder_is_unsafe(self):
        self.assertTrue((OLD_LOADERS / "sentence_transformers").is_dir(), "scripts/setup.sh --tests installs it")
        # Written by the release before 6.0: 6.0 renamed its own modules' classes, which 5.x cannot import.
        model = self.saved(custom=True, old_release=True)
        types = [entry["type"] for entry in json.loads((model / "modules.json").read_text())]
        self.assertEqual(types[2], "custom_st.Scale")
        # The pinned release asks: it refuses without trust_remote_code and runs nothing.
        pinned = self.load(model)
        self.assertIn("refused:", pinned.stdout, pinned.stderr[-3000:])
        self.assertIn("trust_remote_code", pinned.stdout)
        self.assertFalse(self.marker.exists())
        # The release before 6.0 imports the model's file when the folder is loaded, asking nothing.
        old = self.load(model, old_release=True)
        self.assertIn("loaded", old.stdout, old.stderr[-3000:])
        self.assertTrue(self.marker.exists())
        self.marker.unlink()
        code, document, _ = scan(model)
        self.assertEqual(code, 0)
        verdict = safety(document)
        self.assertEqual(verdict["verdict"], "unsafe")
        self.assertEqual(verdict["custom_code"], [{
            "file": "custom_st.py", "classes": ["custom_st.Scale"], "named_by": "modules.json [2].type",
            "repository": None, "consent": "not_asked",
            "why": "sentence-transformers before 6.0 imports it from a local folder without trust_remote_code "
                   "(huggingface/sentence-transformers#3801); 6.0 and later refuse without it"}])
        self.assertIn("custom code imported without consent (custom_st.py: custom_st.Scale", verdict["says"])
        self.assertEqual(run("--fail-if-unsafe", model).returncode, 1)

    def test_a_stock_model_is_safe(self):
        model = self.saved(custom=False)
        loaded = self.load(model)
        self.assertIn("loaded", loaded.stdout, loaded.stderr[-3000:])
        code, document, _ = scan(model)
        self.assertEqual(code, 0)
        self.assertEqual(safety(document)["verdict"], "safe", safety(document)["says"])
        self.assertEqual(safety(document)["custom_code"], [])
        self.assertEqual(run("--fail-if-unsafe", "--strict-safety", model).returncode, 0)


# A base model class PEFT's AutoPeftModel imports by its module's name (adapter_config.json's auto_mapping).
BASE_MODULE = '''
import torch


class Base(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.proj(x)
'''

SAVE_ADAPTER = '''
import sys
sys.path.insert(0, sys.argv[1] + "/src")
from peft import LoraConfig, get_peft_model
import my_base
get_peft_model(my_base.Base(), LoraConfig(target_modules=["proj"], r=2)).save_pretrained(sys.argv[1] + "/adapter")
'''

LOAD_ADAPTER = '''
import sys
from peft import AutoPeftModel
try:
    AutoPeftModel.from_pretrained(sys.argv[1])
    print("loaded")
except ValueError as e:
    print("refused:", e)
'''


class PeftAutoMapping(unittest.TestCase):
    """adapter_config.json's auto_mapping names the module AutoPeftModel imports the base model's class from:
    outside PEFT's allowlist it asks (import_allowlist); the name is judged as a pickle's global."""

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp())

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_a_base_class_outside_the_allowlist_is_named_and_unverified(self):
        (self.tmp / "src").mkdir()
        (self.tmp / "src" / "my_base.py").write_text(textwrap.dedent(BASE_MODULE))
        written = python(SAVE_ADAPTER, self.tmp)
        self.assertEqual(written.returncode, 0, written.stderr[-3000:])
        adapter = self.tmp / "adapter"
        config = json.loads((adapter / "adapter_config.json").read_text())
        self.assertEqual(config["auto_mapping"], {"base_model_class": "Base", "parent_library": "my_base"})
        loaded = python(LOAD_ADAPTER, adapter, env={"PYTHONPATH": str(self.tmp / "src")})
        self.assertIn("refused:", loaded.stdout, loaded.stderr[-3000:])
        self.assertIn("import_allowlist", loaded.stdout)
        code, document, _ = scan(adapter)
        self.assertEqual(code, 0)
        verdict = safety(document)
        self.assertEqual(verdict["verdict"], "unverified", verdict["says"])
        named = [(item["module"], item["name"], item["file"]) for item in verdict["imports"]]
        self.assertIn(("my_base", "Base", "adapter_config.json"), named)
        self.assertEqual(run("--fail-if-unsafe", adapter).returncode, 0)
        self.assertEqual(run("--fail-if-unsafe", "--strict-safety", adapter).returncode, 1)


if __name__ == "__main__":
    unittest.main()
